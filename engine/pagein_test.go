package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
)

// TestPagedVisitors (SPEC §13, issue #38 row 9): the visitor state of the
// current salt period stays within the memory budget when it outgrows it
// (its chunks are paged out), and a visitor whose chunk left memory is
// still the same visitor when they come back: counted once, their visit
// continued, before and after a restart, and while snapshots evict chunks
// beside the hits (the race detector runs it in CI).
func TestPagedVisitors(t *testing.T) {
	const (
		budget = 512 << 10
		n      = 20_000 // ~1.7 MiB of visitor state: over three budgets
	)
	mem := vfs.NewMem()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e, site := hardEngine(t, mem, Options{MemoryBudget: budget, Now: clock})
	ctx := context.Background()
	day := buckets.DateFromTime(now)
	// The model (SPEC §2.2): a visitor's pageview starts a visit when it
	// is their first or comes more than 30 minutes after their last.
	last := map[int]time.Time{}
	want := Totals{}
	hitsOf := func(at time.Time, ids []int) []Hit {
		hits := make([]Hit, len(ids))
		for i, id := range ids {
			hits[i] = hardHit(site, at.Add(time.Duration(i%1000)*time.Millisecond), fmt.Sprint("v", id), "/p")
		}
		return hits
	}
	model := func(hits []Hit, ids []int) {
		for i, id := range ids {
			at := hits[i].Time
			if l, ok := last[id]; ok {
				if at.Sub(l) > 30*time.Minute {
					want.Visits++
				}
			} else {
				want.Visitors++
				want.Visits++
			}
			last[id] = at
			want.Pageviews++
		}
	}
	track := func(at time.Time, ids []int) {
		hits := hitsOf(at, ids)
		for k := 0; k < len(hits); k += 1000 {
			if _, err := e.Track(ctx, hits[k:min(k+1000, len(hits))]...); err != nil {
				t.Error(err)
				return
			}
		}
	}
	span := func(lo, hi, step int) []int {
		var ids []int
		for i := lo; i < hi; i += step {
			ids = append(ids, i)
		}
		return ids
	}
	check := func(when string) {
		t.Helper()
		got, err := e.Unscoped().Totals(ctx, site, day, day)
		if err != nil {
			t.Fatal(err)
		}
		if got.Visitors != want.Visitors || got.Visits != want.Visits || got.Pageviews != want.Pageviews {
			t.Errorf("%s: visitors, visits, pageviews = %d, %d, %d; want %d, %d, %d", when,
				got.Visitors, got.Visits, got.Pageviews, want.Visitors, want.Visits, want.Pageviews)
		}
	}
	snapshot := func(when string) {
		t.Helper()
		if err := e.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		if m := e.Metrics(); m.StateBytes > budget {
			t.Errorf("%s: visitor state %d bytes after a snapshot, want at most the budget %d", when, m.StateBytes, budget)
		}
	}
	phase := func(at time.Time, ids []int) {
		track(at, ids)
		model(hitsOf(at, ids), ids)
	}

	// The times keep every gap 5 minutes or more from the 30 of a visit.
	phase(now.Add(-58*time.Minute), span(0, n, 1))
	snapshot("after the new visitors")
	paged := e.Metrics().StateBytes
	check("after the new visitors")

	// Returning visitors, a tenth of them (every chunk), and new ones.
	phase(now.Add(-45*time.Minute), append(span(0, n, 10), span(n, n+500, 1)...))
	check("after the returns")
	snapshot("after the returns")

	// The same returning and new visitors from four callers while
	// snapshots evict beside them: each must find its visitor, or number
	// a new one once.
	stop := besides(t, func() error { return e.Snapshot(ctx) })
	var callers sync.WaitGroup
	at := now.Add(-33 * time.Minute)
	same := append(span(1, n, 16), span(n+500, n+700, 1)...)
	for range 4 {
		callers.Go(func() { track(at, same) })
	}
	callers.Wait()
	stop()
	for range 4 {
		model(hitsOf(at, same), same)
	}
	check("after the concurrent returns")
	snapshot("after the concurrent returns")

	// After a restart the period is read back paged.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o := Options{FS: mem, Dir: "data", SnapshotEvery: -1, MemoryBudget: budget, Now: clock}
	var err error
	if e, err = Open(&o); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	check("after the restart")
	// Read back paged: one returning visitor reads its chunk and the
	// period's last, not the whole period.
	phase(now.Add(-10*time.Minute), []int{5})
	if m := e.Metrics(); m.StateBytes > budget/8 {
		t.Errorf("after the restart and one returning visitor: visitor state %d bytes, want the period read back paged (at most %d)", m.StateBytes, budget/8)
	}
	phase(now.Add(-10*time.Minute), span(25, n, 20))
	check("after the returns after the restart")
	snapshot("after the restart")
	t.Logf("visitor state of %d visitors paged to %d bytes (budget %d)", n, paged, budget)
}

// besides calls f over and over in a goroutine, until stop is called
// (which waits for the call under way) or f fails (a test error).
func besides(t *testing.T, f func() error) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := f(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

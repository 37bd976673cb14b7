package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
)

// fullDisk is a file system whose free space the test sets: the store's
// free-space guard reads it (a plain MemFS tells none, so the guard is off).
type fullDisk struct {
	vfs.FS
	avail atomic.Uint64
}

func (d *fullDisk) GetDiskUsage(string) (vfs.DiskUsage, error) {
	a := d.avail.Load()
	return vfs.DiskUsage{AvailBytes: a, TotalBytes: 1 << 40, UsedBytes: 1<<40 - a}, nil
}

// hardEngine opens an engine on fs at a fixed clock with one website.
func hardEngine(t *testing.T, fs vfs.FS, o Options) (*Engine, uint32) {
	t.Helper()
	o.FS, o.Dir, o.SnapshotEvery = fs, "data", -1
	if o.Now == nil {
		now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
		o.Now = func() time.Time { return now }
	}
	e, err := Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acc, _, err := NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	d := "hard.example"
	w, err := e.Owner(acc.ID).CreateWebsite(ctx, WebsiteInput{Domain: &d})
	if err != nil {
		t.Fatal(err)
	}
	return e, w.ID
}

func hardHit(site uint32, at time.Time, visitor, page string) Hit {
	return Hit{Time: at, URL: page, Website: site, Visitor: visitor, UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", IP: netip.MustParseAddr("8.8.8.8")}
}

// TestTrackFailedLogCountsNothing: when the log cannot be written (a full
// disk), Track fails and counts nothing, neither in memory nor after a
// snapshot and a restart; a retried import is then counted once. (Before,
// hits were applied before they were logged: counted, snapshotted, and the
// client got a 5xx, so a retry counted them twice.)
func TestTrackFailedLogCountsNothing(t *testing.T) {
	fs := &fullDisk{FS: vfs.NewMem()}
	fs.avail.Store(1 << 40)
	e, site := hardEngine(t, fs, Options{})
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	batch := func() []Hit {
		var hs []Hit
		for i := range 50 {
			hs = append(hs, hardHit(site, day.Add(time.Duration(i)*time.Minute), fmt.Sprint("v", i%7), "/p"))
		}
		return hs
	}
	if _, err := e.Track(ctx, batch()...); err != nil {
		t.Fatal(err)
	}
	fs.avail.Store(0)
	time.Sleep(150 * time.Millisecond) // the guard rereads at most every 100 ms
	res, err := e.Track(ctx, batch()...)
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Track on a full disk: %v, want ErrDiskFull", err)
	}
	if res.Accepted != 0 {
		t.Errorf("Track on a full disk accepted %d", res.Accepted)
	}
	pv := func(e *Engine) uint64 {
		tot, err := e.Unscoped().Totals(ctx, site, buckets.DateFromTime(day), buckets.DateFromTime(day))
		if err != nil {
			t.Fatal(err)
		}
		return tot.Pageviews
	}
	if got := pv(e); got != 50 {
		t.Errorf("pageviews after a failed Track = %d, want 50", got)
	}
	fs.avail.Store(1 << 40)
	time.Sleep(150 * time.Millisecond)
	if _, err := e.Track(ctx, batch()...); err != nil { // the client's retry
		t.Fatalf("Track once space is back: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2, err := Open(&Options{FS: fs, Dir: "data", SnapshotEvery: -1, Now: e.opts.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if got := pv(e2); got != 100 {
		t.Errorf("pageviews after the retry and a restart = %d, want 100", got)
	}
}

// TestDeleteReleasesMemory: deleting websites gives their resident days and
// visitor state back (ResidentBytes leaked frozen days before, so eviction
// thrashed after deletes).
func TestDeleteReleasesMemory(t *testing.T) {
	e, site := hardEngine(t, vfs.NewMem(), Options{})
	defer e.Close()
	ctx := context.Background()
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var hs []Hit
	for d := range 15 {
		for i := range 40 {
			hs = append(hs, hardHit(site, start.Add(time.Duration(d)*24*time.Hour+time.Duration(i)*time.Minute), fmt.Sprint("v", i), fmt.Sprint("/p", i)))
		}
	}
	if _, err := e.Track(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil { // freezes the past days
		t.Fatal(err)
	}
	if m := e.Metrics(); m.ResidentBytes == 0 || m.StateBytes == 0 {
		t.Fatalf("nothing resident before the delete: %+v", m)
	}
	if err := e.Unscoped().DeleteWebsite(ctx, site); err != nil {
		t.Fatal(err)
	}
	if m := e.Metrics(); m.ResidentBytes != 0 || m.StateBytes != 0 {
		t.Errorf("after delete: resident %d, state %d bytes; want 0, 0", m.ResidentBytes, m.StateBytes)
	}
}

// TestVisitorStateIncremental: with a month-long salt period, a snapshot
// after one more hit writes one chunk of visitor state, not every visitor
// (before, every snapshot re-encoded the whole period under the lock).
// An event numbers its visitor (SPEC §10.1: it may start a visit of the
// segments) in the chunk of its id.
func TestVisitorStateIncremental(t *testing.T) {
	e, site := hardEngine(t, vfs.NewMem(), Options{SaltPeriod: SaltMonth})
	defer e.Close()
	ctx := context.Background()
	at := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	var hs []Hit
	for i := range 5000 {
		hs = append(hs, hardHit(site, at.Add(time.Duration(i)*time.Second), fmt.Sprint("v", i), "/"))
	}
	if _, err := e.Track(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	first := SaltMonth.Start(buckets.DateFromTime(at))
	dirty := func() (chunks, visitors int) {
		sh := e.shardOf(site)
		sh.mu.Lock()
		defer sh.mu.Unlock()
		p := e.sites[site].state.periods[first]
		return p.Dirty(), p.Len()
	}
	if c, _ := dirty(); c != 0 {
		t.Fatalf("%d chunks dirty after a snapshot", c)
	}
	ev := hardHit(site, at.Add(2*time.Hour), "someone new", "/")
	ev.Event = &Event{Name: "Signup"}
	if _, err := e.Track(ctx, hardHit(site, at.Add(2*time.Hour), "v2500", "/again"), ev); err != nil {
		t.Fatal(err)
	}
	if c, v := dirty(); c != 2 || v != 5001 {
		t.Errorf("after one pageview of a known visitor and one event of a new one: %d chunks dirty, %d visitors; want 2, 5001", c, v)
	}
}

// TestPartialSortCost: a page deep in a long statistic costs O(N log n)
// comparisons (the insertion sort before was O(N·n): 8.4 s for a page
// ending at row 24,000 of 200,000), and gives the rows a full sort gives.
func TestPartialSortCost(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, end = 200_000, 24_000
	for _, order := range []string{"random", "ascending", "descending"} {
		t.Run("order="+order, func(t *testing.T) {
			rows := make([]Row, n)
			for i := range rows {
				c := uint64(rng.IntN(1000))
				switch order {
				case "ascending":
					c = uint64(i)
				case "descending":
					c = uint64(n - i)
				}
				rows[i] = Row{Value: fmt.Sprintf("/p/%07d", i), Count: c}
			}
			want := slices.Clone(rows)
			calls := 0
			cmpRow := func(a, b Row) int {
				calls++
				if a.Count != b.Count {
					if a.Count > b.Count {
						return -1
					}
					return 1
				}
				return strings.Compare(a.Value, b.Value)
			}
			slices.SortFunc(want, cmpRow)
			calls = 0
			segments.PartialSort(rows, end, cmpRow)
			if !slices.Equal(want[:end], rows[:end]) {
				t.Fatal("partialSort's first rows differ from a full sort's")
			}
			// N·log2(n) with a constant for the heap's two comparisons a
			// level, plus the final sort of the n rows.
			if limit := 4*n*15 + 2*end*15; calls > limit {
				t.Errorf("%d comparisons, want at most %d (O(N log n))", calls, limit)
			}
		})
	}
}

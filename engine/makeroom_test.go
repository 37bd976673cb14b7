package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/buckets"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestImportsInARowMakeRoom (issue #38 row 7 in a row, SPEC §13): under a
// memory budget, imports in a row, each into a past day of its own, leave
// open (unfrozen, outside the budget) at most the days of the call just
// made, and what the budget counts stays within it: a call of several
// parts that finds the open days and the budget's bytes over the budget
// waits for a snapshot first, which freezes the days and evicts them. No
// background snapshot runs here (SnapshotEvery -1); before makeRoom, the
// open days grew by a day a call. Every hit is counted.
func TestImportsInARowMakeRoom(t *testing.T) {
	const (
		budget = 1 << 20
		calls  = 6
		events = 2_500 // three parts of partHits
	)
	now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }, MemoryBudget: budget})
	defer e.Close()
	pad := strings.Repeat("x", 200)
	var first int64
	for c := range calls {
		day := now.AddDate(0, 0, -2-c)
		hits := make([]Hit, events)
		for i := range hits {
			u := fmt.Sprintf("c%d-%d", c, i)
			h := hardHit(site, day, fmt.Sprint("v", i%300), "/imp/"+u+"/"+pad)
			h.Referrer = "https://" + u + ".example/" + pad
			hits[i] = h
		}
		res, err := e.Track(context.Background(), hits...)
		if err != nil || res.Accepted != events {
			t.Fatalf("call %d: %+v, %v", c, res, err)
		}
		m := e.Metrics()
		t.Logf("after call %d: open days' segments %d bytes, budget's bytes %d, snapshots %d", c, m.OpenSegmentBytes, e.budgetBytes(), m.Snapshots)
		if c == 0 {
			first = m.OpenSegmentBytes
			if first <= budget {
				t.Fatalf("one call's day is %d bytes, not over the budget %d: the test shows nothing", first, budget)
			}
			continue
		}
		// The day of this call, give or take: never the days before it.
		if m.OpenSegmentBytes > first+first/2 {
			t.Errorf("after call %d: %d bytes of open days, want at most one call's (%d)", c, m.OpenSegmentBytes, first)
		}
		if got := e.budgetBytes(); got > budget {
			t.Errorf("after call %d: %d bytes counted in the budget, want at most %d", c, got, budget)
		}
	}
	if err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	from, to := buckets.DateFromTime(now.AddDate(0, 0, -1-calls)), buckets.DateFromTime(now)
	tot, err := e.Unscoped().Totals(context.Background(), site, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if tot.Pageviews != calls*events {
		t.Errorf("%d pageviews counted, want %d", tot.Pageviews, calls*events)
	}
}

package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
)

// TestImportsInARowMakeRoom (issue #38 row 7 in a row, SPEC §13): under a
// memory budget, imports in a row, each into a past day of its own, never
// leave more open (unfrozen, outside the budget) than half the budget and
// two calls' days: once calls of more than one hit brought partHits hits,
// the next one looks, and waits for a snapshot (which freezes the days and
// evicts them) if the open days grew by half the budget since the last
// snapshot. Calls of several parts and calls of one part (the web app's
// upload chunks, the command line's) alike. No background snapshot runs
// here (SnapshotEvery -1); without MakeRoom the open days grew by a day a
// call. Every hit is counted.
func TestImportsInARowMakeRoom(t *testing.T) {
	for _, c := range []struct {
		name          string
		calls, events int
	}{
		{"calls of three parts", 6, 2_500},
		{"calls of one part", 10, 600},
	} {
		t.Run(c.name, func(t *testing.T) { importsInARow(t, c.calls, c.events) })
	}
}

func importsInARow(t *testing.T, calls, events int) {
	const budget = 1 << 20
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
		t.Logf("after call %d: open days' segments %d bytes, snapshots %d", c, m.OpenSegmentBytes, m.Snapshots)
		if c == 0 {
			first = m.OpenSegmentBytes
			continue
		}
		if bound := budget/2 + 2*first; m.OpenSegmentBytes > bound {
			t.Errorf("after call %d: %d bytes of open days, want at most %d (half the budget and two calls' days of %d)", c, m.OpenSegmentBytes, bound, first)
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
	if want := uint64(calls * events); tot.Pageviews != want {
		t.Errorf("%d pageviews counted, want %d", tot.Pageviews, want)
	}
}

package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestRealtimeRebuildOverWholeLimit: rebuilding realtime (at Open, and
// when a cluster node imports a partition) never fails because today's
// sealed rows are more than one query may make whole under the memory
// budget (wholeLimit): a website with a large day today would otherwise
// keep the whole engine from opening. Realtime keeps what replay gave it.
func TestRealtimeRebuildOverWholeLimit(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{MemoryBudget: 1 << 10, Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	const n = 12
	for i := range n {
		if _, err := e.Track(ctx, hardHit(site, now.Add(-time.Duration(i)*time.Minute), fmt.Sprint("v", i), "https://hard.example/")); err != nil {
			t.Fatal(err)
		}
		if err := e.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if p := sealedParts(e, site); p < 3 {
		t.Fatalf("%d sealed parts: the test did not seal", p)
	}
	// Visitors are those of the last 5 minutes (one a minute was sent);
	// pageviews every minute of the last 30.
	var want Realtime
	want.Visitors = 5
	for i := range n {
		want.Pageviews[29-i] = 1
	}
	if rt, err := e.Unscoped().Realtime(ctx, site); err != nil || rt != want {
		t.Fatalf("realtime before: %+v, %v; want %+v", rt, err, want)
	}
	e.wholeLimit = 2 * int64(e.sealBytes)
	e.wholes.drop(site)
	if err := e.rebuildRealtime(); err != nil {
		t.Fatalf("rebuildRealtime over the whole limit: %v (Open would fail)", err)
	}
	rt, err := e.Unscoped().Realtime(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	if rt != want {
		t.Errorf("realtime after a rebuild that could not read the rows: %+v, want what it had, %+v", rt, want)
	}
}

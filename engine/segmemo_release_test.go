package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/engine/internal/segments"
)

// TestDimMemoReleasedOnWrite: a closed day written again (a late hit:
// copy on write) leaves memory as far as the budget is concerned, so what
// its memo kept of breakdowns leaves the count at once, as eviction takes
// it out, not whenever a garbage collection happens to run the memo's
// cleanup: until then the budget counts breakdowns nobody can read, and
// evicts days it has room for.
func TestDimMemoReleasedOnWrite(t *testing.T) {
	defer SetDimMemo(SetDimMemo(true))
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no cleanup runs
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	now := day.Add(36 * time.Hour) // closed in every time zone
	e, site := hardEngine(t, vfs.NewMem(), Options{QueryCache: -1, Now: func() time.Time { return now }})
	defer e.Close()
	var hs []Hit
	for n := range 1500 {
		hs = append(hs, hardHit(site, day.Add(time.Duration(n)*time.Second), fmt.Sprint("v", n), fmt.Sprintf("https://hard.example/p%d", n%7)))
	}
	if _, err := e.Track(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	q, err := ParseQuery([]byte(`{"site_id":"hard.example","date_range":["2026-11-20","2026-11-20"],"metrics":["visits"],"dimensions":["event:page"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Unscoped().Query(ctx, site, q); err != nil {
		t.Fatal(err)
	}
	if e.counters.dimMemos.Load() == 0 {
		t.Fatal("no breakdown kept: the test did not memoise")
	}
	if _, err := e.Track(ctx, hardHit(site, day.Add(2*time.Hour), "late", "https://hard.example/late")); err != nil {
		t.Fatal(err)
	}
	if got := e.counters.dimMemos.Load(); got != 0 {
		t.Errorf("the day was written again (a copy of it is the day now): %d bytes of its old memo's breakdowns still counted", got)
	}
}

// TestChunksSplitOrphans: a day's chunks are each about 1/n of it
// (segments.Chunks: "what is resident is one chunk"), orphan events too.
// Orphans are the custom events of visitors without an id (their salt
// period's ids exhausted: a flood, the very day that is read in chunks)
// and of old data; chunkOf put every one of them in chunk 0, which for a
// day of orphans is the whole day, whatever the budget.
func TestChunksSplitOrphans(t *testing.T) {
	d := segments.NewDay()
	const hits, n = 4000, 8
	for i := range hits {
		d.AddHit(&segments.Hit{Visit: segments.NoVisit, Ms: int64(1_700_000_000_000 + i), Kind: segments.KindEvent, Scroll: -1})
	}
	split, err := d.Split(context.Background(), nil, segments.NewPartCache(1<<20), n)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for k := range n {
		c, err := split.Chunk(k)
		if err != nil {
			t.Fatal(err)
		}
		total += c.Hits()
		if c.Hits() > 2*hits/n {
			t.Errorf("chunk %d of %d holds %d of the day's %d orphan events", k, n, c.Hits(), hits)
		}
	}
	if total != hits {
		t.Errorf("the chunks hold %d orphan events, want %d", total, hits)
	}
}

package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/rollup"
)

// TestWeekRollupInvalidated: a closed week's rollup answers a range query
// once its days are frozen, and a late hit on one of its days (an import
// into the past) drops it: the next answer counts the hit.
func TestWeekRollupInvalidated(t *testing.T) {
	ctx := context.Background()
	monday := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // a Monday
	now := monday.AddDate(0, 0, 10)                        // the week closed
	e, site := hardEngine(t, vfs.NewMem(), Options{QueryCache: -1, Now: func() time.Time { return now }})
	defer e.Close()
	var hs []Hit
	for d := range 7 {
		hs = append(hs, hardHit(site, monday.AddDate(0, 0, d).Add(9*time.Hour), fmt.Sprint("v", d), "/a"))
	}
	if _, err := e.Track(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	first := buckets.DateFromTime(monday)
	q := StatQuery{Website: site, Name: "page", From: first, To: first + 6}
	pages := func() map[string]uint64 {
		t.Helper()
		res, err := e.Unscoped().Stat(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]uint64{}
		for _, r := range res.Rows {
			m[r.Value] = r.Count
		}
		return m
	}
	if got := pages(); got["/a"] != 7 {
		t.Fatalf("before: %v, want /a 7", got)
	}
	sh := e.shardOf(site)
	sh.mu.Lock()
	_, cached := e.sites[site].state.rollups.Get(rollup.Key{First: first, Last: first + 6}, 0)
	sh.mu.Unlock()
	if !cached {
		t.Fatal("the closed week's rollup was not kept")
	}
	if _, err := e.Track(ctx, hardHit(site, monday.AddDate(0, 0, 2).Add(10*time.Hour), "late", "/b")); err != nil {
		t.Fatal(err)
	}
	if got := pages(); got["/a"] != 7 || got["/b"] != 1 {
		t.Errorf("after a late hit: %v, want /a 7 and /b 1", got)
	}
}

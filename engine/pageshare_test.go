package engine

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
)

// TestPageKeptOnce: a new page's path in the day's segments is a slice of
// the day buckets' own copy of the page, not of the hit's URL: an import's
// new pages are in memory once (SPEC §13), with or without a query.
func TestPageKeptOnce(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }})
	defer e.Close()
	day := now.AddDate(0, 0, -2)
	for _, url := range []string{"/kept/once", "/kept/twice?utm_source=x"} {
		if _, err := e.Track(context.Background(), hardHit(site, day, "v", url)); err != nil {
			t.Fatal(err)
		}
	}
	s := e.sites[site]
	sh := e.shardOf(site)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ent := s.state.days[buckets.DateFromTime(day)]
	for page, path := range map[string]string{"/kept/once": "/kept/once", "/kept/twice?utm_source=x": "/kept/twice"} {
		// The day's copy: a clone shares the day's strings.
		kept, _ := ent.day.Clone().AddKept(buckets.Page, page, 1, 0)
		found := false
		for _, str := range ent.seg.Strs {
			if str == path {
				found = true
				if unsafe.StringData(str) != unsafe.StringData(kept) {
					t.Errorf("the segments' %q is not a slice of the buckets' copy of %q: the page is in memory twice", path, page)
				}
			}
		}
		if !found {
			t.Fatalf("no %q in the day's segments", path)
		}
	}
}

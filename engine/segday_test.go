package engine

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
)

// highRatioSegDay is a day of n identical pageviews of one visit in one
// second: its columns compress far better than 64:1.
func highRatioSegDay(n int) *segments.Day {
	d := segments.NewDay()
	var attr [segments.NumAttrs]uint32
	ms := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixMilli()
	page, _ := d.ID("/", segments.CatPath, 0)
	host, _ := d.ID("example.com", segments.CatHost, 0)
	v := d.AddVisit(20410, 1, ms, &attr, 0, page, host)
	for range n {
		d.AddHit(&segments.Hit{Visit: v, Ms: ms, Kind: segments.KindPageview, Page: page, Host: host, Scroll: -1})
	}
	d.VPageviews[v] = uint32(n)
	d.VFlags[v] = segments.VisitFirstInteractive
	if n > 1 {
		d.VFlags[v] |= segments.VisitInteractive
	}
	d.Compact()
	return d
}

// TestSegDayHighRatio: a day whose columns compress better than 64:1 (many
// identical hits) decodes through the engine: snapshot, reopen, query,
// track (TestDayHighRatio in package segments decodes it alone). (The decoder refused an announced length over 64 times
// the compressed size: the website's queries and tracking failed.)
func TestSegDayHighRatio(t *testing.T) {
	ctx := context.Background()
	fs := vfs.NewMem()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e, site := hardEngine(t, fs, Options{Now: clock})
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	const n = 30_000
	hs := make([]Hit, 1000)
	for range n / len(hs) {
		for i := range hs {
			hs[i] = hardHit(site, at, "v", "/p")
		}
		if _, err := e.Track(ctx, hs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil { // snapshots the closed day
		t.Fatal(err)
	}
	e, err := Open(&Options{FS: fs, Dir: "data", SnapshotEvery: -1, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	data, err := e.store.Day(site, int32(buckets.DateFromTime(at)))
	if err != nil {
		t.Fatal(err)
	}
	sd, err := decodeDay(data, true)
	if err != nil {
		t.Fatalf("decode the stored day: %v", err)
	}
	if sd.seg.Hits() != n {
		t.Errorf("stored day has %d hits, want %d", sd.seg.Hits(), n)
	}
	q, err := ParseQuery([]byte(`{"site_id":"hard.example","date_range":"all","metrics":["visitors","visits","pageviews"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Unscoped().Query(ctx, site, q)
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	if diff := cmp.Diff([]any{int64(1), int64(1), int64(n)}, res.Results[0].Metrics); diff != "" {
		t.Errorf("query: mismatch (-want +got):\n%s", diff)
	}
	if _, err := e.Track(ctx, hardHit(site, at.Add(time.Minute), "v", "/p")); err != nil {
		t.Fatalf("track into the day: %v", err)
	}
}

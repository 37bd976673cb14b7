package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/engine/internal/segments"
)

// TestDayMemo: a closed day's memo answers a repeated filter (counted in
// segments.DayMemoHits), a set of filters it does not know is evaluated, and the
// visits written to the day later (copy on write, closed again) are
// counted: no entry outlives the rows it was made of. Each query's
// answer is the number of visitors from Google the test tracked.
func TestDayMemo(t *testing.T) {
	defer func(n int) { segments.MinMemoVisits = n }(segments.MinMemoVisits)
	// The filter memo under test: the day's answer not taken whole from
	// its memo of breakdowns (TestDimMemoEqualsScan).
	defer SetDimMemo(SetDimMemo(false))
	segments.MinMemoVisits = 1024 // the server's: the small days of other tests get one too
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	now := day.Add(36 * time.Hour) // the day is closed in every time zone
	e, site := hardEngine(t, vfs.NewMem(), Options{QueryCache: -1, Now: func() time.Time { return now }})
	var err error
	defer func() { e.Close() }()
	visits := segments.MinMemoVisits + 100
	google := 0
	track := func(first, n int) {
		t.Helper()
		var hs []Hit
		for i := first; i < first+n; i++ {
			h := hardHit(site, day.Add(time.Duration(i)*time.Second), fmt.Sprint("v", i), "https://hard.example/p")
			if i%3 == 0 {
				h.Referrer = "https://www.google.com/"
				google++
			}
			hs = append(hs, h)
		}
		if _, err := e.Track(ctx, hs...); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(what string, filters string, want int) {
		t.Helper()
		q, err := ParseQuery([]byte(`{"site_id":"hard.example","date_range":["2026-11-20","2026-11-20"],"metrics":["visitors"],"filters":[` + filters + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Unscoped().Query(ctx, site, q)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(res.Results[0].Metrics[0]); got != fmt.Sprint(want) {
			t.Errorf("%s: %s visitors, want %d", what, got, want)
		}
	}
	fromGoogle := `["is","visit:source",["Google"]]`
	notDirect := `["is_not","visit:source",["Direct / None"]]`
	track(0, visits)
	if err := e.Snapshot(ctx); err != nil { // closes the day: compacted, with a memo
		t.Fatal(err)
	}
	h0 := segments.DayMemoHits.Load()
	ask("first", fromGoogle, google)
	if n := segments.DayMemoHits.Load() - h0; n != 0 {
		t.Errorf("the first query found %d memo entries", n)
	}
	ask("again", fromGoogle, google)
	if n := segments.DayMemoHits.Load() - h0; n != 1 {
		t.Errorf("the repeated query found %d memo entries, want 1", n)
	}
	ask("other filters", notDirect+`,`+fromGoogle, google)
	if n := segments.DayMemoHits.Load() - h0; n != 1 {
		t.Errorf("other filters found a memo entry (%d in all, want 1)", n)
	}
	// Later visits on the closed day, some from Google.
	track(visits, 20) // the bitsets keep their length: 1,144 visits fill 18 words as 1,124 do
	ask("written again", fromGoogle, google)
	if err := e.Snapshot(ctx); err != nil { // closed again
		t.Fatal(err)
	}
	ask("closed again", fromGoogle, google)
	ask("closed again, repeated", fromGoogle, google)
	ask("closed again, other filters", notDirect+`,`+fromGoogle, google)
	if n := segments.DayMemoHits.Load() - h0; n < 2 {
		t.Errorf("the closed day's new memo was never used (%d entries found in all)", n)
	}
	// Least recently used out: five sets of filters, the first asked again
	// before the fifth comes, so the second is the one dropped.
	sets := []string{fromGoogle, notDirect, `["is","visit:browser",["Firefox"]]`, `["is_not","visit:country",["ZZ"]]`, `["is","visit:device",["Desktop"]]`}
	for _, f := range sets[:4] {
		ask("fill", f+`,`+fromGoogle, google)
	}
	ask("refresh", sets[0]+`,`+fromGoogle, google)
	ask("fifth", sets[4]+`,`+fromGoogle, google)
	h1 := segments.DayMemoHits.Load()
	ask("kept", sets[0]+`,`+fromGoogle, google)
	if segments.DayMemoHits.Load() != h1+1 {
		t.Error("the most recently used entry was dropped")
	}
	ask("dropped", sets[1]+`,`+fromGoogle, google)
	if segments.DayMemoHits.Load() != h1+1 {
		t.Error("the least recently used entry was kept")
	}
	// After a restart the day is decoded from the store with a memo of its
	// own, which the second query uses.
	fs := e.opts.FS
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o := e.opts
	o.FS = fs
	if e, err = Open(&o); err != nil {
		t.Fatal(err)
	}
	h2 := segments.DayMemoHits.Load()
	ask("reopened", fromGoogle, google)
	ask("reopened, repeated", fromGoogle, google)
	if segments.DayMemoHits.Load() != h2+1 {
		t.Errorf("the reopened day's memo found %d entries, want 1", segments.DayMemoHits.Load()-h2)
	}
}

// TestGroupKeyValues: two rows whose values differ only in where one
// value ends ("xy","z" and "x","yz") are two groups: a group's key keeps
// its values apart (globalGroup's length prefixes).
func TestGroupKeyValues(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{QueryCache: -1, Now: func() time.Time { return day.Add(time.Hour) }})
	defer e.Close()
	var hs []Hit
	for i, kv := range [][2]string{{"xy", "z"}, {"x", "yz"}} {
		h := hardHit(site, day.Add(time.Duration(i)*time.Minute), fmt.Sprint("v", i), "https://hard.example/")
		h.Props = []Prop{{Key: "a", Value: kv[0]}, {Key: "b", Value: kv[1]}}
		hs = append(hs, h)
	}
	if _, err := e.Track(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	q, err := ParseQuery([]byte(`{"site_id":"hard.example","date_range":["2026-11-20","2026-11-20"],"metrics":["visitors"],"dimensions":["event:props:a","event:props:b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Unscoped().Query(ctx, site, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 {
		t.Fatalf("%d rows, want 2: %+v", len(res.Results), res.Results)
	}
}

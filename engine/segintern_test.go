package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
)

// TestQueryInternTable checks the engine's table of query values
// (engine/internal/segments/intern.go): queries by one dimension find each value's group by its
// id in the table, and must answer as with the table unused (memos off),
// with queries at once: with a table that never fills; one that fills and
// is not replaced (new values found by their strings); one that fills and
// is replaced at each query (days keep the ids of an older table); and a
// tiny one, with pages of two groups in the plans. A day first met while
// the table is full gets no ids; a website's delete empties the table.
func TestQueryInternTable(t *testing.T) {
	// Dimensions whose values are a day's dictionary ids, with and
	// without filters, over ranges that share days.
	var bodies []string
	// Day 19 is closed too, but only late (below) asks for it.
	for _, dr := range []string{`["2024-01-08","2024-01-18"]`, `["2024-01-10","2024-01-14"]`, `["2024-01-18","2024-01-18"]`} {
		for _, dim := range []string{"event:page", "visit:entry_page", "visit:exit_page", "visit:source", "event:name", "visit:country_name", "event:hostname"} {
			for _, filters := range []string{``, `,"filters":[["is_not","visit:source",["s0"]]]`, `,"filters":[["contains","event:page",["1"]]]`} {
				metrics := `"visitors","visits","pageviews","events"`
				if strings.HasPrefix(dim, "visit:") {
					metrics = `"visitors","visits","bounce_rate"`
				}
				bodies = append(bodies, `{"site_id":"example.com","date_range":`+dr+`,"metrics":[`+metrics+`],"dimensions":["`+dim+`"]`+filters+`}`)
			}
		}
	}
	bodies = append(bodies, `{"site_id":"example.com","date_range":["2024-01-08","2024-01-18"],"metrics":["visitors","bounce_rate","visit_duration"],"dimensions":["event:page"]}`)
	late := `{"site_id":"example.com","date_range":["2024-01-19","2024-01-19"],"metrics":["visitors","pageviews"],"dimensions":["event:page"]}`
	for _, tc := range []struct {
		name     string
		maxBytes int
		refill   time.Duration // how often a full table is replaced
		refills  bool          // the table fills and later queries make new ones
		pageBits int
	}{
		{"large", 1 << 20, 0, false, 9},
		{"full", 4000, time.Hour, false, 9},
		{"fills", 4000, 0, true, 9},
		{"tiny", 200, 0, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer engine.SetInternMaxBytes(engine.SetInternMaxBytes(tc.maxBytes))
			defer engine.SetInternRefill(engine.SetInternRefill(tc.refill))
			defer engine.SetGidPageBits(engine.SetGidPageBits(tc.pageBits))
			c := newClock("2024-01-08T00:00:00Z")
			e, _, a, w := soloSite(t, c, engine.SaltDay, noAnswerCache)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(3, 4))
			for day := 8; day <= 20; day++ {
				for range 80 {
					c.Set(fmt.Sprintf("2024-01-%02dT%02d:%02d:00Z", day, rng.IntN(24), rng.IntN(60)))
					// Pages that come back on other days, and some of
					// one day only.
					page := fmt.Sprintf("/p%d", rng.IntN(30))
					if rng.IntN(4) == 0 {
						page = fmt.Sprintf("/d%d/%d", day, rng.IntN(10))
					}
					h := engine.Hit{URL: "https://example.com" + page + "?utm_source=s" + fmt.Sprint(rng.IntN(5)), UserAgent: soloUA, Visitor: fmt.Sprint("v", rng.IntN(25)), Website: w.ID}
					if rng.IntN(5) == 0 {
						h.Event = &engine.Event{Name: fmt.Sprint("e", rng.IntN(3))}
					}
					if _, err := e.Track(ctx, h); err != nil {
						t.Fatal(err)
					}
				}
				if err := e.Snapshot(ctx); err != nil { // closes the day before
					t.Fatal(err)
				}
			}
			query := resultsOf(e, a, w)
			want := map[string]string{}
			prev := engine.SetDayMemo(false) // no memo: no table
			for _, b := range append(bodies, late) {
				var err error
				if want[b], err = query(b); err != nil {
					t.Fatalf("%s: %v", b, err)
				}
			}
			engine.SetDayMemo(prev)
			if n := engine.InternStats(e); n.Days != 0 {
				t.Fatalf("with the memo off: %d days by table, want none", n.Days)
			}
			var wg sync.WaitGroup
			for g := range 3 {
				wg.Go(func() {
					for r := range 3 {
						for i := range bodies {
							b := bodies[(i+g*7+r)%len(bodies)]
							if got, err := query(b); err != nil || got != want[b] {
								t.Errorf("%s:\n got %s (%v)\nwant %s", b, got, err, want[b])
							}
						}
					}
				})
			}
			wg.Wait()
			n := engine.InternStats(e)
			t.Logf("%+v", n)
			if n.Days == 0 || n.Found == 0 {
				t.Errorf("no day was scanned with its values' ids in the table, or no group found by one: %+v", n)
			}
			// The first table is made by the first query.
			if tc.refills && (n.Tables < 3 || n.Stale == 0) || !tc.refills && (n.Tables != 1 || n.Stale != 0) {
				t.Errorf("refills %v: %+v", tc.refills, n)
			}
			if n.Values == 0 {
				t.Fatalf("no value in the table")
			}
			if tc.name == "full" {
				if !n.Full {
					t.Fatalf("the table did not fill: %+v", n)
				}
				if got, err := query(late); err != nil || got != want[late] {
					t.Errorf("%s:\n got %s (%v)\nwant %s", late, got, err, want[late])
				}
				if m := engine.InternStats(e); m.Days != n.Days {
					t.Errorf("a day first met with the table full got ids in it: %+v, then %+v", n, m)
				}
			}
			if err := e.Owner(a.ID).DeleteWebsite(ctx, w.ID); err != nil {
				t.Fatal(err)
			}
			if n := engine.InternStats(e); n.Values != 0 {
				t.Errorf("the website's delete left %d values in the table", n.Values)
			}
		})
	}
}

// TestQueryInternTableRetention checks that retention's drop of days
// empties the table of query values, which may hold theirs.
func TestQueryInternTableRetention(t *testing.T) {
	c := newClock("2024-01-08T00:00:00Z")
	e, _, a, w := soloSite(t, c, engine.SaltDay, noAnswerCache, func(o *engine.Options) { o.Retention = 3 })
	ctx := context.Background()
	for day := 8; day <= 11; day++ {
		c.Set(fmt.Sprintf("2024-01-%02dT10:00:00Z", day))
		if _, err := e.Track(ctx, engine.Hit{URL: fmt.Sprintf("https://example.com/day%d", day), UserAgent: soloUA, Visitor: "v", Website: w.ID}); err != nil {
			t.Fatal(err)
		}
		if err := e.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	q, err := engine.ParseQuery([]byte(`{"site_id":"example.com","date_range":["2024-01-08","2024-01-10"],"metrics":["visitors"],"dimensions":["event:page"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Owner(a.ID).Query(ctx, w.ID, q); err != nil {
		t.Fatal(err)
	}
	if n := engine.InternStats(e); n.Values == 0 {
		t.Fatalf("no value in the table: %+v", n)
	}
	c.Set("2024-01-20T10:00:00Z") // days 8 to 10 are past retention
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if n := engine.InternStats(e); n.Values != 0 {
		t.Errorf("retention's drop left %d values in the table", n.Values)
	}
}

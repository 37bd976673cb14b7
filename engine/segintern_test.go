package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestQueryInternTable checks the engine's table of query values
// (segintern.go): queries by one dimension find each value's group by its
// id in the table, and must answer as with the table unused (memos off),
// with a table that never fills, one that fills now and then, and one so
// small that it fills in every query (each later query starts a new one,
// and days keep the ids of an older table), with queries at once.
func TestQueryInternTable(t *testing.T) {
	// Dimensions whose values are a day's dictionary ids, with and
	// without filters, over ranges that share days.
	var bodies []string
	for _, dr := range []string{`["2024-01-08","2024-01-19"]`, `["2024-01-10","2024-01-14"]`, `["2024-01-19","2024-01-19"]`} {
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
	for _, tc := range []struct {
		name     string
		maxBytes int
		refills  bool // the table fills: later queries make new ones
	}{
		{"large", 1 << 20, false},
		{"fills", 2000, true},
		{"tiny", 200, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer engine.SetInternMaxBytes(engine.SetInternMaxBytes(tc.maxBytes))
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
			query := func(body string) (string, error) {
				q, err := engine.ParseQuery([]byte(body))
				if err != nil {
					return "", err
				}
				res, err := e.Owner(a.ID).Query(ctx, w.ID, q)
				if err != nil {
					return "", err
				}
				b, err := json.Marshal(res.Results)
				return string(b), err
			}
			want := map[string]string{}
			prev := engine.SetDayMemo(false) // no memo: no table
			for _, b := range bodies {
				var err error
				if want[b], err = query(b); err != nil {
					t.Fatalf("%s: %v", b, err)
				}
			}
			engine.SetDayMemo(prev)
			if _, days := engine.InternStats(e); days != 0 {
				t.Fatalf("with the memo off: %d days by table, want none", days)
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
			tables, days := engine.InternStats(e)
			if days == 0 {
				t.Errorf("no day was scanned with its values' ids in the table")
			}
			if tc.refills && tables < 3 || !tc.refills && tables != 1 { // the first made by the first query
				t.Errorf("%d tables made (refills: %v)", tables, tc.refills)
			}
			t.Logf("%d tables, %d days by table", tables, days)
		})
	}
}

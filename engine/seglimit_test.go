package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestQueryGroupLimit checks that every way the scan finds a row's group
// stops at the group limit (MaxQueryGroups, lowered here) with a
// *QueryError naming it, and answers below it: a query by page (countHits,
// with and without a visit filter), by visit dimensions with a hit filter
// (countVisitHits) or without (a visit at a time), by page with a hit
// filter (a hit at a time), and by two dimensions (keysOf); over one
// closed day, and over closed days and today's open one, whose scans are
// merged (merge).
func TestQueryGroupLimit(t *testing.T) {
	c := newClock("2024-03-01T00:00:00Z")
	e, _, a, w := soloSite(t, c, engine.SaltDay, noAnswerCache)
	ctx := context.Background()
	// 3 days (the last one open) of 40 visitors, each entering on a page
	// of their own from a source of their own, then viewing a shared page.
	for day := 1; day <= 3; day++ {
		for v := range 40 {
			c.Set(fmt.Sprintf("2024-03-%02dT10:%02d:00Z", day, v))
			for _, page := range []string{fmt.Sprintf("/entry%d", v), "/shared"} {
				h := engine.Hit{URL: "https://example.com" + page + fmt.Sprintf("?utm_source=s%d", v), UserAgent: soloUA, Visitor: fmt.Sprint("v", v), Website: w.ID}
				if _, err := e.Track(ctx, h); err != nil {
					t.Fatal(err)
				}
			}
		}
		if day < 3 {
			c.Set(fmt.Sprintf("2024-03-%02dT00:00:00Z", day+1))
			if err := e.Snapshot(ctx); err != nil { // closes the day before
				t.Fatal(err)
			}
		}
	}
	query := resultsOf(e, a, w)
	for _, q := range []string{
		`"metrics":["visitors","pageviews"],"dimensions":["event:page"]`,
		`"metrics":["visitors","pageviews"],"dimensions":["event:page"],"filters":[["is_not","visit:source",["none"]]]`,
		`"metrics":["visitors","visits","bounce_rate"],"dimensions":["visit:entry_page"],"filters":[["contains","event:page",["/"]]]`,
		`"metrics":["visitors","visits","bounce_rate"],"dimensions":["visit:source"],"filters":[["is_not","visit:country",["ZZ"]],["contains","event:page",["/"]]]`,
		`"metrics":["visitors","visits"],"dimensions":["visit:source"]`,
		`"metrics":["visitors","pageviews"],"dimensions":["event:page"],"filters":[["contains","event:page",["/"]]]`,
		`"metrics":["visitors"],"dimensions":["visit:source","event:page"]`,
	} {
		for _, dr := range []string{`["2024-03-01","2024-03-01"]`, `["2024-03-01","2024-03-03"]`} {
			body := `{"site_id":"example.com","date_range":` + dr + `,` + q + `}`
			// 40 values a day: below the limit the answer has them all.
			func() {
				defer engine.SetQueryGroupLimit(engine.SetQueryGroupLimit(1000))
				got, err := query(body)
				if err != nil {
					t.Fatalf("%s: %v", body, err)
				}
				var rows []any
				if err := json.Unmarshal([]byte(got), &rows); err != nil || len(rows) < 40 {
					t.Fatalf("%s: %d rows (%v), want at least 40", body, len(rows), err)
				}
			}()
			for _, limit := range []int{1, 10, 39} {
				func() {
					defer engine.SetQueryGroupLimit(engine.SetQueryGroupLimit(limit))
					_, err := query(body)
					var qe *engine.QueryError
					if !errors.As(err, &qe) || qe.Limit != "MaxQueryGroups" {
						t.Fatalf("limit %d: %s: got %v, want the group limit's error", limit, body, err)
					}
				}()
			}
		}
	}
}

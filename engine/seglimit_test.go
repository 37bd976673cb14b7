package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestQueryGroupLimit checks that every way the scan finds a row's group
// stops at the group limit (MaxQueryGroups, lowered here) with a
// *QueryError naming it, and answers below it. Over one closed day the
// queries take each way: by page with a visit filter (countHits), by
// visit dimensions with a hit filter (countVisitHits) or without (a
// visit at a time), by page with or without a hit filter (a hit at a
// time), and by two dimensions (keysOf). Over two closed days whose
// values differ, each below the limit and together above it, two
// workers scan a day each and merge their groups (merge). Over four
// days the open one is scanned first.
func TestQueryGroupLimit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // two workers (segments.ScanParallel)
	c := newClock("2024-03-01T00:00:00Z")
	e, _, a, w := soloSite(t, c, engine.SaltDay, noAnswerCache)
	ctx := context.Background()
	// 4 days (the last one open) of 40 visitors, each entering on a page
	// and from a source of their own, then viewing a shared page. Days 1,
	// 2 and 4 have the same pages and sources; day 3 has its own.
	for day := 1; day <= 4; day++ {
		own := ""
		if day == 3 {
			own = "-3"
		}
		for v := range 40 {
			c.Set(fmt.Sprintf("2024-03-%02dT10:%02d:00Z", day, v))
			for _, page := range []string{fmt.Sprintf("/entry%d%s", v, own), "/shared"} {
				h := engine.Hit{URL: "https://example.com" + page + fmt.Sprintf("?utm_source=s%d%s", v, own), UserAgent: soloUA, Visitor: fmt.Sprint("v", v), Website: w.ID}
				if _, err := e.Track(ctx, h); err != nil {
					t.Fatal(err)
				}
			}
		}
		if day < 4 {
			c.Set(fmt.Sprintf("2024-03-%02dT00:00:00Z", day+1))
			if err := e.Snapshot(ctx); err != nil { // closes the day before
				t.Fatal(err)
			}
		}
	}
	query := resultsOf(e, a, w)
	// answers reports the rows of body under limit, or the group limit's
	// error (nil rows).
	answers := func(body string, limit int) []any {
		t.Helper()
		defer engine.SetQueryGroupLimit(engine.SetQueryGroupLimit(limit))
		got, err := query(body)
		var qe *engine.QueryError
		if errors.As(err, &qe) && qe.Limit == "MaxQueryGroups" {
			return nil
		}
		if err != nil {
			t.Fatalf("limit %d: %s: %v", limit, body, err)
		}
		var rows []any
		if err := json.Unmarshal([]byte(got), &rows); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	for _, q := range []struct {
		body    string
		perDay  int // groups a day
		overall int // groups of days 2 and 3
	}{
		{`"metrics":["visitors","pageviews"],"dimensions":["event:page"]`, 41, 81},
		{`"metrics":["visitors","pageviews"],"dimensions":["event:page"],"filters":[["is_not","visit:source",["none"]]]`, 41, 81},
		{`"metrics":["visitors","visits","bounce_rate"],"dimensions":["visit:entry_page"],"filters":[["contains","event:page",["/"]]]`, 40, 80},
		{`"metrics":["visitors","visits","bounce_rate"],"dimensions":["visit:source"],"filters":[["is_not","visit:country",["ZZ"]],["contains","event:page",["/"]]]`, 40, 80},
		{`"metrics":["visitors","visits"],"dimensions":["visit:source"]`, 40, 80},
		{`"metrics":["visitors","pageviews"],"dimensions":["event:page"],"filters":[["contains","event:page",["/"]]]`, 41, 81},
		{`"metrics":["visitors"],"dimensions":["visit:source","event:page"]`, 80, 160},
	} {
		body := func(from, to int) string {
			return fmt.Sprintf(`{"site_id":"example.com","date_range":["2024-03-%02d","2024-03-%02d"],%s}`, from, to, q.body)
		}
		for _, r := range [][2]int{{1, 1}, {1, 4}} {
			if rows := answers(body(r[0], r[1]), 1000); len(rows) < q.perDay {
				t.Fatalf("%s: %d rows, want at least %d", body(r[0], r[1]), len(rows), q.perDay)
			}
			for _, limit := range []int{1, 10, q.perDay - 1} {
				if rows := answers(body(r[0], r[1]), limit); rows != nil {
					t.Fatalf("limit %d: %s: %d rows, want the group limit's error", limit, body(r[0], r[1]), len(rows))
				}
			}
		}
		// Each day below the limit, the two together above it.
		limit := (q.perDay + q.overall) / 2
		for _, d := range []int{2, 3} {
			if rows := answers(body(d, d), limit); len(rows) != q.perDay {
				t.Fatalf("limit %d: %s: %d rows, want %d", limit, body(d, d), len(rows), q.perDay)
			}
		}
		if rows := answers(body(2, 3), limit); rows != nil {
			t.Fatalf("limit %d: %s: %d rows, want the group limit's error", limit, body(2, 3), len(rows))
		}
		if rows := answers(body(2, 3), q.overall); len(rows) != q.overall {
			t.Fatalf("limit %d: %s: %d rows, want %d", q.overall, body(2, 3), len(rows), q.overall)
		}
	}
}

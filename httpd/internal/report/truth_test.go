package report

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestComposeEqualsQuery checks SPEC §10.2's "one truth" for the mails:
// every figure of a report is what the Stats API v2 answers for the same
// question over the same week, on traffic with query strings on pages
// and a visitor of unknown country. Pages are paths (as event:page) and
// the unknown country is "(none)", as on the statistics pages.
func TestComposeEqualsQuery(t *testing.T) {
	ctx := context.Background()
	clk := newClock("2026-11-16T07:00:00Z")
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	track(t, e, "example.com", []pageview{
		{"2026-11-12T10:00:00Z", "192.168.1.5", "/a?utm_source=news", ""},
		{"2026-11-12T10:01:00Z", "192.168.1.5", "/b?x=1", ""},
		{"2026-11-13T10:00:00Z", "192.168.1.6", "/a?utm_source=news", "https://www.google.com/"},
	})
	first, last := date("2026-11-09"), date("2026-11-15")
	m, err := Compose(ctx, e, w, owner, Weekly, first, "")
	if err != nil {
		t.Fatal(err)
	}
	api := func(from, to engine.Date, q engine.Query) []engine.QueryRow {
		t.Helper()
		q.DateRange = engine.DateRange{FromDay: from, ToDay: to}
		res, err := e.Unscoped().Query(ctx, w.ID, q)
		if err != nil {
			t.Fatal(err)
		}
		return res.Results
	}
	cur := api(first, last, engine.Query{Metrics: []string{"visitors", "pageviews", "visits"}})[0].Metrics
	prev := api(date("2026-11-02"), first-1, engine.Query{Metrics: []string{"visitors", "pageviews", "visits"}})[0].Metrics
	for i, name := range []string{"Visitors", "Pageviews", "Visits"} {
		re := regexp.MustCompile(fmt.Sprintf(`(?m)^%s +%d +\S+ +previous week: %d$`, name, cur[i], prev[i]))
		if !re.MatchString(m.Text) {
			t.Errorf("no line %s: %d (previous %d) in\n%s", name, cur[i], prev[i], m.Text)
		}
	}
	pageviews := engine.Filter{Op: "is", Dimension: "event:name", Clauses: []string{"pageview"}}
	for _, tc := range []struct {
		title string
		q     engine.Query
	}{
		{"Top pages (pageviews)", engine.Query{Metrics: []string{"pageviews"}, Dimensions: []string{"event:page"}, Filters: []engine.Filter{pageviews}}},
		{"Top sources (visits)", engine.Query{Metrics: []string{"visits"}, Dimensions: []string{"visit:source"}}},
		{"Top countries (visitors)", engine.Query{Metrics: []string{"visitors"}, Dimensions: []string{"visit:country_name"}}},
	} {
		tc.q.Pagination = engine.Pagination{Limit: topN}
		rows := api(first, last, tc.q)
		var lines []string
		width := 0
		for _, r := range rows {
			width = max(width, len(fmt.Sprint(r.Metrics[0])))
		}
		for _, r := range rows {
			v := r.Dimensions[0].(string)
			if v == "" {
				v = "(none)"
			}
			lines = append(lines, fmt.Sprintf("  %*d  %s", width, r.Metrics[0], v))
		}
		want := tc.title + "\n" + strings.Join(lines, "\n") + "\n\n"
		if !strings.Contains(m.Text, want) {
			t.Errorf("the report lacks\n%s\nin\n%s", want, m.Text)
		}
	}
	// Written out by hand: the page without its query, the unknown
	// country as the pages name it.
	mustHave := []string{"  4  /a\n", "  2  (none)\n"}
	for _, s := range mustHave {
		if !strings.Contains(m.Text, s) {
			t.Errorf("the report lacks %q:\n%s", s, m.Text)
		}
	}
	if strings.Contains(m.Text, "utm_source") || strings.Contains(m.Text, "Unknown") {
		t.Errorf("the report shows a page with its query or an \"Unknown\" country:\n%s", m.Text)
	}
}

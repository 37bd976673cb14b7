package conformance

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// checkSite asks Stats API v2 about the days from..to of a website and
// compares each answer with the model's. With timed, the hits' times are
// the model's (imports), so visit durations are checked too, and their
// countries are known.
func checkSite(t *testing.T, srv *server, domain, from, to string, m model, timed bool) {
	t.Helper()
	q := func(metrics []string, dims []string, filters ...[]any) map[string]any {
		body := map[string]any{"site_id": domain, "date_range": []string{from, to}, "metrics": metrics}
		if len(dims) > 0 {
			body["dimensions"] = dims
		}
		if len(filters) > 0 {
			body["filters"] = filters
		}
		return body
	}
	isPageview := []any{"is", "event:name", []string{"pageview"}}
	custom := m.filter(func(h hit) bool { return h.name != "pageview" })
	prop := func(key string) func(hit) (string, bool) {
		return func(h hit) (string, bool) {
			if v, ok := h.props[key]; ok {
				return v, true
			}
			return "(none)", true
		}
	}
	goal := func(name string) func(hit) bool { return func(h hit) bool { return h.name == name } }
	visitorsOnly := func(g model) []any { return []any{float64(g.visitors())} }

	tests := []struct {
		name  string
		query map[string]any
		want  map[string][]any
	}{
		{"aggregate", q([]string{"visitors", "visits", "pageviews", "events", "bounce_rate"}, nil),
			map[string][]any{"": m.aggregate()[:5]}},
		{"pages", q([]string{"visitors", "pageviews"}, []string{"event:page"}, isPageview),
			m.filter(goal("pageview")).breakdown(func(h hit) (string, bool) { return h.page, true },
				func(g model) []any { return []any{float64(g.visitors()), float64(len(g))} })},
		{"names", q([]string{"visitors", "events"}, []string{"event:name"}),
			m.breakdown(func(h hit) (string, bool) { return h.name, true }, visitorsEvents)},
		{"goals", q([]string{"visitors", "events"}, []string{"event:goal"}),
			custom.breakdown(func(h hit) (string, bool) { return h.name, true }, visitorsEvents)},
		{"browsers", q([]string{"visitors"}, []string{"visit:browser"}),
			m.breakdown(func(h hit) (string, bool) { return h.browser, true }, visitorsOnly)},
		{"systems", q([]string{"visitors"}, []string{"visit:os"}),
			m.breakdown(func(h hit) (string, bool) { return h.os, true }, visitorsOnly)},
	}
	if timed {
		tests = append(tests, struct {
			name  string
			query map[string]any
			want  map[string][]any
		}{"aggregate with duration", q([]string{"visitors", "visits", "pageviews", "events", "bounce_rate", "visit_duration"}, nil),
			map[string][]any{"": m.aggregate()}}, struct {
			name  string
			query map[string]any
			want  map[string][]any
		}{"countries", q([]string{"visitors"}, []string{"visit:country"}),
			m.breakdown(func(h hit) (string, bool) { return h.country, true }, visitorsOnly)})
	}
	// Each goal alone, and the props its events carry.
	for _, g := range []string{"Outbound Link: Click", "File Download", "404", "Form: Submission", "Signup", "Newsletter Signup", "Video Autoplay"} {
		gm := m.filter(goal(g))
		if len(gm) == 0 {
			continue
		}
		isGoal := []any{"is", "event:goal", []string{g}}
		tests = append(tests, struct {
			name  string
			query map[string]any
			want  map[string][]any
		}{"goal " + g, q([]string{"visitors", "events"}, nil, isGoal), map[string][]any{"": visitorsEvents(gm)}})
		for key := range gm[0].props {
			tests = append(tests, struct {
				name  string
				query map[string]any
				want  map[string][]any
			}{"goal " + g + " by " + key, q([]string{"visitors", "events"}, []string{"event:props:" + key}, isGoal),
				gm.breakdown(prop(key), visitorsEvents)})
		}
	}
	// Props over every event, "(none)" for the events without.
	for _, key := range []string{"plan", "url", "section"} {
		tests = append(tests, struct {
			name  string
			query map[string]any
			want  map[string][]any
		}{"props " + key, q([]string{"visitors", "events"}, []string{"event:props:" + key}), m.breakdown(prop(key), visitorsEvents)})
	}
	for _, tc := range tests {
		got := srv.query(t, tc.query)
		if got == nil {
			continue // reported
		}
		if diff := gocmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", domain, tc.name, diff)
		}
	}
}

// checkRevenue asks for the revenue of the Purchase goal (a revenue goal),
// in all and by plan, over the days from..to.
func checkRevenue(t *testing.T, srv *server, domain, from, to string, m model) {
	t.Helper()
	purchases := m.filter(func(h hit) bool { return h.name == "Purchase" })
	filters := [][]any{{"is", "event:goal", []string{"Purchase"}}}
	got := srv.query(t, map[string]any{"site_id": domain, "date_range": []string{from, to},
		"metrics": []string{"visitors", "events", "total_revenue"}, "filters": filters})
	if got == nil {
		return // reported
	}
	want := map[string][]any{"": {float64(purchases.visitors()), float64(len(purchases)), purchases.revenue()}}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("%s revenue of Purchase (-want +got):\n%s", domain, diff)
	}
	got = srv.query(t, map[string]any{"site_id": domain, "date_range": []string{from, to},
		"metrics": []string{"events", "total_revenue"}, "filters": filters, "dimensions": []string{"event:props:plan"}})
	if got == nil {
		return
	}
	want = purchases.breakdown(func(h hit) (string, bool) { return h.props["plan"], true },
		func(g model) []any { return []any{float64(len(g)), g.revenue()} })
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("%s revenue of Purchase by plan (-want +got):\n%s", domain, diff)
	}
}

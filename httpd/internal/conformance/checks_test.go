package conformance

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// check is one Stats API v2 question and the model's answer, in the shape
// server.query returns.
type check struct {
	name  string
	query map[string]any
	want  map[string][]any
}

// v2 builds the body of a v2 query about domain over the days from..to.
type v2 struct{ domain, from, to string }

func (v v2) q(metrics []string, dims []string, filters ...[]any) map[string]any {
	body := map[string]any{"site_id": v.domain, "date_range": []string{v.from, v.to}, "metrics": metrics}
	if len(dims) > 0 {
		body["dimensions"] = dims
	}
	if len(filters) > 0 {
		body["filters"] = filters
	}
	return body
}

// Keys and metrics of the model's breakdowns.
var (
	byPage    = func(h hit) (string, bool) { return h.page, true }
	byName    = func(h hit) (string, bool) { return h.name, true }
	byBrowser = func(h hit) (string, bool) { return h.browser, true }
	byOS      = func(h hit) (string, bool) { return h.os, true }
	byCountry = func(h hit) (string, bool) { return h.country, true }
)

func visitorsOnly(g model) []any { return []any{float64(g.visitors())} }
func visitorsPageviews(g model) []any {
	return []any{float64(g.visitors()), float64(g.count("pageview"))}
}

// byProp keys a hit by a custom property, "(none)" when it has none, as
// Plausible's event:props dimension does.
func byProp(key string) func(hit) (string, bool) {
	return func(h hit) (string, bool) {
		if v, ok := h.props[key]; ok {
			return v, true
		}
		return "(none)", true
	}
}

func named(name string) func(hit) bool { return func(h hit) bool { return h.name == name } }

// checkSite asks Stats API v2 about the days from..to of a website and
// compares each answer with the model's. With timed, the hits' times are
// the model's (imports), so visit durations are checked too, and their
// countries are known.
func checkSite(t *testing.T, srv *server, domain, from, to string, m model, timed bool) {
	t.Helper()
	v := v2{domain, from, to}
	isPageview := []any{"is", "event:name", []string{"pageview"}}
	custom := m.filter(func(h hit) bool { return h.name != "pageview" })
	checks := []check{
		{"aggregate", v.q([]string{"visitors", "visits", "pageviews", "events", "bounce_rate"}, nil),
			map[string][]any{"": m.aggregate()[:5]}},
		{"pages", v.q([]string{"visitors", "pageviews"}, []string{"event:page"}, isPageview),
			m.filter(named("pageview")).breakdown(byPage, visitorsPageviews)},
		{"names", v.q([]string{"visitors", "events"}, []string{"event:name"}), m.breakdown(byName, visitorsEvents)},
		{"goals", v.q([]string{"visitors", "events"}, []string{"event:goal"}), custom.breakdown(byName, visitorsEvents)},
		{"browsers", v.q([]string{"visitors"}, []string{"visit:browser"}), m.breakdown(byBrowser, visitorsOnly)},
		{"systems", v.q([]string{"visitors"}, []string{"visit:os"}), m.breakdown(byOS, visitorsOnly)},
	}
	if timed {
		checks = append(checks,
			check{"aggregate with duration", v.q([]string{"visitors", "visits", "pageviews", "events", "bounce_rate", "visit_duration"}, nil),
				map[string][]any{"": m.aggregate()}},
			check{"countries", v.q([]string{"visitors"}, []string{"visit:country"}), m.breakdown(byCountry, visitorsOnly)})
	}
	// Each goal alone, and by each prop its events carry.
	for _, g := range []string{"Outbound Link: Click", "File Download", "404", "Form: Submission", "Signup", "Newsletter Signup", "Video Autoplay"} {
		gm := m.filter(named(g))
		if len(gm) == 0 {
			continue
		}
		isGoal := []any{"is", "event:goal", []string{g}}
		checks = append(checks, check{"goal " + g, v.q([]string{"visitors", "events"}, nil, isGoal), map[string][]any{"": visitorsEvents(gm)}})
		for key := range gm[0].props {
			checks = append(checks, check{"goal " + g + " by " + key,
				v.q([]string{"visitors", "events"}, []string{"event:props:" + key}, isGoal), gm.breakdown(byProp(key), visitorsEvents)})
		}
	}
	// Props over every event, "(none)" for the events without.
	for _, key := range []string{"plan", "url", "section"} {
		checks = append(checks, check{"props " + key, v.q([]string{"visitors", "events"}, []string{"event:props:" + key}),
			m.breakdown(byProp(key), visitorsEvents)})
	}
	for _, c := range checks {
		got := srv.query(t, c.query)
		if got == nil {
			continue // reported
		}
		if diff := gocmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", domain, c.name, diff)
		}
	}
}

// checkRevenue asks for the revenue of the Purchase goal (a revenue goal),
// in all and by plan, over the days from..to.
func checkRevenue(t *testing.T, srv *server, domain, from, to string, m model) {
	t.Helper()
	v := v2{domain, from, to}
	purchases := m.filter(named("Purchase"))
	isGoal := []any{"is", "event:goal", []string{"Purchase"}}
	checks := []check{
		{"revenue of Purchase", v.q([]string{"visitors", "events", "total_revenue"}, nil, isGoal),
			map[string][]any{"": {float64(purchases.visitors()), float64(len(purchases)), purchases.revenue()}}},
		{"revenue of Purchase by plan", v.q([]string{"events", "total_revenue"}, []string{"event:props:plan"}, isGoal),
			purchases.breakdown(byProp("plan"), func(g model) []any { return []any{float64(len(g)), g.revenue()} })},
	}
	for _, c := range checks {
		if got := srv.query(t, c.query); got != nil {
			if diff := gocmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", domain, c.name, diff)
			}
		}
	}
}

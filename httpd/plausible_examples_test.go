package httpd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd/pages"
)

// plExample is one worked example of plausible-api.md §9, sent through
// POST /api/v2/query.
type plExample struct {
	name  string
	tz    string // website 1's time zone; "" UTC
	goals []engine.Goal
	hits  []engine.Hit
	now   string // the clock; "" means 2021-01-10 12:00
	query string // the body without site_id
	// results and meta are the expected JSON; an empty meta is not checked.
	results, meta string
	echo          string // a part the echoed query must hold
}

func plExamples() []plExample {
	signup := []engine.Goal{{EventName: "Signup"}}
	basic := `"metrics":["pageviews","visitors","bounce_rate","visit_duration"],"date_range":"all"`
	f1 := []engine.Hit{
		plPV("2021-01-01 00:00", "U1", "/", "https://www.google.com/"),
		plPV("2021-01-01 00:00:01", "U2", "/"),
		plPV("2021-01-01 00:25", "U1", "/"),
	}
	f2 := []engine.Hit{
		plPV("2021-01-01 00:00", "U1", "/"), plPV("2021-01-01 00:00:01", "U2", "/"),
		plPV("2021-01-01 00:00:02", "U3", "/blogpost"), plPV("2021-01-01 00:25", "U1", "/blogpost"),
	}
	var ktm []engine.Hit
	for i, m := range []string{"05:00", "05:15", "05:30", "05:45", "06:00", "06:15", "06:30"} {
		ktm = append(ktm, plPV("2021-01-02 "+m, fmt.Sprint("K", i), "/"))
	}
	var eight []engine.Hit
	for i := 1; i <= 8; i++ {
		eight = append(eight, plPV(fmt.Sprintf("2021-01-01 00:0%d", i), fmt.Sprint("P", i), fmt.Sprint("/", i)))
	}
	var purchases []engine.Hit
	for i, p := range [][]string{{"cost", "16"}, {"cost", "16"}, {"cost", "16"}, {"cost", "14"}, {"cost", "14"}, {}} {
		who := fmt.Sprint("B", i)
		purchases = append(purchases, plPV(fmt.Sprintf("2021-01-01 01:0%d", i), who, "/shop"),
			plEV(fmt.Sprintf("2021-01-01 01:0%d:30", i), who, "Purchase", "/shop", p...))
	}
	four := []engine.Hit{
		plPV("2021-01-01 00:00", "U1", "/"), plEV("2021-01-01 00:01", "U1", "Signup", "/"),
		plPV("2021-01-01 00:00:01", "U2", "/"), plPV("2021-01-01 00:00:02", "U3", "/"), plPV("2021-01-01 00:00:03", "U4", "/"),
	}
	var hours []string
	for h := range 24 {
		hours = append(hours, fmt.Sprintf(`"2021-01-01 %02d:00:00"`, h))
	}
	return []plExample{
		{name: "01 all basic metrics", hits: f1,
			query:   `"metrics":["pageviews","visits","views_per_visit","visitors","bounce_rate","visit_duration"],"date_range":"all"`,
			results: `[{"dimensions":[],"metrics":[3,2,1.5,2,50,750]}]`},
		{name: "02 views_per_visit rounding",
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "/"), plPV("2021-01-01 00:01", "U1", "/a"),
				plPV("2021-01-01 00:00:01", "U2", "/"), plPV("2021-01-01 00:01:01", "U2", "/a"), plPV("2021-01-01 00:00:02", "U3", "/")},
			query: `"metrics":["views_per_visit"],"date_range":"all"`, results: `[{"dimensions":[],"metrics":[1.67]}]`},
		{name: "03 visit filter", hits: f1, query: basic + `,"filters":[["is","visit:source",["Google"]]]`,
			results: `[{"dimensions":[],"metrics":[2,1,0,1500]}]`},
		{name: "04 page filter", hits: f2, query: basic + `,"filters":[["is","event:page",["/blogpost"]]]`,
			results: `[{"dimensions":[],"metrics":[2,2,100,750]}]`},
		{name: "05 blank source label",
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "/", "https://www.google.com/"),
				plPV("2021-01-01 00:00:01", "U2", "/", "https://www.google.com/"), plPV("2021-01-01 00:00:02", "U3", "/")},
			query:   `"metrics":["visitors"],"date_range":"all","dimensions":["visit:source"]`,
			results: `[{"dimensions":["Google"],"metrics":[2]},{"dimensions":["Direct / None"],"metrics":[1]}]`},
		{name: "05b blank channel label",
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "/", "https://www.google.com/"),
				plPV("2021-01-01 00:00:01", "U2", "/", "https://www.google.com/"), plPV("2021-01-01 00:00:02", "U3", "/")},
			query:   `"metrics":["visitors"],"date_range":"all","dimensions":["visit:channel"]`,
			results: `[{"dimensions":["Organic Search"],"metrics":[2]},{"dimensions":["Direct"],"metrics":[1]}]`},
		{name: "06 percentage",
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "/?utm_medium=A"), plPV("2021-01-01 00:00:01", "U2", "/?utm_medium=A"),
				plPV("2021-01-01 00:00:02", "U3", "/?utm_medium=A"), plPV("2021-01-01 00:00:03", "U4", "/?utm_medium=B"),
				plPV("2021-01-01 00:00:04", "U5", "/?utm_medium=B"), plPV("2021-01-01 00:00:05", "U6", "/")},
			query:   `"metrics":["visitors","percentage"],"date_range":"all","dimensions":["visit:utm_medium"]`,
			results: `[{"dimensions":["A"],"metrics":[3,50.0]},{"dimensions":["B"],"metrics":[2,33.3]},{"dimensions":["(not set)"],"metrics":[1,16.7]}]`},
		{name: "07 hourly with labels",
			hits:    []engine.Hit{plPV("2021-01-01 00:00", "U1", "/"), plPV("2021-01-01 00:10", "U1", "/a"), plPV("2021-01-01 23:59", "U2", "/")},
			query:   `"metrics":["visitors","pageviews","visits","visit_duration","bounce_rate"],"date_range":["2021-01-01","2021-01-01"],"dimensions":["time:hour"],"include":{"time_labels":true}`,
			results: `[{"dimensions":["2021-01-01 00:00:00"],"metrics":[1,2,1,600,0]},{"dimensions":["2021-01-01 23:00:00"],"metrics":[1,1,1,0,100]}]`,
			meta:    `{"time_labels":[` + strings.Join(hours, ",") + `]}`},
		{name: "08 time resolves to day",
			hits:    []engine.Hit{plPV("2021-01-01 10:00", "U1", "/"), plPV("2021-01-07 10:00", "U2", "/")},
			query:   `"metrics":["visitors"],"date_range":["2021-01-01","2021-01-07"],"dimensions":["time"],"include":{"time_labels":true}`,
			results: `[{"dimensions":["2021-01-01"],"metrics":[1]},{"dimensions":["2021-01-07"],"metrics":[1]}]`,
			meta:    `{"time_labels":["2021-01-01","2021-01-02","2021-01-03","2021-01-04","2021-01-05","2021-01-06","2021-01-07"]}`,
			echo:    `"dimensions":["time:day"]`},
		{name: "09 week clamping",
			hits:    []engine.Hit{plPV("2021-01-01 10:00", "U1", "/"), plPV("2021-01-03 10:00", "U2", "/"), plPV("2021-01-07 10:00", "U3", "/")},
			query:   `"metrics":["visitors"],"date_range":["2020-12-20","2021-01-07"],"dimensions":["time:week"],"include":{"time_labels":true}`,
			results: `[{"dimensions":["2020-12-28"],"metrics":[2]},{"dimensions":["2021-01-04"],"metrics":[1]}]`,
			meta:    `{"time_labels":["2020-12-20","2020-12-21","2020-12-28","2021-01-04"]}`},
		{name: "10 time zone bucketing", tz: "Asia/Kathmandu", hits: ktm,
			query:   `"metrics":["visits"],"date_range":["2021-01-02","2021-01-02"],"dimensions":["time:hour"]`,
			results: `[{"dimensions":["2021-01-02 10:00:00"],"metrics":[1]},{"dimensions":["2021-01-02 11:00:00"],"metrics":[4]},{"dimensions":["2021-01-02 12:00:00"],"metrics":[2]}]`},
		{name: "11 month buckets",
			hits: []engine.Hit{plPV("2020-12-01 10:00", "U1", "/"), plPV("2020-12-01 10:05", "U1", "/a"),
				plPV("2021-01-01 10:00", "U2", "/"), plPV("2021-01-02 10:00", "U3", "/")},
			query:   `"metrics":["pageviews","visitors","bounce_rate","visit_duration"],"date_range":["2020-12-01","2021-01-02"],"dimensions":["time:month"]`,
			results: `[{"dimensions":["2020-12-01"],"metrics":[2,1,0,300]},{"dimensions":["2021-01-01"],"metrics":[2,2,100,0]}]`},
		{name: "12a event goal", goals: signup,
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "/"), plEV("2021-01-01 00:01", "U1", "Signup", "/"),
				plEV("2021-01-01 00:02", "U1", "Signup", "/"), plPV("2021-01-01 00:00:01", "U2", "/"),
				plEV("2021-01-01 00:01:01", "U2", "Signup", "/"), plPV("2021-01-01 00:00:02", "U3", "/"),
				plEV("2021-01-01 00:01:02", "U3", "Unconfigured", "/")},
			query:   `"metrics":["visitors","events"],"date_range":"all","filters":[["is","event:goal",["Signup"]]]`,
			results: `[{"dimensions":[],"metrics":[2,3]}]`},
		{name: "12b pageview goal", goals: []engine.Goal{{PagePath: "/blog**"}},
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "/blog/post-1"), plPV("2021-01-01 00:00:01", "U2", "/blog/post-2"),
				plPV("2021-01-01 00:01", "U2", "/blog"), plPV("2021-01-01 00:00:02", "U3", "/")},
			query:   `"metrics":["visitors","pageviews"],"date_range":"all","filters":[["is","event:goal",["Visit /blog**"]]]`,
			results: `[{"dimensions":[],"metrics":[2,3]}]`},
		{name: "13a conversion rate", goals: signup, hits: four,
			query:   `"metrics":["visitors","conversion_rate"],"date_range":"all","filters":[["is","event:goal",["Signup"]]]`,
			results: `[{"dimensions":[],"metrics":[1,25.0]}]`},
		{name: "13b conversion rate by goal", goals: signup, hits: four,
			query:   `"metrics":["visitors","conversion_rate"],"date_range":"all","dimensions":["event:goal"]`,
			results: `[{"dimensions":["Signup"],"metrics":[1,25.0]}]`},
		{name: "14 goal contains",
			goals: []engine.Goal{{EventName: "onboarding_1", DisplayName: "Onboarding conversion: Step 1"},
				{EventName: "onboarding_2", DisplayName: "Onboarding conversion: Step 2"}, {PagePath: "/conversion"}, {EventName: "Signup"}},
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "/"), plEV("2021-01-01 00:01", "U1", "onboarding_1", "/"),
				plEV("2021-01-01 00:02", "U1", "onboarding_2", "/"), plEV("2021-01-01 00:03", "U1", "Signup", "/"),
				plPV("2021-01-01 00:00:01", "U2", "/"), plEV("2021-01-01 00:01:01", "U2", "onboarding_1", "/"),
				plPV("2021-01-01 00:00:02", "U3", "/conversion")},
			query:   `"metrics":["visitors"],"date_range":"all","dimensions":["event:goal"],"filters":[["contains","event:goal",["conversion"]]]`,
			results: `[{"dimensions":["Onboarding conversion: Step 1"],"metrics":[2]},{"dimensions":["Onboarding conversion: Step 2"],"metrics":[1]},{"dimensions":["Visit /conversion"],"metrics":[1]}]`},
		{name: "15 props with (none)", hits: purchases,
			query:   `"metrics":["visitors"],"date_range":"all","dimensions":["event:props:cost"],"filters":[["is","event:name",["Purchase"]]]`,
			results: `[{"dimensions":["16"],"metrics":[3]},{"dimensions":["14"],"metrics":[2]},{"dimensions":["(none)"],"metrics":[1]}]`},
		{name: "16 session metrics by page",
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "/"), plPV("2021-01-01 00:10", "U1", "/plausible.io"),
				plPV("2021-01-01 00:00:01", "U2", "/"), plPV("2021-01-01 00:00:02", "U3", "/plausible.io")},
			query:   `"metrics":["visitors","visits","pageviews","events","bounce_rate","visit_duration"],"date_range":"all","dimensions":["event:page"]`,
			results: `[{"dimensions":["/"],"metrics":[2,2,2,2,50,300]},{"dimensions":["/plausible.io"],"metrics":[2,2,2,2,100,0]}]`},
		{name: "17a pagination", hits: eight,
			query:   `"metrics":["visitors"],"date_range":"all","dimensions":["event:page"],"order_by":[["event:page","asc"]],"include":{"total_rows":true},"pagination":{"limit":3,"offset":3}`,
			results: `[{"dimensions":["/4"],"metrics":[1]},{"dimensions":["/5"],"metrics":[1]},{"dimensions":["/6"],"metrics":[1]}]`,
			meta:    `{"total_rows":8}`},
		{name: "17b past the end", hits: eight,
			query:   `"metrics":["visitors"],"date_range":"all","dimensions":["event:page"],"order_by":[["event:page","asc"]],"include":{"total_rows":true},"pagination":{"limit":3,"offset":9}`,
			results: `[]`, meta: `{"total_rows":8}`},
		{name: "19 behavioural filter", goals: signup,
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "/pricing"), plEV("2021-01-01 00:01", "U1", "Signup", "/"),
				plPV("2021-01-01 00:00:01", "U2", "/"), plEV("2021-01-01 00:01:01", "U2", "Signup", "/"),
				plPV("2021-01-01 00:00:02", "U3", "/pricing")},
			query:   `"metrics":["visitors","events"],"date_range":"all","filters":[["is","event:goal",["Signup"]],["has_done",["is","event:page",["/pricing"]]]]`,
			results: `[{"dimensions":[],"metrics":[1,1]}]`},
		{name: "20 hostname isolation",
			hits: []engine.Hit{plPV("2021-01-01 00:00", "U1", "https://two.example.com/?utm_campaign=ad"),
				plPV("2021-01-01 00:05", "U1", "https://one.example.com/")},
			query:   `"metrics":["visitors"],"date_range":"all","dimensions":["visit:utm_campaign"],"filters":[["is","event:hostname",["one.example.com"]]]`,
			results: `[]`},
		{name: "21 echo of 7d", now: "2026-07-24 10:00",
			hits:    []engine.Hit{plPV("2026-07-20 10:00", "U1", "/"), plPV("2026-07-24 09:00", "U2", "/")},
			query:   `"metrics":["visitors"],"date_range":"7d"`,
			results: `[{"dimensions":[],"metrics":[1]}]`,
			echo:    `"date_range":["2026-07-17T00:00:00+00:00","2026-07-23T23:59:59+00:00"]`},
		{name: "22 include imports", hits: f1,
			query:   `"metrics":["visitors"],"date_range":"all","include":{"imports":true}`,
			results: `[{"dimensions":[],"metrics":[2]}]`, meta: `{"imports_included":false,"imports_skip_reason":"no_imported_data"}`},
	}
}

// plExampleFixture is a fixture whose website 1 holds x's goals and hits.
func plExampleFixture(t *testing.T, x *plExample) *fixture {
	f := newFixture(t, nil)
	now := plTime("2021-01-10 12:00")
	if x.now != "" {
		now = plTime(x.now)
	}
	f.clock.mu.Lock()
	f.clock.t = now
	f.clock.mu.Unlock()
	if x.tz != "" {
		if _, err := f.e.Owner(f.aliceID).UpdateWebsite(context.Background(), 1, engine.WebsiteInput{Timezone: &x.tz}); err != nil {
			t.Fatal(err)
		}
	}
	f.track(t, x.goals, x.hits...)
	return f
}

// TestPlausibleExamples runs the worked examples of plausible-api.md §9
// through HTTP: the results and meta are compared as JSON values (and a
// difference in how numbers are written is logged), the echo as text. Each
// answer's echoed query, posted back, gives the same answer.
func TestPlausibleExamples(t *testing.T) {
	for _, x := range plExamples() {
		t.Run(x.name, func(t *testing.T) {
			f := plExampleFixture(t, &x)
			body := `{"site_id":"example.com",` + x.query + `}`
			w := f.do(request{method: "POST", path: "/api/v2/query", key: f.alice, ctype: "application/json", body: body})
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			var got struct {
				Results, Meta, Query json.RawMessage
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(jsonValue(t, x.results), jsonValue(t, string(got.Results))); diff != "" {
				t.Errorf("results mismatch (-want +got):\n%s", diff)
			}
			if want, got := compactJSON(t, x.results), compactJSON(t, string(got.Results)); want != got {
				// Equal numbers, written differently: the engine writes a
				// float metric without its decimal point (50 for 50.0).
				t.Logf("results are not Plausible's bytes:\nwant %s\ngot  %s", want, got)
			}
			if x.meta != "" {
				if diff := cmp.Diff(jsonValue(t, x.meta), jsonValue(t, string(got.Meta))); diff != "" {
					t.Errorf("meta mismatch (-want +got):\n%s", diff)
				}
			}
			if x.echo != "" && !strings.Contains(string(got.Query), x.echo) {
				t.Errorf("echoed query %s lacks %s", got.Query, x.echo)
			}
			again := f.do(request{method: "POST", path: "/api/v2/query", key: f.alice, ctype: "application/json", body: string(got.Query)})
			if diff := cmp.Diff(w.Body.String(), again.Body.String()); diff != "" {
				t.Errorf("posting the echo back mismatch (-first +echo):\n%s", diff)
			}
		})
	}
}

// jsonValue decodes s; numbers are float64, so 50 and 50.0 are equal.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return b.String()
}

// TestPlausibleQueryProperty sends random queries, valid and not, to POST
// /api/v2/query and checks that the answer is exactly Owner.Query's for the
// same body: its JSON for a result, {"error": msg} for a *QueryError. The
// HTTP layer adds only shape.
func TestPlausibleQueryProperty(t *testing.T) {
	f := newFixture(t, nil)
	f.plSeed(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	metrics := []string{"visitors", "visits", "pageviews", "events", "bounce_rate", "visit_duration", "views_per_visit", "percentage", "conversion_rate"}
	dims := []string{"event:page", "event:name", "event:goal", "visit:source", "visit:browser", "visit:utm_source", "visit:entry_page", "event:props:plan", "time:day", "time:hour", "time"}
	ranges := []string{`"7d"`, `"30d"`, `"day"`, `"month"`, `"all"`, `"6mo"`, `["2026-11-13","2026-11-21"]`, `["2026-11-20T08:00:00+00:00","2026-11-20T09:15:00+00:00"]`}
	leaves := []string{`["is","event:page",["/","/blog/a"]]`, `["contains","event:page",["blog"]]`, `["is_not","visit:source",["Google"]]`,
		`["matches","event:page",["^/b"]]`, `["is","event:goal",["Signup"]]`, `["is","visit:browser",["firefox"],{"case_sensitive":false}]`,
		`["has_done",["is","event:name",["Signup"]]]`, `["not",["is","visit:utm_source",["news"]]]`, `["is","event:props:plan",["pro","(none)"]]`}
	owner := f.e.Owner(f.aliceID)
	for i := range 300 {
		var parts []string
		ms := rng.Perm(len(metrics))[:1+rng.IntN(3)]
		var mnames []string
		for _, m := range ms {
			mnames = append(mnames, `"`+metrics[m]+`"`)
		}
		parts = append(parts, `"site_id":"example.com"`, `"metrics":[`+strings.Join(mnames, ",")+`]`, `"date_range":`+pick(ranges))
		if rng.IntN(2) == 0 {
			ds := rng.Perm(len(dims))[:1+rng.IntN(2)]
			var dn []string
			for _, d := range ds {
				dn = append(dn, `"`+dims[d]+`"`)
			}
			parts = append(parts, `"dimensions":[`+strings.Join(dn, ",")+`]`)
		}
		if n := rng.IntN(3); n > 0 {
			var fs []string
			for range n {
				fs = append(fs, pick(leaves))
			}
			parts = append(parts, `"filters":[`+strings.Join(fs, ",")+`]`)
		}
		if rng.IntN(3) == 0 {
			parts = append(parts, `"include":{"total_rows":true}`, fmt.Sprintf(`"pagination":{"limit":%d,"offset":%d}`, 1+rng.IntN(3), rng.IntN(3)))
		}
		body := "{" + strings.Join(parts, ",") + "}"
		w := f.do(request{method: "POST", path: "/api/v2/query", key: f.alice, ctype: "application/json", body: body})
		var want []byte
		q, err := engine.ParseQuery([]byte(body))
		var res engine.QueryResult
		if err == nil {
			res, err = owner.Query(context.Background(), 1, q)
		}
		wantCode := http.StatusOK
		if err != nil {
			var qe *engine.QueryError
			if !errorsAs(err, &qe) {
				t.Fatalf("query %d %s: %v", i, body, err)
			}
			wantCode = http.StatusBadRequest
			want, _ = json.Marshal(plausibleErrorBody{Error: qe.Msg})
		} else {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(res); err != nil {
				t.Fatal(err)
			}
			want = bytes.TrimSpace(b.Bytes())
		}
		if w.Code != wantCode || !bytes.Equal(bytes.TrimSpace(w.Body.Bytes()), want) {
			t.Fatalf("query %d %s:\nHTTP %d %s\nwant %d %s", i, body, w.Code, w.Body, wantCode, want)
		}
	}
}

// TestQuerySchema checks that the served schema is JSON whose metric and
// dimension lists are the engine's.
func TestQuerySchema(t *testing.T) {
	f := newFixture(t, nil)
	w := f.do(request{method: "GET", path: "/api/docs/query/schema.json"})
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/schema+json" {
		t.Fatalf("status %d, Content-Type %q", w.Code, w.Header().Get("Content-Type"))
	}
	var s struct {
		Defs map[string]struct {
			Enum []string `json:"enum"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(engine.QueryMetricNames(), s.Defs["metric"].Enum); diff != "" {
		t.Errorf("metrics mismatch (-engine +schema):\n%s", diff)
	}
	dims := append(append(s.Defs["simple_dimension"].Enum, "event:goal"), s.Defs["time_dimension"].Enum...)
	if diff := cmp.Diff(engine.QueryDimensionNames(), dims); diff != "" {
		t.Errorf("dimensions mismatch (-engine +schema):\n%s", diff)
	}
}

// TestShareLink: the shared link of a private website opens its overview,
// and its cookie the pages under /stats/<domain>; a wrong secret, another
// website's secret and no secret are the 404 of an unknown domain.
func TestShareLink(t *testing.T) {
	f := newFixture(t, nil)
	f.plSeed(t)
	w := f.do(request{method: "PUT", path: "/api/v1/sites/shared-links", key: f.alice, ctype: "application/json",
		body: `{"site_id":"example.com","name":"Press"}`})
	var link struct{ URL string }
	if err := json.Unmarshal(w.Body.Bytes(), &link); err != nil || w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	path := strings.TrimPrefix(link.URL, "http://example.com")
	other, err := pages.ShareAuth(context.Background(), f.e, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want int
	}{
		{"/stats/example.com", http.StatusNotFound}, // privacy 1: owner only
		{path, http.StatusOK},
		{"/share/example.com?auth=" + other, http.StatusNotFound},
		{"/share/example.com?auth=x", http.StatusNotFound},
		{"/share/example.com", http.StatusNotFound},
		{"/share/nowhere.example?auth=x", http.StatusNotFound},
	} {
		if w := f.do(request{method: "GET", path: tt.path}); w.Code != tt.want {
			t.Errorf("GET %s: status %d, want %d", tt.path, w.Code, tt.want)
		}
	}
	w = f.do(request{method: "GET", path: path})
	if !strings.Contains(w.Body.String(), "example.com") {
		t.Errorf("the shared page does not show the website")
	}
	cookie := w.Header().Get("Set-Cookie")
	if !strings.HasPrefix(cookie, "ws_share=") || !strings.Contains(cookie, "Path=/stats/example.com") {
		t.Fatalf("Set-Cookie %q", cookie)
	}
	name, val, _ := strings.Cut(strings.SplitN(cookie, ";", 2)[0], "=")
	for _, p := range []string{"/stats/example.com", "/stats/example.com/browser"} {
		if w := f.do(request{method: "GET", path: p, header: map[string]string{"Cookie": name + "=" + val}}); w.Code != http.StatusOK {
			t.Errorf("GET %s with the share cookie: status %d", p, w.Code)
		}
	}
	// The cookie is the website's: another private website stays closed.
	f.e.Owner(f.aliceID).UpdateWebsite(context.Background(), 2, engine.WebsiteInput{Privacy: ptr("1")})
	if w := f.do(request{method: "GET", path: "/stats/blog.example.org", header: map[string]string{"Cookie": name + "=" + val}}); w.Code != http.StatusNotFound {
		t.Errorf("another website with the share cookie: status %d, want 404", w.Code)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

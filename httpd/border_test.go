package httpd

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What crosses the border with Plausible's clients (issue #37), over real
// HTTP: names kept exactly, hash-based routing, the import's Plausible
// fields, v1 breakdowns and filters, Plausible's labels. Every expectation
// is worked out from what the test sends.

const edgeLinuxUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0"

// plTrack posts a Plausible-form body to /api/event and wants 202.
func (f *fixture) plTrack(t *testing.T, ua, body string) {
	t.Helper()
	w := f.do(trackRequest("text/plain", body, map[string]string{"User-Agent": ua}))
	if w.Code != http.StatusAccepted || w.Header().Get("X-Webstats-Dropped") != "" {
		t.Fatalf("POST /api/event %s: %d %s %s", body, w.Code, w.Header().Get("X-Webstats-Dropped"), w.Body)
	}
}

// importLines imports NDJSON lines into website 1 and wants 200.
func (f *fixture) importLines(t *testing.T, lines ...string) {
	t.Helper()
	w := f.do(request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/x-ndjson", body: strings.Join(lines, "\n")})
	if w.Code != 200 {
		t.Fatalf("import: %d %s", w.Code, w.Body)
	}
}

// v2Results posts a v2 query and returns its results as compact JSON.
func (f *fixture) v2Results(t *testing.T, body string) string {
	t.Helper()
	w := f.do(request{method: "POST", path: "/api/v2/query", key: f.alice, ctype: "application/json", body: body})
	if w.Code != 200 {
		t.Fatalf("v2 %s: %d %s", body, w.Code, w.Body)
	}
	var res struct{ Results json.RawMessage }
	if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	return string(res.Results)
}

// getJSON GETs path and returns the status and the body's key field as
// compact JSON.
func (f *fixture) getJSON(t *testing.T, path, key string) (int, string) {
	t.Helper()
	w := f.do(request{method: "GET", path: path, key: f.alice})
	var body map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("GET %s: %v %s", path, err, w.Body)
	}
	return w.Code, string(body[key])
}

const today = `"date_range":["2026-11-21","2026-11-21"]`

// TestBorderEventNames checks SPEC §2.4: Plausible's trackers' event names
// ("Outbound Link: Click", tracked live and imported) are kept as sent in
// goals, the v2 and v1 APIs, while the phpAnalytics event statistic makes
// ':' a space.
func TestBorderEventNames(t *testing.T) {
	f := newFixture(t, nil)
	f.plTrack(t, chromeUA, `{"n":"pageview","u":"https://example.com/a","d":"example.com"}`)
	f.plTrack(t, chromeUA, `{"n":"Outbound Link: Click","u":"https://example.com/a","d":"example.com","p":{"url":"https://ext.example/"}}`)
	f.importLines(t,
		`{"time":"2026-11-21T09:00:00Z","page":"/b","ip":"8.8.8.8"}`,
		`{"time":"2026-11-21T09:01:00Z","page":"/b","ip":"8.8.8.8","event":{"name":"Outbound Link: Click"}}`,
		`{"time":"2026-11-21T09:02:00Z","page":"/b","ip":"8.8.8.8","event":{"name":"404"}}`)
	w := f.do(request{method: "PUT", path: "/api/v1/sites/goals", key: f.alice, ctype: "application/json",
		body: `{"site_id":"example.com","goal_type":"event","event_name":"Outbound Link: Click"}`})
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"display_name":"Outbound Link: Click"`) {
		t.Fatalf("goal: %d %s", w.Code, w.Body)
	}
	tests := []struct{ name, body, want string }{
		{"goal filter", `{"site_id":"example.com","metrics":["visitors","events"],` + today + `,"filters":[["is","event:goal",["Outbound Link: Click"]]]}`, `[{"dimensions":[],"metrics":[2,2]}]`},
		{"goal dimension", `{"site_id":"example.com","metrics":["visitors"],` + today + `,"dimensions":["event:goal"]}`, `[{"dimensions":["Outbound Link: Click"],"metrics":[2]}]`},
		{"name filter", `{"site_id":"example.com","metrics":["events"],` + today + `,"filters":[["is","event:name",["Outbound Link: Click","404"]]]}`, `[{"dimensions":[],"metrics":[3]}]`},
		{"props of the name", `{"site_id":"example.com","metrics":["events"],` + today + `,"dimensions":["event:props:url"],"filters":[["is","event:name",["Outbound Link: Click"]]]}`, `[{"dimensions":["(none)"],"metrics":[1]},{"dimensions":["https://ext.example/"],"metrics":[1]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.v2Results(t, tt.body); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	t.Run("v1 goal filter", func(t *testing.T) {
		code, got := f.getJSON(t, "/api/v1/stats/aggregate?site_id=example.com&period=day&metrics=events&filters="+url.QueryEscape("event:goal==Outbound Link: Click"), "results")
		if code != 200 || got != `{"events":{"value":2}}` {
			t.Errorf("%d %s", code, got)
		}
	})
	t.Run("phpAnalytics event statistic", func(t *testing.T) {
		code, got := f.getJSON(t, "/api/v1/stats/1?name=event&from=2026-11-21&to=2026-11-21", "data")
		if want := `[{"value":"Outbound Link  Click::","count":2},{"value":"404::","count":1}]`; code != 200 || got != want {
			t.Errorf("%d %s, want %s", code, got, want)
		}
	})
}

// TestBorderHashRouting checks SPEC §2.4's hash-based routing: a
// Plausible-form hit with "h": 1 (and an import line with "h": 1) keeps the
// URL's fragment in its page, in the Plausible APIs and in the phpAnalytics
// page statistic; without it the fragment is dropped.
func TestBorderHashRouting(t *testing.T) {
	f := newFixture(t, nil)
	for _, frag := range []string{"#/home", "#/a", "#/b"} {
		f.plTrack(t, chromeUA, `{"n":"pageview","u":"https://example.com/app/`+frag+`","d":"example.com","h":1}`)
	}
	f.plTrack(t, chromeUA, `{"n":"pageview","u":"https://example.com/app/#/c","d":"example.com"}`)
	f.plTrack(t, chromeUA, `{"n":"pageview","u":"https://example.com/app/#/d","d":"example.com","h":0}`)
	f.importLines(t, `{"time":"2026-11-21T09:00:00Z","page":"/app/#/b","ip":"8.8.8.8","h":1}`)
	got := f.v2Results(t, `{"site_id":"example.com","metrics":["pageviews"],`+today+`,"dimensions":["event:page"],"order_by":[["event:page","asc"]]}`)
	want := `[{"dimensions":["/app/"],"metrics":[2]},{"dimensions":["/app/#/a"],"metrics":[1]},{"dimensions":["/app/#/b"],"metrics":[2]},{"dimensions":["/app/#/home"],"metrics":[1]}]`
	if got != want {
		t.Errorf("v2 pages %s, want %s", got, want)
	}
	code, got := f.getJSON(t, "/api/v1/stats/1?name=page&from=2026-11-21&to=2026-11-21&sort_by=value&sort=asc", "data")
	want = `[{"value":"/app/","count":2},{"value":"/app/#/a","count":1},{"value":"/app/#/b","count":2},{"value":"/app/#/home","count":1}]`
	if code != 200 || got != want {
		t.Errorf("page statistic %d %s, want %s", code, got, want)
	}
}

// TestBorderImportFields checks SPEC §3.4: an import line's top-level
// props, revenue (with an event) and interactive: false are recorded as a
// live /api/event records them.
func TestBorderImportFields(t *testing.T) {
	f := newFixture(t, nil)
	w := f.do(request{method: "PUT", path: "/api/v1/sites/goals", key: f.alice, ctype: "application/json",
		body: `{"site_id":"example.com","goal_type":"event","event_name":"Purchase","currency":"EUR"}`})
	if w.Code != 200 {
		t.Fatalf("goal: %d %s", w.Code, w.Body)
	}
	f.importLines(t,
		`{"time":"2026-11-21T09:00:00Z","page":"/pricing","ip":"8.8.8.1"}`,
		`{"time":"2026-11-21T09:01:00Z","page":"/pricing","ip":"8.8.8.1","event":{"name":"Purchase"},"props":{"plan":"pro"},"revenue":{"amount":9.99,"currency":"EUR"}}`,
		`{"time":"2026-11-21T09:00:00Z","page":"/a","ip":"8.8.8.2"}`,
		`{"time":"2026-11-21T09:00:40Z","page":"/a","ip":"8.8.8.2","event":{"name":"Ping"},"interactive":false}`,
		`{"time":"2026-11-21T09:00:00Z","page":"/b","ip":"8.8.8.3"}`,
		`{"time":"2026-11-21T09:00:30Z","page":"/b","ip":"8.8.8.3","event":{"name":"Ping"}}`,
		`{"time":"2026-11-21T09:00:00Z","page":"/c","ip":"8.8.8.4","props":{"plan":"free","n":3}}`,
	)
	tests := []struct{ name, body, want string }{
		{"props", `{"site_id":"example.com","metrics":["events"],` + today + `,"dimensions":["event:props:plan"]}`,
			`[{"dimensions":["(none)"],"metrics":[5]},{"dimensions":["free"],"metrics":[1]},{"dimensions":["pro"],"metrics":[1]}]`},
		{"number prop", `{"site_id":"example.com","metrics":["visitors"],` + today + `,"filters":[["is","event:props:n",["3"]]]}`,
			`[{"dimensions":[],"metrics":[1]}]`},
		{"revenue", `{"site_id":"example.com","metrics":["total_revenue"],` + today + `,"filters":[["is","event:goal",["Purchase"]]]}`,
			`[{"dimensions":[],"metrics":[{"value":9.99,"currency":"EUR","short":"€9.99","long":"€9.99"}]}]`},
		// /a: a pageview and a non-interactive event, a bounce; /b: an
		// interactive event ends its bounce.
		{"interactive", `{"site_id":"example.com","metrics":["bounce_rate"],` + today + `,"dimensions":["visit:entry_page"],"filters":[["is","visit:entry_page",["/a","/b"]]],"order_by":[["visit:entry_page","asc"]]}`,
			`[{"dimensions":["/a"],"metrics":[100]},{"dimensions":["/b"],"metrics":[0]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.v2Results(t, tt.body); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestBorderV1 checks the v1 API's breakdown by country (alpha-2 codes,
// the unknown left out, as plausible-api.md §8 says; it answered 400 for
// every period), its malformed filters (400) and Plausible's labels at
// both APIs' doors, with either spelling in filters, while the phpAnalytics
// API keeps webstats' names.
func TestBorderV1(t *testing.T) {
	f := newFixture(t, nil)
	f.importLines(t,
		`{"time":"2026-11-21T09:00:00Z","page":"/","ip":"8.8.8.8","user_agent":"`+edgeLinuxUA+`"}`,
		`{"time":"2026-11-21T09:00:00Z","page":"/","ip":"9.9.9.9","user_agent":"`+chromeUA+`"}`,
		`{"time":"2026-11-21T09:00:00Z","page":"/","ip":"1.1.1.1","user_agent":"`+chromeUA+`"}`,
		`{"time":"2026-11-21T09:00:00Z","page":"/","ip":"203.0.113.9","user_agent":"`+chromeUA+`"}`,
	)
	get := func(path string) (int, string) { return f.getJSON(t, path, "results") }
	var errBody = func(path string) (int, string) { return f.getJSON(t, path, "error") }
	tests := []struct {
		name, path string
		get        func(string) (int, string)
		code       int
		want       string
	}{
		{"country breakdown", "/api/v1/stats/breakdown?site_id=example.com&period=30d&property=visit:country", get, 200,
			`[{"country":"US","visitors":2},{"country":"AU","visitors":1}]`},
		{"country breakdown filtered", "/api/v1/stats/breakdown?site_id=example.com&period=day&property=visit:country&filters=visit:country%3D%3DAU", get, 200,
			`[{"country":"AU","visitors":1}]`},
		{"malformed filter", "/api/v1/stats/aggregate?site_id=example.com&filters=event:page", errBody, 400,
			`"Invalid filter 'event:page'. Please provide filters as property==value or property!=value, separated by ;: https://plausible.io/docs/stats-api#filtering"`},
		{"filter without value", "/api/v1/stats/aggregate?site_id=example.com&filters=event:page%3D%3D", errBody, 400,
			`"Invalid filter 'event:page=='. Please provide filters as property==value or property!=value, separated by ;: https://plausible.io/docs/stats-api#filtering"`},
		{"empty filter part", "/api/v1/stats/aggregate?site_id=example.com&period=day&filters=event:page%3D%3D/;", get, 200, `{"visitors":{"value":4}}`},
		{"browser labels", "/api/v1/stats/breakdown?site_id=example.com&period=day&property=visit:browser", get, 200,
			`[{"browser":"Chrome","visitors":3},{"browser":"Microsoft Edge","visitors":1}]`},
		{"os labels", "/api/v1/stats/breakdown?site_id=example.com&period=day&property=visit:os", get, 200,
			`[{"os":"Windows","visitors":3},{"os":"GNU/Linux","visitors":1}]`},
		{"device labels", "/api/v1/stats/breakdown?site_id=example.com&period=day&property=visit:device", get, 200,
			`[{"device":"Desktop","visitors":4}]`},
		{"filter Plausible's name", "/api/v1/stats/aggregate?site_id=example.com&period=day&filters=" + url.QueryEscape("visit:browser==Microsoft Edge;visit:os==GNU/Linux"), get, 200, `{"visitors":{"value":1}}`},
		{"filter webstats' name", "/api/v1/stats/aggregate?site_id=example.com&period=day&filters=" + url.QueryEscape("visit:browser==Edge;visit:os==Linux"), get, 200, `{"visitors":{"value":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got := tt.get(tt.path)
			if code != tt.code || got != tt.want {
				t.Errorf("%d %s, want %d %s", code, got, tt.code, tt.want)
			}
		})
	}
	t.Run("v2 labels", func(t *testing.T) {
		got := f.v2Results(t, `{"site_id":"example.com","metrics":["visitors"],`+today+`,"dimensions":["visit:browser","visit:os"],"filters":[["is","visit:os",["Linux"]]]}`)
		if want := `[{"dimensions":["Microsoft Edge","GNU/Linux"],"metrics":[1]}]`; got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
	t.Run("phpAnalytics keeps its names", func(t *testing.T) {
		var got []string
		for _, name := range []string{"browser", "os", "device"} {
			_, rows := f.getJSON(t, "/api/v1/stats/1?name="+name+"&from=2026-11-21&to=2026-11-21", "data")
			got = append(got, rows)
		}
		want := []string{`[{"value":"Chrome","count":3},{"value":"Edge","count":1}]`, `[{"value":"Windows","count":3},{"value":"Linux","count":1}]`, `[{"value":"desktop","count":4}]`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
}

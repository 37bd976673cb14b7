package httpd

import (
	"bytes"
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd/pages"
)

// Chrome on Windows, the user agent of the Plausible tests' hits.
const plChrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// plTime parses "2021-01-01 00:25" (or with seconds) as UTC.
func plTime(s string) time.Time {
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	panic("plTime: " + s)
}

// plWho gives visitor name who a distinct address.
func plWho(who string) netip.Addr {
	var sum byte
	for _, c := range who {
		sum = sum*31 + byte(c)
	}
	return netip.AddrFrom4([4]byte{203, 0, 113, sum})
}

// plPV is a pageview of example.com (website 1) at when by who of url (a
// path, or a full URL); ref is the referrer.
func plPV(when, who, url string, ref ...string) engine.Hit {
	if url[0] == '/' {
		url = "https://example.com" + url
	}
	h := engine.Hit{Time: plTime(when), URL: url, UserAgent: plChrome, IP: plWho(who), Website: 1}
	if len(ref) > 0 {
		h.Referrer = ref[0]
	}
	return h
}

// plEV is custom event name by who on path, with props as key, value pairs.
func plEV(when, who, name, path string, props ...string) engine.Hit {
	h := plPV(when, who, path)
	h.Event = &engine.Event{Name: name}
	for i := 0; i+1 < len(props); i += 2 {
		h.Props = append(h.Props, engine.Prop{Key: props[i], Value: props[i+1]})
	}
	return h
}

// track counts hits on the fixture's engine, and adds goals to website 1.
func (f *fixture) track(t testing.TB, goals []engine.Goal, hits ...engine.Hit) {
	t.Helper()
	ctx := context.Background()
	for _, g := range goals {
		if _, err := f.e.Owner(f.aliceID).AddGoal(ctx, 1, g); err != nil {
			t.Fatalf("AddGoal(%+v): %v", g, err)
		}
	}
	if len(hits) > 0 {
		if _, err := f.e.Track(ctx, hits...); err != nil {
			t.Fatal(err)
		}
	}
}

// plSeed tracks the data of the Plausible golden tests on website 1
// (example.com) and adds its goals: four visitors on 2026-11-20, one on
// 2026-11-13, and one a minute before the fixture's clock (realtime).
func (f *fixture) plSeed(t testing.TB) {
	firefox := "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	hn := plPV("2026-11-20 09:30", "U3", "/blog/b", "https://news.ycombinator.com/item?id=1")
	hn.UserAgent = firefox
	f.track(t, []engine.Goal{{EventName: "Signup"}, {PagePath: "/blog*"}},
		plPV("2026-11-13 12:00", "U4", "/pricing"),
		plPV("2026-11-20 08:00", "U1", "/", "https://www.google.com/"),
		plPV("2026-11-20 08:10", "U1", "/blog/a"),
		plEV("2026-11-20 08:11", "U1", "Signup", "/blog/a", "plan", "pro"),
		plPV("2026-11-20 09:00", "U2", "/?utm_source=news&utm_medium=email"),
		hn,
		plPV("2026-11-21 09:59", "U5", "/"),
	)
}

// TestPlausibleGolden serves one request per Plausible-compatible endpoint
// and error on the seeded fixture and compares the answer with
// testdata/plausible_<name>.json.
func TestPlausibleGolden(t *testing.T) {
	const json = "application/json"
	v2 := func(body string) func(f *fixture) request {
		return func(f *fixture) request {
			return request{method: "POST", path: "/api/v2/query", key: f.alice, ctype: json, body: body}
		}
	}
	get := func(path string) func(f *fixture) request {
		return func(f *fixture) request { return request{method: "GET", path: path, key: f.alice} }
	}
	send := func(method, path, body string) func(f *fixture) request {
		return func(f *fixture) request {
			return request{method: method, path: path, key: f.alice, ctype: json, body: body}
		}
	}
	const month = `"date_range":["2026-11-01","2026-11-21"]`
	tests := []struct {
		name     string
		opts     *Options
		req      func(f *fixture) request
		wantCode int
	}{
		// Stats API v2.
		{name: "v2_aggregate", wantCode: 200, req: v2(`{"site_id":"example.com","metrics":["visitors","visits","pageviews","events","views_per_visit","bounce_rate","visit_duration"],` + month + `}`)},
		{name: "v2_sources_by_day", wantCode: 200, req: v2(`{"site_id":"example.com","metrics":["visitors","bounce_rate"],` + month + `,"dimensions":["time:day","visit:source"],"filters":[["is_not","visit:browser",["Firefox"]]],"include":{"time_labels":true,"total_rows":true}}`)},
		{name: "v2_goals", wantCode: 200, req: v2(`{"site_id":"example.com","metrics":["visitors","events","conversion_rate"],` + month + `,"dimensions":["event:goal"]}`)},
		{name: "v2_props_matches", wantCode: 200, req: v2(`{"site_id":"www.Example.com","metrics":["visitors"],"date_range":"all","dimensions":["event:props:plan"],"filters":[["matches","event:page",["^/blog/"]]],"include":{"imports":true}}`)},
		{name: "v2_400_metric", wantCode: 400, req: v2(`{"site_id":"example.com","metrics":["visitors","baa"],"date_range":"7d"}`)},
		{name: "v2_400_schema", wantCode: 400, req: v2(`{"site_id":"example.com","metrics":[],"date_range":"bad_period","dimensions":["badproperty"],"foo":1}`)},
		{name: "v2_400_goal", wantCode: 400, req: v2(`{"site_id":"example.com","metrics":["visitors"],"date_range":"7d","filters":[["is","event:goal",["Register"]]]}`)},
		{name: "v2_400_session_metric", wantCode: 400, req: v2(`{"site_id":"example.com","metrics":["bounce_rate"],"date_range":"7d","dimensions":["event:name"]}`)},
		{name: "v2_400_json", wantCode: 400, req: v2(`{"site_id":`)},
		{name: "v2_400_missing_site", wantCode: 400, req: v2(`{"metrics":["visitors"],"date_range":"7d"}`)},
		{name: "v2_401_missing_key", wantCode: 401, req: func(f *fixture) request {
			return request{method: "POST", path: "/api/v2/query", ctype: json, body: `{"site_id":"example.com","metrics":["visitors"],"date_range":"7d"}`}
		}},
		{name: "v2_401_wrong_key", wantCode: 401, req: func(f *fixture) request {
			return request{method: "POST", path: "/api/v2/query", key: "wrong", ctype: json, body: `{"site_id":"example.com","metrics":["visitors"],"date_range":"7d"}`}
		}},
		{name: "v2_401_unknown_site", wantCode: 401, req: v2(`{"site_id":"nowhere.example","metrics":["visitors"],"date_range":"7d"}`)},
		{name: "v2_401_other_account", wantCode: 401, req: v2(`{"site_id":"other.net","metrics":["visitors"],"date_range":"7d"}`)},
		{name: "v2_429", wantCode: 429, opts: &Options{RateLimit: 1}, req: func(f *fixture) request {
			f.do(request{method: "POST", path: "/api/v2/query", key: f.alice, ctype: json, body: `{}`})
			return request{method: "POST", path: "/api/v2/query", key: f.alice, ctype: json, body: `{"site_id":"example.com","metrics":["visitors"],"date_range":"7d"}`}
		}},

		// Stats API v1.
		{name: "v1_realtime", wantCode: 200, req: get("/api/v1/stats/realtime/visitors?site_id=example.com")},
		{name: "v1_aggregate", wantCode: 200, req: get("/api/v1/stats/aggregate?site_id=example.com")},
		{name: "v1_aggregate_compare", wantCode: 200, req: get("/api/v1/stats/aggregate?site_id=example.com&period=7d&metrics=visitors,visits,pageviews,events,views_per_visit,bounce_rate,visit_duration&compare=previous_period")},
		{name: "v1_aggregate_filters", wantCode: 200, req: get("/api/v1/stats/aggregate?site_id=example.com&period=custom&date=2026-11-01,2026-11-21&metrics=visitors,pageviews&filters=event:page%3D%3D/blog/*;visit:browser!%3DSafari")},
		{name: "v1_aggregate_goal", wantCode: 200, req: get("/api/v1/stats/aggregate?site_id=example.com&period=month&metrics=visitors,events,conversion_rate&filters=event:goal%3D%3DSignup|Visit+/blog*")},
		{name: "v1_timeseries", wantCode: 200, req: get("/api/v1/stats/timeseries?site_id=example.com&period=7d&date=2026-11-20&metrics=visitors,pageviews,bounce_rate,visit_duration,views_per_visit")},
		{name: "v1_timeseries_hours", wantCode: 200, req: get("/api/v1/stats/timeseries?site_id=example.com&period=day&date=2026-11-20&metrics=visitors,visits")},
		{name: "v1_timeseries_months", wantCode: 200, req: get("/api/v1/stats/timeseries?site_id=example.com&period=6mo")},
		{name: "v1_timeseries_goal", wantCode: 200, req: get("/api/v1/stats/timeseries?site_id=example.com&period=custom&date=2026-11-19,2026-11-21&interval=date&metrics=visitors,conversion_rate&filters=event:goal%3D%3DSignup")},
		{name: "v1_breakdown_source", wantCode: 200, req: get("/api/v1/stats/breakdown?site_id=example.com&property=visit:source&metrics=visitors,bounce_rate,visit_duration")},
		{name: "v1_breakdown_page_paged", wantCode: 200, req: get("/api/v1/stats/breakdown?site_id=example.com&property=event:page&limit=2&page=2&metrics=visitors,pageviews")},
		{name: "v1_breakdown_utm_drops_blank", wantCode: 200, req: get("/api/v1/stats/breakdown?site_id=example.com&property=visit:utm_source")},
		{name: "v1_breakdown_browser_version", wantCode: 200, req: get("/api/v1/stats/breakdown?site_id=example.com&property=visit:browser_version")},
		{name: "v1_breakdown_goal", wantCode: 200, req: get("/api/v1/stats/breakdown?site_id=example.com&property=event:goal&metrics=visitors,events,conversion_rate")},
		{name: "v1_breakdown_props", wantCode: 200, req: get("/api/v1/stats/breakdown?site_id=example.com&property=event:props:plan&metrics=visitors,events")},
		{name: "v1_400_period", wantCode: 400, req: get("/api/v1/stats/aggregate?site_id=example.com&period=3d")},
		{name: "v1_400_date", wantCode: 400, req: get("/api/v1/stats/aggregate?site_id=example.com&date=2026-13-45")},
		{name: "v1_400_custom_no_date", wantCode: 400, req: get("/api/v1/stats/aggregate?site_id=example.com&period=custom")},
		{name: "v1_400_custom_date", wantCode: 400, req: get("/api/v1/stats/aggregate?site_id=example.com&period=custom&date=2026-11-01")},
		{name: "v1_400_interval", wantCode: 400, req: get("/api/v1/stats/timeseries?site_id=example.com&interval=week")},
		{name: "v1_400_property_missing", wantCode: 400, req: get("/api/v1/stats/breakdown?site_id=example.com")},
		{name: "v1_400_property_hostname", wantCode: 400, req: get("/api/v1/stats/breakdown?site_id=example.com&property=event:hostname")},
		{name: "v1_400_property_invalid", wantCode: 400, req: get("/api/v1/stats/breakdown?site_id=example.com&property=visit:nothing")},
		{name: "v1_400_limit", wantCode: 400, req: get("/api/v1/stats/breakdown?site_id=example.com&property=event:page&limit=1001")},
		{name: "v1_400_page", wantCode: 400, req: get("/api/v1/stats/breakdown?site_id=example.com&property=event:page&page=0")},
		{name: "v1_400_metric", wantCode: 400, req: get("/api/v1/stats/aggregate?site_id=example.com&metrics=visitors,baa")},
		{name: "v1_400_metric_twice", wantCode: 400, req: get("/api/v1/stats/aggregate?site_id=example.com&metrics=visitors,visitors")},
		{name: "v1_400_session_metric_goal", wantCode: 400, req: get("/api/v1/stats/aggregate?site_id=example.com&metrics=bounce_rate&filters=event:goal%3D%3DSignup")},
		{name: "v1_400_filter_property", wantCode: 400, req: get("/api/v1/stats/aggregate?site_id=example.com&filters=visit:nothing%3D%3Dx")},
		{name: "v1_400_goal", wantCode: 400, req: get("/api/v1/stats/aggregate?site_id=example.com&filters=event:goal%3D%3DVisit+/nope")},
		{name: "v1_400_missing_site", wantCode: 400, req: get("/api/v1/stats/aggregate")},
		{name: "v1_401_unknown_site", wantCode: 401, req: get("/api/v1/stats/timeseries?site_id=other.net")},
		{name: "v1_401_missing_key", wantCode: 401, req: func(f *fixture) request {
			return request{method: "GET", path: "/api/v1/stats/breakdown?site_id=example.com&property=event:page"}
		}},
		// The phpAnalytics statistics beside them are unchanged.
		{name: "v1_php_404_name", wantCode: 404, req: get("/api/v1/stats/aggregat")},
		{name: "v1_php_404_visitors", wantCode: 404, req: get("/api/v1/stats/1/visitors")},
		{name: "v1_php_401", wantCode: 401, req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/stats/1?name=browser"} }},

		// Sites API.
		{name: "sites_list", wantCode: 200, req: get("/api/v1/sites")},
		{name: "sites_list_paged", wantCode: 200, req: get("/api/v1/sites?limit=1&after=2")},
		{name: "sites_create", wantCode: 200, req: send("POST", "/api/v1/sites", `{"domain":"new.example","timezone":"Europe/Tallinn"}`)},
		{name: "sites_create_400_taken", wantCode: 400, req: send("POST", "/api/v1/sites", `{"domain":"other.net"}`)},
		{name: "sites_create_400_blank", wantCode: 400, req: send("POST", "/api/v1/sites", `{"timezone":"Etc/UTC"}`)},
		{name: "sites_show", wantCode: 200, req: get("/api/v1/sites/blog.example.org")},
		{name: "sites_show_404", wantCode: 404, req: get("/api/v1/sites/other.net")},
		{name: "sites_update", wantCode: 200, req: send("PUT", "/api/v1/sites/example.com", `{"timezone":"America/New_York"}`)},
		{name: "sites_update_400_domain", wantCode: 400, req: send("PUT", "/api/v1/sites/example.com", `{"domain":"renamed.example"}`)},
		{name: "sites_delete", wantCode: 200, req: send("DELETE", "/api/v1/sites/blog.example.org", "")},
		{name: "sites_delete_404", wantCode: 404, req: send("DELETE", "/api/v1/sites/other.net", "")},
		{name: "goals_list", wantCode: 200, req: get("/api/v1/sites/goals?site_id=example.com")},
		{name: "goals_put_event", wantCode: 200, req: send("PUT", "/api/v1/sites/goals", `{"site_id":"example.com","goal_type":"event","event_name":"Purchase","currency":"EUR"}`)},
		{name: "goals_put_existing", wantCode: 200, req: send("PUT", "/api/v1/sites/goals", `{"site_id":"example.com","goal_type":"page","page_path":"/blog*"}`)},
		{name: "goals_put_form", wantCode: 200, req: func(f *fixture) request {
			return request{method: "PUT", path: "/api/v1/sites/goals", key: f.alice, ctype: "application/x-www-form-urlencoded",
				body: "site_id=example.com&goal_type=page&page_path=%2Fpricing&display_name=Pricing"}
		}},
		{name: "goals_put_400_site", wantCode: 400, req: send("PUT", "/api/v1/sites/goals", `{"goal_type":"event","event_name":"X"}`)},
		{name: "goals_put_400_type", wantCode: 400, req: send("PUT", "/api/v1/sites/goals", `{"site_id":"example.com","event_name":"X"}`)},
		{name: "goals_put_404_site", wantCode: 404, req: send("PUT", "/api/v1/sites/goals", `{"site_id":"other.net","goal_type":"event","event_name":"X"}`)},
		{name: "goals_delete", wantCode: 200, req: send("DELETE", "/api/v1/sites/goals/1", `{"site_id":"example.com"}`)},
		{name: "goals_delete_404", wantCode: 404, req: send("DELETE", "/api/v1/sites/goals/99?site_id=example.com", "")},
		{name: "shared_link", wantCode: 200, req: send("PUT", "/api/v1/sites/shared-links", `{"site_id":"example.com","name":"Press"}`)},
		{name: "shared_link_400_name", wantCode: 400, req: send("PUT", "/api/v1/sites/shared-links", `{"site_id":"example.com"}`)},
		{name: "sites_401_missing_key", wantCode: 401, req: func(f *fixture) request { return request{method: "GET", path: "/api/v1/sites"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.opts)
			f.plSeed(t)
			w := f.do(tt.req(f))
			if w.Code != tt.wantCode {
				t.Errorf("status %d, want %d: %s", w.Code, tt.wantCode, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			body := w.Body.Bytes()
			if tt.name == "shared_link" {
				// The secret depends on the engine's random cookie key.
				auth, err := pages.ShareAuth(context.Background(), f.e, 1)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(body, []byte("?auth="+auth+`"`)) {
					t.Errorf("shared link %s lacks auth=%s", body, auth)
				}
				body = bytes.ReplaceAll(body, []byte(auth), []byte("<auth>"))
			}
			golden(t, "plausible_"+tt.name, body)
		})
	}
}

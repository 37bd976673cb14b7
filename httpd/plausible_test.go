package httpd

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
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

func TestPlausibleSmoke(t *testing.T) {
	f := newFixture(t, nil)
	f.track(t, []engine.Goal{{EventName: "Signup"}},
		plPV("2026-11-20 00:00", "U1", "/", "https://www.google.com/"),
		plPV("2026-11-20 00:00:01", "U2", "/?utm_medium=A"),
		plPV("2026-11-20 00:25", "U1", "/blog"),
		plEV("2026-11-20 00:26", "U1", "Signup", "/blog", "plan", "pro"),
	)
	for _, p := range []string{
		"/api/v1/stats/aggregate?site_id=example.com&metrics=visitors,pageviews,bounce_rate,visit_duration,views_per_visit&compare=previous_period",
		"/api/v1/stats/timeseries?site_id=example.com&period=7d&metrics=visitors,views_per_visit,visit_duration",
		"/api/v1/stats/breakdown?site_id=example.com&property=visit:utm_medium&metrics=visitors,bounce_rate",
		"/api/v1/stats/breakdown?site_id=example.com&property=visit:source&metrics=visitors,bounce_rate",
		"/api/v1/stats/breakdown?site_id=example.com&property=event:goal&metrics=visitors,conversion_rate",
		"/api/v1/stats/realtime/visitors?site_id=example.com",
		"/api/v1/stats/aggregate?site_id=example.com&filters=event:page==/bl*",
		"/api/v1/sites/goals?site_id=example.com",
		"/api/v1/sites/example.com",
		"/api/v1/sites",
	} {
		w := f.do(request{method: "GET", path: p, key: f.alice})
		fmt.Println(p, w.Code, w.Body.String())
	}
	w := f.do(request{method: "POST", path: "/api/v2/query", key: f.alice, ctype: "application/json",
		body: `{"site_id":"example.com","metrics":["visitors","percentage","views_per_visit"],"date_range":"7d","dimensions":["visit:utm_medium"]}`})
	fmt.Println(w.Code, w.Body.String())
	w = f.do(request{method: "PUT", path: "/api/v1/sites/shared-links", key: f.alice, ctype: "application/json", body: `{"site_id":"example.com","name":"x"}`})
	fmt.Println(w.Code, w.Body.String())
}

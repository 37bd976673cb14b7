package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd"
)

// BenchmarkPlausibleQuery sends POST /api/v2/query with two filters over
// the last 30 days of the medium site through the HTTP handler (key check,
// JSON decoding, the engine's query, JSON encoding), as issue #13's target
// (≤ 20 ms median) measures it:
//
//	go test ./bench -run '^$' -bench PlausibleQuery -benchtime 50x
//
// It reports the median as ms/median beside the mean.
func BenchmarkPlausibleQuery(b *testing.B) {
	f, err := benchFixture()
	if err != nil {
		b.Fatal(err)
	}
	s, ok := f.siteFor("medium", 30)
	if !ok {
		b.Fatal("no medium site")
	}
	srv := httpd.New(f.e, &httpd.Options{RateLimit: -1, NoPages: true})
	last := f.last.Format("2006-01-02")
	first := f.last.AddDate(0, 0, -29).Format("2006-01-02")
	filters := `"filters":[["is_not","visit:source",["Direct / None"]],["contains","event:page",["/"]]]`
	for _, tc := range []struct{ name, body string }{
		{"aggregate", `"metrics":["visitors","visits","pageviews","bounce_rate","visit_duration"]`},
		{"by=source", `"metrics":["visitors","pageviews","bounce_rate"],"dimensions":["visit:source"],"pagination":{"limit":10}`},
		{"by=day", `"metrics":["visitors","pageviews"],"dimensions":["time:day"]`},
	} {
		b.Run("site=medium/days=30/"+tc.name, func(b *testing.B) {
			body := `{"site_id":"` + s.Site.Domain + `","date_range":["` + first + `","` + last + `"],` + filters + `,` + tc.body + `}`
			var ds []time.Duration
			settle(b, func() {
				r := httptest.NewRequest(http.MethodPost, "/api/v2/query", strings.NewReader(body))
				r.Header.Set("Authorization", "Bearer "+f.key)
				srv.ServeHTTP(httptest.NewRecorder(), r)
			})
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/api/v2/query", strings.NewReader(body))
				r.Header.Set("Authorization", "Bearer "+f.key)
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				start := time.Now()
				srv.ServeHTTP(w, r)
				ds = append(ds, time.Since(start))
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "ms/median")
		})
		// The same query by Owner.Query: what the HTTP layer adds is the
		// difference.
		b.Run("site=medium/days=30/"+tc.name+"/direct", func(b *testing.B) {
			ctx := context.Background()
			body := `{"site_id":"` + s.Site.Domain + `","date_range":["` + first + `","` + last + `"],` + filters + `,` + tc.body + `}`
			a, err := identity.Must(f.e).Authenticate(ctx, f.key)
			if err != nil {
				b.Fatal(err)
			}
			q, err := engine.ParseQuery([]byte(body))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := f.e.Owner(a.ID).Query(ctx, s.ID, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOverviewPage requests the statistics overview of the medium
// site through the HTTP handler, rendering included, as issue #13's
// targets measure it: with two filters over the last 30 days (≤ 100 ms)
// and unfiltered over the last 365 (≤ 50 ms). The engine's cache of
// answers is off in the fixture, so every request computes its queries;
// what the engine keeps of a day for the next query with the same filters
// (its day memo) is on, as in the server: filters=2/new measures a view
// whose filters no earlier request asked.
//
//	go test ./bench -run '^$' -bench OverviewPage -benchtime 20x -count 5
//
// It reports the median as ms/median beside the mean.
func BenchmarkOverviewPage(b *testing.B) {
	f, err := benchFixture()
	if err != nil {
		b.Fatal(err)
	}
	s, ok := f.siteFor("medium", 365)
	if !ok {
		b.Fatal("no medium site")
	}
	ctx := context.Background()
	public := "0"
	if _, err := f.e.Unscoped().UpdateWebsite(ctx, s.ID, engine.WebsiteInput{Privacy: &public}); err != nil {
		b.Fatal(err)
	}
	srv := httpd.New(f.e, &httpd.Options{RateLimit: -1})
	last := f.last.Format("2006-01-02")
	for _, tc := range []struct {
		name, query string
		days        int
		fresh       bool
	}{
		{"days=365/unfiltered", "", 365, false},
		{"days=30/filters=2", "&f=is_not,source,Direct+%2F+None&f=is,device,Desktop", 30, false},
		// The same with a third filter that excludes nothing and is new
		// each time: no card finds what the filters excluded kept from
		// an earlier view (the engine's memo of a day), as when a filter
		// was just clicked.
		{"days=30/filters=2/new", "&f=is_not,source,Direct+%2F+None&f=is,device,Desktop", 30, true},
	} {
		b.Run("site=medium/"+tc.name, func(b *testing.B) {
			first := f.last.AddDate(0, 0, -tc.days+1).Format("2006-01-02")
			url := "/stats/" + s.Site.Domain + "?from=" + first + "&to=" + last + tc.query
			var ds []time.Duration
			n := 0
			settle(b, func() { srv.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, url, nil)) })
			for b.Loop() {
				u := url
				if n++; tc.fresh {
					u += fmt.Sprintf("&f=is_not,screen,none-%d-%d", time.Now().UnixNano(), n)
				}
				w := httptest.NewRecorder()
				start := time.Now()
				srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, u, nil))
				ds = append(ds, time.Since(start))
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %.300s", w.Code, w.Body)
				}
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "ms/median")
		})
	}
}

// settle runs fn a few times and collects the garbage before a timed
// loop: the first benchmark after the fixture was built otherwise pays
// for the build's garbage and the store's compactions (the aggregate,
// run first, measured 15-22 ms in 15 runs, 10 ms in 100).
func settle(b *testing.B, fn func()) {
	b.Helper()
	for range 3 {
		fn()
	}
	runtime.GC()
}

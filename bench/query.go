package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/webstats/webstats/engine"
)

// QueryResult is the outcome of the query run.
type QueryResult struct {
	// Sites are the websites loaded and their history.
	Sites []QuerySite
	// LoadTime is how long loading the history took; LoadedHits how many
	// hits it counted.
	LoadTime   time.Duration
	LoadedHits int
	// Points holds the latency of engine.Stat for every site, range and
	// statistic measured.
	Points []QueryPoint
	// API is GET /api/v1/stats/{id}?name=page over 30 days of the medium
	// site (or the longest range under 30 days), by number of clients.
	API            []HTTPPoint
	APIDays        int
	APIUnavailable string
	// Pages is GET /stats/{domain} over the longest range of the medium
	// site, one client; PagesUnavailable says why it was not measured.
	Pages            Latency
	PagesDays        int
	PagesUnavailable string
}

// QuerySite describes one website of the query run's history.
type QuerySite struct {
	// Size is "small", "medium" or "large"; Name the fixture's name for it
	// ("large-year" is the large site scaled down for the days beyond the
	// last 30).
	Size, Name        string
	PageviewsPerMonth int
	PagesPerDay       int
	Days              int
	Hits              int
	// Scale, when not empty, says how the site was scaled down.
	Scale string
}

// QueryPoint is the latency of one statistic over one range of one site.
type QueryPoint struct {
	Size    string // "small", "medium" or "large"
	Days    int
	Name    string
	Latency Latency
}

// Point returns the measurement of size, days and name, if any.
func (q *QueryResult) Point(size string, days int, name string) (QueryPoint, bool) {
	if q == nil {
		return QueryPoint{}, false
	}
	for _, p := range q.Points {
		if p.Size == size && p.Days == days && p.Name == name {
			return p, true
		}
	}
	return QueryPoint{}, false
}

// siteFor returns the fixture site that answers size over days.
func (f *fixture) siteFor(size string, days int) (fixtureSite, bool) {
	if size == "large" && days > largeFullDays {
		if s, ok := f.site("large-year"); ok {
			return s, true
		}
	}
	return f.site(size)
}

// measureQuery runs q at least 5 times and for at least d (at most 2,000
// times), after one warm-up run, and returns the latencies.
func measureQuery(ctx context.Context, e *engine.Engine, q engine.StatQuery, d time.Duration) (Latency, error) {
	if _, err := e.Unscoped().Stat(ctx, q); err != nil {
		return Latency{}, err
	}
	var ds []time.Duration
	start := time.Now()
	for len(ds) < 5 || (time.Since(start) < d && len(ds) < 2000) {
		t0 := time.Now()
		if _, err := e.Unscoped().Stat(ctx, q); err != nil {
			return Latency{}, err
		}
		ds = append(ds, time.Since(t0))
	}
	return latencyOf(ds), nil
}

func (r *runner) query(ctx context.Context, rep *Report) error {
	c := r.cfg
	f, err := r.buildFixture(ctx)
	if err != nil {
		return err
	}
	res := &QueryResult{LoadTime: f.load, LoadedHits: f.hits}
	rep.Query = res
	for _, s := range f.sites {
		size := s.Name
		if size == "large-year" {
			size = "large"
		}
		res.Sites = append(res.Sites, QuerySite{Size: size, Name: s.Name, PageviewsPerMonth: s.Site.PageviewsPerMonth,
			PagesPerDay: s.Site.PagesPerDay, Days: s.Days, Hits: s.Hits, Scale: s.Scale})
	}
	for _, size := range c.QuerySites {
		for _, days := range c.QueryDays {
			r.prog.step("query: latency, %s site, %d days", size, days)
			s, ok := f.siteFor(size, days)
			if !ok {
				continue
			}
			for _, name := range c.QueryNames {
				q, err := f.statQuery(s, name, days)
				if err != nil {
					return err
				}
				var l Latency
				prof := Profile{Name: fmt.Sprintf("query-%s-%s-%d", size, name, days), What: fmt.Sprintf("engine.Stat `%s` over %d days of the %s site", name, days, size),
					Targets: []string{"`page` over 365 days, 5,000 pages a day"}}
				_, err = r.cpuProfile(size == "large" && days == 365 && name == "page", false, prof, func() (err error) {
					l, err = measureQuery(ctx, f.e, q, c.QueryTime)
					return err
				})
				if err != nil {
					return fmt.Errorf("%s %s %dd: %w", size, name, days, err)
				}
				res.Points = append(res.Points, QueryPoint{Size: size, Days: days, Name: name, Latency: l})
			}
		}
	}
	return r.queryHTTP(ctx, f, res)
}

// queryHTTP measures the stats API and the statistics page over HTTP.
func (r *runner) queryHTTP(ctx context.Context, f *fixture, res *QueryResult) error {
	c := r.cfg
	r.prog.step("query: GET /api/v1/stats")
	site, ok := f.site("medium")
	if !ok {
		site = f.sites[0]
	}
	srv, err := startServer(f.e)
	if err != nil {
		return err
	}
	defer srv.close()
	res.APIDays = min(30, f.days)
	from, to := f.dateRange(res.APIDays)
	api := srv.url + "/api/v1/stats/" + strconv.FormatUint(uint64(site.ID), 10) + "?" +
		url.Values{"name": {"page"}, "from": {from}, "to": {to}}.Encode()
	mk := func(ctx context.Context, _ int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, api, nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+f.key)
		}
		return req, err
	}
	if why := probeGet(ctx, mk); why != "" {
		res.APIUnavailable = why
	} else {
		for _, n := range c.HTTPConcurrency {
			p := HTTPPoint{Mode: "query", Clients: n}
			var lats []Latency
			for i := range c.Repeats {
				prof := Profile{Name: fmt.Sprintf("query-api-%d", n), What: fmt.Sprintf("GET /api/v1/stats `page` over %d days, %d clients", res.APIDays, n),
					Targets: []string{"GET /api/v1/stats `page` over 30 days"}}
				var lr loadResult
				cpu, err := r.cpuProfile(i == c.Repeats-1 && n == slices.Max(c.HTTPConcurrency), true, prof, func() (err error) {
					lr, err = load(ctx, n, c.HTTPDuration, http.StatusOK, mk)
					return err
				})
				if err != nil {
					return err
				}
				p.addRun(lr, cpu)
				lats = append(lats, lr.latency)
			}
			p.finish(lats)
			res.API = append(res.API, p)
		}
	}

	r.prog.step("query: GET /stats/{domain}")
	res.PagesDays = f.days
	from, to = f.dateRange(f.days)
	page := srv.url + "/stats/" + site.Site.Domain + "?" + url.Values{"from": {from}, "to": {to}}.Encode()
	mk = func(ctx context.Context, _ int) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
	}
	if why := probeGet(ctx, mk); why != "" {
		res.PagesUnavailable = why
		return nil
	}
	client := newClient(1)
	defer client.CloseIdleConnections()
	var ds []time.Duration
	prof := Profile{Name: "query-page", What: fmt.Sprintf("GET /stats/{domain} over %d days, one client", f.days),
		Targets: []string{"statistics page GET /stats/{domain}"}}
	_, err = r.cpuProfile(true, true, prof, func() error {
		start := time.Now()
		for len(ds) < 5 || (time.Since(start) < 5*c.QueryTime && len(ds) < 500) {
			req, _ := mk(ctx, 0)
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ds = append(ds, time.Since(t0))
		}
		return nil
	})
	res.Pages = latencyOf(ds)
	return err
}

// probeGet sends one request made by mk and says why the endpoint is not
// available when it does not answer 200.
func probeGet(ctx context.Context, mk func(context.Context, int) (*http.Request, error)) string {
	req, err := mk(ctx, 0)
	if err != nil {
		return err.Error()
	}
	resp, err := newClient(1).Do(req)
	if err != nil {
		return fmt.Sprintf("%s %s failed: %v", req.Method, req.URL.Path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("%s %s answered %d %s: not available", req.Method, req.URL.Path, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return ""
}

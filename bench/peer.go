package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

// PeerResult is the outcome of the peer run: the same loads against the
// webstatsd binary and against another server that speaks Plausible's
// Events API (and, with a key, its Stats API), one after the other.
type PeerResult struct {
	// Peer is the other server's base URL and Name what the operator said
	// it is (-peer-name). Unavailable says why the run was not made.
	Peer, Name  string
	Unavailable string `json:",omitempty"`
	// Domain is the site both servers track (the peer's operator creates
	// it beforehand, in UTC). API is the version of the Stats API the
	// query load used (RunConfig.PeerAPI).
	Domain string
	API    string
	// Tracking holds POST /api/event in Plausible's form, Queries the
	// Stats API query (QueryUnavailable says why not), for "webstats" and
	// "peer" (HTTPPoint.Mode).
	Tracking         []HTTPPoint
	Queries          []HTTPPoint
	QueryUnavailable string `json:",omitempty"`
	// QueryHits is how many tracking requests each server answered 202
	// before the queries, the same for both, and QueryPageviews the
	// pageviews of today each then counted (webstats, the peer): they
	// differ where the two filter bots differently, or where the peer's
	// site held data before.
	QueryHits      int
	QueryPageviews [2]float64
	// QueryRows and QueryRowPageviews describe each side's first answer
	// to the measured query (webstats, the peer): its rows (10 asked) and
	// the pageviews summed over them. Answers of another shape mean the
	// two sides did not do the same work.
	QueryRows         [2]int
	QueryRowPageviews [2]float64
	// QueryNote says why the query load at the most clients was left out
	// (a query alone took longer than a measurement).
	QueryNote string `json:",omitempty"`
}

// The two sides of the peer run (HTTPPoint.Mode).
const (
	SideWebstats = "webstats"
	SidePeer     = "peer"
)

// statsForm is a Stats API query of the peer run in the form of one
// version of Plausible's API (RunConfig.PeerAPI): "v2", POST /api/v2/query,
// or "v1", GET /api/v1/stats/*. Both servers get the same form.
type statsForm struct {
	api, domain string
	today       time.Time
}

// label names the measured query in the report.
func (f statsForm) label() string {
	if f.api == "v1" {
		return "GET /api/v1/stats/breakdown"
	}
	return "POST /api/v2/query"
}

// byPage is the measured query: visitors and pageviews by page over the
// 30 days to today, top 10, as the query run's `page`.
func (f statsForm) byPage(ctx context.Context, base, key string) (*http.Request, error) {
	from, to := f.today.AddDate(0, 0, -29).Format(time.DateOnly), f.today.Format(time.DateOnly)
	if f.api == "v1" {
		q := url.Values{"site_id": {f.domain}, "period": {"custom"}, "date": {from + "," + to},
			"property": {"event:page"}, "metrics": {"visitors,pageviews"}, "limit": {"10"}}
		return f.get(ctx, base, key, "/api/v1/stats/breakdown?"+q.Encode())
	}
	b, _ := json.Marshal(map[string]any{
		"site_id":    f.domain,
		"metrics":    []string{"visitors", "pageviews"},
		"date_range": []string{from, to},
		"dimensions": []string{"event:page"},
		"pagination": map[string]int{"limit": 10},
	})
	return f.post(ctx, base, key, b)
}

// pageviewsToday asks for today's pageviews.
func (f statsForm) pageviewsToday(ctx context.Context, base, key string) (*http.Request, error) {
	day := f.today.Format(time.DateOnly)
	if f.api == "v1" {
		q := url.Values{"site_id": {f.domain}, "period": {"day"}, "date": {day}, "metrics": {"pageviews"}}
		return f.get(ctx, base, key, "/api/v1/stats/aggregate?"+q.Encode())
	}
	b, _ := json.Marshal(map[string]any{"site_id": f.domain, "metrics": []string{"pageviews"}, "date_range": []string{day, day}})
	return f.post(ctx, base, key, b)
}

// pageviews reads the answer to pageviewsToday.
func (f statsForm) pageviews(body []byte) (float64, bool) {
	if f.api == "v1" {
		// Plausible's form is {"results": {"pageviews": {"value": N}}};
		// a bare {"pageviews": N}, which some servers answer, is taken
		// too.
		var answer struct {
			Results struct {
				Pageviews *struct{ Value float64 } `json:"pageviews"`
			} `json:"results"`
			Pageviews *float64 `json:"pageviews"`
		}
		if json.Unmarshal(body, &answer) != nil {
			return 0, false
		}
		switch {
		case answer.Results.Pageviews != nil:
			return answer.Results.Pageviews.Value, true
		case answer.Pageviews != nil:
			return *answer.Pageviews, true
		}
		return 0, false
	}
	var answer struct {
		Results []struct{ Metrics []float64 } `json:"results"`
	}
	if json.Unmarshal(body, &answer) != nil || len(answer.Results) != 1 || len(answer.Results[0].Metrics) != 1 {
		return 0, false
	}
	return answer.Results[0].Metrics[0], true
}

// rows reads an answer to byPage: its rows and the pageviews summed over
// those that have them where this form puts them (an answer of another
// shape still counts its rows).
func (f statsForm) rows(body []byte) (n int, pageviews float64, ok bool) {
	var answer struct{ Results []json.RawMessage }
	if json.Unmarshal(body, &answer) != nil {
		return 0, 0, false
	}
	for _, raw := range answer.Results {
		if f.api == "v1" {
			var row struct{ Pageviews float64 }
			if json.Unmarshal(raw, &row) == nil {
				pageviews += row.Pageviews
			}
			continue
		}
		var row struct{ Metrics []float64 }
		if json.Unmarshal(raw, &row) == nil && len(row.Metrics) == 2 {
			pageviews += row.Metrics[1] // metrics: visitors, pageviews
		}
	}
	return len(answer.Results), pageviews, true
}

func (f statsForm) get(ctx context.Context, base, key, path string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return req, nil
}

func (f statsForm) post(ctx context.Context, base, key string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v2/query", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// plausibleEvent is the body of POST /api/event in Plausible's form.
type plausibleEvent struct {
	Name     string `json:"n"`
	URL      string `json:"u"`
	Domain   string `json:"d"`
	Referrer string `json:"r,omitempty"`
	Width    int    `json:"w,omitempty"`
}

// plausibleRequests encodes hits as Plausible tracking requests for domain.
func plausibleRequests(hits []engine.Hit, domain string) []trackRequest {
	reqs := make([]trackRequest, len(hits))
	for i, h := range hits {
		ev := plausibleEvent{Name: "pageview", URL: h.URL, Domain: domain, Referrer: h.Referrer}
		if h.Event != nil {
			ev.Name = h.Event.Name
		}
		if w, _, ok := strings.Cut(h.Resolution, "x"); ok {
			ev.Width, _ = strconv.Atoi(w)
		}
		body, _ := json.Marshal(ev)
		reqs[i] = trackRequest{body: body, ctype: "text/plain", ua: h.UserAgent, lang: h.Language, ip: h.IP.String(), secCHUA: h.SecCHUA}
	}
	return reqs
}

func (r *runner) peerRun(ctx context.Context, rep *Report) error {
	c := r.cfg
	res := &PeerResult{Peer: redactURL(c.Peer), Name: c.PeerName, Domain: Medium.Domain, API: c.PeerAPI}
	rep.Peer = res
	why := ""
	switch {
	case c.Peer == "":
		why = "no peer: give another server's base URL with -peer"
	case c.Webstatsd == "":
		why = "no webstatsd binary to run beside the peer: " + noBinary(&c)
	}
	return r.binarySection(ctx, RunPeer, peerSteps(&c), &res.Unavailable, why, func() error { return r.peerMeasure(ctx, res) })
}

// peerMeasure makes the peer run's measurements into res.
func (r *runner) peerMeasure(ctx context.Context, res *PeerResult) error {
	c := r.cfg
	peer := strings.TrimRight(c.Peer, "/")
	data := r.newDir("peer-webstatsd")
	defer removeAll(data)
	key, err := userAdd(ctx, c.Webstatsd, data)
	if err != nil {
		return err
	}
	// As the peer does behind a proxy: every visitor has its own address.
	p, err := startProc(ctx, c.Webstatsd, data, "-trust-proxy", "-rate-limit", "0", "-max-conns-per-ip", "-1")
	if err != nil {
		return err
	}
	defer p.kill()
	if _, err := p.ready(ctx, time.Minute); err != nil {
		return err
	}
	ours := "http://" + p.addr
	if err := ensureWebsite(ctx, ours, key, res.Domain); err != nil {
		return err
	}
	reqs := plausibleRequests(pipelineStream(c.Seed+1, min(200_000, max(c.PeerQueryHits+1, c.PipelineHits))), res.Domain)
	for _, base := range []string{ours, peer} {
		why, err := probe(ctx, base, &reqs[0])
		if err != nil {
			return err
		}
		if why != "" {
			side := "webstatsd"
			if base == peer {
				side = "the peer"
			}
			return fmt.Errorf("%s: %s", side, why)
		}
	}
	sides := []struct{ name, base, key string }{{SideWebstats, ours, key}, {SidePeer, peer, c.PeerKey}}
	// measure runs the load of mk with n clients against each side in
	// turns, Repeats times, the side that goes first alternating, so
	// that the machine's drift weighs on both alike; it returns a point
	// per side.
	measure := func(n, want int, mk func(ctx context.Context, base, key string, i int) (*http.Request, error)) ([]HTTPPoint, error) {
		points := []HTTPPoint{{Mode: SideWebstats, Clients: n}, {Mode: SidePeer, Clients: n}}
		lats := make([][]Latency, len(sides))
		for rep := range c.Repeats {
			for k := range sides {
				i := k
				if rep%2 == 1 {
					i = len(sides) - 1 - k
				}
				s := sides[i]
				lr, err := load(ctx, n, c.HTTPDuration, want, func(ctx context.Context, j int) (*http.Request, error) {
					return mk(ctx, s.base, s.key, j)
				})
				if err == nil {
					err = ctx.Err() // a cancelled load is cut short
				}
				if err != nil {
					return nil, err
				}
				points[i].Runs = append(points[i].Runs, lr.perSec)
				points[i].Errors += lr.errors
				lats[i] = append(lats[i], lr.latency)
			}
		}
		for i := range points {
			points[i].PerSec, points[i].Latency = median(points[i].Runs), medianLatency(lats[i])
		}
		return points, nil
	}

	// The query first, while both servers hold the same data: the peer
	// keeps its own clock (the Events API takes no time), so both get the
	// same requests now, and are asked about the 30 days to today.
	r.prog.step("peer: Stats API query, webstats and the peer in turns")
	if c.PeerKey == "" {
		res.QueryUnavailable = "no API key of the peer (-peer-key)"
	} else if why, err := r.peerQueries(ctx, res, sides[0].base, sides[0].key, sides[1].base, sides[1].key, reqs[1:1+c.PeerQueryHits], measure); err != nil {
		return err
	} else {
		res.QueryUnavailable = why
	}
	for _, n := range c.HTTPConcurrency {
		r.prog.step("peer: POST /api/event (Plausible's form), %d clients, webstats and the peer in turns", n)
		points, err := measure(n, http.StatusAccepted, func(ctx context.Context, base, _ string, i int) (*http.Request, error) {
			return reqs[i%len(reqs)].newRequest(ctx, base)
		})
		if err != nil {
			return err
		}
		res.Tracking = append(res.Tracking, points...)
	}
	return p.stop(ctx, time.Minute)
}

// peerQueries sends pre to both sides, waits until each counts what it
// will, and measures the Stats API query on both; it returns why the
// query load could not be made, if it could not.
func (r *runner) peerQueries(ctx context.Context, res *PeerResult, ours, ourKey, peer, peerKey string, pre []trackRequest,
	measure func(n, want int, mk func(ctx context.Context, base, key string, i int) (*http.Request, error)) ([]HTTPPoint, error)) (string, error) {
	res.QueryHits = len(pre)
	for i, base := range []string{ours, peer} {
		answered, err := sendAll(ctx, base, pre)
		if err != nil {
			return "", err
		}
		if answered != len(pre) {
			if i == 0 {
				return "", fmt.Errorf("webstatsd answered %d of %d tracking requests with 202", answered, len(pre))
			}
			return fmt.Sprintf("the peer answered %d of %d tracking requests with 202", answered, len(pre)), nil
		}
	}
	form := statsForm{api: res.API, domain: res.Domain, today: time.Now().UTC()}
	for i, side := range []struct{ base, key string }{{ours, ourKey}, {peer, peerKey}} {
		// A server may count a hit some time after its 202 (Plausible
		// writes its events in batches): wait until the count holds still.
		n, why := settledPageviews(ctx, form, side.base, side.key)
		if why != "" {
			if i == 0 {
				return "", fmt.Errorf("webstatsd: %s", why)
			}
			return "the peer: " + why, nil
		}
		res.QueryPageviews[i] = n
		rows, sum, why := probeQuery(ctx, form, side.base, side.key)
		if why != "" {
			if i == 0 {
				return "", fmt.Errorf("webstatsd: %s", why)
			}
			return "the peer: " + why, nil
		}
		res.QueryRows[i], res.QueryRowPageviews[i] = rows, sum
	}
	// One client gives the latency of a query alone; the most clients,
	// the throughput, unless a query alone takes longer than a
	// measurement on either side: many at once would then only queue
	// (and the requests the clients give up on would still weigh on the
	// next turn).
	alone, err := measure(1, http.StatusOK, func(ctx context.Context, base, key string, _ int) (*http.Request, error) {
		return form.byPage(ctx, base, key)
	})
	if err != nil {
		return "", err
	}
	res.Queries = append(res.Queries, alone...)
	most := slices.Max(r.cfg.HTTPConcurrency)
	if most == 1 {
		return "", nil
	}
	for _, pt := range alone {
		side := "webstats"
		if pt.Mode == SidePeer {
			side = "the peer"
		}
		switch {
		case pt.Latency.N == 0 && pt.Errors > 0:
			res.QueryNote = fmt.Sprintf("every query alone failed on %s (%d)", side, pt.Errors)
		case slices.Contains(pt.Runs, 0) || pt.Latency.P50 > r.cfg.HTTPDuration:
			// (A repetition without an answer has no latency: the
			// median of the others would hide it.)
			res.QueryNote = fmt.Sprintf("a query alone on %s took longer than a measurement's %s (%d answered, %d failed)", side, r.cfg.HTTPDuration, pt.Latency.N, pt.Errors)
		}
		if res.QueryNote != "" {
			return "", nil
		}
	}
	points, err := measure(most, http.StatusOK, func(ctx context.Context, base, key string, _ int) (*http.Request, error) {
		return form.byPage(ctx, base, key)
	})
	res.Queries = append(res.Queries, points...)
	return "", err
}

// settledPageviews polls a server's pageviews of today until two answers a
// second apart agree (at most 30 s), and returns the count, or why it
// could not.
func settledPageviews(ctx context.Context, form statsForm, base, key string) (float64, string) {
	prev := -1.0
	for range 30 {
		req, err := form.pageviewsToday(ctx, base, key)
		if err != nil {
			return 0, err.Error()
		}
		resp, err := newClient(1).Do(req)
		if err != nil {
			return 0, fmt.Sprintf("%s %s failed: %v", req.Method, req.URL.Path, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		n, ok := form.pageviews(b)
		if resp.StatusCode != http.StatusOK || !ok {
			return 0, fmt.Sprintf("%s %s (pageviews today) answered %s: %.200s", req.Method, req.URL.Path, resp.Status, bytes.TrimSpace(b))
		}
		if n == prev && n > 0 {
			return n, ""
		}
		prev = n
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return 0, ctx.Err().Error()
		}
	}
	return 0, "its pageviews of today did not settle in 30 s"
}

// peerSteps counts the progress steps of the peer run.
func peerSteps(c *RunConfig) int { return len(c.HTTPConcurrency) + 1 }

// sendAll sends every request once, from 8 clients, and returns how many
// were answered 202.
func sendAll(ctx context.Context, base string, reqs []trackRequest) (int, error) {
	hc := newClient(8)
	defer hc.CloseIdleConnections()
	next := make(chan int)
	answered := make(chan int)
	for range 8 {
		go func() {
			ok := 0
			for i := range next {
				req, err := reqs[i].newRequest(ctx, base)
				if err != nil {
					continue
				}
				if resp, err := hc.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == http.StatusAccepted {
						ok++
					}
				}
			}
			answered <- ok
		}()
	}
	for i := range reqs {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	total := 0
	for range 8 {
		total += <-answered
	}
	return total, ctx.Err()
}

// probeQuery asks the query once and returns the answer's rows and the
// pageviews summed over them; an answer other than 200 with results is the
// reason the query load cannot run.
func probeQuery(ctx context.Context, form statsForm, base, key string) (rows int, pageviews float64, why string) {
	req, err := form.byPage(ctx, base, key)
	if err != nil {
		return 0, 0, err.Error()
	}
	resp, err := newClient(1).Do(req)
	if err != nil {
		return 0, 0, fmt.Sprintf("%s %s failed: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	rows, pageviews, ok := form.rows(b)
	if resp.StatusCode != http.StatusOK || !ok || rows == 0 {
		return 0, 0, fmt.Sprintf("%s %s answered %s: %.200s", req.Method, req.URL.Path, resp.Status, bytes.TrimSpace(b))
	}
	return rows, pageviews, ""
}

// redactURL is base with its user information removed, for the report.
func redactURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return "(an unparsable URL)"
	}
	u.User = nil
	return u.String()
}

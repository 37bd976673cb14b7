package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd"
)

// HTTPResult is the outcome of the HTTP tracking run: POST /api/event in the
// phpAnalytics form from keep-alive clients.
type HTTPResult struct {
	// Target is "in-process" or the external server's URL.
	Target string
	// Unavailable, when not empty, says why the run could not measure
	// (the endpoint answered 404, say); Points is then empty.
	Unavailable string
	Points      []HTTPPoint
}

// HTTPPoint is one measurement: a durability mode and a number of clients.
type HTTPPoint struct {
	// Mode is "durable" (group commit, the default), "interval" (the
	// log fsynced every 100 ms, webstatsd -sync interval), "nosync" or
	// "external".
	Mode    string
	Clients int
	// PerSec is the median of Runs: answered requests per second (a bot's
	// request is answered 202 like any other, and counted here).
	PerSec float64
	Runs   []float64
	// Latency is the field-by-field median of the repetitions' latencies.
	Latency Latency
	// Errors counts requests that failed or answered other than 202.
	Errors int
	// CPUPerReq is the median of CPURuns: the server's CPU time per
	// answered request, the CPU the process spent outside the load
	// generator's goroutines (the server's, Pebble's, the collector's,
	// the scheduler's: runner.cpuProfile) over the requests answered; 0
	// when not measured (the profiler was busy, or a report from before).
	CPUPerReq time.Duration   `json:",omitempty"`
	CPURuns   []time.Duration `json:",omitempty"`
}

// addRun adds a repetition's result to p, with the server's CPU time
// over it (negative: not measured).
func (p *HTTPPoint) addRun(lr loadResult, serverCPU time.Duration) {
	p.Runs = append(p.Runs, lr.perSec)
	p.Errors += lr.errors
	if serverCPU >= 0 && lr.answered > 0 {
		p.CPURuns = append(p.CPURuns, serverCPU/time.Duration(lr.answered))
	}
}

// finish sets p's medians from its repetitions.
func (p *HTTPPoint) finish(lats []Latency) {
	p.PerSec, p.Latency = median(p.Runs), medianLatency(lats)
	if len(p.CPURuns) > 0 {
		p.CPUPerReq = medianDur(p.CPURuns)
	}
}

// Point returns the measurement of mode and clients, if any.
func (h *HTTPResult) Point(mode string, clients int) (HTTPPoint, bool) {
	if h == nil {
		return HTTPPoint{}, false
	}
	for _, p := range h.Points {
		if p.Mode == mode && p.Clients == clients {
			return p, true
		}
	}
	return HTTPPoint{}, false
}

// trackRequest is one pre-encoded tracking request.
type trackRequest struct {
	body                  []byte
	ctype                 string // Content-Type; "" is application/json
	ua, lang, ip, secCHUA string
}

// eventBody is the phpAnalytics form of POST /api/event.
type eventBody struct {
	Page             string     `json:"page"`
	Referrer         string     `json:"referrer,omitempty"`
	ScreenResolution string     `json:"screen_resolution,omitempty"`
	Event            *eventJSON `json:"event,omitempty"`
}

type eventJSON struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value,omitempty"`
	Unit  string          `json:"unit,omitempty"`
}

// trackRequests encodes hits as tracking requests.
func trackRequests(hits []engine.Hit) []trackRequest {
	reqs := make([]trackRequest, len(hits))
	for i, h := range hits {
		b := eventBody{Page: h.URL, Referrer: h.Referrer, ScreenResolution: h.Resolution}
		if h.Event != nil {
			b.Event = &eventJSON{Name: h.Event.Name, Value: h.Event.Value, Unit: h.Event.Unit}
		}
		body, _ := json.Marshal(b)
		reqs[i] = trackRequest{body: body, ua: h.UserAgent, lang: h.Language, ip: h.IP.String(), secCHUA: h.SecCHUA}
	}
	return reqs
}

// newRequest builds the HTTP request of tr against base.
func (tr *trackRequest) newRequest(ctx context.Context, base string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/event", bytes.NewReader(tr.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", cmp.Or(tr.ctype, "application/json"))
	req.Header.Set("User-Agent", tr.ua)
	if tr.lang != "" {
		req.Header.Set("Accept-Language", tr.lang)
	}
	if tr.secCHUA != "" {
		req.Header.Set("Sec-CH-UA", tr.secCHUA)
	}
	// The in-process server trusts it, so visitors get their own addresses.
	req.Header.Set("X-Forwarded-For", tr.ip)
	return req, nil
}

// newClient returns a keep-alive client for n concurrent requests.
func newClient(n int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns: 2 * n, MaxIdleConnsPerHost: 2 * n, IdleConnTimeout: time.Minute,
			DisableCompression: true,
			DialContext:        (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		},
	}
}

// loadResult is the outcome of one load: requests answered as wanted per
// second, their latencies, and the failures.
type loadResult struct {
	perSec   float64
	answered int // requests answered with the status wanted
	latency  Latency
	errors   int
}

// load runs clients goroutines that send requests made by mk (given a
// sequence number) for d, and counts the answers whose status is want.
func load(ctx context.Context, clients int, d time.Duration, want int, mk func(ctx context.Context, i int) (*http.Request, error)) (loadResult, error) {
	client := newClient(clients)
	defer client.CloseIdleConnections()
	var seq atomic.Int64
	var errs atomic.Int64
	lats := make([][]time.Duration, clients)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var fatal error
	var once sync.Once
	start := time.Now()
	deadline := start.Add(d)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls := make([]time.Duration, 0, 4096)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				req, err := mk(ctx, int(seq.Add(1)-1))
				if err != nil {
					once.Do(func() { fatal = err; cancel() })
					return
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					errs.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					errs.Add(1)
					continue
				}
				ls = append(ls, time.Since(t0))
			}
			lats[c] = ls
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if fatal != nil {
		return loadResult{}, fatal
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return loadResult{perSec: float64(len(all)) / el.Seconds(), answered: len(all), latency: latencyOf(all), errors: int(errs.Load())}, nil
}

// server is an in-process webstatsd on a loopback port.
type server struct {
	url string
	srv *http.Server
}

func startServer(e *engine.Engine) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h, err := httpd.New(e, &httpd.Options{RateLimit: -1, TrustProxy: true})
	if err != nil {
		return nil, err
	}
	s := &server{url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	s.serve(ln)
	return s, nil
}

// serve serves ln in a goroutine labelled as the server's (serverLabel), as
// every goroutine it starts is: a profile tells the server's work apart.
func (s *server) serve(ln net.Listener) {
	go pprof.Do(context.Background(), pprof.Labels(serverLabel, "1"), func(context.Context) { s.srv.Serve(ln) })
}

// startNoop starts the baseline server: it reads the body and answers 202.
func startNoop() (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, io.LimitReader(r.Body, 16<<10))
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "ok")
	})
	s := &server{url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	s.serve(ln)
	return s, nil
}

func (s *server) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// probe sends one request; an answer other than 202 makes the run
// unavailable, with the reason.
func probe(ctx context.Context, base string, tr *trackRequest) (string, error) {
	req, err := tr.newRequest(ctx, base)
	if err != nil {
		return "", err
	}
	resp, err := newClient(1).Do(req)
	if err != nil {
		return fmt.Sprintf("POST /api/event failed: %v", err), nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Sprintf("POST /api/event answered %d %s (%s): the tracking endpoint is not available", resp.StatusCode, http.StatusText(resp.StatusCode), strings.TrimSpace(string(b))), nil
	}
	return "", nil
}

// httpSyncInterval is the "interval" mode's fsync period: webstatsd's
// -sync-interval default.
const httpSyncInterval = 100 * time.Millisecond

func (r *runner) httpTracking(ctx context.Context, rep *Report) error {
	c := r.cfg
	res := &HTTPResult{Target: "in-process"}
	rep.HTTP = res
	r.prog.step("http: generating requests")
	reqs := trackRequests(pipelineStream(c.Seed+1, min(200_000, max(20_000, c.PipelineHits))))
	// baseline: a handler that reads the body and answers 202, on the same
	// loopback with the same clients — the ceiling of this machine's HTTP
	// stack, to read the other modes against.
	modes := []string{"baseline", "durable", "interval", "nosync"}
	if c.Target != "" {
		res.Target = redactURL(c.Target)
		modes = []string{"external"}
	}
	skip := func() {
		for range len(modes) * len(c.HTTPConcurrency) {
			r.prog.step("http: skipped")
		}
	}
	for mi, mode := range modes {
		base := strings.TrimRight(c.Target, "/")
		var e *engine.Engine
		var srv *server
		var dir string
		if mode == "baseline" {
			var err error
			if srv, err = startNoop(); err != nil {
				return err
			}
			base = srv.url
		} else if mode != "external" {
			dir = r.newDir("http-" + mode)
			var err error
			opts := &engine.Options{Dir: dir, NoSync: mode == "nosync"}
			if mode == "interval" {
				opts.SyncInterval = httpSyncInterval
			}
			e, err = engine.Open(opts)
			if err != nil {
				return err
			}
			if _, _, _, err := setup(ctx, e, Medium.Domain); err != nil {
				e.Close()
				return err
			}
			if srv, err = startServer(e); err != nil {
				e.Close()
				return err
			}
			base = srv.url
		} else if err := ensureWebsite(ctx, base, c.Key, Medium.Domain); err != nil {
			res.Unavailable = err.Error()
			skip()
			return nil
		}
		stop := func() {
			if srv != nil {
				srv.close()
			}
			if e != nil {
				e.Close()
				removeAll(dir)
			}
		}
		why, err := probe(ctx, base, &reqs[0])
		if err != nil || why != "" {
			stop()
			res.Unavailable = why
			for range (len(modes) - mi) * len(c.HTTPConcurrency) {
				r.prog.step("http: not available")
			}
			return err
		}
		for _, n := range c.HTTPConcurrency {
			r.prog.step("http: POST /api/event, %s, %d clients", mode, n)
			p := HTTPPoint{Mode: mode, Clients: n}
			var lats []Latency
			for i := range c.Repeats {
				// The last repetition at the most clients is profiled, in
				// the modes whose targets are read against the baseline.
				prof := Profile{Name: fmt.Sprintf("http-%s-%d", mode, n), What: fmt.Sprintf("POST /api/event, %d clients, %s", n, mode),
					Targets: []string{fmt.Sprintf("POST /api/event, %d clients, %s", n, map[string]string{"durable": "durable", "interval": "interval", "nosync": "NoSync"}[mode])}}
				on := i == c.Repeats-1 && n == slices.Max(c.HTTPConcurrency) && (mode == "durable" || mode == "interval" || mode == "nosync")
				var lr loadResult
				cpu, err := r.cpuProfile(on, mode != "external", prof, func() (err error) {
					lr, err = load(ctx, n, c.HTTPDuration, http.StatusAccepted, func(ctx context.Context, i int) (*http.Request, error) {
						return reqs[i%len(reqs)].newRequest(ctx, base)
					})
					return err
				})
				if err != nil {
					stop()
					return err
				}
				p.addRun(lr, cpu)
				lats = append(lats, lr.latency)
			}
			p.finish(lats)
			res.Points = append(res.Points, p)
		}
		stop()
	}
	return nil
}

// ensureWebsite creates the website domain on an external server through
// the API; a domain taken already is fine.
func ensureWebsite(ctx context.Context, base, key, domain string) error {
	form := url.Values{"domain": {domain}, "privacy": {"0"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/websites", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := newClient(1).Do(req)
	if err != nil {
		return fmt.Errorf("create website on %s: %w", base, err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusCreated:
		return nil
	case resp.StatusCode == http.StatusUnprocessableEntity && bytes.Contains(b, []byte("taken")):
		return nil
	}
	return errors.New("create website on " + base + ": " + resp.Status + ": " + strings.TrimSpace(string(b)))
}

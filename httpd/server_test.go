package httpd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/webstats/webstats/engine"
)

func TestHeaders(t *testing.T) {
	f := newFixture(t, &Options{RateLimit: 5})
	tests := []struct {
		name string
		req  request
		code int
		want map[string]string
	}{
		{
			name: "success carries CORS, rate limit and request id",
			req:  request{method: "GET", path: "/api/v1/account", key: f.alice, header: map[string]string{"X-Request-Id": "abc-123"}},
			code: 200,
			want: map[string]string{
				"Access-Control-Allow-Origin": "*", "X-Ratelimit-Limit": "5", "X-Ratelimit-Remaining": "4",
				"X-Request-Id": "abc-123", "Content-Type": "application/json",
			},
		},
		{
			name: "401 carries CORS",
			req:  request{method: "GET", path: "/public/api/v1/websites"},
			code: 401,
			want: map[string]string{"Access-Control-Allow-Origin": "*", "X-Ratelimit-Limit": ""},
		},
		{
			name: "preflight needs no key",
			req:  request{method: "OPTIONS", path: "/api/v1/websites/1", header: map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "PATCH"}},
			code: 204,
			want: map[string]string{
				"Access-Control-Allow-Origin":  "*",
				"Access-Control-Allow-Methods": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
				"Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key, X-Requested-With, X-Request-Id",
				"Access-Control-Max-Age":       "86400",
			},
		},
		{
			name: "preflight on an unknown API path",
			req:  request{method: "OPTIONS", path: "/api/v1/nowhere"},
			code: 204,
			want: map[string]string{"Access-Control-Allow-Origin": "*"},
		},
		{
			name: "preflight on another registered route",
			req:  request{method: "OPTIONS", path: "/healthz"},
			code: 204,
			want: map[string]string{"Access-Control-Allow-Origin": "*"},
		},
		{
			name: "insane request id is replaced",
			req:  request{method: "GET", path: "/healthz", header: map[string]string{"X-Request-Id": "a b\x01"}},
			code: 200,
			want: map[string]string{"Access-Control-Allow-Origin": ""},
		},
		{
			name: "405 lists the methods",
			req:  request{method: "POST", path: "/api/v1/stats/1", key: f.alice},
			code: 405,
			want: map[string]string{"Allow": "GET, HEAD, OPTIONS", "Content-Type": "application/json"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do(tt.req)
			if w.Code != tt.code {
				t.Fatalf("status = %d, want %d: %s", w.Code, tt.code, w.Body)
			}
			got := make(map[string]string)
			for k := range tt.want {
				got[k] = w.Header().Get(k)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("headers mismatch (-want +got):\n%s", diff)
			}
			if id := w.Header().Get("X-Request-Id"); id == "" || strings.ContainsAny(id, " \x01") {
				t.Errorf("X-Request-Id = %q", id)
			}
		})
	}
}

func TestHead(t *testing.T) {
	f := newFixture(t, nil)
	w := f.do(request{method: "HEAD", path: "/api/v1/websites/1", key: f.alice})
	if w.Code != 200 {
		t.Errorf("HEAD status = %d, want 200", w.Code)
	}
}

func TestTrailingSlash(t *testing.T) {
	f := newFixture(t, nil)
	w := f.do(request{method: "GET", path: "/api/v1/websites/", key: f.alice})
	if w.Code != 200 {
		t.Errorf("status = %d, want 200: %s", w.Code, w.Body)
	}
}

func TestRateLimit(t *testing.T) {
	f := newFixture(t, &Options{RateLimit: 3})
	get := func(key string) *httptest.ResponseRecorder {
		return f.do(request{method: "GET", path: "/api/v1/account", key: key})
	}
	for i, want := range []string{"2", "1", "0"} {
		w := get(f.alice)
		if w.Code != 200 || w.Header().Get("X-RateLimit-Remaining") != want {
			t.Fatalf("request %d: status %d remaining %q, want 200 %q", i, w.Code, w.Header().Get("X-RateLimit-Remaining"), want)
		}
	}
	w := get(f.alice)
	if w.Code != 429 || w.Header().Get("Retry-After") != "20" || w.Header().Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("4th request: status %d Retry-After %q remaining %q, want 429 20 0",
			w.Code, w.Header().Get("Retry-After"), w.Header().Get("X-RateLimit-Remaining"))
	}
	// Another key has its own bucket.
	if w := get(f.bob); w.Code != 200 {
		t.Errorf("bob: status %d, want 200", w.Code)
	}
	// 429 comes before 404 and 405, after 401.
	if w := f.do(request{method: "GET", path: "/api/v1/nowhere", key: f.alice}); w.Code != 429 {
		t.Errorf("unknown path while limited: %d, want 429", w.Code)
	}
	if w := f.do(request{method: "GET", path: "/api/v1/websites/99", key: f.alice}); w.Code != 429 {
		t.Errorf("unknown id while limited: %d, want 429", w.Code)
	}
	if w := f.do(request{method: "GET", path: "/api/v1/account", key: "wrong"}); w.Code != 401 {
		t.Errorf("wrong key: %d, want 401", w.Code)
	}
	f.clock.Advance(20 * time.Second)
	if w := get(f.alice); w.Code != 200 {
		t.Errorf("after 20s: status %d, want 200", w.Code)
	}
}

func TestRateLimitOff(t *testing.T) {
	f := newFixture(t, &Options{RateLimit: -1})
	for range 100 {
		w := f.do(request{method: "GET", path: "/api/v1/account", key: f.alice})
		if w.Code != 200 || w.Header().Get("X-RateLimit-Limit") != "" {
			t.Fatalf("status %d, X-RateLimit-Limit %q; want 200 and none", w.Code, w.Header().Get("X-RateLimit-Limit"))
		}
	}
}

// TestAuthFailuresLimited checks that wrong keys from one address are
// refused after authFailuresPerMinute, and that a right key from the same
// address is never refused by that limit (SPEC §13: one client behind a NAT
// must not lock everyone out).
func TestAuthFailuresLimited(t *testing.T) {
	f := newFixture(t, nil)
	for i := range authFailuresPerMinute {
		if w := f.do(request{method: "GET", path: "/api/v1/account", key: "guess"}); w.Code != 401 {
			t.Fatalf("failure %d: status %d, want 401", i, w.Code)
		}
	}
	if w := f.do(request{method: "GET", path: "/api/v1/account", key: "guess"}); w.Code != 429 || w.Header().Get("Retry-After") == "" {
		t.Errorf("wrong key after %d failures: status %d, want 429 with Retry-After", authFailuresPerMinute, w.Code)
	}
	for i := range 3 {
		if w := f.do(request{method: "GET", path: "/api/v1/account", key: f.alice}); w.Code != 200 {
			t.Errorf("right key %d while wrong keys are limited: status %d, want 200", i, w.Code)
		}
	}
	if w := f.do(request{method: "GET", path: "/api/v1/account"}); w.Code != 401 {
		t.Errorf("no key: status %d, want 401", w.Code)
	}
	// 401 stays before 404 for a right key, and 429 before 404 for a wrong one.
	if w := f.do(request{method: "GET", path: "/api/v1/websites/99", key: "guess"}); w.Code != 429 {
		t.Errorf("wrong key on an unknown id: status %d, want 429", w.Code)
	}
	f.clock.Advance(3 * time.Second) // one failure's worth refills
	if w := f.do(request{method: "GET", path: "/api/v1/account", key: "guess"}); w.Code != 401 {
		t.Errorf("wrong key after refill: status %d, want 401", w.Code)
	}
}

// TestErrorOrder checks 401, 429, 404/405, then 400/413/422.
func TestErrorOrder(t *testing.T) {
	f := newFixture(t, nil)
	big := strings.Repeat("x", 11<<20)
	tests := []struct {
		name string
		req  request
		code int
	}{
		{"401 before 404", request{method: "GET", path: "/api/v1/websites/99"}, 401},
		{"401 before 405", request{method: "PUT", path: "/api/v1/account"}, 401},
		{"401 before 422", request{method: "POST", path: "/api/v1/websites", ctype: "application/json", body: "{}"}, 401},
		{"404 before 422 on update", request{method: "PATCH", path: "/api/v1/websites/3", key: f.alice, ctype: "application/json", body: `{"privacy":9}`}, 404},
		{"404 before 400 on update", request{method: "PATCH", path: "/api/v1/websites/3", key: f.alice, ctype: "application/json", body: `{`}, 404},
		{"404 before 422 on stats", request{method: "GET", path: "/api/v1/stats/3", key: f.alice}, 404},
		{"404 before 413 on import", request{method: "POST", path: "/api/v1/websites/3/events", key: f.alice, body: big}, 404},
		{"413 on import", request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, body: big}, 413},
		{"404 for a zero id", request{method: "GET", path: "/api/v1/websites/0", key: f.alice}, 404},
		{"404 for an id past uint32", request{method: "GET", path: "/api/v1/websites/4294967297", key: f.alice}, 404},
		{"404 for a non-numeric id", request{method: "DELETE", path: "/api/v1/websites/1abc", key: f.alice}, 404},
		{"404 for a non-numeric stats id", request{method: "GET", path: "/api/v1/stats/x?name=page&from=2026-01-01&to=2026-01-02", key: f.alice}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w := f.do(tt.req); w.Code != tt.code {
				t.Errorf("status = %d, want %d: %s", w.Code, tt.code, w.Body)
			}
		})
	}
}

// TestClientIP: with TrustProxy, the client is the right-most
// X-Forwarded-For entry that is not a trusted proxy, read only when the
// connection comes from a trusted proxy (SPEC §13).
func TestClientIP(t *testing.T) {
	tests := []struct {
		name    string
		trust   bool
		proxies string // "" = the defaults
		remote  string
		xff     []string
		want    string
	}{
		{name: "connection", remote: "203.0.113.9:4000", xff: []string{"8.8.8.8"}, want: "203.0.113.9"},
		{name: "peer not a proxy", trust: true, remote: "203.0.113.9:4000", xff: []string{"8.8.8.8"}, want: "203.0.113.9"},
		{name: "right-most not trusted", trust: true, remote: "127.0.0.1:1", xff: []string{"1.1.1.1, 8.8.8.8, 10.0.0.1"}, want: "8.8.8.8"},
		{name: "private client", trust: true, proxies: "127.0.0.0/8", remote: "127.0.0.1:1", xff: []string{"198.51.100.7, 10.0.0.5"}, want: "10.0.0.5"},
		{name: "several headers", trust: true, remote: "127.0.0.1:1", xff: []string{"1.1.1.1", "9.9.9.9, 192.168.1.1"}, want: "9.9.9.9"},
		{name: "all trusted", trust: true, remote: "10.1.1.1:1", xff: []string{"127.0.0.1, ::1, 192.168.0.3"}, want: "127.0.0.1"},
		{name: "no header", trust: true, remote: "10.1.1.1:1", want: "10.1.1.1"},
		{name: "garbage", trust: true, remote: "10.0.0.1:443", xff: []string{"8.8.8.8, nope, , 192.168.0.2"}, want: "192.168.0.2"},
		{name: "garbage from an untrusted peer", trust: true, remote: "[2001:db8::1]:443", xff: []string{"nope, , 300.1.1.1"}, want: "2001:db8::1"},
		{name: "with port", trust: true, remote: "10.0.0.1:1", xff: []string{"[2606:4700::1]:80"}, want: "2606:4700::1"},
		{name: "a plain address", trust: true, proxies: "192.0.2.1, 10.0.0.0/8", remote: "192.0.2.1:1", xff: []string{"8.8.8.8, 10.2.3.4"}, want: "8.8.8.8"},
		{name: "mapped", remote: "[::ffff:8.8.8.8]:1", want: "8.8.8.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := tt.proxies
			if list == "" {
				list = DefaultTrustedProxies
			}
			p, err := ParseProxies(list)
			if err != nil {
				t.Fatal(err)
			}
			s := &Server{opts: Options{TrustProxy: tt.trust}, proxies: p}
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := s.clientIP(r); got != netip.MustParseAddr(tt.want) {
				t.Errorf("clientIP = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := ParseProxies("10.0.0.0/8,nope"); err == nil {
		t.Error("ParseProxies accepted nope")
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := newFixture(t, &Options{Registerer: reg, RateLimit: -1})
	f.do(request{method: "GET", path: "/api/v1/websites/1", key: f.alice})
	f.do(request{method: "GET", path: "/api/v1/websites/99", key: f.alice})
	f.do(request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice,
		body: `{"time":"2026-11-20T10:00:00Z","page":"/","ip":"8.8.8.8","user_agent":"curl/8.0"}`})
	w := f.do(request{method: "GET", path: "/metrics"})
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	body := w.Body.String()
	for _, want := range []string{
		`webstats_http_requests_total{code="200",method="GET",route="/api/v1/websites/:id"} 1`,
		`webstats_http_requests_total{code="404",method="GET",route="/api/v1/websites/:id"} 1`,
		`webstats_hits_dropped_total{reason="bot"} 1`,
		`webstats_hits_tracked_total 0`,
		`webstats_import_duration_seconds_count 1`,
		`webstats_resident_bytes`,
		`webstats_snapshot_duration_seconds`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "example.com") || strings.Contains(body, `website=`) {
		t.Errorf("/metrics names a website:\n%s", body)
	}
	// A second Server on the same registry shares the metrics.
	New(f.e, &Options{Registerer: reg})
}

func TestPanicRecovered(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, &Options{RateLimit: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	f.s.handle("GET", "/boom", maxBody, func(http.ResponseWriter, *http.Request, httprouter.Params) { panic("boom") })
	w := f.do(request{method: "GET", path: "/boom", header: map[string]string{"X-Request-Id": "req-42"}})
	if w.Code != 500 || strings.TrimSpace(w.Body.String()) != `{"message":"Server Error.","status":500}` {
		t.Errorf("got %d %s, want a JSON 500", w.Code, w.Body)
	}
	if !strings.Contains(logs.String(), "request_id=req-42") || !strings.Contains(logs.String(), "boom") {
		t.Errorf("log lacks the request id and panic:\n%s", logs.String())
	}
}

func TestBodyLimitOtherRoutes(t *testing.T) {
	f := newFixture(t, nil)
	var got int
	f.s.handle("POST", "/echo", maxBody, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		_, err := io.ReadAll(r.Body)
		if err != nil {
			writeError(w, r, err)
			return
		}
		got++
		w.WriteHeader(204)
	})
	if w := f.do(request{method: "POST", path: "/echo", body: strings.Repeat("a", maxBody+1)}); w.Code != 413 {
		t.Errorf("status %d, want 413", w.Code)
	}
}

func TestLinksWindow(t *testing.T) {
	labels := func(page, last int) string {
		p := &pager{path: "/x", query: parseQuery(""), page: page, perPage: 10, lastPage: last}
		var out []string
		for _, l := range p.links()[1 : len(p.links())-1] {
			s := l.Label
			if l.Active {
				s = "[" + s + "]"
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	tests := []struct {
		page, last int
		want       string
	}{
		{1, 1, "[1]"},
		{2, 1, "1"},
		{1, 13, "[1] 2 3 4 5 6 7 8 9 10 11 12 13"},
		{1, 20, "[1] 2 3 4 5 6 7 8 9 10 ... 19 20"},
		{7, 20, "1 2 3 4 5 6 [7] 8 9 10 ... 19 20"},
		{10, 20, "1 2 ... 7 8 9 [10] 11 12 13 ... 19 20"},
		{8, 20, "1 2 ... 5 6 7 [8] 9 10 11 ... 19 20"},
		{14, 20, "1 2 ... 11 12 13 [14] 15 16 17 18 19 20"},
		{30, 20, "1 2 ... 11 12 13 14 15 16 17 18 19 20"},
	}
	for _, tt := range tests {
		if got := labels(tt.page, tt.last); got != tt.want {
			t.Errorf("links(page %d of %d) = %q, want %q", tt.page, tt.last, got, tt.want)
		}
	}
}

func TestParseQuery(t *testing.T) {
	q := parseQuery("b=1&a=x+y&b=2&bad=%zz&&=v&c")
	if diff := cmp.Diff([]string{"b", "a", "bad", "c"}, q.keys); diff != "" {
		t.Errorf("keys mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"b": "2", "a": "x y", "bad": "%zz", "c": ""}, q.vals); diff != "" {
		t.Errorf("values mismatch (-want +got):\n%s", diff)
	}
	if got, want := rawURLEncode("a b/ü~"), "a%20b%2F%C3%BC~"; got != want {
		t.Errorf("rawURLEncode = %q, want %q", got, want)
	}
}

func TestRequestPath(t *testing.T) {
	r := httptest.NewRequest("GET", "http://stats.example/api/v1/websites?page=2", nil)
	r.Header.Set("X-Forwarded-Proto", "https")
	if got, want := requestPath(r, "", false), "http://stats.example/api/v1/websites"; got != want {
		t.Errorf("untrusted: %q, want %q", got, want)
	}
	if got, want := requestPath(r, "", true), "https://stats.example/api/v1/websites"; got != want {
		t.Errorf("trusted: %q, want %q", got, want)
	}
}

// TestConcurrent serves requests of both accounts at once (run with -race)
// and checks that every acknowledged hit is counted: the pageviews of each
// website equal its imports' accepted events plus its 202s.
func TestConcurrent(t *testing.T) {
	f := newFixture(t, &Options{RateLimit: 1000})
	type client struct {
		key    string
		site   uint32
		domain string
	}
	clients := []client{{f.alice, 1, "example.com"}, {f.bob, 3, "other.net"}}
	const workers, rounds = 4, 20
	var mu sync.Mutex
	acked := map[uint32]int{} // by website: events accepted and hits answered 202
	var wg sync.WaitGroup
	for i := range workers {
		c := clients[i%2]
		wg.Go(func() {
			for j := range rounds {
				if w := f.do(request{method: "GET", path: "/api/v1/websites", key: c.key}); w.Code != 200 {
					t.Errorf("list: %d %s", w.Code, w.Body)
				}
				w := f.do(request{method: "POST", path: fmt.Sprintf("/api/v1/websites/%d/events", c.site), key: c.key,
					body: `{"time":"2026-11-21T09:00:00Z","page":"/i","ip":"8.8.8.8","user_agent":"` + chromeUA + `"}`})
				var imp struct {
					Data struct{ Accepted int }
				}
				if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &imp) != nil {
					t.Errorf("import: %d %s", w.Code, w.Body)
				}
				w = f.do(trackRequest("text/plain", `{"page":"https://`+c.domain+`/t?`+strconv.Itoa(j)+`"}`, nil))
				tracked := 0
				switch {
				case w.Code != 202:
					t.Errorf("track: %d %s", w.Code, w.Body)
				case w.Header().Get("X-Webstats-Dropped") == "":
					tracked = 1
				}
				mu.Lock()
				acked[c.site] += imp.Data.Accepted + tracked
				mu.Unlock()
				f.do(request{method: "GET", path: fmt.Sprintf("/api/v1/stats/%d?name=page&from=2026-11-21&to=2026-11-21", c.site), key: c.key})
				f.do(request{method: "GET", path: "/metrics"})
			}
		})
	}
	wg.Wait()
	for _, c := range clients {
		want := []engine.Row{{Value: "2026-11-21", Count: uint64(acked[c.site])}}
		if diff := cmp.Diff(want, statRows(t, f.e, c.site, "pageviews")); diff != "" {
			t.Errorf("website %d: pageviews mismatch (-want +got):\n%s", c.site, diff)
		}
		if got, want := acked[c.site], workers/2*rounds*2; got != want {
			t.Errorf("website %d: %d hits acknowledged, want %d", c.site, got, want)
		}
	}
}

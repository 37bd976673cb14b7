package httpd

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/julienschmidt/httprouter"
)

// TestLinksHostileHost checks that pagination links never carry a Host
// header that is not a valid host[:port], and come from PublicURL when it
// is set (SPEC §13).
func TestLinksHostileHost(t *testing.T) {
	tests := []struct {
		name      string
		publicURL string
		host      string
		local     string // the connection's local address; "" for none
		want      string // the answer's "path"
	}{
		{name: "valid host", host: "stats.example:8080", want: "http://stats.example:8080/api/v1/stats/1"},
		{name: "valid ipv6", host: "[2001:db8::1]:80", want: "http://[2001:db8::1]:80/api/v1/stats/1"},
		{name: "public url wins", publicURL: "https://stats.example.org", host: "evil.example",
			want: "https://stats.example.org/api/v1/stats/1"},
		{name: "public url with a path", publicURL: "https://example.org/webstats/", host: "x",
			want: "https://example.org/webstats/api/v1/stats/1"},
		{name: "markup", host: `evil.example"><script>`, local: "127.0.0.1:8080", want: "http://127.0.0.1:8080/api/v1/stats/1"},
		{name: "userinfo", host: "user@evil.example", local: "127.0.0.1:8080", want: "http://127.0.0.1:8080/api/v1/stats/1"},
		{name: "path", host: "evil.example/x?y=", local: "[::1]:8080", want: "http://[::1]:8080/api/v1/stats/1"},
		{name: "sub-delims", host: "evil.example!$&'()*+,;=", local: "127.0.0.1:8080", want: "http://127.0.0.1:8080/api/v1/stats/1"},
		{name: "bad port", host: "evil.example:99999", local: "127.0.0.1:8080", want: "http://127.0.0.1:8080/api/v1/stats/1"},
		{name: "empty", host: "", local: "127.0.0.1:8080", want: "http://127.0.0.1:8080/api/v1/stats/1"},
		{name: "no local address", host: "a b", want: "http://localhost/api/v1/stats/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, &Options{RateLimit: -1, PublicURL: tt.publicURL})
			r := httptest.NewRequest("GET", "/api/v1/stats/1?name=page&from=2026-11-20&to=2026-11-20", nil)
			r.Host = tt.host
			r.Header.Set("Authorization", "Bearer "+f.alice)
			if tt.local != "" {
				addr, err := net.ResolveTCPAddr("tcp", tt.local)
				if err != nil {
					t.Fatal(err)
				}
				r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
			}
			w := httptest.NewRecorder()
			f.s.ServeHTTP(w, r)
			var body struct {
				Path         string `json:"path"`
				FirstPageURL string `json:"first_page_url"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 200 {
				t.Fatalf("status %d, %v: %s", w.Code, err, w.Body)
			}
			if diff := cmp.Diff(tt.want, body.Path); diff != "" {
				t.Errorf("path mismatch (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(body.FirstPageURL, tt.want+"?") {
				t.Errorf("first_page_url %q does not start with %q", body.FirstPageURL, tt.want)
			}
		})
	}
}

// TestLinksHostileHostHTTP sends a Host that Go's server lets through (its
// characters are allowed) but that is no host name, over a real connection:
// the links use the address the connection came to.
func TestLinksHostileHostHTTP(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.s)
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Write([]byte("GET /api/v1/websites HTTP/1.1\r\nHost: evil.example!$&'()*+,;=\r\n" +
		"Authorization: Bearer " + f.alice + "\r\nConnection: close\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Meta struct {
			Path string `json:"path"`
		} `json:"meta"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	if diff := cmp.Diff(srv.URL+"/api/v1/websites", body.Meta.Path); diff != "" {
		t.Errorf("path mismatch (-want +got):\n%s", diff)
	}
}

// rawExchange sends head and body on a new connection to addr, then closes
// the connection's write side when closeWrite, and returns the answer's
// status code (0 when there is none within 3 s).
func rawExchange(t *testing.T, addr, head, body string, closeWrite bool) (code int, took time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Write([]byte(head + "\r\n" + body)); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		c.(*net.TCPConn).CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Logf("no answer: %v", err)
		return 0, time.Since(start)
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// TestBrokenBodies sends truncated, malformed, never-ending and oversized
// bodies over real connections: 400, 408 or 413, never 5xx (SPEC §13).
func TestBrokenBodies(t *testing.T) {
	const timeout = 300 * time.Millisecond
	f := newFixture(t, &Options{RateLimit: -1, BodyTimeout: timeout, ImportBodyTimeout: timeout})
	srv := httptest.NewServer(f.s)
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()

	routes := []struct{ method, path string }{
		{"POST", "/api/v1/websites"},
		{"PATCH", "/api/v1/websites/1"},
		{"POST", "/api/v1/websites/1/events"},
		{"POST", "/api/event"},
	}
	bodies := []struct {
		name       string
		header     string // framing headers
		body       string
		closeWrite bool
		want       int
	}{
		{name: "truncated", header: "Content-Length: 100\r\n", body: `{"domain":"`, closeWrite: true, want: 400},
		{name: "truncated chunked", header: "Transfer-Encoding: chunked\r\n", body: "b\r\n{\"domain\":\"\r\n", closeWrite: true, want: 400},
		{name: "malformed chunk", header: "Transfer-Encoding: chunked\r\n", body: "zz\r\n{}\r\n0\r\n\r\n", closeWrite: false, want: 400},
		{name: "stalled", header: "Content-Length: 100\r\n", body: `{"domain":"`, want: 408},
		{name: "stalled chunked", header: "Transfer-Encoding: chunked\r\n", body: "b\r\n{\"domain\":\"\r\n", want: 408},
		{name: "too large", header: "Content-Length: 100000000\r\n", body: `{"domain":"`, want: 413},
	}
	for _, rt := range routes {
		for _, b := range bodies {
			t.Run(rt.method+" "+rt.path+"/"+b.name, func(t *testing.T) {
				t.Parallel()
				head := rt.method + " " + rt.path + " HTTP/1.1\r\nHost: stats.example\r\nAuthorization: Bearer " + f.alice +
					"\r\nContent-Type: application/json\r\n" + b.header
				code, took := rawExchange(t, addr, head, b.body, b.closeWrite)
				if code != b.want {
					t.Errorf("status %d, want %d", code, b.want)
				}
				if b.want == 408 && took > timeout+time.Second {
					t.Errorf("408 after %v, want about %v", took, timeout)
				}
			})
		}
	}
}

// raiseFileLimit raises the soft RLIMIT_NOFILE to at least n (up to the hard
// limit), for tests that open many sockets, and restores it afterwards.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if rl.Cur >= n {
		return
	}
	old := rl
	rl.Cur = min(n, rl.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	if rl.Cur < n {
		t.Skipf("RLIMIT_NOFILE is %d, the test needs %d", rl.Cur, n)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// slowClients opens n connections from the local address from to addr, each
// sending the headers of a chunked POST /api/event and one chunk, then
// nothing. It returns them once all are open; the caller closes them.
func slowClients(t *testing.T, addr string, from string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial from %s: %v", from, err)
		}
		conns = append(conns, c)
		// A refused connection may be closed already: errors do not matter.
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write([]byte("POST /api/event HTTP/1.1\r\nHost: stats.example\r\nTransfer-Encoding: chunked\r\n" +
			"Content-Type: text/plain\r\n\r\n1\r\n{\r\n"))
	}
	return conns
}

// metricValue returns the value of the metric line that starts with name
// (with its labels) in the /metrics answer of srv, -1 when there is none.
func metricValue(t *testing.T, client *http.Client, base, name string) float64 {
	t.Helper()
	// The slow connections of a test may still hold the server's places
	// for a moment (each is closed at its own timeout): a refused
	// connection is retried, for a while.
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err = client.Get(base + "/metrics"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return v
		}
	}
	return -1
}

// TestConnectionCapPerIP floods the server with slow tracking bodies from
// one address: beyond MaxConnsPerIP its connections are refused and
// counted, while /healthz and an API client from another address are
// served (SPEC §13).
func TestConnectionCapPerIP(t *testing.T) {
	const flood, perIP = 2000, 100
	raiseFileLimit(t, 3*flood)
	f := newFixture(t, &Options{RateLimit: -1, MaxConns: 1000, MaxConnsPerIP: perIP, BodyTimeout: time.Minute})
	srv := httptest.NewUnstartedServer(f.s)
	srv.Listener = f.s.Listener(srv.Listener)
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()

	attack := slowClients(t, addr, "127.0.0.2", flood)

	// One keep-alive connection for every request of the test (a server
	// holds a connection it closes for another 500 ms).
	tr := &http.Transport{MaxConnsPerHost: 1}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	resp, err := client.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz during the flood: %v %v", resp, err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/websites", nil)
	req.Header.Set("Authorization", "Bearer "+f.alice)
	resp, err = client.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("API during the flood: %v %v", resp, err)
	}
	resp.Body.Close()

	refused := `webstats_http_connections_refused_total{reason="max_conns_per_ip"}`
	// Refusals are counted as the accept loop gets to them.
	deadline := time.Now().Add(3 * time.Second)
	for metricValue(t, client, srv.URL, refused) < flood-perIP && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := metricValue(t, client, srv.URL, refused); got != flood-perIP {
		t.Errorf("%s = %v, want %d", refused, got, flood-perIP)
	}
	// perIP slow bodies and the client's. On a busy machine the client
	// may have dialled again (a request past its timeout) while the
	// server still holds its old connection for a moment: wait for that.
	deadline = time.Now().Add(3 * time.Second)
	for metricValue(t, client, srv.URL, "webstats_http_connections_open") != perIP+1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := metricValue(t, client, srv.URL, "webstats_http_connections_open"); got != perIP+1 {
		t.Errorf("open connections = %v, want %d", got, perIP+1)
	}

	for _, c := range attack {
		c.Close()
	}
	deadline = time.Now().Add(3 * time.Second)
	for metricValue(t, client, srv.URL, "webstats_http_connections_open") != 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := metricValue(t, client, srv.URL, "webstats_http_connections_open"); got != 1 {
		t.Errorf("open connections after the flood = %v, want 1", got)
	}
}

// TestConnectionCapTotal floods the server from many addresses: it never
// holds more than MaxConns connections, counts the refusals, and serves
// again once the slow bodies time out.
func TestConnectionCapTotal(t *testing.T) {
	const maxConns, timeout = 50, 300 * time.Millisecond
	raiseFileLimit(t, 2000)
	f := newFixture(t, &Options{RateLimit: -1, MaxConns: maxConns, MaxConnsPerIP: 1000, BodyTimeout: timeout})
	srv := httptest.NewUnstartedServer(f.s)
	srv.Listener = f.s.Listener(srv.Listener)
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()

	start := time.Now()
	for i := range 4 {
		slowClients(t, addr, "127.0.1."+strconv.Itoa(i+1), 50)
	}
	if time.Since(start) > timeout/2 {
		t.Skipf("opening the connections took %v: too slow to tell refusals from timeouts", time.Since(start))
	}
	if n := f.s.conns.openConns(); n > maxConns {
		t.Errorf("%d connections open, more than MaxConns %d", n, maxConns)
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var healthy bool
	deadline := time.Now().Add(3 * time.Second)
	for !healthy && time.Now().Before(deadline) {
		resp, err := client.Get(srv.URL + "/healthz")
		if err == nil {
			healthy = resp.StatusCode == 200
			resp.Body.Close()
		}
	}
	if !healthy {
		t.Fatal("/healthz does not answer after the slow bodies timed out")
	}
	refused := `webstats_http_connections_refused_total{reason="max_conns"}`
	if got := metricValue(t, client, srv.URL, refused); got < 200-maxConns {
		t.Errorf("%s = %v, want at least %d", refused, got, 200-maxConns)
	}
	if got := metricValue(t, client, srv.URL, "webstats_http_connections_max"); got != maxConns {
		t.Errorf("webstats_http_connections_max = %v, want %d", got, maxConns)
	}
}

// TestConnLimiter checks the caps' arithmetic: IPv6 clients count per /64,
// behind a trusted proxy private peers are not capped per address, and a
// released connection frees its place.
func TestConnLimiter(t *testing.T) {
	type op struct {
		peer    string
		release bool   // release the peer's oldest connection instead
		want    string // refusal reason ("" accepted) of an acquire
	}
	tests := []struct {
		name          string
		maxConns      int
		maxPerIP      int
		exemptProxies bool
		ops           []op
	}{
		{name: "per ip", maxConns: 10, maxPerIP: 2, ops: []op{
			{peer: "8.8.8.8"}, {peer: "8.8.8.8"}, {peer: "8.8.8.8", want: refusedMaxConnsPerIP},
			{peer: "8.8.4.4"}, {peer: "8.8.8.8", release: true}, {peer: "8.8.8.8"},
		}},
		{name: "ipv6 per /64", maxConns: 10, maxPerIP: 2, ops: []op{
			{peer: "2001:db8::1"}, {peer: "2001:db8::2"}, {peer: "2001:db8::ffff:1", want: refusedMaxConnsPerIP},
			{peer: "2001:db8:0:1::1"}, {peer: "::ffff:8.8.8.8"}, {peer: "8.8.8.8"}, {peer: "8.8.8.8", want: refusedMaxConnsPerIP},
		}},
		{name: "total", maxConns: 3, maxPerIP: 2, ops: []op{
			{peer: "8.8.8.8"}, {peer: "8.8.4.4"}, {peer: "1.1.1.1"}, {peer: "9.9.9.9", want: refusedMaxConns},
			{peer: "8.8.8.8", want: refusedMaxConns}, {peer: "1.1.1.1", release: true}, {peer: "9.9.9.9"},
		}},
		{name: "trusted proxy", maxConns: 10, maxPerIP: 1, exemptProxies: true, ops: []op{
			{peer: "10.0.0.1"}, {peer: "10.0.0.1"}, {peer: "127.0.0.1"}, {peer: "127.0.0.1"},
			{peer: "8.8.8.8"}, {peer: "8.8.8.8", want: refusedMaxConnsPerIP},
		}},
		{name: "no caps", maxConns: -1, maxPerIP: -1, ops: []op{{peer: "8.8.8.8"}, {peer: "8.8.8.8"}, {peer: "8.8.8.8"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &connLimiter{maxConns: tt.maxConns, maxPerIP: tt.maxPerIP,
				perIP: make(map[netip.Addr]int), log: func(string, netip.Addr) {}}
			if tt.exemptProxies {
				p, _ := ParseProxies(DefaultTrustedProxies)
				l.exempt = (&Server{proxies: p}).trustedProxy
			}
			var held []netip.Addr
			for i, o := range tt.ops {
				a := netip.MustParseAddr(o.peer)
				if o.release {
					for j, k := range held {
						if k == clientKey(a) {
							l.release(k)
							held = append(held[:j], held[j+1:]...)
							break
						}
					}
					continue
				}
				key, refused := l.acquire(a)
				if refused != o.want {
					t.Fatalf("op %d: acquire(%s) refused %q, want %q", i, a, refused, o.want)
				}
				if refused == "" {
					held = append(held, key)
				}
			}
			if got := l.openConns(); got != len(held) {
				t.Errorf("%d open, want %d", got, len(held))
			}
			for _, k := range held {
				l.release(k)
			}
			if l.openConns() != 0 || len(l.perIP) != 0 {
				t.Errorf("after releasing all: %d open, per IP %v", l.openConns(), l.perIP)
			}
		})
	}
}

// TestBodyDeadlineLifted checks that a body's read deadline ends with the
// body: a handler slower than BodyTimeout after reading it keeps its
// request's context (net/http watches the connection once the body is read,
// and a read timeout there would cancel it).
func TestBodyDeadlineLifted(t *testing.T) {
	const timeout = 100 * time.Millisecond
	f := newFixture(t, &Options{RateLimit: -1, BodyTimeout: timeout})
	f.s.handle("POST", "/slow", maxBody, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		if _, err := io.ReadAll(r.Body); err != nil {
			writeError(w, r, err)
			return
		}
		time.Sleep(3 * timeout) // the engine, slow for once
		if err := r.Context().Err(); err != nil {
			writeError(w, r, err)
			return
		}
		writeAccepted(w)
	})
	srv := httptest.NewServer(f.s)
	t.Cleanup(srv.Close)
	resp, err := http.Post(srv.URL+"/slow", "text/plain", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Errorf("status %d, want 202", resp.StatusCode)
	}
}

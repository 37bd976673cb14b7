package httpd

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

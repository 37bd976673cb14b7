package httpd

import (
	"context"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// signIn signs alice in on the statistics pages and returns her cookies.
func (f *fixture) signIn(t *testing.T) []*http.Cookie {
	t.Helper()
	w := httptest.NewRecorder()
	f.s.ServeHTTP(w, httptest.NewRequest("GET", "/login", nil))
	cookies := w.Result().Cookies()
	m := regexp.MustCompile(`name="csrf" value="([^"]*)"`).FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatalf("no CSRF token on /login:\n%s", w.Body)
	}
	form := url.Values{"csrf": {html.UnescapeString(m[1])}, "key": {f.alice}}
	r := httptest.NewRequest("POST", "/login", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w = httptest.NewRecorder()
	f.s.ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign in: status %d\n%s", w.Code, w.Body)
	}
	return w.Result().Cookies()
}

// TestSnippetHost checks that the tracking snippet of the website pages is
// built from PublicURL when it is set, and never from a Host header that is
// not a valid host[:port] (SPEC §13), as the API's links are.
func TestSnippetHost(t *testing.T) {
	tests := []struct {
		name       string
		publicURL  string
		trustProxy bool
		host       string
		header     map[string]string
		want       string // the snippet's address
	}{
		{name: "host", host: "stats.example:8080", want: "http://stats.example:8080"},
		{name: "public url wins", publicURL: "https://stats.example.org", host: "evil.example", want: "https://stats.example.org"},
		{name: "public url with a path", publicURL: "https://example.org/webstats/", host: "evil.example", want: "https://example.org/webstats"},
		{name: "markup", host: `evil.example"><script>`, want: "http://127.0.0.1:8080"},
		{name: "a proxy's https", trustProxy: true, host: "stats.example", header: map[string]string{"X-Forwarded-Proto": "https"}, want: "https://stats.example"},
		{name: "an untrusted proxy's https", host: "stats.example", header: map[string]string{"X-Forwarded-Proto": "https"}, want: "http://stats.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, &Options{RateLimit: -1, PublicURL: tt.publicURL, TrustProxy: tt.trustProxy})
			cookies := f.signIn(t)
			r := httptest.NewRequest("GET", "/websites/1/snippet", nil)
			r.Host = tt.host
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			for _, c := range cookies {
				r.AddCookie(c)
			}
			addr, _ := net.ResolveTCPAddr("tcp", "127.0.0.1:8080")
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
			w := httptest.NewRecorder()
			f.s.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d\n%s", w.Code, w.Body)
			}
			want := html.EscapeString(`<script data-host="` + tt.want + `" src="` + tt.want + `/js/script.js" async defer></script>`)
			if !strings.Contains(w.Body.String(), want) {
				t.Errorf("the page does not contain the snippet %s", want)
			}
			if strings.Contains(w.Body.String(), "evil.example") {
				t.Error("the Host header reached the page")
			}
		})
	}
}

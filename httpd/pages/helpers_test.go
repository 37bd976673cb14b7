package pages

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// testNow is the fixed time of the tests: a Saturday, noon UTC.
var testNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixture is an engine with two accounts and websites of every privacy,
// served by the pages on an httptest server.
type fixture struct {
	t     testing.TB
	e     *engine.Engine
	p     *Pages
	srv   *httptest.Server
	clock *clock

	owner, other       identity.Account
	ownerKey, otherKey string
	// Websites of owner: public (0), private (1), secret (2, password
	// "open sesame"); of other: otherSecret (2, password "other pass").
	public, private, secret, otherSecret engine.Website
}

const (
	secretPassword = "open sesame"
	otherPassword  = "other pass"
)

func newFixture(t testing.TB) *fixture {
	t.Helper()
	c := &clock{t: testNow}
	e, err := engine.Open(&engine.Options{Now: c.Now, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	f := &fixture{t: t, e: e, clock: c}
	ctx := context.Background()
	f.owner, f.ownerKey, err = identity.Must(e).CreateAccount(ctx, "Olivia Owner", "owner@example.org")
	if err != nil {
		t.Fatal(err)
	}
	f.other, f.otherKey, err = identity.Must(e).CreateAccount(ctx, "Oscar Other", "other@example.org")
	if err != nil {
		t.Fatal(err)
	}
	site := func(acc uint32, domain, privacy, password string) engine.Website {
		in := engine.WebsiteInput{Domain: &domain, Privacy: &privacy}
		if password != "" {
			in.Password = &password
		}
		w, err := e.Owner(acc).CreateWebsite(ctx, in)
		if err != nil {
			t.Fatalf("CreateWebsite %s: %v", domain, err)
		}
		return w
	}
	f.public = site(f.owner.ID, "public.example", "0", "")
	f.private = site(f.owner.ID, "private.example", "1", "")
	f.secret = site(f.owner.ID, "secret.example", "2", secretPassword)
	f.otherSecret = site(f.other.ID, "other.example", "2", otherPassword)

	f.p, err = New(e, &Options{Now: c.Now, WrongPasswordDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	r := httprouter.New()
	f.p.Register(r)
	f.srv = httptest.NewServer(r)
	t.Cleanup(f.srv.Close)
	return f
}

// hit describes a pageview or event to track.
type hit struct {
	url, ref, ua, lang, res, ip string
	at                          time.Time
	event                       string
}

const chromeUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// track counts hits; empty fields get defaults.
func (f *fixture) track(hits ...hit) {
	f.t.Helper()
	hs := make([]engine.Hit, len(hits))
	for i, h := range hits {
		eh := engine.Hit{
			URL: h.url, Referrer: h.ref, UserAgent: h.ua, Language: h.lang, Resolution: h.res,
			IP: netip.MustParseAddr("203.0.113.7"), Time: h.at,
		}
		if eh.UserAgent == "" {
			eh.UserAgent = chromeUA
		}
		if eh.Language == "" {
			eh.Language = "en-US,en;q=0.9"
		}
		if h.ip != "" {
			eh.IP = netip.MustParseAddr(h.ip)
		}
		if eh.Time.IsZero() {
			eh.Time = testNow.Add(-time.Hour)
		}
		if h.event != "" {
			eh.Event = &engine.Event{Name: h.event}
		}
		hs[i] = eh
	}
	res, err := f.e.Track(context.Background(), hs...)
	if err != nil {
		f.t.Fatal(err)
	}
	if res.Accepted != len(hits) {
		f.t.Fatalf("Track accepted %d of %d hits: %v", res.Accepted, len(hits), res.Reasons)
	}
}

// client is a browser-like client with a cookie jar that does not follow
// redirects.
type client struct {
	f  *fixture
	hc *http.Client
}

func (f *fixture) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{f: f, hc: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// response is an answer read in full.
type response struct {
	status int
	header http.Header
	body   string
}

func (c *client) do(req *http.Request) response {
	c.f.t.Helper()
	res, err := c.hc.Do(req)
	if err != nil {
		c.f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.f.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(b)}
}

func (c *client) get(path string) response {
	c.f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.f.srv.URL+path, nil)
	if err != nil {
		c.f.t.Fatal(err)
	}
	return c.do(req)
}

func (c *client) post(path string, form url.Values) response {
	c.f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.f.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]*)"`)

// csrf returns the CSRF token of the form on the page at path.
func (c *client) csrf(path string) string {
	c.f.t.Helper()
	m := csrfRE.FindStringSubmatch(c.get(path).body)
	if m == nil { // signed in: /login redirects; the logout form has one
		m = csrfRE.FindStringSubmatch(c.get("/").body)
	}
	if m == nil {
		c.f.t.Fatalf("no csrf field on %s", path)
	}
	return html.UnescapeString(m[1])
}

// csrfFor returns the CSRF token of the form posting to action on the page
// at page.
func (c *client) csrfFor(page, action string) string {
	c.f.t.Helper()
	re := regexp.MustCompile(`<form method="post" action="` + regexp.QuoteMeta(action) + `"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]*)"`)
	m := re.FindStringSubmatch(c.get(page).body)
	if m == nil {
		c.f.t.Fatalf("no form to %s on %s", action, page)
	}
	return html.UnescapeString(m[1])
}

// signIn signs c in with key.
func (c *client) signIn(key string) {
	c.f.t.Helper()
	res := c.post("/login", url.Values{"csrf": {c.csrfFor("/login", "/login")}, "key": {key}})
	if res.status != http.StatusSeeOther {
		c.f.t.Fatalf("sign in: status %d, want 303\n%s", res.status, res.body)
	}
}

// unlock submits password on the password form of domain.
func (c *client) unlock(domain, password string) response {
	c.f.t.Helper()
	tok := c.csrfFor("/stats/"+domain, "/stats/"+domain)
	return c.post("/stats/"+domain, url.Values{"csrf": {tok}, "password": {password}})
}

// cookie returns the value of the cookie called name that the jar sends to
// path, or "".
func (c *client) cookie(path, name string) string {
	u, _ := url.Parse(c.f.srv.URL + path)
	for _, ck := range c.hc.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// setCookie puts a cookie into the jar for path.
func (c *client) setCookie(path, name, value string) {
	u, _ := url.Parse(c.f.srv.URL + path)
	c.hc.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: path}})
}

// text returns the page's body without tags, with whitespace collapsed, for
// assertions on what a reader sees.
func text(body string) string {
	body = regexp.MustCompile(`(?s)<(script|style|title)[^>]*>.*?</(script|style|title)>`).ReplaceAllString(body, " ")
	body = regexp.MustCompile(`<[^>]*>`).ReplaceAllString(body, " ")
	return strings.Join(strings.Fields(html.UnescapeString(body)), " ")
}

// mainText is the text of the page's main element.
func mainText(body string) string {
	if i := strings.Index(body, "<main"); i >= 0 {
		body = body[i:]
	}
	if i := strings.Index(body, "</main>"); i >= 0 {
		body = body[:i]
	}
	return text(body)
}

func mustContain(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q", what, sub)
		}
	}
}

func day(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return t
}

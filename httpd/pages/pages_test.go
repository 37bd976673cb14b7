package pages

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// xssPage is a tracked page path that must show as text.
const xssPage = "/<script>alert(1)</script>"

// trackScenario tracks known traffic on public.example: three visitors on
// 2026-11-20, one in the previous 30 days.
func (f *fixture) trackScenario() {
	f.t.Helper()
	at := day("2026-11-20 10:00")
	f.track(
		hit{url: "https://public.example/", ref: "https://www.google.com/", ip: "198.51.100.1", at: at},
		hit{url: "https://public.example/pricing", ref: "https://public.example/", ip: "198.51.100.1", at: at.Add(time.Minute)},
		hit{url: "https://public.example/", ref: "https://news.ycombinator.com/item?id=1", ip: "198.51.100.2", at: at.Add(2 * time.Minute)},
		hit{url: "https://public.example" + xssPage, ip: "198.51.100.3", at: at.Add(3 * time.Minute)},
		hit{url: "https://public.example/signup", ip: "198.51.100.1", at: at.Add(4 * time.Minute), event: "Signup"},
		hit{url: "https://public.example/old", ip: "198.51.100.9", at: day("2026-10-10 09:00")},
	)
}

func TestOverview(t *testing.T) {
	f := newFixture(t)
	f.trackScenario()
	res := f.client().get("/stats/public.example")
	if res.status != http.StatusOK {
		t.Fatalf("status %d\n%s", res.status, res.body)
	}
	txt := text(res.body)
	mustContain(t, "overview", txt,
		"public.example",
		"23 Oct 2026 – 21 Nov 2026",
		"Unique visitors 3 +200% vs previous period",
		"Pageviews 4 +300% vs previous period",
		"Visits 3 +200% vs previous period",
		"Events 1 new vs previous period",
		"Visitors and pageviews per day",
		// Pages, by pageviews then value.
		"Pages Page Pageviews / 2 "+xssPage+" 1 /pricing 1",
		// Sources, as the Stats API names them.
		"Referrers Referrers Channels UTM source UTM medium UTM content UTM term Source Visits Direct / None 1 Google 1 Hacker News 1",
		"Events Event Events Signup 1",
		"Browsers Browsers Browser versions Browser Visitors Chrome 3",
	)
	// The tracked script is text, never markup.
	if strings.Contains(res.body, "<script>alert(1)") {
		t.Errorf("the tracked page is not escaped:\n%s", res.body)
	}
	mustContain(t, "overview html", res.body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	// Security headers.
	if csp := res.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	// Every table links to its page, keeping the range.
	mustContain(t, "overview html", res.body, `href="/stats/public.example/page"`, `href="/stats/public.example/referrer"`)
	res = f.client().get("/stats/public.example?range=7d")
	mustContain(t, "7 days", res.body, `href="/stats/public.example/page?range=7d"`)
	mustContain(t, "7 days", text(res.body), "15 Nov 2026 – 21 Nov 2026", "Unique visitors 3 new")
}

func TestChartUnits(t *testing.T) {
	f := newFixture(t)
	f.trackScenario()
	c := f.client()
	for _, tc := range []struct {
		query, want string
		bars        int
	}{
		{query: "?range=today", want: "per hour", bars: 24},
		{query: "?from=2026-11-20&to=2026-11-20", want: "per hour", bars: 24},
		{query: "", want: "per day", bars: 30},
		{query: "?range=12m", want: "per month", bars: 12},
		{query: "?from=2025-11-21&to=2026-11-21", want: "per month", bars: 13},
		{query: "?from=2026-08-22&to=2026-11-21", want: "per day", bars: 92},
	} {
		t.Run(tc.query, func(t *testing.T) {
			res := c.get("/stats/public.example" + tc.query)
			if res.status != http.StatusOK {
				t.Fatalf("status %d", res.status)
			}
			mustContain(t, "chart", res.body, "Visitors and pageviews "+tc.want)
			hits := strings.Count(res.body[strings.Index(res.body, `<g class="hits">`):], "<title>")
			if hits != tc.bars {
				t.Errorf("%d hover titles, want %d", hits, tc.bars)
			}
		})
	}
	// The hover text of the day with data.
	res := c.get("/stats/public.example")
	mustContain(t, "chart", res.body, "<title>Fri 20 Nov 2026: 3 visitors, 4 pageviews</title>")
	res = c.get("/stats/public.example?from=2026-11-20&to=2026-11-20")
	mustContain(t, "chart", res.body, "<title>Fri 20 Nov 2026 10:00–10:59: 3 visitors, 4 pageviews</title>")
}

func TestHome(t *testing.T) {
	f := newFixture(t)
	f.trackScenario()
	c := f.client()
	res := c.get("/")
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/login" {
		t.Fatalf("signed out: status %d to %q, want 303 to /login", res.status, res.header.Get("Location"))
	}
	c.signIn(f.ownerKey)
	res = c.get("/")
	if res.status != http.StatusOK {
		t.Fatalf("status %d", res.status)
	}
	txt := text(res.body)
	mustContain(t, "home", txt, "Olivia Owner", "private.example Private 0 0", "public.example Public 3 4", "secret.example Password 0 0")
	if strings.Contains(txt, "other.example") {
		t.Error("home lists another account's website")
	}
	mustContain(t, "home", res.body, `<polyline points="0,30 `)
}

func TestLogin(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	res := c.get("/login")
	if res.status != http.StatusOK {
		t.Fatalf("status %d", res.status)
	}
	mustContain(t, "login form", res.body, `<label for="key">API key</label>`, `name="csrf"`)
	// A wrong key: the form again, with a message.
	tok := c.csrf("/login")
	res = c.post("/login", url.Values{"csrf": {tok}, "key": {"ws_wrong"}})
	if res.status != http.StatusUnauthorized {
		t.Errorf("wrong key: status %d, want 401", res.status)
	}
	mustContain(t, "wrong key", text(res.body), "This API key is not valid.")
	if c.cookie("/", sessionCookie) != "" {
		t.Error("a wrong key set a session")
	}
	// The right key, with a next address on this site.
	res = c.post("/login", url.Values{"csrf": {tok}, "key": {f.ownerKey}, "next": {"/stats/private.example"}})
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/stats/private.example" {
		t.Fatalf("status %d to %q", res.status, res.header.Get("Location"))
	}
	for _, h := range res.header.Values("Set-Cookie") {
		if strings.HasPrefix(h, sessionCookie+"=") {
			mustContain(t, "session cookie", h, "HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=")
		}
	}
	if res := c.get("/stats/private.example"); res.status != http.StatusOK {
		t.Errorf("private website after sign in: status %d", res.status)
	}
	// The CSRF token changed at sign in: the old one is refused.
	if res := c.post("/logout", url.Values{"csrf": {tok}}); res.status != http.StatusForbidden {
		t.Errorf("logout with the old token: status %d, want 403", res.status)
	}
	// An off-site next address is ignored.
	c2 := f.client()
	res = c2.post("/login", url.Values{"csrf": {c2.csrf("/login")}, "key": {f.ownerKey}, "next": {"//evil.example/"}})
	if loc := res.header.Get("Location"); loc != "/" {
		t.Errorf("next=//evil.example/ redirects to %q", loc)
	}
	// Sign out.
	res = c.post("/logout", url.Values{"csrf": {c.csrf("/")}})
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/login" {
		t.Fatalf("logout: status %d to %q", res.status, res.header.Get("Location"))
	}
	if res := c.get("/stats/private.example"); res.status != http.StatusNotFound {
		t.Errorf("private website after sign out: status %d, want 404", res.status)
	}
	// Rotating the API key signs every session out.
	c.signIn(f.ownerKey)
	if _, err := identity.Must(f.e).RotateKey(context.Background(), f.owner.ID); err != nil {
		t.Fatal(err)
	}
	if res := c.get("/"); res.status != http.StatusSeeOther {
		t.Errorf("after key rotation: status %d, want 303 to /login", res.status)
	}
}

func TestCSRF(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	tok := c.csrf("/login")
	other := f.client()
	otherTok := other.csrf("/login")
	for _, tc := range []struct {
		name   string
		path   string
		form   url.Values
		header map[string]string
	}{
		{name: "login without token", path: "/login", form: url.Values{"key": {f.ownerKey}}},
		{name: "login with another cookie's token", path: "/login", form: url.Values{"key": {f.ownerKey}, "csrf": {otherTok}}},
		{name: "login with a garbled token", path: "/login", form: url.Values{"key": {f.ownerKey}, "csrf": {"x" + tok}}},
		{name: "login cross-site", path: "/login", form: url.Values{"key": {f.ownerKey}, "csrf": {tok}}, header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{name: "login from another origin", path: "/login", form: url.Values{"key": {f.ownerKey}, "csrf": {tok}}, header: map[string]string{"Origin": "https://evil.example"}},
		{name: "logout without token", path: "/logout", form: url.Values{}},
		{name: "password without token", path: "/stats/secret.example", form: url.Values{"password": {secretPassword}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, f.srv.URL+tc.path, strings.NewReader(tc.form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			res := c.do(req)
			if res.status != http.StatusForbidden {
				t.Fatalf("status %d, want 403", res.status)
			}
			mustContain(t, "403 page", text(res.body), "The form has expired")
			if c.cookie("/", sessionCookie) != "" || c.cookie("/stats/secret.example", passwordCookie) != "" {
				t.Error("a rejected form set a cookie")
			}
		})
	}
	// A request without a CSRF cookie at all.
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := plain.PostForm(f.srv.URL+"/login", url.Values{"key": {f.ownerKey}, "csrf": {tok}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("no cookie: status %d, want 403", res.StatusCode)
	}
}

// privacyCase is a visitor of the privacy tests.
type viewer struct {
	name  string
	setup func(f *fixture, c *client)
}

func TestPrivacy(t *testing.T) {
	viewers := []viewer{
		{"stranger", func(*fixture, *client) {}},
		{"owner", func(f *fixture, c *client) { c.signIn(f.ownerKey) }},
		{"other account", func(f *fixture, c *client) { c.signIn(f.otherKey) }},
		{"other account with the password", func(f *fixture, c *client) {
			c.signIn(f.otherKey)
			c.unlock("secret.example", secretPassword)
		}},
		{"stranger with the password", func(f *fixture, c *client) { c.unlock("secret.example", secretPassword) }},
		{"stranger with another website's password", func(f *fixture, c *client) { c.unlock("other.example", otherPassword) }},
	}
	// want[viewer][website] is the status of the overview: 200 the
	// statistics, 401 the password form, 404 not found.
	want := map[string]map[string]int{
		"stranger":                        {"public.example": 200, "private.example": 404, "secret.example": 401, "unknown.example": 404},
		"owner":                           {"public.example": 200, "private.example": 200, "secret.example": 200, "unknown.example": 404},
		"other account":                   {"public.example": 200, "private.example": 404, "secret.example": 401, "unknown.example": 404},
		"other account with the password": {"public.example": 200, "private.example": 404, "secret.example": 200, "unknown.example": 404},
		"stranger with the password":      {"public.example": 200, "private.example": 404, "secret.example": 200, "unknown.example": 404},
		"stranger with another website's password": {"public.example": 200, "private.example": 404, "secret.example": 401, "unknown.example": 404},
	}
	f := newFixture(t)
	notFound := mainText(f.client().get("/stats/unknown.example").body)
	for _, v := range viewers {
		t.Run(v.name, func(t *testing.T) {
			c := f.client()
			v.setup(f, c)
			for _, site := range []string{"public.example", "private.example", "secret.example", "unknown.example"} {
				for _, path := range []string{"", "/page", "/page.csv", "/realtime", "/realtime?format=json"} {
					res := c.get("/stats/" + site + path)
					w := want[v.name][site]
					jsonForm := w == 401 && path == "/realtime?format=json"
					if jsonForm {
						mustContain(t, "json", res.body, `"status":401`)
					}
					if res.status != w {
						t.Errorf("%s%s: status %d, want %d", site, path, res.status, w)
						continue
					}
					switch w {
					case 404:
						// Indistinguishable from an unknown domain.
						if got := mainText(res.body); got != notFound {
							t.Errorf("%s%s: 404 page differs from an unknown domain's:\n%s\n%s", site, path, got, notFound)
						}
					case 401:
						if jsonForm {
							continue
						}
						mustContain(t, site+path, res.body, `<label for="password">Password</label>`)
					case 200:
						if strings.Contains(res.body, `name="password"`) {
							t.Errorf("%s%s: shows the password form", site, path)
						}
					}
				}
			}
		})
	}
}

func TestPassword(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	// Wrong, then right.
	res := c.unlock("secret.example", "wrong")
	if res.status != http.StatusUnauthorized {
		t.Errorf("wrong password: status %d, want 401", res.status)
	}
	mustContain(t, "wrong password", text(res.body), "Wrong password. Check it and try again.")
	if c.cookie("/stats/secret.example", passwordCookie) != "" {
		t.Fatal("a wrong password set a cookie")
	}
	// The other website's password does not open this one.
	if res := c.unlock("secret.example", otherPassword); res.status != http.StatusUnauthorized {
		t.Errorf("another website's password: status %d, want 401", res.status)
	}
	res = c.unlock("secret.example", secretPassword)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/stats/secret.example" {
		t.Fatalf("right password: status %d to %q", res.status, res.header.Get("Location"))
	}
	var setCookie string
	for _, h := range res.header.Values("Set-Cookie") {
		if strings.HasPrefix(h, passwordCookie+"=") {
			setCookie = h
		}
	}
	mustContain(t, "password cookie", setCookie, "Path=/stats/secret.example", "HttpOnly", "SameSite=Lax")
	if res := c.get("/stats/secret.example/page"); res.status != http.StatusOK {
		t.Errorf("after the password: status %d", res.status)
	}
	good := c.cookie("/stats/secret.example", passwordCookie)

	// The password form sends the visitor back where it came from.
	c2 := f.client()
	tok := c2.csrfFor("/stats/secret.example", "/stats/secret.example")
	res = c2.post("/stats/secret.example", url.Values{"csrf": {tok}, "password": {secretPassword}, "next": {"/stats/secret.example/browser?range=7d"}})
	if loc := res.header.Get("Location"); loc != "/stats/secret.example/browser?range=7d" {
		t.Errorf("next: redirect to %q", loc)
	}
	res = c2.post("/stats/secret.example", url.Values{"csrf": {tok}, "password": {secretPassword}, "next": {"/stats/public.example"}})
	if loc := res.header.Get("Location"); loc != "/stats/secret.example" {
		t.Errorf("next of another website: redirect to %q", loc)
	}

	for _, tc := range []struct {
		name, value string
	}{
		{"tampered payload", tamper(good, 0)},
		{"tampered signature", tamper(good, len(good)-2)},
		{"no signature", strings.Split(good, ".")[0]},
		{"garbage", "not-a-cookie"},
		{"another website's cookie", f.p.sign(purposePassword, strconv.Itoa(int(f.otherSecret.ID)), future(), fingerprint([]byte(passwordHash(f, f.otherSecret.ID))))},
		{"expired", f.p.sign(purposePassword, strconv.Itoa(int(f.secret.ID)), strconv.FormatInt(testNow.Add(-time.Second).Unix(), 10), fingerprint([]byte(passwordHash(f, f.secret.ID))))},
		{"session cookie as password cookie", f.p.sign(purposeSession, strconv.Itoa(int(f.secret.ID)), future(), fingerprint([]byte(passwordHash(f, f.secret.ID))))},
		{"old password", f.p.sign(purposePassword, strconv.Itoa(int(f.secret.ID)), future(), fingerprint([]byte("$argon2id$old")))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.client()
			c.setCookie("/stats/secret.example", passwordCookie, tc.value)
			if res := c.get("/stats/secret.example"); res.status != http.StatusUnauthorized {
				t.Errorf("status %d, want 401 (the password form)", res.status)
			}
		})
	}
	// A password cookie of other.example, reused on secret.example.
	c3 := f.client()
	c3.unlock("other.example", otherPassword)
	otherCookie := c3.cookie("/stats/other.example", passwordCookie)
	if otherCookie == "" {
		t.Fatal("no cookie for other.example")
	}
	c3.setCookie("/stats/secret.example", passwordCookie, otherCookie)
	if res := c3.get("/stats/secret.example"); res.status != http.StatusUnauthorized {
		t.Errorf("reused cookie: status %d, want 401", res.status)
	}
	// The cookie expires with time.
	f.clock.Add(passwordLife + time.Minute)
	if res := c.get("/stats/secret.example"); res.status != http.StatusUnauthorized {
		t.Errorf("expired cookie: status %d, want 401", res.status)
	}
	// A tampered or expired session is no session.
	c4 := f.client()
	c4.signIn(f.ownerKey)
	sess := c4.cookie("/", sessionCookie)
	c4.setCookie("/", sessionCookie, tamper(sess, 1))
	if res := c4.get("/stats/private.example"); res.status != http.StatusNotFound {
		t.Errorf("tampered session: status %d, want 404", res.status)
	}
	// A signed cookie of the old stateless form, or of a token the engine
	// never issued, is no session either.
	c4.setCookie("/", sessionCookie, f.p.sign(purposeSession, strconv.Itoa(int(f.owner.ID)), strconv.FormatInt(f.clock.Now().Unix()+60, 10), fingerprint(f.owner.Keys[0].Hash[:])))
	if res := c4.get("/stats/private.example"); res.status != http.StatusNotFound {
		t.Errorf("stateless session cookie: status %d, want 404", res.status)
	}
	c4.setCookie("/", sessionCookie, f.p.sign(purposeSession, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"))
	if res := c4.get("/stats/private.example"); res.status != http.StatusNotFound {
		t.Errorf("unknown session token: status %d, want 404", res.status)
	}
	c4.setCookie("/", sessionCookie, sess)
	if res := c4.get("/stats/private.example"); res.status != http.StatusOK {
		t.Errorf("valid session: status %d, want 200", res.status)
	}
	f.clock.Add(sessionLife)
	if res := c4.get("/stats/private.example"); res.status != http.StatusNotFound {
		t.Errorf("expired session: status %d, want 404", res.status)
	}
}

func future() string { return strconv.FormatInt(testNow.Add(time.Hour).Unix(), 10) }

func passwordHash(f *fixture, id uint32) string {
	w, err := f.e.Unscoped().Website(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return w.PasswordHash
}

// tamper flips one character of s at i.
func tamper(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestWrongPasswordDelay(t *testing.T) {
	f := newFixture(t)
	f.p.delay = 150 * time.Millisecond
	c := f.client()
	start := time.Now()
	c.unlock("secret.example", "wrong")
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("a wrong password answered after %v, want ≥ 150ms", d)
	}
	p, err := New(f.e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.delay != 500*time.Millisecond {
		t.Errorf("default delay %v, want 500ms", p.delay)
	}
	if p.key != f.p.key {
		t.Error("the cookie key changed between two Pages of one engine")
	}
}

func TestCanonicalDomain(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	res := c.get("/stats/WWW.Public.Example/page?range=7d")
	if res.status != http.StatusMovedPermanently || res.header.Get("Location") != "/stats/public.example/page?range=7d" {
		t.Errorf("status %d to %q", res.status, res.header.Get("Location"))
	}
	// A private website redirects nobody: 404 first.
	if res := c.get("/stats/WWW.private.example"); res.status != http.StatusNotFound {
		t.Errorf("private: status %d, want 404", res.status)
	}
}

// trackMany tracks n pageviews of distinct pages, some with values that
// spreadsheets would run, on 2026-11-20.
func (f *fixture) trackMany(n int) {
	f.t.Helper()
	var hs []hit
	for i := range n {
		page := fmt.Sprintf("/p%03d", i)
		switch i % 50 {
		case 1:
			page = fmt.Sprintf("/=cmd|' /C calc'!A%d", i)
		case 2:
			page = fmt.Sprintf("/x,\"quoted\"%d", i)
		}
		for range i%3 + 1 {
			hs = append(hs, hit{url: "https://public.example" + page, ip: fmt.Sprintf("198.51.%d.%d", 100+i/250, i%250+1), at: day("2026-11-20 10:00")})
		}
	}
	f.track(hs...)
	// Events whose names start with formula characters.
	f.track(
		hit{url: "https://public.example/", event: "=1+2", at: day("2026-11-20 11:00")},
		hit{url: "https://public.example/", event: "+SUM(A1)", at: day("2026-11-20 11:00")},
		hit{url: "https://public.example/", event: "-5", at: day("2026-11-20 11:00")},
		hit{url: "https://public.example/", event: "@x", at: day("2026-11-20 11:00")},
	)
}

func TestStatPage(t *testing.T) {
	f := newFixture(t)
	f.trackMany(250)
	c := f.client()
	res := c.get("/stats/public.example/page")
	if res.status != http.StatusOK {
		t.Fatalf("status %d\n%s", res.status, res.body)
	}
	txt := text(res.body)
	mustContain(t, "page 1", txt, "Pages", "Rows 1–100 of 250", "Page 1 of 3", "Download CSV")
	if got := strings.Count(res.body, `<th scope="row">`); got != 100 {
		t.Errorf("%d rows, want 100", got)
	}
	mustContain(t, "page 1", res.body, `href="/stats/public.example/page?page=2" rel="next"`)
	res = c.get("/stats/public.example/page?page=3")
	mustContain(t, "page 3", text(res.body), "Rows 201–250 of 250", "Page 3 of 3")
	mustContain(t, "page 3", res.body, `href="/stats/public.example/page?page=2" rel="prev"`)

	// Search and sort, kept by the paging and sort links.
	res = c.get("/stats/public.example/page?search=P01&sort_by=value&sort=asc&range=7d")
	txt = text(res.body)
	mustContain(t, "search", txt, "Rows 1–10 of 10", "/p010 2 /p011 3 /p012 1")
	mustContain(t, "search", res.body, `value="P01"`, `href="/stats/public.example/page.csv?range=7d&amp;search=P01&amp;sort=asc&amp;sort_by=value"`)
	// The Stats API's rows, in the same order, are what the page shows.
	api, err := f.e.Owner(f.owner.ID).Query(context.Background(), f.public.ID, engine.Query{
		Metrics: []string{"pageviews"}, Dimensions: []string{"event:page"},
		DateRange: engine.DateRange{FromDay: mustDate("2026-11-15"), ToDay: mustDate("2026-11-21")},
		Filters:   []engine.Filter{{Op: "contains", Dimension: "event:page", Clauses: []string{"P01"}, CaseInsensitive: true}},
		OrderBy:   []engine.OrderBy{{Key: "event:page"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range api.Results {
		want = append(want, r.Dimensions[0].(string)+" "+strconv.FormatInt(r.Metrics[0].(int64), 10))
	}
	mustContain(t, "search", txt, strings.Join(want, " "))

	// The overview links to all of them.
	res = c.get("/stats/public.example")
	mustContain(t, "overview", text(res.body), "All 250 pages →")

	// Hours and days are statistics too.
	res = c.get("/stats/public.example/pageviews_hours")
	mustContain(t, "hours", text(res.body), "Pageviews by hour", "10 499")

	// Unknown statistics are 404s.
	if res := c.get("/stats/public.example/nope"); res.status != http.StatusNotFound {
		t.Errorf("unknown name: status %d, want 404", res.status)
	}
}

func mustDate(s string) (d engine.Date) {
	d, err := engine.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

// TestCSV checks a statistic's CSV against the Stats API's answer to the
// same question (SPEC §10.2 "one truth"): the same rows, in the order the
// page's sort asks for, with the formula guard.
func TestCSV(t *testing.T) {
	f := newFixture(t)
	f.trackMany(250)
	c := f.client()
	ctx := context.Background()
	pageviews := engine.Filter{Op: "is", Dimension: "event:name", Clauses: []string{"pageview"}}
	events := engine.Filter{Op: "is_not", Dimension: "event:name", Clauses: []string{"pageview"}}
	for _, tc := range []struct {
		name, query string
		q           engine.Query
	}{
		{"page", "", engine.Query{Metrics: []string{"pageviews"}, Dimensions: []string{"event:page"}, Filters: []engine.Filter{pageviews},
			OrderBy: []engine.OrderBy{{Key: "pageviews", Desc: true}, {Key: "event:page"}}}},
		{"page", "?sort_by=value&sort=asc", engine.Query{Metrics: []string{"pageviews"}, Dimensions: []string{"event:page"}, Filters: []engine.Filter{pageviews},
			OrderBy: []engine.OrderBy{{Key: "event:page"}}}},
		{"page", "?search=CMD&range=7d", engine.Query{Metrics: []string{"pageviews"}, Dimensions: []string{"event:page"},
			DateRange: engine.DateRange{FromDay: mustDate("2026-11-15"), ToDay: mustDate("2026-11-21")},
			Filters:   []engine.Filter{pageviews, {Op: "contains", Dimension: "event:page", Clauses: []string{"CMD"}, CaseInsensitive: true}},
			OrderBy:   []engine.OrderBy{{Key: "pageviews", Desc: true}, {Key: "event:page"}}}},
		{"event", "?from=2026-11-01&to=2026-11-30", engine.Query{Metrics: []string{"events"}, Dimensions: []string{"event:name"},
			DateRange: engine.DateRange{FromDay: mustDate("2026-11-01"), ToDay: mustDate("2026-11-30")},
			Filters:   []engine.Filter{events}, OrderBy: []engine.OrderBy{{Key: "events", Desc: true}, {Key: "event:name"}}}},
	} {
		t.Run(tc.name+tc.query, func(t *testing.T) {
			q := tc.q
			if q.DateRange.FromDay == 0 {
				q.DateRange = engine.DateRange{FromDay: mustDate("2026-10-23"), ToDay: mustDate("2026-11-21")}
			}
			want := [][]string{append(slices.Clone(q.Dimensions), q.Metrics...)}
			// Read the API's rows page by page.
			for off := 0; ; off += 7 {
				q.Pagination = engine.Pagination{Offset: off, Limit: 7}
				res, err := f.e.Owner(f.owner.ID).Query(ctx, f.public.ID, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res.Results {
					v := r.Dimensions[0].(string)
					if v != "" && strings.ContainsAny(v[:1], "=+-@\t\r") {
						v = "'" + v
					}
					want = append(want, []string{v, strconv.FormatInt(r.Metrics[0].(int64), 10)})
				}
				if len(res.Results) < 7 {
					break
				}
			}
			res := c.get("/stats/public.example/" + tc.name + ".csv" + tc.query)
			if res.status != http.StatusOK {
				t.Fatalf("status %d\n%s", res.status, res.body)
			}
			if ct := res.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			mustContain(t, "Content-Disposition", res.header.Get("Content-Disposition"), "attachment", ".csv")
			got, err := csv.NewReader(strings.NewReader(res.body)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if len(want) < 3 {
				t.Error("no rows to compare")
			}
		})
	}
	// Cells that spreadsheets would run are prefixed.
	res := c.get("/stats/public.example/event.csv")
	for _, v := range []string{"'=1+2", "'+SUM(A1)", "'-5", "'@x"} {
		mustContain(t, "event csv", res.body, v+",1")
	}
}

func TestRealtime(t *testing.T) {
	f := newFixture(t)
	f.track(
		hit{url: "https://public.example/", ip: "198.51.100.1", at: testNow.Add(-time.Minute)},
		hit{url: "https://public.example/a", ip: "198.51.100.2", at: testNow.Add(-2 * time.Minute)},
		hit{url: "https://public.example/b", ip: "198.51.100.3", at: testNow.Add(-20 * time.Minute)},
	)
	c := f.client()
	res := c.get("/stats/public.example/realtime")
	if res.status != http.StatusOK {
		t.Fatalf("status %d", res.status)
	}
	mustContain(t, "realtime", text(res.body), "Visitors in the last 5 minutes 2", "Pageviews in the last 30 minutes 3")
	mustContain(t, "realtime", res.body, `<script src="/assets/realtime.js?v=`, `data-src="/stats/public.example/realtime?format=json"`,
		"<title>1 minute ago: 1 pageview</title>")
	res = c.get("/stats/public.example/realtime?format=json")
	var got struct {
		Visitors  int      `json:"visitors"`
		Pageviews []uint64 `json:"pageviews"`
		Sum       uint64   `json:"sum"`
	}
	if err := json.Unmarshal([]byte(res.body), &got); err != nil {
		t.Fatalf("%v: %s", err, res.body)
	}
	want := make([]uint64, 30)
	want[28], want[27], want[9] = 1, 1, 1
	if got.Visitors != 2 || got.Sum != 3 || !cmp.Equal(got.Pageviews, want) {
		t.Errorf("json = %+v", got)
	}
	// Only the realtime page loads the script.
	if res := c.get("/stats/public.example"); strings.Contains(res.body, "realtime.js") {
		t.Error("the overview loads the realtime script")
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	for _, tc := range []struct {
		path, msg string
		status    int
	}{
		{"/stats/public.example?from=2026-11-01", "both the first and the last day", 400},
		{"/stats/public.example?from=2026-13-01&to=2026-11-02", "not a date", 400},
		{"/stats/public.example?from=20261101&to=2026-11-02", "not a date", 400},
		{"/stats/public.example?from=2026-11-01xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx&to=2026-11-02", "not a date", 400},
		{"/stats/public.example?from=2026-11-10&to=2026-11-02", "is after the last day", 400},
		{"/stats/public.example?from=1000-01-01&to=2026-11-02", fmt.Sprintf("longer than %d days", engine.MaxRangeDays), 400},
		{"/stats/public.example?range=forever", "Unknown range", 400},
		{"/stats/public.example/page?page=0", "page number", 400},
		{"/stats/public.example/page?page=abc", "page number", 400},
		{"/stats/public.example/page.csv?from=2026-11-10&to=2026-11-02", "is after the last day", 400},
		{"/stats/public.example/page?search=" + strings.Repeat("a", 300), "search is longer", 400},
		{"/stats/public.example?x=" + strings.Repeat("a", 5000), "too long", 400},
		{"/stats/" + strings.Repeat("a", 300) + ".example", "", 404},
		{"/stats/public.example/page?page=99999", "", 200},
		{"/stats/public.example/page?sort_by=nonsense&sort=up", "", 200},
		{"/stats/public.example?range=today&from=&to=", "", 200},
		{"/stats/public.example/%00", "", 404},
	} {
		t.Run(tc.path[:min(len(tc.path), 80)], func(t *testing.T) {
			res := c.get(tc.path)
			if res.status != tc.status {
				t.Fatalf("status %d, want %d\n%s", res.status, tc.status, text(res.body))
			}
			mustContain(t, "page", text(res.body), tc.msg)
		})
	}
	// An over-long form is refused before it is read.
	tok := c.csrf("/login")
	res := c.post("/login", url.Values{"csrf": {tok}, "key": {strings.Repeat("k", 20000)}})
	if res.status != http.StatusBadRequest {
		t.Errorf("huge form: status %d, want 400", res.status)
	}
}

func TestAssets(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	page := c.get("/login").body
	for _, name := range []string{"style.css", "realtime.js"} {
		url := f.p.css
		if name == "realtime.js" {
			url = f.p.js
		}
		if name == "style.css" {
			mustContain(t, "login", page, `href="`+url+`"`)
		}
		res := c.get(url)
		if res.status != http.StatusOK || len(res.body) < 100 {
			t.Fatalf("%s: status %d, %d bytes", url, res.status, len(res.body))
		}
		mustContain(t, name, res.header.Get("Cache-Control"), "immutable")
		etag := res.header.Get("ETag")
		req, _ := http.NewRequest(http.MethodGet, f.srv.URL+url, nil)
		req.Header.Set("If-None-Match", etag)
		if res := c.do(req); res.status != http.StatusNotModified {
			t.Errorf("%s with If-None-Match: status %d, want 304", name, res.status)
		}
	}
	if res := c.get("/assets/nope.css"); res.status != http.StatusNotFound {
		t.Errorf("unknown asset: status %d", res.status)
	}
}

func TestChangeOf(t *testing.T) {
	for _, tc := range []struct {
		cur, prev uint64
		want      string
	}{
		{112, 100, "+12%"}, {97, 100, "\u22123%"}, {5, 0, "new"}, {0, 0, ""}, {100, 100, "±0%"}, {0, 7, "\u2212100%"}, {1001, 1000, "±0%"},
	} {
		if got := changeOf(tc.cur, tc.prev).Text; got != tc.want {
			t.Errorf("changeOf(%d, %d) = %q, want %q", tc.cur, tc.prev, got, tc.want)
		}
	}
}

func TestNiceScale(t *testing.T) {
	for _, tc := range []struct{ max, top, step uint64 }{
		{0, 4, 1}, {1, 1, 1}, {3, 3, 1}, {7, 8, 2}, {10, 10, 5}, {95, 100, 50}, {1234, 1500, 500},
	} {
		top, step := niceScale(tc.max)
		if top != tc.top || step != tc.step || top < tc.max {
			t.Errorf("niceScale(%d) = %d, %d; want %d, %d", tc.max, top, step, tc.top, tc.step)
		}
	}
}

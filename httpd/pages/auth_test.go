package pages

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// testClientIP reads the client address of a test request from the
// X-Test-Client header (default 192.0.2.1), so one test can play many
// clients.
func testClientIP(r *http.Request) netip.Addr {
	if a, err := netip.ParseAddr(r.Header.Get("X-Test-Client")); err == nil {
		return a
	}
	return netip.MustParseAddr("192.0.2.1")
}

// postFrom posts form to path as the client at ip.
func (c *client) postFrom(ip, path string, form url.Values) response {
	c.f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.f.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Test-Client", ip)
	return c.do(req)
}

// TestPasswordFailuresLimited checks the limits of the password form:
// passwordFailuresPerIP wrong passwords a minute from one client, then
// passwordFailuresPerSite for one website from any number of clients; past
// them 429 with Retry-After and no password is checked.
func TestPasswordFailuresLimited(t *testing.T) {
	f := newFixture(t)
	f.p.clientIP = testClientIP
	c := f.client()
	tok := c.csrfFor("/stats/secret.example", "/stats/secret.example")
	try := func(ip, pw string) response {
		t.Helper()
		return c.postFrom(ip, "/stats/secret.example", url.Values{"csrf": {tok}, "password": {pw}})
	}
	limited := func(what string, res response) {
		t.Helper()
		secs, err := strconv.Atoi(res.header.Get("Retry-After"))
		if res.status != http.StatusTooManyRequests || err != nil || secs < 1 || secs > 60 {
			t.Errorf("%s: status %d, Retry-After %q; want 429 with 1-60 s", what, res.status, res.header.Get("Retry-After"))
		}
	}
	// Right passwords do not count.
	for i := range 2 * passwordFailuresPerIP {
		if res := try("198.51.100.1", secretPassword); res.status != http.StatusSeeOther {
			t.Fatalf("right password %d: status %d, want 303", i, res.status)
		}
	}
	// One client: passwordFailuresPerIP wrong ones, then 429, even for the
	// right password (telling it apart would need the hash the limit saves).
	for i := range passwordFailuresPerIP {
		if res := try("198.51.100.2", "wrong"); res.status != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: status %d, want 401", i, res.status)
		}
	}
	limited("one client past its limit", try("198.51.100.2", "wrong"))
	res := try("198.51.100.2", secretPassword)
	limited("the right password from a limited client", res)
	mustContain(t, "429 page", text(res.body), "Too many wrong passwords")
	// Another client is not limited by the first one.
	if res := try("198.51.100.3", secretPassword); res.status != http.StatusSeeOther {
		t.Errorf("another client: status %d, want 303", res.status)
	}
	// Many clients: the website's own limit.
	failures := passwordFailuresPerIP
	for ip := 10; failures < passwordFailuresPerSite; ip++ {
		for range min(passwordFailuresPerIP, passwordFailuresPerSite-failures) {
			if res := try("203.0.113."+strconv.Itoa(ip), "wrong"); res.status != http.StatusUnauthorized {
				t.Fatalf("failure %d of the website: status %d, want 401", failures, res.status)
			}
			failures++
		}
	}
	limited("a fresh client on a limited website", try("198.51.100.4", "wrong"))
	limited("the right password on a limited website", try("198.51.100.4", secretPassword))
	// Another website is not limited.
	otherTok := c.csrfFor("/stats/other.example", "/stats/other.example")
	if res := c.postFrom("198.51.100.4", "/stats/other.example", url.Values{"csrf": {otherTok}, "password": {"wrong"}}); res.status != http.StatusUnauthorized {
		t.Errorf("another website: status %d, want 401", res.status)
	}
	// The limits refill.
	f.clock.Add(time.Minute)
	if res := try("198.51.100.2", secretPassword); res.status != http.StatusSeeOther {
		t.Errorf("after a minute: status %d, want 303", res.status)
	}
}

// TestSignInFailuresLimited checks that wrong API keys on the sign-in form
// are limited per client, and that the right key is never refused.
func TestSignInFailuresLimited(t *testing.T) {
	f := newFixture(t)
	f.p.clientIP = testClientIP
	c := f.client()
	tok := c.csrfFor("/login", "/login")
	for i := range signInFailuresPerIP {
		if res := c.postFrom("198.51.100.9", "/login", url.Values{"csrf": {tok}, "key": {"ws_guess"}}); res.status != http.StatusUnauthorized {
			t.Fatalf("wrong key %d: status %d, want 401", i, res.status)
		}
	}
	res := c.postFrom("198.51.100.9", "/login", url.Values{"csrf": {tok}, "key": {"ws_guess"}})
	if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") == "" {
		t.Errorf("wrong key past the limit: status %d, Retry-After %q; want 429", res.status, res.header.Get("Retry-After"))
	}
	if res := c.postFrom("198.51.100.9", "/login", url.Values{"csrf": {tok}, "key": {f.ownerKey}}); res.status != http.StatusSeeOther {
		t.Errorf("right key from the limited client: status %d, want 303", res.status)
	}
}

// TestSignOutEndsSession checks that a session cookie kept after signing
// out (copied, stolen) opens nothing.
func TestSignOutEndsSession(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	c.signIn(f.ownerKey)
	stolen := c.cookie("/", sessionCookie)
	if res := c.post("/logout", url.Values{"csrf": {c.csrfFor("/", "/logout")}}); res.status != http.StatusSeeOther {
		t.Fatalf("sign out: status %d", res.status)
	}
	thief := f.client()
	thief.setCookie("/", sessionCookie, stolen)
	if res := thief.get("/stats/private.example"); res.status != http.StatusNotFound {
		t.Errorf("the cookie after sign-out: status %d, want 404", res.status)
	}
	if res := thief.get("/"); res.status != http.StatusSeeOther {
		t.Errorf("the cookie after sign-out on /: status %d, want 303 to /login", res.status)
	}
	// Ending every session of the account (as rotate-key does).
	c.signIn(f.ownerKey)
	if err := identity.Must(f.e).EndSessions(context.Background(), f.owner.ID); err != nil {
		t.Fatal(err)
	}
	if res := c.get("/stats/private.example"); res.status != http.StatusNotFound {
		t.Errorf("after EndSessions: status %d, want 404", res.status)
	}
}

// TestCSRFBound checks that a form token is bound to its form and expires
// after csrfTokenLife.
func TestCSRFBound(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	login := c.csrfFor("/login", "/login")
	secret := c.csrfFor("/stats/secret.example", "/stats/secret.example")
	for _, tc := range []struct {
		name, path, tok string
	}{
		{"login token on a password form", "/stats/secret.example", login},
		{"one website's token on another's", "/stats/other.example", secret},
		{"password token on the login form", "/login", secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := c.post(tc.path, url.Values{"csrf": {tc.tok}, "password": {otherPassword}, "key": {f.ownerKey}})
			if res.status != http.StatusForbidden {
				t.Errorf("status %d, want 403", res.status)
			}
		})
	}
	f.clock.Add(csrfTokenLife - time.Minute)
	if res := c.post("/stats/secret.example", url.Values{"csrf": {secret}, "password": {"wrong"}}); res.status != http.StatusUnauthorized {
		t.Errorf("token just before it expires: status %d, want 401", res.status)
	}
	f.clock.Add(time.Minute)
	if res := c.post("/stats/secret.example", url.Values{"csrf": {secret}, "password": {secretPassword}}); res.status != http.StatusForbidden {
		t.Errorf("expired token: status %d, want 403", res.status)
	}
}

// TestBusy checks that ErrBusy (too many password hashes at once) is a 503
// page with Retry-After.
func TestBusy(t *testing.T) {
	f := newFixture(t)
	w := httptest.NewRecorder()
	f.p.fail(w, httptest.NewRequest("POST", "/stats/secret.example", nil), engine.ErrBusy)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("status %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
}

package pages

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// rfcTOTP computes an RFC 6238 code (SHA-1, 6 digits, 30 s steps).
func rfcTOTP(secret string, at time.Time) string {
	key, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(at.Unix()/30))
	m := hmac.New(sha1.New, key)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	return fmt.Sprintf("%06d", (binary.BigEndian.Uint32(sum[off:])&0x7fffffff)%1_000_000)
}

// find returns the first submatch of re in s, or fails.
func find(t testing.TB, re, s string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, mainText(s))
	}
	return html.UnescapeString(m[1])
}

// signInPassword posts the email and password form.
func (c *client) signInPassword(email, pw string) response {
	c.f.t.Helper()
	return c.post("/login", url.Values{"csrf": {c.csrfFor("/login", "/login")}, "email": {email}, "password": {pw}})
}

// postForm posts form to action with the CSRF token of its form on page.
func (c *client) postForm(page, action string, form url.Values) response {
	c.f.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", c.csrfFor(page, action))
	return c.post(action, form)
}

// setPassword signs c in with key and sets pw as the account's password.
func (c *client) setPassword(key, pw string) {
	c.f.t.Helper()
	c.signIn(key)
	res := c.postForm("/account", "/account/password", url.Values{"current_password": {key}, "password": {pw}, "password_confirmation": {pw}})
	if res.status != http.StatusSeeOther {
		c.f.t.Fatalf("set password: %d\n%s", res.status, mainText(res.body))
	}
}

// tokenFor returns a valid CSRF token of c for a form posting to action
// that no page shows c (to test what the handler itself refuses).
func tokenFor(c *client, action string) string {
	c.f.t.Helper()
	if c.cookie("/", csrfCookie) == "" {
		c.get("/login")
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(&http.Cookie{Name: csrfCookie, Value: c.cookie("/", csrfCookie)})
	return c.f.p.csrfToken(httptest.NewRecorder(), r, action)
}

func signedInAs(c *client) string {
	res := c.get("/account")
	if res.status != http.StatusOK {
		return ""
	}
	return find(c.f.t, `id="email"[^>]*value="([^"]*)"`, res.body)
}

// TestPasswordSignInForm: the email and password form, its messages and
// its limits.
func TestPasswordSignInForm(t *testing.T) {
	f := newFixture(t)
	f.p.clientIP = testClientIP
	c := f.client()
	c.setPassword(f.ownerKey, "correct horse")
	// Changing the password started a new session: still signed in.
	if got := signedInAs(c); got != "owner@example.org" {
		t.Fatalf("after setting the password: signed in as %q", got)
	}
	tests := []struct {
		name, email, pw string
		status          int
		msg             string
	}{
		{name: "right", email: "Owner@Example.org", pw: "correct horse", status: http.StatusSeeOther},
		{name: "wrong password", email: "owner@example.org", pw: "correct horsE", status: http.StatusUnauthorized, msg: "The email address or the password is not right."},
		{name: "unknown email", email: "nobody@example.org", pw: "correct horse", status: http.StatusUnauthorized, msg: "The email address or the password is not right."},
		{name: "account without password", email: "other@example.org", pw: "correct horse", status: http.StatusUnauthorized, msg: "The email address or the password is not right."},
		{name: "empty", email: "", pw: "", status: http.StatusUnprocessableEntity, msg: "Enter your email address and your password."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := f.client()
			res := c.signInPassword(tt.email, tt.pw)
			if res.status != tt.status {
				t.Fatalf("status %d, want %d\n%s", res.status, tt.status, mainText(res.body))
			}
			if tt.msg != "" {
				mustContain(t, "page", mainText(res.body), tt.msg)
				if signedInAs(c) != "" {
					t.Error("signed in after a failure")
				}
			} else if got := signedInAs(c); got != "owner@example.org" {
				t.Errorf("signed in as %q", got)
			}
		})
	}
	t.Run("CSRF", func(t *testing.T) {
		c := f.client()
		c.get("/login")
		for name, tok := range map[string]string{"missing": "", "forged": "9999999999.AAAA"} {
			res := c.post("/login", url.Values{"csrf": {tok}, "email": {"owner@example.org"}, "password": {"correct horse"}})
			if res.status != http.StatusForbidden || signedInAs(c) != "" {
				t.Errorf("%s token: status %d, want 403 and no session", name, res.status)
			}
		}
	})
	t.Run("account limit", func(t *testing.T) {
		// Wrong passwords for one account from many addresses: past the
		// account's limit, a client that failed on it gets 429, the right
		// password too; a client that has not failed is delayed, then
		// signed in (SPEC §13: no lockout by someone who knows only the
		// address).
		f.clock.Add(2 * time.Minute) // the buckets refill
		c := f.client()
		tok := c.csrfFor("/login", "/login")
		for i := range signInFailuresPerAccount {
			res := c.postFrom(fmt.Sprintf("198.51.100.%d", i+1), "/login", url.Values{"csrf": {tok}, "email": {"owner@example.org"}, "password": {"guess"}})
			if res.status != http.StatusUnauthorized {
				t.Fatalf("guess %d: %d %s", i, res.status, mainText(res.body))
			}
		}
		res := c.postFrom("198.51.100.1", "/login", url.Values{"csrf": {tok}, "email": {"owner@example.org"}, "password": {"correct horse"}})
		if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") == "" {
			t.Errorf("a client that failed, past the account limit: %d, Retry-After %q; want 429", res.status, res.header.Get("Retry-After"))
		}
		start := time.Now()
		res = c.postFrom("203.0.113.200", "/login", url.Values{"csrf": {tok}, "email": {"owner@example.org"}, "password": {"correct horse"}})
		if res.status != http.StatusSeeOther {
			t.Errorf("a fresh client, past the account limit: %d, want 303 (delayed, not refused)", res.status)
		}
		if d := time.Since(start); d < maxAccountDelay/2 {
			t.Errorf("a fresh client past the account limit answered in %v: not delayed", d)
		}
		// The API key still signs in: a failure limit never locks out a
		// right key.
		f.client().signIn(f.ownerKey)
	})
}

// TestTwoFactorForms: turning TOTP on from the account page, signing in
// with a code, no replay, recovery codes, turning it off.
func TestTwoFactorForms(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	c.setPassword(f.ownerKey, "correct horse")
	page := c.get("/account/2fa")
	secret := find(t, `<code id="totp-secret">([A-Z2-7]+)</code>`, page.body)
	mustContain(t, "setup page", page.body, `src="data:image/png;base64,`)
	res := c.postForm("/account/2fa", "/account/2fa", url.Values{"secret": {secret}, "code": {"000000"}, "current_password": {"correct horse"}})
	if res.status != http.StatusUnprocessableEntity {
		t.Fatalf("wrong code: %d", res.status)
	}
	mustContain(t, "wrong code", mainText(res.body), "This code is not right.")
	if res.header.Get("Cache-Control") != "no-store" {
		t.Errorf("2FA page Cache-Control %q, want no-store", res.header.Get("Cache-Control"))
	}
	res = c.postForm("/account/2fa", "/account/2fa", url.Values{"secret": {secret}, "code": {rfcTOTP(secret, f.clock.Now())}, "current_password": {"wrong"}})
	if res.status != http.StatusUnprocessableEntity {
		t.Fatalf("wrong password: %d", res.status)
	}
	mustContain(t, "wrong password", mainText(res.body), "The password is incorrect.")
	res = c.postForm("/account/2fa", "/account/2fa", url.Values{"secret": {secret}, "code": {rfcTOTP(secret, f.clock.Now())}, "current_password": {"correct horse"}})
	if res.status != http.StatusOK {
		t.Fatalf("right code: %d\n%s", res.status, mainText(res.body))
	}
	codes := regexp.MustCompile(`<li><code>([a-z2-7]{5}-[a-z2-7]{5})</code></li>`).FindAllStringSubmatch(res.body, -1)
	if len(codes) != 10 {
		t.Fatalf("%d recovery codes shown, want 10", len(codes))
	}
	// Sign in: the password leads to the code form, not to a session.
	b := f.client()
	res = b.signInPassword("owner@example.org", "correct horse")
	if res.status != http.StatusSeeOther || !strings.HasPrefix(res.header.Get("Location"), "/login/code") || signedInAs(b) != "" {
		t.Fatalf("password of a 2FA account: %d → %s", res.status, res.header.Get("Location"))
	}
	res = b.postForm("/login/code", "/login/code", url.Values{"code": {"123456"}})
	if res.status != http.StatusUnauthorized || signedInAs(b) != "" {
		t.Fatalf("wrong code: %d", res.status)
	}
	f.clock.Add(30 * time.Second)
	code := rfcTOTP(secret, f.clock.Now())
	res = b.postForm("/login/code", "/login/code", url.Values{"code": {code}})
	if res.status != http.StatusSeeOther || signedInAs(b) != "owner@example.org" {
		t.Fatalf("right code: %d, signed in as %q", res.status, signedInAs(b))
	}
	// The same code cannot sign in a second client.
	d := f.client()
	d.signInPassword("owner@example.org", "correct horse")
	if res := d.postForm("/login/code", "/login/code", url.Values{"code": {code}}); res.status != http.StatusUnauthorized {
		t.Errorf("replayed code: %d, want 401", res.status)
	}
	// A recovery code works once.
	if res := d.postForm("/login/code", "/login/code", url.Values{"code": {codes[0][1]}}); res.status != http.StatusSeeOther {
		t.Errorf("recovery code: %d", res.status)
	}
	e := f.client()
	e.signInPassword("owner@example.org", "correct horse")
	if res := e.postForm("/login/code", "/login/code", url.Values{"code": {codes[0][1]}}); res.status != http.StatusUnauthorized {
		t.Errorf("recovery code reused: %d", res.status)
	}
	// With 2FA on, the API key no longer signs in to the browser.
	k := f.client()
	if res := k.post("/login", url.Values{"csrf": {k.csrfFor("/login", "/login")}, "key": {f.ownerKey}}); res.status != http.StatusForbidden || signedInAs(k) != "" {
		t.Errorf("key sign-in with 2FA on: %d, want 403 and no session", res.status)
	}
	// The code form without a password step goes back to sign-in.
	if res := f.client().get("/login/code"); res.status != http.StatusSeeOther {
		t.Errorf("code form without a pending sign-in: %d", res.status)
	}
	// Off, with the password.
	res = c.postForm("/account/2fa", "/account/2fa/disable", url.Values{"current_password": {"wrong"}})
	if res.status != http.StatusUnprocessableEntity {
		t.Errorf("off with a wrong password: %d", res.status)
	}
	if res := c.postForm("/account/2fa", "/account/2fa/disable", url.Values{"current_password": {"correct horse"}}); res.status != http.StatusSeeOther {
		t.Errorf("off: %d", res.status)
	}
	if res := f.client().signInPassword("owner@example.org", "correct horse"); res.header.Get("Location") != "/" {
		t.Errorf("sign-in after 2FA off goes to %q", res.header.Get("Location"))
	}
}

// TestKeyForms: keys are created (shown once), listed, used by the API,
// revoked; another account's key id is a 404.
func TestKeyForms(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	c.signIn(f.ownerKey)
	res := c.postForm("/account/keys", "/account/keys", url.Values{"name": {""}})
	if res.status != http.StatusUnprocessableEntity {
		t.Fatalf("empty name: %d", res.status)
	}
	mustContain(t, "empty name", mainText(res.body), "The name field is required.")
	res = c.postForm("/account/keys", "/account/keys", url.Values{"name": {"<b>CI</b>"}})
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d", res.status)
	}
	key := find(t, `id="new-key" type="text" readonly value="([^"]+)"`, res.body)
	mustContain(t, "keys page", res.body, "&lt;b&gt;CI&lt;/b&gt;")
	if res.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", res.header.Get("Cache-Control"))
	}
	if a, err := identity.Must(f.e).Authenticate(context.Background(), key); err != nil || a.ID != f.owner.ID {
		t.Fatalf("new key: %v", err)
	}
	page := c.get("/account/keys")
	if strings.Contains(page.body, key) {
		t.Error("the key is shown again")
	}
	acc, _ := identity.Must(f.e).Account(context.Background(), f.owner.ID)
	id := fmt.Sprint(acc.Keys[1].ID)
	// Another account cannot revoke it.
	o := f.client()
	o.signIn(f.otherKey)
	other, _ := identity.Must(f.e).Account(context.Background(), f.other.ID)
	res = o.post("/account/keys/"+id+"/revoke", url.Values{"csrf": {o.csrfFor("/account/keys", fmt.Sprintf("/account/keys/%d/revoke", other.Keys[0].ID))}})
	if res.status != http.StatusForbidden {
		t.Errorf("revoke with another form's token: %d, want 403", res.status)
	}
	res = o.post("/account/keys/"+id+"/revoke", url.Values{"csrf": {tokenFor(o, "/account/keys/"+id+"/revoke")}})
	if res.status != http.StatusNotFound {
		t.Errorf("revoke another account's key: %d, want 404", res.status)
	}
	if _, err := identity.Must(f.e).Authenticate(context.Background(), key); err != nil {
		t.Fatal("another account revoked the key")
	}
	res = c.postForm("/account/keys", "/account/keys/"+id+"/revoke", nil)
	if res.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", res.status)
	}
	if _, err := identity.Must(f.e).Authenticate(context.Background(), key); err == nil {
		t.Error("revoked key works")
	}
}

// TestSessionForms: the sessions list, ending one, ending all; the
// account's other forms.
func TestSessionForms(t *testing.T) {
	f := newFixture(t)
	a, b := f.client(), f.client()
	a.signIn(f.ownerKey)
	b.signIn(f.ownerKey)
	page := a.get("/account")
	if n := strings.Count(page.body, `action="/account/sessions/end" class="inline"`); n != 1 {
		t.Fatalf("%d sign-out buttons, want 1 (for the other session)", n)
	}
	mustContain(t, "sessions", mainText(page.body), "(this one)")
	id := find(t, `name="id" value="([0-9a-f]+)"`, page.body)
	// Another account cannot end it.
	o := f.client()
	o.signIn(f.otherKey)
	if res := o.post("/account/sessions/end", url.Values{"csrf": {tokenFor(o, "/account/sessions/end")}, "id": {id}}); res.status != http.StatusNotFound {
		t.Errorf("another account's session: %d, want 404", res.status)
	}
	if signedInAs(b) == "" {
		t.Fatal("b signed out by another account")
	}
	if res := a.postForm("/account", "/account/sessions/end", url.Values{"id": {id}}); res.status != http.StatusSeeOther {
		t.Fatalf("end: %d", res.status)
	}
	if signedInAs(b) != "" || signedInAs(a) == "" {
		t.Error("ending b's session: wrong session ended")
	}
	// Profile, email (needs a password and mail), reports.
	mb := &mailbox{}
	f.p.sendMail, f.p.publicURL = mb.send, "https://stats.example.org"
	tests := []struct {
		action string
		form   url.Values
		status int
		msg    string
	}{
		{"/account/profile", url.Values{"name": {""}}, http.StatusUnprocessableEntity, "The name field is required."},
		{"/account/profile", url.Values{"name": {"Olivia O."}}, http.StatusSeeOther, ""},
		{"/account/email", url.Values{"email": {"new@example.org"}, "current_password": {"x"}}, http.StatusUnprocessableEntity, "Set a password first."},
		{"/account/password", url.Values{"password": {"abc"}, "password_confirmation": {"abc"}}, http.StatusUnprocessableEntity, "The password must be at least 8 characters."},
		{"/account/password", url.Values{"password": {"abcdefgh"}, "password_confirmation": {"abcdefgX"}}, http.StatusUnprocessableEntity, "The password confirmation does not match."},
		{"/account/password", url.Values{"password": {"abcdefgh"}, "password_confirmation": {"abcdefgh"}}, http.StatusUnprocessableEntity, identity.MsgWrongKey},
		{"/account/password", url.Values{"password": {"abcdefgh"}, "password_confirmation": {"abcdefgh"}, "current_password": {f.ownerKey}}, http.StatusSeeOther, ""},
		{"/account/email", url.Values{"email": {"other@example.org"}, "current_password": {"abcdefgh"}}, http.StatusUnprocessableEntity, "The email has already been taken."},
		{"/account/email", url.Values{"email": {"new@example.org"}, "current_password": {"wrong"}}, http.StatusUnprocessableEntity, "The password is incorrect."},
		{"/account/email", url.Values{"email": {"new@example.org"}, "current_password": {"abcdefgh"}}, http.StatusSeeOther, ""},
		{"/account/reports", url.Values{"report": {fmt.Sprint(f.secret.ID), fmt.Sprint(f.otherSecret.ID)}}, http.StatusSeeOther, ""},
	}
	for _, tt := range tests {
		if tt.action == "/account/email" {
			f.clock.Add(time.Minute) // limited like registration
		}
		res := a.postForm("/account", tt.action, tt.form)
		if res.status != tt.status {
			t.Errorf("%s %v: %d, want %d\n%s", tt.action, tt.form, res.status, tt.status, mainText(res.body))
			continue
		}
		if tt.msg != "" {
			mustContain(t, tt.action, mainText(res.body), tt.msg)
		}
	}
	// The new address takes effect once its link is opened.
	if acc, _ := identity.Must(f.e).Account(context.Background(), f.owner.ID); acc.Email != "owner@example.org" {
		t.Errorf("the email changed before its link was opened: %q", acc.Email)
	}
	sent := mb.wait(t, 1)
	if len(sent) != 1 || !strings.HasPrefix(sent[0], "new@example.org|") {
		t.Fatalf("mails %q, want one to new@example.org", sent)
	}
	link := strings.TrimPrefix(find(t, `(https://stats\.example\.org/account/email/\S+)`, sent[0]), "https://stats.example.org")
	if res := a.postForm(link, link, nil); res.status != http.StatusSeeOther {
		t.Fatalf("confirm the address: %d %s", res.status, mainText(res.body))
	}
	if res := a.get(link); res.status != http.StatusGone {
		t.Errorf("a used email link: %d, want 410", res.status)
	}
	acc, _ := identity.Must(f.e).Account(context.Background(), f.owner.ID)
	if acc.Name != "Olivia O." || acc.Email != "new@example.org" {
		t.Errorf("account %q %q", acc.Name, acc.Email)
	}
	for _, w := range []struct {
		acc  uint32
		web  engine.Website
		want int
	}{{f.owner.ID, f.secret, 1}, {f.owner.ID, f.public, 0}, {f.other.ID, f.otherSecret, 0}} {
		got, _ := f.e.Owner(w.acc).Website(context.Background(), w.web.ID)
		if got.Email != w.want {
			t.Errorf("%s email reports %d, want %d", got.Domain, got.Email, w.want)
		}
	}
	// Sign out everywhere.
	b.signIn(f.ownerKey)
	if res := a.postForm("/account", "/account/sessions/end-all", nil); res.status != http.StatusSeeOther {
		t.Fatalf("end all: %d", res.status)
	}
	if signedInAs(a) != "" || signedInAs(b) != "" {
		t.Error("a session survived 'sign out everywhere'")
	}
	// Not signed in: the account pages send to sign-in.
	if res := f.client().get("/account/keys"); res.status != http.StatusSeeOther || res.header.Get("Location") != "/login?next=%2Faccount%2Fkeys" {
		t.Errorf("signed out: %d → %s", res.status, res.header.Get("Location"))
	}
}

// TestRegistration: the three modes, invitations used once, and a new
// account sees only its own websites.
func TestRegistration(t *testing.T) {
	f := newFixture(t)
	f.p.clientIP = testClientIP
	register := func(c *client, invite, email string) response {
		t.Helper()
		page := "/register"
		if invite != "" {
			page += "?invite=" + url.QueryEscape(invite)
		}
		return c.postForm(page, "/register", url.Values{"invite": {invite}, "name": {"New"}, "email": {email}, "password": {"long enough"}, "password_confirmation": {"long enough"}})
	}
	// Closed: no form.
	if res := f.client().get("/register"); res.status != http.StatusNotFound {
		t.Errorf("closed: %d, want 404", res.status)
	}
	// Invite: an admin makes a link.
	f.p.registration = RegistrationInvite
	if res := f.client().get("/register"); res.status != http.StatusNotFound {
		t.Errorf("invite mode without invitation: %d, want 404", res.status)
	}
	adm := f.client()
	adm.signIn(f.ownerKey)
	res := adm.postForm("/admin", "/admin/invites", nil)
	if res.status != http.StatusCreated {
		t.Fatalf("create invitation: %d", res.status)
	}
	link := find(t, `id="new-invite" type="text" readonly value="([^"]+)"`, res.body)
	inv := link[strings.Index(link, "invite=")+len("invite="):]
	if !strings.HasPrefix(link, f.srv.URL+"/register?invite=") {
		t.Errorf("invitation link %q, want an absolute link to this server", link)
	}
	c := f.client()
	res = c.postForm("/register?invite="+url.QueryEscape(inv), "/register", url.Values{"invite": {inv}, "email": {"bad"}, "password": {"long enough"}, "password_confirmation": {"long enough"}})
	if res.status != http.StatusUnprocessableEntity {
		t.Fatalf("bad email: %d", res.status)
	}
	mustContain(t, "bad email", mainText(res.body), "The email must be a valid email address.")
	if res := register(c, inv, "new@example.org"); res.status != http.StatusSeeOther {
		t.Fatalf("register: %d\n%s", res.status, mainText(res.body))
	}
	home := mainText(c.get("/").body)
	if strings.Contains(home, "public.example") || strings.Contains(home, "other.example") {
		t.Errorf("a new account sees others' websites: %s", home)
	}
	if res := c.get("/admin"); res.status != http.StatusNotFound {
		t.Errorf("a new account's /admin: %d, want 404", res.status)
	}
	if res := f.client().get("/register?invite=" + url.QueryEscape(inv)); res.status != http.StatusGone {
		t.Errorf("used invitation: %d, want 410", res.status)
	}
	// Closed: even a valid invitation opens nothing.
	link2 := find(t, `id="new-invite" type="text" readonly value="([^"]+)"`, adm.postForm("/admin", "/admin/invites", nil).body)
	inv2 := link2[strings.Index(link2, "invite=")+len("invite="):]
	f.p.registration = RegistrationClosed
	if res := f.client().get("/register?invite=" + url.QueryEscape(inv2)); res.status == http.StatusOK {
		t.Errorf("closed registration with an invitation: %d", res.status)
	}
	// Open: no form without mail (an address is proven by a link).
	f.p.registration = RegistrationOpen
	if res := f.client().get("/register"); res.status != http.StatusNotFound {
		t.Errorf("open registration without mail: %d, want 404", res.status)
	}
	mb := &mailbox{}
	f.p.sendMail, f.p.publicURL = mb.send, "https://stats.example.org"
	// With mail: the form asks for the address and mails a link, the
	// same answer for a taken address (which gets a notice instead);
	// limited per client, failures too.
	f.clock.Add(2 * time.Minute) // the buckets refill
	ask := func(email string) response {
		return f.client().postForm("/register", "/register", url.Values{"email": {email}})
	}
	taken, fresh := ask("owner@example.org"), ask("open@example.org")
	if taken.status != http.StatusOK || fresh.status != http.StatusOK ||
		strings.Replace(mainText(taken.body), "owner@example.org", "X", 1) != strings.Replace(mainText(fresh.body), "open@example.org", "X", 1) {
		t.Errorf("taken and free addresses answered differently:\n%d %s\n%d %s", taken.status, mainText(taken.body), fresh.status, mainText(fresh.body))
	}
	sent := mb.wait(t, 2)
	if len(sent) != 2 {
		t.Fatalf("%d mails, want 2", len(sent))
	}
	var regLink string
	for _, m := range sent {
		if strings.HasPrefix(m, "owner@example.org|") && strings.Contains(m, "/register/") {
			t.Errorf("a registration link to a taken address: %q", m)
		}
		if strings.HasPrefix(m, "open@example.org|") {
			regLink = strings.TrimPrefix(find(t, `(https://stats\.example\.org/register/\S+)`, m), "https://stats.example.org")
		}
	}
	c = f.client()
	res = c.postForm(regLink, regLink, url.Values{"name": {"Open"}, "password": {"long enough"}, "password_confirmation": {"long enough"}})
	if res.status != http.StatusSeeOther || signedInAs(c) != "open@example.org" {
		t.Fatalf("register from the link: %d %s", res.status, mainText(res.body))
	}
	ask("third@example.org")
	if res := ask("owner@example.org"); res.status != http.StatusTooManyRequests {
		t.Errorf("past the registration limit: %d, want 429", res.status)
	}
	mustContain(t, "login page", mainText(f.client().get("/login").body), "Create an account")
}

// mailbox records the mails the pages send.
type mailbox struct {
	mu   sync.Mutex
	sent []string // "to|subject|text"
}

func (m *mailbox) send(_ context.Context, to, subject, text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, to+"|"+subject+"|"+text)
	return nil
}

func (m *mailbox) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m.mu.Lock()
		got := append([]string(nil), m.sent...)
		m.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPasswordReset: no email without SMTP; the same answer for known and
// unknown addresses; the link works once and expires.
func TestPasswordReset(t *testing.T) {
	f := newFixture(t)
	f.p.clientIP = testClientIP
	c := f.client()
	if res := c.post("/reset", url.Values{"csrf": {tokenFor(c, "/reset")}, "email": {"owner@example.org"}}); res.status != http.StatusServiceUnavailable {
		t.Errorf("reset without SMTP: %d, want 503", res.status)
	}
	mustContain(t, "reset page without SMTP", mainText(c.get("/reset").body), "webstatsd user set-password")
	mb := &mailbox{}
	f.p.sendMail, f.p.publicURL = mb.send, "https://stats.example.org"
	known := c.postForm("/reset", "/reset", url.Values{"email": {"owner@example.org"}})
	unknown := c.postForm("/reset", "/reset", url.Values{"email": {"nobody@example.org"}})
	if known.status != http.StatusOK || unknown.status != http.StatusOK ||
		strings.Replace(mainText(known.body), "owner@example.org", "X", 1) != strings.Replace(mainText(unknown.body), "nobody@example.org", "X", 1) {
		t.Errorf("known and unknown addresses answered differently:\n%d %s\n%d %s", known.status, mainText(known.body), unknown.status, mainText(unknown.body))
	}
	sent := mb.wait(t, 1)
	if len(sent) != 1 || !strings.HasPrefix(sent[0], "owner@example.org|") {
		t.Fatalf("sent %q", sent)
	}
	link := find(t, `(https://stats\.example\.org/reset/\S+)`, sent[0])
	path := strings.TrimPrefix(link, "https://stats.example.org")
	set := func(path string) response {
		return c.postForm(path, path, url.Values{"password": {"brand new pw"}, "password_confirmation": {"brand new pw"}})
	}
	if res := set(path); res.status != http.StatusSeeOther || signedInAs(c) != "owner@example.org" {
		t.Fatalf("reset: %d", res.status)
	}
	if res := f.client().signInPassword("owner@example.org", "brand new pw"); res.status != http.StatusSeeOther {
		t.Errorf("sign in with the new password: %d", res.status)
	}
	if res := c.get(path); res.status != http.StatusGone {
		t.Errorf("used link: %d, want 410", res.status)
	}
	// The reset said so, by mail too.
	sent = mb.wait(t, 2)
	if len(sent) != 2 || !strings.Contains(sent[1], "Every API key of the account was revoked") {
		t.Fatalf("no notice of the reset: %q", sent)
	}
	// Expiry, and the per-address limit of mails.
	c.postForm("/reset", "/reset", url.Values{"email": {"owner@example.org"}})
	sent = mb.wait(t, 3)
	if len(sent) != 3 {
		t.Fatalf("second mail: %d sent", len(sent))
	}
	path = strings.TrimPrefix(find(t, `(https://stats\.example\.org/reset/\S+)`, sent[2]), "https://stats.example.org")
	f.clock.Add(identity.ResetLife)
	if res := c.get(path); res.status != http.StatusGone {
		t.Errorf("expired link: %d, want 410", res.status)
	}
	for range resetsPerAccount + 2 {
		c.postForm("/reset", "/reset", url.Values{"email": {"other@example.org"}})
	}
	f.p.mails.Wait()
	n := 0
	for _, m := range mb.wait(t, 0) {
		if strings.HasPrefix(m, "other@example.org|") {
			n++
		}
	}
	if n != resetsPerAccount {
		t.Errorf("%d mails to one address, want %d (the limit)", n, resetsPerAccount)
	}
}

// TestAdminForms: only admins see /admin; accounts are created, disabled
// (their sessions and keys end) and enabled; an admin cannot disable
// itself.
func TestAdminForms(t *testing.T) {
	f := newFixture(t)
	o := f.client()
	o.signIn(f.otherKey)
	if res := o.get("/admin"); res.status != http.StatusNotFound {
		t.Errorf("non-admin /admin: %d, want 404", res.status)
	}
	adm := f.client()
	adm.signIn(f.ownerKey)
	mustContain(t, "nav", adm.get("/").body, `href="/admin"`)
	res := adm.postForm("/admin", "/admin/accounts", url.Values{"email": {"owner@example.org"}})
	if res.status != http.StatusUnprocessableEntity {
		t.Fatalf("taken email: %d", res.status)
	}
	mustContain(t, "taken email", mainText(res.body), "The email has already been taken.")
	res = adm.postForm("/admin", "/admin/accounts", url.Values{"name": {"Nina"}, "email": {"nina@example.org"}})
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d", res.status)
	}
	key := find(t, `id="new-key" type="text" readonly value="([^"]+)"`, res.body)
	if _, err := identity.Must(f.e).Authenticate(context.Background(), key); err != nil {
		t.Fatalf("new account's key: %v", err)
	}
	action := fmt.Sprintf("/admin/accounts/%d/disable", f.other.ID)
	if res := o.post(action, url.Values{"csrf": {tokenFor(o, action)}}); res.status != http.StatusNotFound {
		t.Errorf("non-admin disabling: %d, want 404", res.status)
	}
	if res := adm.postForm("/admin", action, nil); res.status != http.StatusSeeOther {
		t.Fatalf("disable: %d", res.status)
	}
	if signedInAs(o) != "" {
		t.Error("a disabled account's session goes on")
	}
	if _, err := identity.Must(f.e).Authenticate(context.Background(), f.otherKey); err == nil {
		t.Error("a disabled account's key works")
	}
	if res := o.post("/login", url.Values{"csrf": {o.csrfFor("/login", "/login")}, "key": {f.otherKey}}); res.status != http.StatusUnauthorized {
		t.Errorf("a disabled account signs in with its key: %d, want 401", res.status)
	}
	self := fmt.Sprintf("/admin/accounts/%d/disable", f.owner.ID)
	if res := adm.post(self, url.Values{"csrf": {tokenFor(adm, self)}}); res.status != http.StatusForbidden {
		t.Errorf("self-disable: %d, want 403", res.status)
	}
	if res := adm.postForm("/admin", fmt.Sprintf("/admin/accounts/%d/enable", f.other.ID), nil); res.status != http.StatusSeeOther {
		t.Fatalf("enable: %d", res.status)
	}
	o.signIn(f.otherKey)
	if res := adm.postForm("/admin", fmt.Sprintf("/admin/accounts/%d/admin", f.other.ID), nil); res.status != http.StatusSeeOther {
		t.Fatalf("make admin: %d", res.status)
	}
	if res := o.get("/admin"); res.status != http.StatusOK {
		t.Errorf("new admin's /admin: %d", res.status)
	}
}

// TestSignInBurst: concurrent wrong passwords from one address cannot
// all be checked: the limit's token is taken before the hash.
func TestSignInBurst(t *testing.T) {
	f := newFixture(t)
	f.p.clientIP = testClientIP
	c := f.client()
	c.setPassword(f.ownerKey, "correct horse")
	b := f.client()
	tok := b.csrfFor("/login", "/login")
	var mu sync.Mutex
	checked := 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 30 {
		wg.Go(func() {
			<-start
			res := b.post("/login", url.Values{"csrf": {tok}, "email": {"owner@example.org"}, "password": {"guess"}})
			if res.status == http.StatusUnauthorized {
				mu.Lock()
				checked++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if checked > signInFailuresPerIP {
		t.Errorf("%d wrong passwords checked from one address in one burst, want at most %d", checked, signInFailuresPerIP)
	}
}

// TestSessionPasswordGuesses: a signed-in session's password checks
// (password change, 2FA off) are limited like sign-ins.
func TestSessionPasswordGuesses(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	c.setPassword(f.ownerKey, "correct horse")
	tok := c.csrfFor("/account", "/account/password")
	for i := range signInFailuresPerAccount + 1 {
		res := c.post("/account/password", url.Values{"csrf": {tok}, "password": {"new password"}, "password_confirmation": {"new password"}, "current_password": {"guess"}})
		if i < signInFailuresPerAccount && res.status != http.StatusUnprocessableEntity {
			t.Fatalf("guess %d: %d", i, res.status)
		}
		if i == signInFailuresPerAccount && res.status != http.StatusTooManyRequests {
			t.Errorf("past the limit: %d, want 429", res.status)
		}
	}
}

// TestFirstPasswordNewKey (SPEC §13: "setting the first password of a
// key-only account asks for the API key"): a stolen session of a key-only
// account makes a key of its own; that key does not set the first
// password (else the thief sets one, turns on two-factor authentication,
// and the owner's key sign-in is refused). The key the session signed in
// with does.
func TestFirstPasswordNewKey(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	c.signIn(f.ownerKey)
	res := c.postForm("/account/keys", "/account/keys", url.Values{"name": {"thief"}})
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d", res.status)
	}
	made := find(t, `id="new-key" type="text" readonly value="([^"]+)"`, res.body)
	form := url.Values{"current_password": {made}, "password": {"thief password"}, "password_confirmation": {"thief password"}}
	res = c.postForm("/account", "/account/password", form)
	if res.status != http.StatusUnprocessableEntity {
		t.Fatalf("first password with a key the session made: %d, want 422", res.status)
	}
	mustContain(t, "a key the session made", mainText(res.body), identity.MsgWrongKey)
	if acc, _ := identity.Must(f.e).Account(context.Background(), f.owner.ID); acc.Password {
		t.Fatal("a password was set")
	}
	// A key older than the session's own proves the owner.
	d := f.client()
	d.signIn(made)
	form.Set("current_password", f.ownerKey)
	if res := d.postForm("/account", "/account/password", form); res.status != http.StatusSeeOther {
		t.Fatalf("first password with the owner's (older) key: %d, want 303\n%s", res.status, mainText(res.body))
	}
}

// TestLongAddressLink: the registration link of a valid address of 250
// bytes (the form takes up to 255) opens its form: its token, the address
// in base64 and a MAC, is longer than other path parameters may be.
func TestLongAddressLink(t *testing.T) {
	f := newFixture(t)
	f.p.clientIP = testClientIP
	f.p.registration = RegistrationOpen
	mb := &mailbox{}
	f.p.sendMail, f.p.publicURL = mb.send, "https://stats.example.org"
	email := strings.Repeat("a", 250-len("@example.org")) + "@example.org"
	if res := f.client().postForm("/register", "/register", url.Values{"email": {email}}); res.status != http.StatusOK {
		t.Fatalf("ask: %d\n%s", res.status, mainText(res.body))
	}
	sent := mb.wait(t, 1)
	if len(sent) != 1 {
		t.Fatalf("%d mails, want 1", len(sent))
	}
	link := strings.TrimPrefix(find(t, `(https://stats\.example\.org/register/\S+)`, sent[0]), "https://stats.example.org")
	c := f.client()
	if res := c.get(link); res.status != http.StatusOK {
		t.Fatalf("GET the link (%d bytes): %d, want 200", len(link), res.status)
	}
	res := c.postForm(link, link, url.Values{"name": {"Long"}, "password": {"long enough"}, "password_confirmation": {"long enough"}})
	if res.status != http.StatusSeeOther || signedInAs(c) != email {
		t.Fatalf("register from the link: %d %s", res.status, mainText(res.body))
	}
}

// TestStolenSessionCannotRevokeOwnersKeys (#38): a stolen session of an
// account without a password makes a key of its own, but cannot revoke
// the key the owner signed in with without that key (SPEC §13: no one is
// locked out by a session alone); with it, or for the session's own key,
// the revocation goes through.
func TestStolenSessionCannotRevokeOwnersKeys(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	thief := f.client()
	thief.signIn(f.ownerKey) // the owner's session, its cookie stolen
	res := thief.postForm("/account/keys", "/account/keys", url.Values{"name": {"mine"}})
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d", res.status)
	}
	mustContain(t, "keys page of a key-only account", res.body, `name="key" type="password"`)
	acc, _ := identity.Must(f.e).Account(ctx, f.owner.ID)
	owners, thiefs := fmt.Sprint(acc.Keys[0].ID), fmt.Sprint(acc.Keys[1].ID)
	for _, proof := range []string{"", "ws_wrong", find(t, `id="new-key" type="text" readonly value="([^"]+)"`, res.body)} {
		res = thief.postForm("/account/keys", "/account/keys/"+owners+"/revoke", url.Values{"key": {proof}})
		if res.status != http.StatusUnprocessableEntity {
			t.Errorf("revoke the owner's key with proof %.6q: %d, want 422", proof, res.status)
		}
		if _, err := identity.Must(f.e).Authenticate(ctx, f.ownerKey); err != nil {
			t.Fatalf("the owner's key was revoked by a session with proof %.6q", proof)
		}
	}
	mustContain(t, "refusal", mainText(res.body), "Enter one of your API keys")
	if res = thief.postForm("/account/keys", "/account/keys/"+thiefs+"/revoke", nil); res.status != http.StatusSeeOther {
		t.Errorf("revoke the session's own key: %d, want 303", res.status)
	}
	if res = thief.postForm("/account/keys", "/account/keys/"+owners+"/revoke", url.Values{"key": {f.ownerKey}}); res.status != http.StatusSeeOther {
		t.Errorf("revoke with the key itself: %d, want 303", res.status)
	}
	if _, err := identity.Must(f.e).Authenticate(ctx, f.ownerKey); err == nil {
		t.Error("the key still works after a proven revocation")
	}
}

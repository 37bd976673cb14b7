package pages

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd/internal/limit"
)

// Cookie names and lifetimes (see the package documentation).
const (
	sessionCookie   = "ws_session"
	passwordCookie  = "ws_pw"
	csrfCookie      = "ws_csrf"
	sessionLife     = identity.SessionLife
	passwordLife    = 30 * 24 * time.Hour
	csrfLife        = 30 * 24 * time.Hour
	maxCookieLength = 512
	// csrfTokenLife is how long a form's CSRF token is accepted: 2 hours.
	csrfTokenLife = 2 * time.Hour
)

// Limits of the forms that check a secret (SPEC §13). Each is a token bucket
// per key: as many attempts at once, refilled at that rate, so a client past
// its limit waits a few seconds per further try (Retry-After says how many).
// Only failures count: a right password or key gives its token back.
const (
	// passwordFailuresPerIP: wrong website passwords a minute from one
	// client address (an IPv6 /64): 10.
	passwordFailuresPerIP = 10
	// passwordFailuresPerSite: wrong passwords a minute for one website,
	// from all clients together: 30. Past it the form is closed to everyone
	// until it refills, so that a botnet cannot guess at 10 a minute per
	// address.
	passwordFailuresPerSite = 30
	// signInFailuresPerIP: wrong API keys a minute on the sign-in form from
	// one client address: 10. A right key is never refused by it.
	signInFailuresPerIP = 10
	// busyRetry is the Retry-After of a 503 when too many passwords are
	// being checked at once (engine.ErrBusy).
	busyRetry = 2 * time.Second
)

// retryAfter is d in whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// Purposes of signed values: a value signed for one is refused for another.
const (
	purposeSession  = "session"
	purposePassword = "password"
	purposeCSRF     = "csrf"
)

// mac returns HMAC-SHA256 over purpose and payload with the pages' key.
func (p *Pages) mac(purpose, payload string) []byte {
	m := hmac.New(sha256.New, p.key[:])
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// sign returns the signed cookie value of fields for purpose.
func (p *Pages) sign(purpose string, fields ...string) string {
	payload := strings.Join(fields, "|")
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." +
		base64.RawURLEncoding.EncodeToString(p.mac(purpose, payload))
}

// verify checks a signed value of purpose and returns its n fields.
func (p *Pages) verify(purpose, value string, n int) ([]string, bool) {
	if len(value) > maxCookieLength {
		return nil, false
	}
	b64, sig, ok := strings.Cut(value, ".")
	if !ok {
		return nil, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(b64)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, p.mac(purpose, string(payload))) {
		return nil, false
	}
	fields := strings.Split(string(payload), "|")
	if len(fields) != n {
		return nil, false
	}
	return fields, true
}

// unexpired reports whether the unix time s is after now.
func (p *Pages) unexpired(s string) bool {
	exp, err := strconv.ParseInt(s, 10, 64)
	return err == nil && p.now().Unix() < exp
}

// fingerprint is a short digest of a secret's hash, bound into cookies so
// that changing the secret invalidates them.
func fingerprint(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}

func (p *Pages) setCookie(w http.ResponseWriter, name, value, path string, life time.Duration) {
	c := &http.Cookie{
		Name: name, Value: value, Path: path, HttpOnly: true, Secure: p.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: int(life / time.Second),
	}
	if life < 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// session returns the signed-in account of r: the signed cookie holds a
// session token that the engine knows (engine.SessionAccount), so signing
// out and rotating the key end it.
func (p *Pages) session(r *http.Request) (identity.Account, bool) {
	tok, ok := p.sessionToken(r)
	if !ok {
		return identity.Account{}, false
	}
	a, err := p.id.SessionAccount(r.Context(), tok)
	if err != nil {
		return identity.Account{}, false
	}
	return a, true
}

// sessionToken returns the session token of r's cookie, if it is signed.
func (p *Pages) sessionToken(r *http.Request) (string, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	f, ok := p.verify(purposeSession, c.Value, 1)
	if !ok {
		return "", false
	}
	return f[0], true
}

// hasPassword reports whether r carries a valid password cookie for web.
func (p *Pages) hasPassword(r *http.Request, web *engine.Website) bool {
	for _, c := range r.Cookies() {
		if c.Name != passwordCookie {
			continue
		}
		f, ok := p.verify(purposePassword, c.Value, 3)
		if ok && f[0] == strconv.FormatUint(uint64(web.ID), 10) && p.unexpired(f[1]) &&
			hmac.Equal([]byte(f[2]), []byte(fingerprint([]byte(web.PasswordHash)))) {
			return true
		}
	}
	return false
}

// csrfToken returns the CSRF token of a form posting to action, for r's
// CSRF cookie (setting a new cookie when r has none). The token is
// "<expiry unix>.<mac>", the mac over the cookie, the action and the
// expiry: it is refused after csrfTokenLife, and by any other form (another
// website's password form, the sign-in form).
func (p *Pages) csrfToken(w http.ResponseWriter, r *http.Request, action string) string {
	tok := ""
	if c, err := r.Cookie(csrfCookie); err == nil && validCSRFCookie(c.Value) {
		tok = c.Value
	} else {
		tok = p.newCSRFCookie(w)
		// Later reads in this request see the new cookie.
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: tok})
	}
	exp := strconv.FormatInt(p.now().Add(csrfTokenLife).Unix(), 10)
	return exp + "." + base64.RawURLEncoding.EncodeToString(p.mac(purposeCSRF, tok+"|"+action+"|"+exp))
}

// newCSRFCookie sets a fresh CSRF cookie and returns its value.
func (p *Pages) newCSRFCookie(w http.ResponseWriter) string {
	var b [16]byte
	rand.Read(b[:])
	tok := base64.RawURLEncoding.EncodeToString(b[:])
	p.setCookie(w, csrfCookie, tok, "/", csrfLife)
	return tok
}

func validCSRFCookie(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 16
}

// errCSRF answers a POST whose form token does not match.
var errCSRF = &httpError{http.StatusForbidden, "The form has expired or did not come from this site. Go back, reload the page and try again."}

// checkPost parses the form of a POST and checks its origin and its CSRF
// token, which must have been made for a form posting to r's path and not
// have expired.
func (p *Pages) checkPost(r *http.Request) error {
	if err := p.cop.Check(r); err != nil {
		return errCSRF
	}
	if err := parseForm(r); err != nil {
		return badRequest("The form could not be read.")
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || !validCSRFCookie(c.Value) {
		return errCSRF
	}
	exp, sig, ok := strings.Cut(r.PostForm.Get("csrf"), ".")
	if !ok || len(exp) > 20 || !p.unexpired(exp) {
		return errCSRF
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, p.mac(purposeCSRF, c.Value+"|"+r.URL.Path+"|"+exp)) {
		return errCSRF
	}
	return nil
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// loginData is the data of login.html.
type loginData struct {
	Next  string
	Error string
	// Email is the address typed (kept when the password was wrong).
	Email string
	// Key reports that the error is about the API key form.
	Key bool
	// Registration is the registration mode: the page links to /register
	// when it is open. Reset: a password was just reset.
	Registration string
	Reset        bool
}

// loginForm serves GET /login.
func (p *Pages) loginForm(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	next := safeNext(r.URL.Query().Get("next"), "/")
	if _, ok := p.session(r); ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	p.renderLogin(w, r, http.StatusOK, loginData{Next: next, Reset: r.URL.Query().Get("reset") == "1"})
	return nil
}

func (p *Pages) renderLogin(w http.ResponseWriter, r *http.Request, status int, d loginData) {
	d.Registration = p.registration
	p.renderView(w, r, status, "login.html", &view{Title: "Sign in", Form: "/login", Body: d})
}

// login serves POST /login: an email and password, or an API key, sign
// their account in. Wrong keys are limited per client
// (signInFailuresPerIP); a right key always signs in.
func (p *Pages) login(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	next := safeNext(r.PostForm.Get("next"), "/")
	if _, keyForm := r.PostForm["key"]; !keyForm {
		return p.loginPassword(w, r, next)
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	var a identity.Account
	err := identity.ErrUnauthenticated
	if key != "" && len(key) <= 256 {
		a, err = p.id.Authenticate(r.Context(), key)
	}
	if err != nil {
		msg := "This API key is not valid. Copy the key of your account exactly and try again."
		if key == "" {
			msg = "Enter the API key of your account."
		} else {
			ipKey := limit.ClientKey(p.clientIP(r))
			if wait, blocked := p.signInFails.Blocked(ipKey); blocked {
				w.Header().Set("Retry-After", retryAfter(wait))
				p.renderLogin(w, r, http.StatusTooManyRequests, loginData{Next: next, Key: true,
					Error: "Too many wrong keys from your address. Wait " + retryAfter(wait) + " seconds and try again."})
				return nil
			}
			p.signInFails.Take(ipKey)
		}
		sleep(r.Context(), p.delay)
		p.renderLogin(w, r, http.StatusUnauthorized, loginData{Next: next, Key: true, Error: msg})
		return nil
	}
	if a.TwoFactor {
		// A key opens the API, not the browser of an account whose
		// owner asked for a second factor.
		p.renderLogin(w, r, http.StatusForbidden, loginData{Next: next, Key: true,
			Error: "This account uses two-factor authentication: sign in with your email address and password. The key still opens the API."})
		return nil
	}
	return p.startSession(w, r, a, next)
}

// logout serves POST /logout: the session ends in the engine, so a copy of
// the cookie opens nothing afterwards.
func (p *Pages) logout(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	if tok, ok := p.sessionToken(r); ok {
		if err := p.id.EndSession(r.Context(), tok); err != nil {
			return err
		}
	}
	p.setCookie(w, sessionCookie, "", "/", -1)
	p.newCSRFCookie(w)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

// defaultClientIP is the connection's address: the default of
// Options.ClientIP.
func defaultClientIP(r *http.Request) netip.Addr {
	a, _ := limit.ParseIP(r.RemoteAddr)
	return a
}

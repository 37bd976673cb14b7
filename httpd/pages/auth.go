package pages

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
)

// Cookie names and lifetimes (see the package documentation).
const (
	sessionCookie   = "ws_session"
	passwordCookie  = "ws_pw"
	csrfCookie      = "ws_csrf"
	sessionLife     = 14 * 24 * time.Hour
	passwordLife    = 30 * 24 * time.Hour
	csrfLife        = 30 * 24 * time.Hour
	maxCookieLength = 512
)

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

// session returns the signed-in account of r.
func (p *Pages) session(r *http.Request) (engine.Account, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return engine.Account{}, false
	}
	f, ok := p.verify(purposeSession, c.Value, 3)
	if !ok || !p.unexpired(f[1]) {
		return engine.Account{}, false
	}
	id, err := strconv.ParseUint(f[0], 10, 32)
	if err != nil {
		return engine.Account{}, false
	}
	a, err := p.e.Account(r.Context(), uint32(id))
	if err != nil || !hmac.Equal([]byte(fingerprint(a.KeyHash[:])), []byte(f[2])) {
		return engine.Account{}, false
	}
	return a, true
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

// csrfToken returns the form token of r's CSRF cookie, setting a new cookie
// when r has none.
func (p *Pages) csrfToken(w http.ResponseWriter, r *http.Request) string {
	tok := ""
	if c, err := r.Cookie(csrfCookie); err == nil && validCSRFCookie(c.Value) {
		tok = c.Value
	} else {
		tok = p.newCSRFCookie(w)
		// Later reads in this request see the new cookie.
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: tok})
	}
	return base64.RawURLEncoding.EncodeToString(p.mac(purposeCSRF, tok))
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
// token.
func (p *Pages) checkPost(r *http.Request) error {
	if err := p.cop.Check(r); err != nil {
		return errCSRF
	}
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || !validCSRFCookie(c.Value) {
		return errCSRF
	}
	got, err := base64.RawURLEncoding.DecodeString(r.PostForm.Get("csrf"))
	if err != nil || !hmac.Equal(got, p.mac(purposeCSRF, c.Value)) {
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
}

// loginForm serves GET /login.
func (p *Pages) loginForm(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	next := safeNext(r.URL.Query().Get("next"), "/")
	if _, ok := p.session(r); ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	p.render(w, r, http.StatusOK, "login.html", "Sign in", loginData{Next: next})
	return nil
}

// login serves POST /login: an API key signs its account in.
func (p *Pages) login(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	next := safeNext(r.PostForm.Get("next"), "/")
	key := strings.TrimSpace(r.PostForm.Get("key"))
	var a engine.Account
	err := engine.ErrUnauthenticated
	if key != "" && len(key) <= 256 {
		a, err = p.e.Authenticate(r.Context(), key)
	}
	if err != nil {
		sleep(r.Context(), p.delay)
		msg := "This API key is not valid. Copy the key of your account exactly and try again."
		if key == "" {
			msg = "Enter the API key of your account."
		}
		p.render(w, r, http.StatusUnauthorized, "login.html", "Sign in", loginData{Next: next, Error: msg})
		return nil
	}
	exp := strconv.FormatInt(p.now().Add(sessionLife).Unix(), 10)
	p.setCookie(w, sessionCookie, p.sign(purposeSession, strconv.FormatUint(uint64(a.ID), 10), exp, fingerprint(a.KeyHash[:])), "/", sessionLife)
	p.newCSRFCookie(w) // a new token with the new privileges
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// logout serves POST /logout.
func (p *Pages) logout(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	p.setCookie(w, sessionCookie, "", "/", -1)
	p.newCSRFCookie(w)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
	return nil
}

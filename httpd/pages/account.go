package pages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"html/template"
	"image/png"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/pquerna/otp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd/internal/limit"
)

// The web app's account pages (SPEC §11): sign-in with a password and a
// second factor, registration, password reset, account settings, API keys,
// sessions, and the admins' accounts page.

// Registration modes (Options.Registration).
const (
	RegistrationClosed = "closed"
	RegistrationInvite = "invite"
	RegistrationOpen   = "open"
)

// Limits of the account forms (SPEC §13), per minute.
const (
	// signInFailuresPerAccount: wrong passwords for one account from all
	// clients together: 20. Past it, clients that failed on the account
	// get 429 and the others wait (maxAccountDelay at most) but are
	// answered.
	signInFailuresPerAccount = 20
	// signInFailuresPerPair: wrong passwords for one account from one
	// client: 5.
	signInFailuresPerPair = 5
	// maxAccountDelay bounds the wait of a client that has not failed on
	// an account whose bucket is empty: 3 s, the bucket's refill time.
	maxAccountDelay = 3 * time.Second
	// codeFailuresPerAccount: wrong second-factor codes for one account:
	// 5 (a 6-digit code has a million values).
	codeFailuresPerAccount = 5
	// resetsPerIP: reset emails asked for by one client a minute: 5.
	// resetsPerAccount reset emails go to one address at once, then one
	// every resetEvery (an hour).
	resetsPerIP      = 5
	resetsPerAccount = 3
	resetEvery       = time.Hour
	// maxMailsAtOnce bounds the reset mails being sent at once; more are
	// dropped (and logged): the answer is the same either way.
	maxMailsAtOnce = 4
	// registrationsPerIP: accounts one client address registers: 3.
	registrationsPerIP = 3
	// pendingLife is how long the second step of a sign-in waits for its
	// code: 5 minutes.
	pendingLife = 5 * time.Minute
	// pendingCookie holds the signed pending sign-in (account id,
	// generation, expiry) between the password and the code.
	pendingCookie  = "ws_2fa"
	purposePending = "2fa"
)

// maxReportSites bounds the websites of the email report choices: 1,000.
const maxReportSites = 1000

// adminPerPage is the accounts a page of /admin lists: 100.
const adminPerPage = 100

// fieldMsgs maps a form field to its message.
type fieldMsgs map[string]string

// formErrors returns the field messages of a *engine.ValidationError, or
// nil for another error.
func formErrors(err error) fieldMsgs {
	var ve *engine.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	fe := make(fieldMsgs, len(ve.Fields))
	for _, f := range ve.Fields {
		if _, ok := fe[f.Field]; !ok {
			fe[f.Field] = f.Msg
		}
	}
	return fe
}

// backTo is where a sign-in that r asked for comes back to: r's page for
// a GET, the account page after a form.
func backTo(r *http.Request) string {
	if r.Method == http.MethodGet {
		return r.URL.Path
	}
	return "/account"
}

// startSession creates a session for a, sets its cookie and a new CSRF
// cookie, and redirects to next.
func (p *Pages) startSession(w http.ResponseWriter, r *http.Request, a identity.Account, next string) error {
	tok, err := p.id.CreateSession(r.Context(), a, identity.SessionClient{UserAgent: r.UserAgent(), IP: p.clientIP(r)})
	if err != nil {
		return err
	}
	p.setCookie(w, sessionCookie, p.sign(purposeSession, tok), "/", sessionLife)
	p.setCookie(w, pendingCookie, "", "/", -1)
	p.newCSRFCookie(w) // a new token with the new privileges
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// accountKey is the limiter key of an email address: a digest, so that
// a key's size does not depend on the input.
func accountKey(email string) string {
	h := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(email))))
	return "acct:" + hex.EncodeToString(h[:12])
}

// accountIDKey is the limiter key of a signed-in account's password
// checks (email change, password change, two-factor changes).
func accountIDKey(id uint32) string { return "acct#" + strconv.FormatUint(uint64(id), 10) }

// takeAll takes a token from each limiter for its key, and gives them back
// when one is empty: it returns the longest wait, or 0 when every token
// was taken.
func takeAll(takes ...limitKey) time.Duration {
	var wait time.Duration
	for i, t := range takes {
		if ok, _, w := t.l.Take(t.key); !ok {
			for _, u := range takes[:i] {
				u.l.Refund(u.key)
			}
			wait = max(w, time.Second)
			break
		}
	}
	return wait
}

// refundAll gives the tokens of takeAll back (the attempt was right).
func refundAll(takes ...limitKey) {
	for _, t := range takes {
		t.l.Refund(t.key)
	}
}

// limitKey is a limiter and the key of one attempt.
type limitKey struct {
	l   *limit.Limiter
	key string
}

// loginPassword signs in with email and password (POST /login without a
// key).
func (p *Pages) loginPassword(w http.ResponseWriter, r *http.Request, next string) error {
	email := strings.TrimSpace(r.PostForm.Get("email"))
	pw := r.PostForm.Get("password")
	d := loginData{Next: next, Email: email}
	if email == "" || pw == "" {
		d.Error = "Enter your email address and your password."
		p.renderLogin(w, r, http.StatusUnprocessableEntity, d)
		return nil
	}
	if len(email) > 255 || len(pw) > 512 {
		d.Error = "The email address or the password is not right."
		p.renderLogin(w, r, http.StatusUnauthorized, d)
		return nil
	}
	// The tokens are taken before the hash, so that a burst of
	// concurrent guesses cannot all pass the check; a right password
	// gives them back.
	// A client that has not failed lately goes first for the hash slots
	// and waits for one longer (engine.WithPasswordPriority): a flood of
	// guesses from clients that fail does not answer its owner 503.
	ck := limit.ClientKey(p.clientIP(r))
	ctx := r.Context()
	if !p.signInFails.Used(ck) {
		ctx = engine.WithPasswordPriority(ctx)
	}
	takes, wait := p.signInTakes(r.Context(), ck, email)
	if wait > 0 {
		w.Header().Set("Retry-After", retryAfter(wait))
		d.Error = "Too many wrong passwords. Wait " + retryAfter(wait) + " seconds and try again."
		p.renderLogin(w, r, http.StatusTooManyRequests, d)
		return nil
	}
	a, err := p.id.SignIn(ctx, email, pw)
	if err == nil || errors.Is(err, identity.ErrSecondFactor) || errors.Is(err, identity.ErrDisabled) || errors.Is(err, engine.ErrBusy) {
		refundAll(takes...)
	}
	switch {
	case err == nil:
		return p.startSession(w, r, a, next)
	case errors.Is(err, identity.ErrSecondFactor):
		exp := strconv.FormatInt(p.now().Add(pendingLife).Unix(), 10)
		p.setCookie(w, pendingCookie, p.sign(purposePending, strconv.FormatUint(uint64(a.ID), 10), strconv.FormatUint(a.Gen, 10), exp), "/", pendingLife)
		http.Redirect(w, r, "/login/code?next="+url.QueryEscape(next), http.StatusSeeOther)
		return nil
	case errors.Is(err, identity.ErrDisabled):
		d.Error = "This account is disabled. Ask an administrator of this server."
		p.renderLogin(w, r, http.StatusForbidden, d)
		return nil
	case errors.Is(err, identity.ErrUnauthenticated):
		sleep(r.Context(), p.delay)
		d.Error = "The email address or the password is not right."
		p.renderLogin(w, r, http.StatusUnauthorized, d)
		return nil
	}
	return err
}

// signInTakes takes the failure tokens of a password sign-in for email
// from the client whose limiter key is ck (SPEC §13: no one who knows only
// an address locks its owner out). The client's bucket and the client's
// bucket for this account refuse; the account's bucket, which all clients
// share, refuses only a client that failed on this account itself, and
// delays the others (at most maxAccountDelay) before their password is
// checked. A refused attempt keeps the tokens it took: a 429 costs the
// client as a failure does. It returns the tokens to give back on a right
// password, or the wait of a 429.
func (p *Pages) signInTakes(ctx context.Context, ck, email string) ([]limitKey, time.Duration) {
	acct := accountKey(email)
	pair := limitKey{p.pairFails, ck + "|" + acct}
	failed := pair.l.Used(pair.key)
	var taken []limitKey
	for _, t := range []limitKey{{p.signInFails, ck}, pair} {
		ok, _, wait := t.l.Take(t.key)
		if !ok {
			return nil, max(wait, time.Second)
		}
		taken = append(taken, t)
	}
	whole := limitKey{p.accountFails, acct}
	ok, _, wait := whole.l.Take(whole.key)
	switch {
	case ok:
		return append(taken, whole), 0
	case failed:
		return nil, max(wait, time.Second)
	}
	sleep(ctx, min(wait, maxAccountDelay))
	if ok, _, _ := whole.l.Take(whole.key); ok {
		taken = append(taken, whole)
	}
	return taken, 0
}

// pending returns the account of r's pending sign-in cookie.
func (p *Pages) pending(r *http.Request) (identity.Account, bool) {
	c, err := r.Cookie(pendingCookie)
	if err != nil {
		return identity.Account{}, false
	}
	f, ok := p.verify(purposePending, c.Value, 3)
	if !ok || !p.unexpired(f[2]) {
		return identity.Account{}, false
	}
	id, err1 := strconv.ParseUint(f[0], 10, 32)
	gen, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return identity.Account{}, false
	}
	a, err := p.id.Account(r.Context(), uint32(id))
	if err != nil || a.Gen != gen || a.Disabled {
		return identity.Account{}, false
	}
	return a, true
}

// codeData is the data of login_code.html.
type codeData struct {
	Next, Error string
}

// codeForm serves GET /login/code: the second step of a sign-in.
func (p *Pages) codeForm(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	next := safeNext(r.URL.Query().Get("next"), "/")
	if _, ok := p.pending(r); !ok {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(next), http.StatusSeeOther)
		return nil
	}
	p.renderView(w, r, http.StatusOK, "login_code.html", &view{Title: "Two-factor authentication", Form: "/login/code", Body: codeData{Next: next}})
	return nil
}

// code serves POST /login/code.
func (p *Pages) code(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	next := safeNext(r.PostForm.Get("next"), "/")
	a, ok := p.pending(r)
	if !ok {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(next), http.StatusSeeOther)
		return nil
	}
	render := func(status int, msg string) error {
		p.renderView(w, r, status, "login_code.html", &view{Title: "Two-factor authentication", Form: "/login/code", Body: codeData{Next: next, Error: msg}})
		return nil
	}
	take := limitKey{p.codeFails, "code:" + strconv.FormatUint(uint64(a.ID), 10)}
	if wait := takeAll(take); wait > 0 {
		w.Header().Set("Retry-After", retryAfter(wait))
		return render(http.StatusTooManyRequests, "Too many wrong codes. Wait "+retryAfter(wait)+" seconds and try again.")
	}
	a, err := p.id.CheckSecondFactor(r.Context(), a, r.PostForm.Get("code"))
	switch {
	case errors.Is(err, identity.ErrCodeWait):
		refundAll(take)
		w.Header().Set("Retry-After", "60")
		return render(http.StatusTooManyRequests, "Too many wrong codes for this account. Wait a few minutes, then try again (a recovery code too).")
	case errors.Is(err, identity.ErrUnauthenticated):
		sleep(r.Context(), p.delay)
		return render(http.StatusUnauthorized, "This code is not right, or was used already. Enter the current code of your app, or a recovery code.")
	case err != nil:
		return err
	}
	refundAll(take)
	return p.startSession(w, r, a, next)
}

// accountData is the data of account.html.
type accountData struct {
	Account  identity.Account
	Notice   string
	Errors   fieldMsgs
	Form     string // the form the errors belong to
	Email    string
	Sessions []sessionRow
	Sites    []reportRow
	CSRF     map[string]string // token by form action
}

type sessionRow struct {
	identity.Session
	Current bool
}

type reportRow struct {
	ID     uint32
	Domain string
	On     bool
}

// accountForms are the actions of account.html's forms.
var accountForms = []string{"/account/profile", "/account/email", "/account/password", "/account/reports", "/account/sessions/end", "/account/sessions/end-all"}

// accountPage serves GET /account.
func (p *Pages) accountPage(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return nil
	}
	notices := map[string]string{
		"profile": "Your name was saved.", "email": "Your email address was changed.",
		"email-sent": "A link to confirm the new address is on its way to it: the address changes when you open it, within an hour.",
		"password":   "Your password was changed. Your other sessions were signed out.",
		"reports":    "Your email report choices were saved.", "session": "The session was signed out.",
		"2fa-off": "Two-factor authentication is off.",
	}
	return p.renderAccount(w, r, a, http.StatusOK, accountData{Notice: notices[r.URL.Query().Get("done")]})
}

func (p *Pages) renderAccount(w http.ResponseWriter, r *http.Request, a identity.Account, status int, d accountData) error {
	ctx := r.Context()
	d.Account = a
	if d.Email == "" {
		d.Email = a.Email
	}
	cur := ""
	if tok, ok := p.sessionToken(r); ok {
		cur = identity.SessionID(tok)
	}
	for _, s := range p.id.Sessions(ctx, a.ID) {
		d.Sessions = append(d.Sessions, sessionRow{Session: s, Current: s.ID == cur})
	}
	list := p.e.Owner(a.ID).Websites(ctx, engine.WebsiteQuery{SortBy: "domain", PerPage: maxReportSites})
	for _, web := range list.Websites {
		d.Sites = append(d.Sites, reportRow{ID: web.ID, Domain: web.Domain, On: web.Email == 1})
	}
	d.CSRF = make(map[string]string, len(accountForms))
	for _, f := range accountForms {
		d.CSRF[f] = p.csrfToken(w, r, f)
	}
	p.renderView(w, r, status, "account.html", &view{Title: "Account", Account: &a, Body: d})
	return nil
}

// accountPost serves the POST forms of the account page.
func (p *Pages) accountPost(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return nil
	}
	ctx := r.Context()
	f := r.PostForm
	form := strings.TrimPrefix(r.URL.Path, "/account/")
	if form == "email" {
		return p.emailChange(w, r, a)
	}
	// A signed-in session checking the password (or, for the first
	// password, an API key) is limited like a sign-in: a stolen session
	// cannot guess it.
	take := limitKey{p.accountFails, accountIDKey(a.ID)}
	if form == "password" {
		if wait := takeAll(take); wait > 0 {
			w.Header().Set("Retry-After", retryAfter(wait))
			return p.renderAccount(w, r, a, http.StatusTooManyRequests, accountData{Form: form,
				Errors: fieldMsgs{"current_password": "Too many wrong tries. Wait " + retryAfter(wait) + " seconds and try again."}})
		}
	}
	var err error
	// The token of a check is given back unless the password or key was
	// wrong.
	defer func() {
		if form == "password" && !wrongPassword(err) {
			refundAll(take)
		}
	}()
	switch form {
	case "profile":
		_, err = p.id.UpdateProfile(ctx, a.ID, f.Get("name"))
	case "password":
		if f.Get("password") != f.Get("password_confirmation") {
			err = &engine.ValidationError{Fields: []engine.FieldError{{Field: "password", Msg: "The password confirmation does not match."}}}
			break
		}
		tok, _ := p.sessionToken(r)
		var na identity.Account
		na, err = p.id.SetSessionPassword(ctx, tok, f.Get("current_password"), f.Get("password"))
		if errors.Is(err, identity.ErrUnauthenticated) {
			// The session ended since signedIn read it.
			http.Redirect(w, r, "/login?next=%2Faccount", http.StatusSeeOther)
			return nil
		}
		if err == nil {
			// Every session ended, this one too: it starts again.
			return p.startSession(w, r, na, "/account?done=password")
		}
	case "reports":
		own := p.e.Owner(a.ID)
		list := own.Websites(ctx, engine.WebsiteQuery{SortBy: "domain", PerPage: maxReportSites})
		for _, web := range list.Websites {
			want := "0"
			if slices.Contains(f["report"], strconv.FormatUint(uint64(web.ID), 10)) {
				want = "1"
			}
			if (web.Email == 1) != (want == "1") {
				if _, err = own.UpdateWebsite(ctx, web.ID, engine.WebsiteInput{Email: &want}); err != nil {
					break
				}
			}
		}
	default:
		return errNotFound
	}
	if fe := formErrors(err); fe != nil {
		return p.renderAccount(w, r, a, http.StatusUnprocessableEntity, accountData{Errors: fe, Form: form, Email: f.Get("email")})
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/account?done="+form, http.StatusSeeOther)
	return nil
}

// wrongPassword reports whether err says the current password (or the
// API key asked for a first password) was wrong.
func wrongPassword(err error) bool {
	var ve *engine.ValidationError
	return errors.As(err, &ve) && slices.ContainsFunc(ve.Fields, func(f engine.FieldError) bool {
		return f.Field == "current_password" && (f.Msg == identity.MsgWrongPassword || f.Msg == identity.MsgWrongKey)
	})
}

// endSession serves POST /account/sessions/end (field id) and
// /account/sessions/end-all.
func (p *Pages) endSessions(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return nil
	}
	if r.URL.Path == "/account/sessions/end-all" {
		if err := p.id.EndSessions(r.Context(), a.ID); err != nil {
			return err
		}
		p.setCookie(w, sessionCookie, "", "/", -1)
		http.Redirect(w, r, "/login", http.StatusSeeOther)
		return nil
	}
	if err := p.id.EndSessionID(r.Context(), a.ID, r.PostForm.Get("id")); err != nil {
		return err
	}
	http.Redirect(w, r, "/account?done=session", http.StatusSeeOther)
	return nil
}

// twoFactorData is the data of account_2fa.html.
type twoFactorData struct {
	On            bool
	Secret        string
	QR            template.URL // data: URL of the QR code's PNG
	Codes         []string
	RecoveryCodes int
	Errors        fieldMsgs
	DisableCSRF   string
	Password      bool // the account has a password (2FA needs one)
}

// twoFactorPage serves GET /account/2fa: the state, or a new secret to set
// up.
func (p *Pages) twoFactorPage(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return nil
	}
	d := twoFactorData{On: a.TwoFactor, RecoveryCodes: a.RecoveryCodes}
	if !a.TwoFactor {
		secret, url, err := p.id.NewTOTPKey(r.Context(), a.ID)
		if err != nil {
			return err
		}
		d.Secret, d.QR = secret, qrDataURL(url)
	}
	return p.renderTwoFactor(w, r, a, http.StatusOK, d)
}

func (p *Pages) renderTwoFactor(w http.ResponseWriter, r *http.Request, a identity.Account, status int, d twoFactorData) error {
	d.DisableCSRF = p.csrfToken(w, r, "/account/2fa/disable")
	d.Password = a.Password
	// The page shows a secret or recovery codes: the browser keeps no copy.
	w.Header().Set("Cache-Control", "no-store")
	p.renderView(w, r, status, "account_2fa.html", &view{Title: "Two-factor authentication", Account: &a, Form: "/account/2fa", Body: d})
	return nil
}

// qrDataURL returns the QR code of url as a PNG data: URL ("" if it
// cannot be drawn: the secret is shown as text too).
func qrDataURL(url string) template.URL {
	k, err := otp.NewKeyFromURL(url)
	if err != nil {
		return ""
	}
	img, err := k.Image(200, 200)
	if err != nil {
		return ""
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return ""
	}
	// A PNG the server drew, in base64: safe in an img src.
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes()))
}

// twoFactor serves POST /account/2fa: confirm a code and turn 2FA on.
func (p *Pages) twoFactor(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return nil
	}
	secret := r.PostForm.Get("secret")
	take := limitKey{p.accountFails, accountIDKey(a.ID)}
	if wait := takeAll(take); wait > 0 {
		w.Header().Set("Retry-After", retryAfter(wait))
		return p.renderTwoFactor(w, r, a, http.StatusTooManyRequests, twoFactorData{Secret: secret, QR: p.setupQR(a, secret),
			Errors: fieldMsgs{"current_password": "Too many wrong passwords. Wait " + retryAfter(wait) + " seconds and try again."}})
	}
	codes, err := p.id.EnableTOTP(r.Context(), a.ID, secret, r.PostForm.Get("code"), r.PostForm.Get("current_password"))
	if !wrongPassword(err) {
		refundAll(take)
	}
	if fe := formErrors(err); fe != nil {
		return p.renderTwoFactor(w, r, a, http.StatusUnprocessableEntity, twoFactorData{On: a.TwoFactor, RecoveryCodes: a.RecoveryCodes, Secret: secret, QR: p.setupQR(a, secret), Errors: fe})
	}
	if err != nil {
		return err
	}
	a, err = p.id.Account(r.Context(), a.ID)
	if err != nil {
		return err
	}
	return p.renderTwoFactor(w, r, a, http.StatusOK, twoFactorData{On: true, Codes: codes, RecoveryCodes: len(codes)})
}

// setupQR is the QR code of a setup secret sent back with a form.
func (p *Pages) setupQR(a identity.Account, secret string) template.URL {
	if len(secret) > 128 {
		return ""
	}
	return qrDataURL("otpauth://totp/webstats:" + url.PathEscape(a.Email) + "?issuer=webstats&secret=" + url.QueryEscape(secret))
}

// twoFactorOff serves POST /account/2fa/disable.
func (p *Pages) twoFactorOff(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return nil
	}
	take := limitKey{p.accountFails, accountIDKey(a.ID)}
	if wait := takeAll(take); wait > 0 {
		w.Header().Set("Retry-After", retryAfter(wait))
		return p.renderTwoFactor(w, r, a, http.StatusTooManyRequests, twoFactorData{On: true, RecoveryCodes: a.RecoveryCodes,
			Errors: fieldMsgs{"current_password": "Too many wrong passwords. Wait " + retryAfter(wait) + " seconds and try again."}})
	}
	_, err := p.id.DisableTOTP(r.Context(), a.ID, r.PostForm.Get("current_password"))
	if !wrongPassword(err) {
		refundAll(take)
	}
	if fe := formErrors(err); fe != nil {
		return p.renderTwoFactor(w, r, a, http.StatusUnprocessableEntity, twoFactorData{On: true, RecoveryCodes: a.RecoveryCodes, Errors: fe})
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/account?done=2fa-off", http.StatusSeeOther)
	return nil
}

// keysData is the data of keys.html.
type keysData struct {
	Keys   []identity.APIKey
	New    string // a key just created, shown once
	Name   string
	Errors fieldMsgs
	Revoke map[uint32]string // CSRF token of each revoke form
	// Proof: the account has no password, so revoking a key the session
	// did not make asks for an API key (RevokeSessionKey).
	Proof  bool
	Notice string
	Script string // the address of sites.js (the copy button)
}

// keysPage serves GET /account/keys.
func (p *Pages) keysPage(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return nil
	}
	d := keysData{}
	if r.URL.Query().Get("done") == "revoked" {
		d.Notice = "The key was revoked: requests with it are refused from now on."
	}
	if r.URL.Query().Get("done") == "reset" {
		d.Notice = resetDone
	}
	return p.renderKeys(w, r, a, http.StatusOK, d)
}

func (p *Pages) renderKeys(w http.ResponseWriter, r *http.Request, a identity.Account, status int, d keysData) error {
	d.Script = p.assetURL("sites.js")
	d.Proof = !a.Password
	d.Keys = slices.Clone(a.Keys)
	slices.Reverse(d.Keys)
	d.Revoke = make(map[uint32]string, len(d.Keys))
	for _, k := range d.Keys {
		d.Revoke[k.ID] = p.csrfToken(w, r, "/account/keys/"+strconv.FormatUint(uint64(k.ID), 10)+"/revoke")
	}
	// A page showing a new key is not kept by the browser.
	w.Header().Set("Cache-Control", "no-store")
	p.renderView(w, r, status, "keys.html", &view{Title: "API keys", Account: &a, Form: "/account/keys", Body: d})
	return nil
}

// createKey serves POST /account/keys.
func (p *Pages) createKey(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return nil
	}
	name := r.PostForm.Get("name")
	_, key, err := p.id.CreateKey(r.Context(), a.ID, name)
	if fe := formErrors(err); fe != nil {
		return p.renderKeys(w, r, a, http.StatusUnprocessableEntity, keysData{Name: name, Errors: fe})
	}
	if err != nil {
		return err
	}
	if a, err = p.id.Account(r.Context(), a.ID); err != nil {
		return err
	}
	return p.renderKeys(w, r, a, http.StatusCreated, keysData{New: key})
}

// revokeKey serves POST /account/keys/:key/revoke. In an account without a
// password, a key the session did not make is revoked only with an API key
// of the account (field "key"): a stolen session cannot lock the owner out
// (#38). Wrong keys are limited like the first password's.
func (p *Pages) revokeKey(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return nil
	}
	id, err := strconv.ParseUint(ps.ByName("key"), 10, 32)
	if err != nil {
		return errNotFound
	}
	take := limitKey{p.accountFails, accountIDKey(a.ID)}
	if wait := takeAll(take); wait > 0 {
		w.Header().Set("Retry-After", retryAfter(wait))
		return p.renderKeys(w, r, a, http.StatusTooManyRequests, keysData{
			Errors: fieldMsgs{"key": "Too many wrong tries. Wait " + retryAfter(wait) + " seconds and try again."}})
	}
	tok, _ := p.sessionToken(r)
	err = p.id.RevokeSessionKey(r.Context(), tok, uint32(id), r.PostForm.Get("key"))
	if fe := formErrors(err); fe != nil {
		return p.renderKeys(w, r, a, http.StatusUnprocessableEntity, keysData{Errors: fe})
	}
	refundAll(take)
	if errors.Is(err, identity.ErrUnauthenticated) {
		http.Redirect(w, r, "/login?next=%2Faccount%2Fkeys", http.StatusSeeOther)
		return nil
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/account/keys?done=revoked", http.StatusSeeOther)
	return nil
}

// adminData is the data of admin.html.
type adminData struct {
	Self      uint32
	Accounts  []identity.Account
	Invites   []identity.Invite
	NewKey    string // of an account just created
	NewInvite string // link of an invitation just created
	NewEmail  string
	Name      string
	Email     string
	Errors    fieldMsgs
	CSRF      map[string]string
	Mode      string
	// Page is the page of the accounts list (adminPerPage a page); Prev
	// and Next link its neighbours ("" when none).
	Page       int
	Prev, Next string
	Script     string // the address of sites.js (the copy buttons)
}

// admin returns the admin view of r's account, or errNotFound: the admin
// pages do not exist for others.
func (p *Pages) admin(w http.ResponseWriter, r *http.Request) (identity.Account, identity.Admin, bool) {
	a, ok := p.signedIn(w, r, backTo(r))
	if !ok {
		return a, identity.Admin{}, false
	}
	ad, err := p.id.Admin(a.ID)
	if err != nil {
		p.fail(w, r, errNotFound)
		return a, ad, false
	}
	return a, ad, true
}

// adminPage serves GET /admin.
func (p *Pages) adminPage(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	a, ad, ok := p.admin(w, r)
	if !ok {
		return nil
	}
	return p.renderAdmin(w, r, a, ad, http.StatusOK, adminData{})
}

func (p *Pages) renderAdmin(w http.ResponseWriter, r *http.Request, a identity.Account, ad identity.Admin, status int, d adminData) error {
	ctx := r.Context()
	d.Self, d.Mode, d.Script = a.ID, p.registration, p.assetURL("sites.js")
	all := ad.Accounts(ctx)
	d.Page = 1
	if n, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && n > 1 && (n-1)*adminPerPage < len(all) {
		d.Page = n
	}
	lo := (d.Page - 1) * adminPerPage
	d.Accounts = all[lo:min(lo+adminPerPage, len(all))]
	if d.Page > 1 {
		d.Prev = "/admin?page=" + strconv.Itoa(d.Page-1)
	}
	if lo+adminPerPage < len(all) {
		d.Next = "/admin?page=" + strconv.Itoa(d.Page+1)
	}
	d.Invites = ad.Invites(ctx)
	d.CSRF = map[string]string{
		"/admin/accounts": p.csrfToken(w, r, "/admin/accounts"),
		"/admin/invites":  p.csrfToken(w, r, "/admin/invites"),
	}
	for _, acc := range d.Accounts {
		for _, op := range []string{"disable", "enable", "admin", "unadmin"} {
			action := "/admin/accounts/" + strconv.FormatUint(uint64(acc.ID), 10) + "/" + op
			d.CSRF[action] = p.csrfToken(w, r, action)
		}
	}
	for _, inv := range d.Invites {
		action := "/admin/invites/" + inv.ID + "/delete"
		d.CSRF[action] = p.csrfToken(w, r, action)
	}
	w.Header().Set("Cache-Control", "no-store")
	p.renderView(w, r, status, "admin.html", &view{Title: "Accounts", Account: &a, Body: d})
	return nil
}

// adminCreate serves POST /admin/accounts and /admin/invites.
func (p *Pages) adminCreate(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	a, ad, ok := p.admin(w, r)
	if !ok {
		return nil
	}
	ctx := r.Context()
	switch r.URL.Path {
	case "/admin/accounts":
		d := adminData{Name: r.PostForm.Get("name"), Email: r.PostForm.Get("email")}
		acc, key, err := ad.CreateAccount(ctx, d.Name, d.Email)
		if fe := formErrors(err); fe != nil {
			d.Errors = fe
			return p.renderAdmin(w, r, a, ad, http.StatusUnprocessableEntity, d)
		}
		if err != nil {
			return err
		}
		return p.renderAdmin(w, r, a, ad, http.StatusCreated, adminData{NewKey: key, NewEmail: acc.Email})
	case "/admin/invites":
		tok, _, err := ad.CreateInvite(ctx)
		if fe := formErrors(err); fe != nil {
			return p.renderAdmin(w, r, a, ad, http.StatusUnprocessableEntity, adminData{Errors: fe})
		}
		if err != nil {
			return err
		}
		return p.renderAdmin(w, r, a, ad, http.StatusCreated, adminData{NewInvite: p.baseURL(r) + "/register?invite=" + tok})
	}
	return errNotFound
}

// adminAccount serves POST /admin/accounts/:id/:op.
func (p *Pages) adminAccount(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	_, ad, ok := p.admin(w, r)
	if !ok {
		return nil
	}
	id, err := strconv.ParseUint(ps.ByName("id"), 10, 32)
	if err != nil {
		return errNotFound
	}
	ctx := r.Context()
	switch ps.ByName("op") {
	case "disable":
		_, err = ad.SetDisabled(ctx, uint32(id), true)
	case "enable":
		_, err = ad.SetDisabled(ctx, uint32(id), false)
	case "admin":
		_, err = ad.SetAdmin(ctx, uint32(id), true)
	case "unadmin":
		_, err = ad.SetAdmin(ctx, uint32(id), false)
	default:
		return errNotFound
	}
	if errors.Is(err, identity.ErrForbidden) {
		return &httpError{http.StatusForbidden, "You cannot disable your own account or take back your own admin rights: another admin must."}
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
	return nil
}

// adminInvite serves POST /admin/invites/:id/delete.
func (p *Pages) adminInvite(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	_, ad, ok := p.admin(w, r)
	if !ok {
		return nil
	}
	if ps.ByName("op") != "delete" {
		return errNotFound
	}
	if err := ad.DeleteInvite(r.Context(), ps.ByName("id")); err != nil {
		return err
	}
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
	return nil
}

// registerAccounts mounts the account pages.
func (p *Pages) registerAccounts(r *httprouter.Router) {
	r.GET("/login/code", p.handle(p.codeForm))
	r.POST("/login/code", p.handle(p.code))
	r.GET("/register", p.handle(p.registerForm))
	r.POST("/register", p.handle(p.register))
	r.GET("/register/:token", p.handle(p.registerLinkForm))
	r.POST("/register/:token", p.handle(p.registerLink))
	r.GET("/account/email/:token", p.handle(p.emailLinkForm))
	r.POST("/account/email/:token", p.handle(p.emailLink))
	r.GET("/reset", p.handle(p.resetForm))
	r.POST("/reset", p.handle(p.reset))
	r.GET("/reset/:token", p.handle(p.resetPasswordForm))
	r.POST("/reset/:token", p.handle(p.resetPassword))
	r.GET("/account", p.handle(p.accountPage))
	for _, form := range []string{"profile", "email", "password", "reports"} {
		r.POST("/account/"+form, p.handle(p.accountPost))
	}
	r.POST("/account/sessions/end", p.handle(p.endSessions))
	r.POST("/account/sessions/end-all", p.handle(p.endSessions))
	r.GET("/account/2fa", p.handle(p.twoFactorPage))
	r.POST("/account/2fa", p.handle(p.twoFactor))
	r.POST("/account/2fa/disable", p.handle(p.twoFactorOff))
	r.GET("/account/keys", p.handle(p.keysPage))
	r.POST("/account/keys", p.handle(p.createKey))
	r.POST("/account/keys/:key/revoke", p.handle(p.revokeKey))
	r.GET("/admin", p.handle(p.adminPage))
	r.POST("/admin/accounts", p.handle(p.adminCreate))
	r.POST("/admin/invites", p.handle(p.adminCreate))
	r.POST("/admin/accounts/:id/:op", p.handle(p.adminAccount))
	r.POST("/admin/invites/:id/:op", p.handle(p.adminInvite))
}

package pages

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd/internal/limit"
)

// Registration, password reset and email changes (SPEC §11, §13): every
// address an account gets from a form is proven by a link mailed to it
// when the server sends mail, so that no one pre-registers or takes
// another's address. The mails name no account (an account's name is
// anyone's text, and the address may not be proven yet).

// registerData is the data of register.html.
type registerData struct {
	Invite, Name, Email string
	Errors              fieldMsgs
	Error               string
	// Verify: the first step asks only for the address, and a link
	// mailed to it opens the second (Token set: name and password).
	// Sent: the link is on its way.
	Verify, Sent bool
	Token        string
}

// registerAllowed reports whether r may register: open registration, or
// an invitation that can be used.
func (p *Pages) registerAllowed(r *http.Request, invite string) bool {
	switch p.registration {
	case RegistrationOpen:
		// Open registration proves addresses by mail: without it, no
		// one registers (the binary refuses to start so).
		return p.canMail()
	case RegistrationInvite:
		return invite != "" && p.id.CheckInvite(r.Context(), invite)
	}
	return false // closed: accounts come from admins and the CLI
}

var (
	errNoRegistration = &httpError{http.StatusNotFound, ""}
	errInvitation     = &httpError{http.StatusGone, "This invitation is not valid: it was used already, has expired, or was deleted. Ask for a new one."}
	errRegisterLink   = &httpError{http.StatusGone, "This link is not valid: it has expired or was changed. Start again from the registration form."}
)

// registerForm serves GET /register.
func (p *Pages) registerForm(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	inv := r.URL.Query().Get("invite")
	if !p.registerAllowed(r, inv) {
		if inv != "" {
			return errInvitation
		}
		return errNoRegistration
	}
	p.renderRegister(w, r, http.StatusOK, registerData{Invite: inv})
	return nil
}

func (p *Pages) renderRegister(w http.ResponseWriter, r *http.Request, status int, d registerData) {
	d.Verify = p.canMail()
	form := "/register"
	if d.Token != "" {
		form += "/" + d.Token
	}
	p.renderView(w, r, status, "register.html", &view{Title: "Create an account", Form: form, Body: d})
}

// register serves POST /register: with mail, the first step (a link to
// the address); without, the whole registration (invitations only).
func (p *Pages) register(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	f := r.PostForm
	d := registerData{Invite: f.Get("invite"), Name: f.Get("name"), Email: strings.TrimSpace(f.Get("email"))}
	if !p.registerAllowed(r, d.Invite) {
		return errInvitation
	}
	// Every attempt counts, taken first: an answer may tell whether an
	// address has an account, and a registration costs a password hash.
	if ok, _, wait := p.registrations.Take("reg:" + limit.ClientKey(p.clientIP(r))); !ok {
		w.Header().Set("Retry-After", retryAfter(wait))
		d.Error = "Too many registrations from your address. Wait " + retryAfter(wait) + " seconds and try again."
		p.renderRegister(w, r, http.StatusTooManyRequests, d)
		return nil
	}
	if p.canMail() {
		return p.registerMail(w, r, d)
	}
	return p.createAccount(w, r, d, f.Get("password"), f.Get("password_confirmation"))
}

// registerMail mails the address of d a link to the second step, or, when
// it has an account, a notice saying so: the answer is the same.
func (p *Pages) registerMail(w http.ResponseWriter, r *http.Request, d registerData) error {
	tok, taken, err := p.id.RegistrationToken(r.Context(), d.Email, d.Invite)
	if fe := formErrors(err); fe != nil {
		d.Errors = fe
		p.renderRegister(w, r, http.StatusUnprocessableEntity, d)
		return nil
	}
	if err != nil {
		return err
	}
	if ok, _, _ := p.resetsAccount.Take(accountKey(d.Email)); ok {
		if taken {
			p.mailAsync(d.Email, "Your webstats account", "Hello,\r\n\r\nSomeone (probably you) asked to create a webstats account with this address at "+
				p.publicURL+", which has one already.\r\nTo sign in: "+p.publicURL+"/login\r\nForgot the password: "+p.publicURL+"/reset\r\n\r\nIf it was not you, ignore this email.\r\n")
		} else {
			p.mailAsync(d.Email, "Create your webstats account", "Hello,\r\n\r\nSomeone (probably you) asked to create a webstats account with this address at "+
				p.publicURL+".\r\nTo choose a name and a password, open this link within an hour:\r\n\r\n"+p.publicURL+"/register/"+tok+
				"\r\n\r\nIf it was not you, ignore this email: no account is created.\r\n")
		}
	}
	p.renderRegister(w, r, http.StatusOK, registerData{Email: d.Email, Sent: true})
	return nil
}

// registerToken returns the proven address and invitation of the link of
// r, or an error page.
func (p *Pages) registerToken(r *http.Request, tok string) (email, invite string, err error) {
	email, invite, err = p.id.CheckRegistrationToken(r.Context(), tok)
	if errors.Is(err, identity.ErrInvite) {
		return "", "", errRegisterLink
	}
	if err == nil && !p.registerAllowed(r, invite) {
		if invite != "" {
			return "", "", errInvitation
		}
		return "", "", errNoRegistration
	}
	return email, invite, err
}

// registerLinkForm serves GET /register/:token: the second step.
func (p *Pages) registerLinkForm(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	tok := ps.ByName("token")
	email, inv, err := p.registerToken(r, tok)
	if err != nil {
		return err
	}
	p.renderRegister(w, r, http.StatusOK, registerData{Token: tok, Email: email, Invite: inv})
	return nil
}

// registerLink serves POST /register/:token: the account is created with
// the proven address.
func (p *Pages) registerLink(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	tok := ps.ByName("token")
	email, inv, err := p.registerToken(r, tok)
	if err != nil {
		return err
	}
	d := registerData{Token: tok, Email: email, Invite: inv, Name: r.PostForm.Get("name")}
	return p.createAccount(w, r, d, r.PostForm.Get("password"), r.PostForm.Get("password_confirmation"))
}

// createAccount registers the account of d and signs it in.
func (p *Pages) createAccount(w http.ResponseWriter, r *http.Request, d registerData, pw, confirm string) error {
	if pw != confirm {
		d.Errors = fieldMsgs{"password": "The password confirmation does not match."}
		p.renderRegister(w, r, http.StatusUnprocessableEntity, d)
		return nil
	}
	a, err := p.id.RegisterAccount(r.Context(), identity.Registration{
		Name: d.Name, Email: d.Email, Password: pw,
		Invite: d.Invite, RequireInvite: p.registration != RegistrationOpen,
	})
	if fe := formErrors(err); fe != nil {
		d.Errors = fe
		p.renderRegister(w, r, http.StatusUnprocessableEntity, d)
		return nil
	}
	if errors.Is(err, identity.ErrInvite) {
		return errInvitation
	}
	if err != nil {
		return err
	}
	return p.startSession(w, r, a, "/")
}

// resetData is the data of reset.html and reset_password.html.
type resetData struct {
	Email, Token string
	Sent         bool
	Off          bool // no SMTP or no public URL
	Errors       fieldMsgs
	Error        string
}

// resetForm serves GET /reset: ask for a reset link.
func (p *Pages) resetForm(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	p.renderView(w, r, http.StatusOK, "reset.html", &view{Title: "Reset your password", Form: "/reset", Body: resetData{Off: !p.canMail()}})
	return nil
}

// canMail reports whether links can be mailed: they need SMTP and a
// public URL (a link is never built from the request's Host header).
func (p *Pages) canMail() bool { return p.sendMail != nil && p.publicURL != "" }

// reset serves POST /reset. Known and unknown addresses get the same
// answer, so the form tells no one which addresses have accounts.
func (p *Pages) reset(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	d := resetData{Email: strings.TrimSpace(r.PostForm.Get("email")), Off: !p.canMail()}
	render := func(status int) error {
		p.renderView(w, r, status, "reset.html", &view{Title: "Reset your password", Form: "/reset", Body: d})
		return nil
	}
	if d.Off {
		return render(http.StatusServiceUnavailable)
	}
	if d.Email == "" {
		d.Errors = fieldMsgs{"email": "The email field is required."}
		return render(http.StatusUnprocessableEntity)
	}
	ipKey := "reset:" + limit.ClientKey(p.clientIP(r))
	if ok, _, wait := p.resetsIP.Take(ipKey); !ok {
		w.Header().Set("Retry-After", retryAfter(wait))
		d.Error = "Too many reset requests from your address. Wait " + retryAfter(wait) + " seconds and try again."
		return render(http.StatusTooManyRequests)
	}
	d.Sent = true
	tok, a, err := p.id.CreateResetToken(r.Context(), d.Email)
	if errors.Is(err, engine.ErrNotFound) {
		return render(http.StatusOK)
	}
	if err != nil {
		return err
	}
	if ok, _, _ := p.resetsAccount.Take(accountKey(a.Email)); !ok {
		return render(http.StatusOK) // the same answer: a mailbox is not flooded
	}
	// No name: it is anyone's text, and the address may be unproven.
	link := p.publicURL + "/reset/" + tok
	text := "Hello,\r\n\r\nSomeone (probably you) asked to reset the password of the webstats account " + a.Email + " at " + p.publicURL +
		".\r\nTo choose a new password, open this link within an hour:\r\n\r\n" + link +
		"\r\n\r\nThe reset revokes every API key of the account and signs out every session.\r\n" +
		"If it was not you, ignore this email: your password stays as it is.\r\n"
	p.mailAsync(a.Email, "Reset your webstats password", text)
	return render(http.StatusOK)
}

// mailAsync sends a mail in the background, so that the answer does not
// take longer for a known address than for an unknown one. At most
// maxMailsAtOnce are sent at once; a mail beyond is dropped and logged.
func (p *Pages) mailAsync(to, subject, text string) {
	if p.sendMail == nil {
		return // a link from before a restart without mail
	}
	select {
	case p.mailSlots <- struct{}{}:
	default:
		p.log.Error("pages: too many mails at once; dropped one", "subject", subject)
		return
	}
	p.mails.Add(1)
	go func() {
		defer p.mails.Done()
		defer func() { <-p.mailSlots }()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := p.sendMail(ctx, to, subject, text); err != nil {
			p.log.Error("pages: send mail", "subject", subject, "err", err)
		}
	}()
}

// resetPasswordForm serves GET /reset/:token.
func (p *Pages) resetPasswordForm(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	tok := ps.ByName("token")
	if _, err := p.id.CheckResetToken(r.Context(), tok); err != nil {
		if errors.Is(err, identity.ErrInvite) {
			return errResetLink
		}
		return err
	}
	p.renderView(w, r, http.StatusOK, "reset_password.html", &view{Title: "Choose a new password", Form: r.URL.Path, Body: resetData{Token: tok}})
	return nil
}

var errResetLink = &httpError{http.StatusGone, "This reset link is not valid: it was used already or has expired. Ask for a new one."}

// resetDone is the notice of a reset, on the page and in the mail.
const resetDone = "Your password was reset. Every API key of the account was revoked and every other session signed out: make new keys under API keys."

// resetPassword serves POST /reset/:token. The reset revokes every API
// key and session of the account (engine.ResetPassword), and says so.
func (p *Pages) resetPassword(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	tok := ps.ByName("token")
	d := resetData{Token: tok}
	if r.PostForm.Get("password") != r.PostForm.Get("password_confirmation") {
		d.Errors = fieldMsgs{"password": "The password confirmation does not match."}
		p.renderView(w, r, http.StatusUnprocessableEntity, "reset_password.html", &view{Title: "Choose a new password", Form: r.URL.Path, Body: d})
		return nil
	}
	a, err := p.id.ResetPassword(r.Context(), tok, r.PostForm.Get("password"))
	if fe := formErrors(err); fe != nil {
		d.Errors = fe
		p.renderView(w, r, http.StatusUnprocessableEntity, "reset_password.html", &view{Title: "Choose a new password", Form: r.URL.Path, Body: d})
		return nil
	}
	if errors.Is(err, identity.ErrInvite) {
		return errResetLink
	}
	if err != nil {
		return err
	}
	p.mailAsync(a.Email, "Your webstats password was reset", "Hello,\r\n\r\nThe password of the webstats account "+a.Email+" at "+p.publicURL+
		" was reset with a link mailed to this address.\r\nEvery API key of the account was revoked and every session signed out: make new keys under API keys.\r\n")
	if a.TwoFactor {
		// The reset proves the mailbox, not the second factor.
		http.Redirect(w, r, "/login?reset=1", http.StatusSeeOther)
		return nil
	}
	return p.startSession(w, r, a, "/account/keys?done=reset")
}

// emailChange is the email form of the account page (POST /account/email):
// limited like registration (its answer tells whether an address has an
// account), then the password, then a link to the new address, which
// changes when the link is opened. Without mail, the form changes
// nothing: an administrator or the CLI does.
func (p *Pages) emailChange(w http.ResponseWriter, r *http.Request, a identity.Account) error {
	f := r.PostForm
	fail := func(status int, field, msg string) error {
		return p.renderAccount(w, r, a, status, accountData{Form: "email", Email: f.Get("email"), Errors: fieldMsgs{field: msg}})
	}
	if ok, _, wait := p.registrations.Take("reg:" + limit.ClientKey(p.clientIP(r))); !ok {
		w.Header().Set("Retry-After", retryAfter(wait))
		return fail(http.StatusTooManyRequests, "email", "Too many address changes from your address. Wait "+retryAfter(wait)+" seconds and try again.")
	}
	if !p.canMail() {
		return fail(http.StatusServiceUnavailable, "email", "This server sends no email, so a new address cannot be proven here. Ask its administrator to change it (webstatsd user set-email).")
	}
	take := limitKey{p.accountFails, accountIDKey(a.ID)}
	if wait := takeAll(take); wait > 0 {
		w.Header().Set("Retry-After", retryAfter(wait))
		return fail(http.StatusTooManyRequests, "current_password", "Too many wrong passwords. Wait "+retryAfter(wait)+" seconds and try again.")
	}
	email := strings.TrimSpace(f.Get("email"))
	tok, err := p.id.EmailChangeToken(r.Context(), a.ID, email, f.Get("current_password"))
	if !wrongPassword(err) {
		refundAll(take)
	}
	if fe := formErrors(err); fe != nil {
		return p.renderAccount(w, r, a, http.StatusUnprocessableEntity, accountData{Errors: fe, Form: "email", Email: email})
	}
	if err != nil {
		return err
	}
	if ok, _, _ := p.resetsAccount.Take(accountKey(email)); ok {
		p.mailAsync(email, "Confirm your new webstats address", "Hello,\r\n\r\nSomeone (probably you) asked to make this address the address of a webstats account at "+
			p.publicURL+".\r\nTo confirm, open this link within an hour:\r\n\r\n"+p.publicURL+"/account/email/"+tok+
			"\r\n\r\nIf it was not you, ignore this email: nothing changes.\r\n")
	}
	http.Redirect(w, r, "/account?done=email-sent", http.StatusSeeOther)
	return nil
}

// emailLinkData is the data of email_confirm.html.
type emailLinkData struct{ Email string }

var errEmailLink = &httpError{http.StatusGone, "This link is not valid: it was used already, has expired, or the account changed since. Ask for a new one on your account page."}

// emailLinkForm serves GET /account/email/:token: a button confirms (a
// GET changes nothing, so that a mail scanner opening links does not).
func (p *Pages) emailLinkForm(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	_, email, err := p.id.CheckEmailChange(r.Context(), ps.ByName("token"))
	if errors.Is(err, identity.ErrInvite) {
		return errEmailLink
	}
	if err != nil {
		return err
	}
	p.renderView(w, r, http.StatusOK, "email_confirm.html", &view{Title: "Confirm your new address", Form: r.URL.Path, Body: emailLinkData{Email: email}})
	return nil
}

// emailLink serves POST /account/email/:token.
func (p *Pages) emailLink(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := p.checkPost(r); err != nil {
		return err
	}
	_, err := p.id.ConfirmEmailChange(r.Context(), ps.ByName("token"))
	if fe := formErrors(err); fe != nil {
		return &httpError{http.StatusConflict, fe["email"]}
	}
	if errors.Is(err, identity.ErrInvite) {
		return errEmailLink
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/account?done=email", http.StatusSeeOther)
	return nil
}

package identity

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/webstats/webstats/engine"
	pwhash "github.com/webstats/webstats/engine/internal/password"
	"github.com/webstats/webstats/snapshot"
)

// Accounts (SPEC §11): each has API keys (several, named, revocable), an
// optional password (argon2id), optional TOTP two-factor authentication
// with one-time recovery codes, and the admin and disabled flags. The
// record stored is accountRec; callers get Account, a copy without the
// secrets.

// Limits of what one account holds, so that no form grows a record
// without bound.
const (
	// MaxKeysPerAccount is how many API keys an account holds: 20.
	MaxKeysPerAccount = 20
	// MaxAccounts bounds the accounts of one server: 100,000 (open
	// registration cannot grow the registry without bound).
	MaxAccounts = 100_000
	// MaxInvites bounds the invitations waiting to be used: 100.
	MaxInvites = 100
	// InviteLife is how long an invitation link lasts: 7 days.
	InviteLife = 7 * 24 * time.Hour
	// ResetLife is how long a password reset link lasts: 1 hour.
	ResetLife = time.Hour
	// KeyUseResolution is how stale an API key's LastUsed may be: it is
	// written at most once a minute per key.
	KeyUseResolution = time.Minute
	// recoveryCodes is how many recovery codes enabling 2FA gives.
	recoveryCodes = 10
	// maxKeyName is the longest API key name, in characters.
	maxKeyName = 64
)

// MsgWrongPassword is the message of a wrong current password, under the
// field "current_password" of a *engine.ValidationError (email change, password
// change, two-factor changes): callers that count wrong passwords compare
// with it.
const MsgWrongPassword = "The password is incorrect."

// Errors of the account methods; use errors.Is.
var (
	// ErrDisabled: the account is disabled (by an admin). Its password,
	// keys and sessions are refused.
	ErrDisabled = errors.New("engine: account disabled")
	// ErrSecondFactor: the account has two-factor authentication on; the
	// password was right, and CheckSecondFactor must pass before a session
	// is created.
	ErrSecondFactor = errors.New("engine: second factor required")
	// ErrForbidden: the acting account may not do this (not an admin).
	ErrForbidden = errors.New("engine: not allowed")
)

// Account is an account as callers see it: no secret is in it (the
// password's and the keys' hashes, the TOTP secret stay in identity).
type Account struct {
	ID        uint32    `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
	// Admin accounts manage the others (Service.Admin). The first account
	// created is an admin.
	Admin bool `json:"admin,omitempty"`
	// Disabled accounts cannot sign in; their keys answer 401.
	Disabled bool `json:"disabled,omitempty"`
	// Keys are the account's API keys, oldest first (no secret: the key
	// is shown once, at creation). The slice is the caller's.
	Keys []APIKey `json:"keys"`
	// Gen changes whenever the account's credentials do (password, key
	// rotation, two-factor, disabling): a session cannot be created for an
	// Account of an older generation.
	Gen uint64 `json:"gen,omitempty"`

	// Password reports whether a password is set; TwoFactor whether TOTP
	// is on.
	Password  bool `json:"-"`
	TwoFactor bool `json:"-"`
	// RecoveryCodes is how many unused recovery codes are left.
	RecoveryCodes int `json:"-"`
	// ViaKey is the id of the API key Authenticate found the account by
	// (0 otherwise): a session created from it ends when the key is
	// revoked.
	ViaKey uint32 `json:"-"`
}

// APIKey is one API key of an account, without the key.
type APIKey struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
	// Hash is the SHA-256 of the key, in the stored record only: zero in
	// an Account.
	Hash      [32]byte  `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
	// LastUsed is when the key last authenticated a request, to
	// KeyUseResolution; zero when never.
	LastUsed time.Time `json:"last_used,omitzero"`
}

// accountRec is an account as stored (JSON, snapshot.KindAccount).
type accountRec struct {
	Account
	PasswordHash string `json:"password_hash,omitempty"`
	// TOTPSecret is the base32 TOTP secret when two-factor is on;
	// TOTPStep the last time step accepted, so a code is used once.
	TOTPSecret string `json:"totp_secret,omitempty"`
	TOTPStep   int64  `json:"totp_step,omitempty"`
	// TOTPFails counts the wrong codes since the last right one; from
	// codeFreeTries on, each makes the next wait (TOTPWait).
	TOTPFails int       `json:"totp_fails,omitempty"`
	TOTPWait  time.Time `json:"totp_wait,omitzero"`
	// Recovery holds the SHA-256 of each unused recovery code.
	Recovery [][32]byte `json:"recovery,omitempty"`
	// NextKey is the last key id given.
	NextKey uint32 `json:"next_key,omitempty"`
	// LegacyKeyHash is the single key of format-1 records, moved into
	// Keys on open.
	LegacyKeyHash [32]byte `json:"key_hash,omitzero"`
}

// view returns the caller's copy of r.
func (r *accountRec) view() Account {
	a := r.Account
	a.Keys = slices.Clone(r.Keys)
	for i := range a.Keys {
		a.Keys[i].Hash = [32]byte{}
	}
	a.Password = r.PasswordHash != ""
	a.TwoFactor = r.TOTPSecret != ""
	a.RecoveryCodes = len(r.Recovery)
	return a
}

// clone returns a copy of r to modify (records are replaced, never
// modified, under regMu: readers hold pointers).
func (r *accountRec) clone() *accountRec {
	n := *r
	n.Keys = slices.Clone(r.Keys)
	n.Recovery = slices.Clone(r.Recovery)
	return &n
}

// keyRef locates an API key: its account and key id.
type keyRef struct {
	account uint32
	key     uint32
}

// putAccountLocked stores r and makes it the account's record, updating
// the key and email indexes. regMu must be held for writing.
func (e *Service) putAccountLocked(r *accountRec) error {
	if err := e.putJSON(snapshot.KindAccount, uint64(r.ID), r); err != nil {
		return err
	}
	e.indexAccountLocked(r)
	return nil
}

// indexAccountLocked makes r the account's record in memory.
func (e *Service) indexAccountLocked(r *accountRec) {
	if old := e.accounts[r.ID]; old != nil {
		for _, k := range old.Keys {
			delete(e.keys, k.Hash)
		}
		delete(e.emails, strings.ToLower(old.Email))
	}
	for _, k := range r.Keys {
		e.keys[k.Hash] = keyRef{r.ID, k.ID}
	}
	e.emails[strings.ToLower(r.Email)] = r.ID
	e.accounts[r.ID] = r
}

// modifyAccount applies fn to a copy of account id's record under regMu
// and stores it. fn returns an error to leave the record as it was.
func (e *Service) modifyAccount(ctx context.Context, id uint32, fn func(r *accountRec) error) (Account, error) {
	if !e.reg.Enter() {
		return Account{}, engine.ErrClosed
	}
	defer e.reg.Exit()
	var a Account
	err := e.regDo(ctx, func() error {
		old, ok := e.accounts[id]
		if !ok {
			return engine.ErrNotFound
		}
		r := old.clone()
		if err := fn(r); err != nil {
			return err
		}
		if err := e.putAccountLocked(r); err != nil {
			return err
		}
		a = r.view()
		return nil
	})
	if err != nil {
		return Account{}, err
	}
	return a, nil
}

// newSecret returns n random bytes in base64url.
func (e *Service) newSecret(n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(e.reg.Rand(), b); err != nil {
		return "", fmt.Errorf("engine: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// checkEmail validates an email address and returns it trimmed.
func checkEmail(email string, verr *engine.ValidationError) string {
	email = strings.TrimSpace(email)
	switch {
	case email == "":
		verr.Add("email", "The email field is required.")
	case len(email) > 255 || !strings.Contains(email, "@") || strings.ContainsAny(email, " <>,\"") || !utf8.ValidString(email) ||
		strings.ContainsFunc(email, unicode.IsControl): // CR, LF, NUL (a proof MAC's separator), …
		verr.Add("email", "The email must be a valid email address.")
	}
	return email
}

// checkName validates an account name and returns it trimmed.
func checkName(name string, verr *engine.ValidationError) string {
	name = strings.TrimSpace(name)
	switch {
	case utf8.RuneCountInString(name) > 255:
		verr.Add("name", "The name must not be greater than 255 characters.")
	case !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		verr.Add("name", "The name must not contain control characters.")
	}
	return name
}

// checkNewPassword validates a new account password: at least 8
// characters, and the rules of password.CheckInput.
func checkNewPassword(pw string, verr *engine.ValidationError) {
	switch {
	case pw == "":
		verr.Add("password", "The password field is required.")
	case utf8.RuneCountInString(pw) < 8:
		verr.Add("password", "The password must be at least 8 characters.")
	default:
		if msg := pwhash.CheckInput(pw); msg != "" {
			verr.Add("password", msg)
		}
	}
}

// Registration is the input of RegisterAccount.
type Registration struct {
	Name, Email, Password string
	// Invite is the token of an invitation (CreateInvite), used up by the
	// registration. RequireInvite refuses a registration without a valid
	// one (-registration invite).
	Invite        string
	RequireInvite bool
}

// ErrInvite: the invitation is unknown, used or expired.
var ErrInvite = errors.New("engine: invitation not valid")

// RegisterAccount creates an account with a password (no API key: the
// owner makes keys later). The invitation, if any, is used up.
func (e *Service) RegisterAccount(ctx context.Context, in Registration) (Account, error) {
	var verr engine.ValidationError
	email := checkEmail(in.Email, &verr)
	name := checkName(in.Name, &verr)
	checkNewPassword(in.Password, &verr)
	if err := verr.Err(); err != nil {
		return Account{}, err
	}
	if in.RequireInvite && in.Invite == "" {
		return Account{}, ErrInvite
	}
	// The cheap checks first, so that a refused registration costs no
	// hash; repeated under the write lock below.
	e.reg.RLock()
	_, err := e.newAccountLocked(name, email, &verr)
	e.reg.RUnlock()
	if err != nil {
		return Account{}, err
	}
	hash, err := e.reg.HashPassword(ctx, in.Password)
	if err != nil {
		return Account{}, err
	}
	if !e.reg.Enter() {
		return Account{}, engine.ErrClosed
	}
	defer e.reg.Exit()
	var a Account
	err = e.regDo(ctx, func() error {
		var inv *invite
		if in.Invite != "" {
			if inv = e.inviteLocked(in.Invite); inv == nil {
				return ErrInvite
			}
		}
		verr := verr
		r, err := e.newAccountLocked(name, email, &verr)
		if err != nil {
			return err
		}
		r.PasswordHash = hash
		r.Admin = false // the first account comes from serve or the CLI, never a form
		if inv != nil {
			// Used up first: a crash between the two leaves the
			// invitation spent and no account, never an invitation
			// that works twice.
			if err := e.dropInviteLocked(inv); err != nil {
				return err
			}
		}
		if err := e.commitNewAccountLocked(r); err != nil {
			return err
		}
		a = r.view()
		return nil
	})
	if err != nil {
		return Account{}, err
	}
	return a, nil
}

// newAccountLocked checks the email's uniqueness and the account limit and
// returns a new record (not stored: commitNewAccountLocked). The first
// account is an admin.
func (e *Service) newAccountLocked(name, email string, verr *engine.ValidationError) (*accountRec, error) {
	if _, taken := e.emails[strings.ToLower(email)]; taken {
		verr.Add("email", "The email has already been taken.")
		return nil, verr
	}
	if len(e.accounts) >= MaxAccounts {
		verr.Add("email", "This server has reached its limit of accounts.")
		return nil, verr
	}
	if name == "" {
		name = email[:strings.IndexByte(email, '@')]
	}
	r := &accountRec{Account: Account{
		ID: e.nextAccount + 1, Name: name, Email: email,
		CreatedAt: e.reg.Now().UTC().Truncate(time.Microsecond),
		Admin:     len(e.accounts) == 0,
	}}
	return r, nil
}

// commitNewAccountLocked stores a record made by newAccountLocked.
func (e *Service) commitNewAccountLocked(r *accountRec) error {
	if err := e.putCounterLocked(counterAccount, uint64(r.ID)); err != nil {
		return err
	}
	if err := e.putAccountLocked(r); err != nil {
		return err
	}
	e.nextAccount = r.ID
	return nil
}

// addKeyLocked gives r a new key named name and returns the key.
func (e *Service) addKeyLocked(r *accountRec, name string) (string, error) {
	key, err := e.newKey()
	if err != nil {
		return "", err
	}
	r.NextKey++
	r.Keys = append(r.Keys, APIKey{ID: r.NextKey, Name: name, Hash: hashKey(key), CreatedAt: e.reg.Now().UTC().Truncate(time.Second)})
	return key, nil
}

// CreateKey gives account a new API key called name and returns it with
// the key, shown only here.
func (e *Service) CreateKey(ctx context.Context, account uint32, name string) (APIKey, string, error) {
	name = strings.TrimSpace(name)
	var verr engine.ValidationError
	switch {
	case name == "":
		verr.Add("name", "The name field is required.")
	case utf8.RuneCountInString(name) > maxKeyName:
		verr.Add("name", "The name must not be greater than 64 characters.")
	case !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		verr.Add("name", "The name must not contain control characters.")
	}
	if err := verr.Err(); err != nil {
		return APIKey{}, "", err
	}
	var key string
	a, err := e.modifyAccount(ctx, account, func(r *accountRec) error {
		if len(r.Keys) >= MaxKeysPerAccount {
			verr.Add("name", "An account has at most 20 API keys. Revoke one first.")
			return &verr
		}
		var err error
		key, err = e.addKeyLocked(r, name)
		return err
	})
	if err != nil {
		return APIKey{}, "", err
	}
	return a.Keys[len(a.Keys)-1], key, nil
}

// MsgRevokeProof is the message, under "key", of a revocation in a
// key-only account without an API key the session could not have made
// itself (RevokeSessionKey).
const MsgRevokeProof = "Enter one of your API keys (the one you signed in with or an older one) to revoke this key: the account has no password."

// RevokeSessionKey is RevokeKey for the signed-in session whose token is
// token. In an account without a password a stolen session could make a
// key of its own and revoke the owner's, locking the owner out (#38): a key
// older than the session's sign-in key, or that key, is revoked only with
// proof, an API key of the account of an id at most the session's (a key
// the session could not have made; it may be the key revoked). Keys the
// session could have made, and every key of an account with a password
// (its owner signs in with it), need none. ErrUnauthenticated: no such
// session.
func (e *Service) RevokeSessionKey(ctx context.Context, token string, id uint32, proof string) error {
	account, maxKey, ok := e.sessionKey(token)
	if !ok {
		return ErrUnauthenticated
	}
	return e.revokeKey(ctx, account, id, func(r *accountRec) error {
		if r.PasswordHash != "" || id > maxKey || e.ownKey(r, proof, maxKey) {
			return nil
		}
		return &engine.ValidationError{Fields: []engine.FieldError{{Field: "key", Msg: MsgRevokeProof}}}
	})
}

// RevokeKey deletes account's API key id: it stops working at once.
func (e *Service) RevokeKey(ctx context.Context, account, id uint32) error {
	return e.revokeKey(ctx, account, id, nil)
}

// revokeKey is RevokeKey; check, when not nil, runs on the record first.
func (e *Service) revokeKey(ctx context.Context, account, id uint32, check func(r *accountRec) error) error {
	_, err := e.modifyAccount(ctx, account, func(r *accountRec) error {
		i := slices.IndexFunc(r.Keys, func(k APIKey) bool { return k.ID == id })
		if i < 0 {
			return engine.ErrNotFound
		}
		if check != nil {
			if err := check(r); err != nil {
				return err
			}
		}
		// Sessions signed in with the key end with it: revoking is the
		// answer to a leaked key.
		if err := e.endKeySessionsLocked(account, id); err != nil {
			return err
		}
		r.Keys = slices.Delete(r.Keys, i, i+1)
		return nil
	})
	return err
}

// SignIn checks an email and password. It returns the account, or
// ErrUnauthenticated (unknown email, no password set, or a wrong one),
// ErrDisabled (the right password of a disabled account), ErrSecondFactor
// (right, but CheckSecondFactor must pass too; the Account is returned with
// it), or engine.ErrBusy.
func (e *Service) SignIn(ctx context.Context, email, password string) (Account, error) {
	if len(email) > 255 || len(password) > utf8.UTFMax*pwhash.MaxLength {
		return Account{}, ErrUnauthenticated
	}
	e.reg.RLock()
	var r *accountRec
	if id, ok := e.emails[strings.ToLower(strings.TrimSpace(email))]; ok {
		r = e.accounts[id]
	}
	e.reg.RUnlock()
	if r == nil || r.PasswordHash == "" {
		if _, err := e.reg.CheckPassword(ctx, pwhash.Dummy, password); err != nil {
			return Account{}, err
		}
		return Account{}, ErrUnauthenticated
	}
	ok, err := e.reg.CheckPassword(ctx, r.PasswordHash, password)
	switch {
	case err != nil:
		return Account{}, err
	case !ok:
		return Account{}, ErrUnauthenticated
	case r.Disabled:
		return Account{}, ErrDisabled
	case r.TOTPSecret != "":
		return r.view(), ErrSecondFactor
	}
	return r.view(), nil
}

// SetPassword sets account's password. When one is set, current must be
// it (a wrong one is a validation error under "current_password",
// MsgWrongPassword); when none is, current must be one of the account's
// API keys (MsgWrongKey). force skips that check (the CLI's set-password,
// a reset link). Every session of the account ends.
func (e *Service) SetPassword(ctx context.Context, account uint32, current, password string, force bool) (Account, error) {
	return e.setPassword(ctx, account, current, password, force, math.MaxUint32)
}

// SetSessionPassword is SetPassword, not forced, for the signed-in session
// whose token is token. The first password of a key-only account asks for
// the API key the session signed in with or an older one: a key the
// session could have made itself (a stolen session can make keys) proves
// nothing (SPEC §13). ErrUnauthenticated: no such session.
func (e *Service) SetSessionPassword(ctx context.Context, token, current, password string) (Account, error) {
	account, key, ok := e.sessionKey(token)
	if !ok {
		return Account{}, ErrUnauthenticated
	}
	return e.setPassword(ctx, account, current, password, false, key)
}

// setPassword is SetPassword; a first password takes only a key whose id
// is at most maxKey (ids grow with each key an account is given).
func (e *Service) setPassword(ctx context.Context, account uint32, current, password string, force bool, maxKey uint32) (Account, error) {
	var verr engine.ValidationError
	checkNewPassword(password, &verr)
	if err := verr.Err(); err != nil {
		return Account{}, err
	}
	e.reg.RLock()
	old := e.accounts[account]
	e.reg.RUnlock()
	if old == nil {
		return Account{}, engine.ErrNotFound
	}
	if !force && old.PasswordHash == "" && !e.ownKey(old, current, maxKey) {
		// The first password of a key-only account (the default first
		// admin) asks for one of its API keys: a stolen session cannot
		// set one and turn on two-factor authentication (SPEC §13).
		verr.Add("current_password", MsgWrongKey)
		return Account{}, &verr
	}
	if !force && old.PasswordHash != "" {
		ok, err := e.reg.CheckPassword(ctx, old.PasswordHash, current)
		if err != nil {
			return Account{}, err
		}
		if !ok {
			verr.Add("current_password", MsgWrongPassword)
			return Account{}, &verr
		}
	}
	hash, err := e.reg.HashPassword(ctx, password)
	if err != nil {
		return Account{}, err
	}
	return e.modifyAccount(ctx, account, func(r *accountRec) error {
		if r.PasswordHash != old.PasswordHash {
			return fmt.Errorf("engine: set password: %w", ErrConflict)
		}
		if err := e.endSessionsLocked(account); err != nil {
			return err
		}
		r.PasswordHash = hash
		r.Gen++
		// Whoever made the codes wait loses the password with it.
		r.TOTPFails, r.TOTPWait = 0, time.Time{}
		return nil
	})
}

// MsgWrongKey is the message, under "current_password", of a first
// password set without the API key the session signed in with (or an
// older one of the account's keys).
const MsgWrongKey = "Enter the API key you signed in with: the account has no password yet."

// ownKey reports whether key is one of r's API keys, of an id at most
// maxKey.
func (e *Service) ownKey(r *accountRec, key string, maxKey uint32) bool {
	key = strings.TrimSpace(key)
	if key == "" || len(key) > 256 {
		return false
	}
	h := hashKey(key)
	return slices.ContainsFunc(r.Keys, func(k APIKey) bool {
		return subtle.ConstantTimeCompare(k.Hash[:], h[:]) == 1 && k.ID <= maxKey
	})
}

// ErrConflict: the record changed while the request was being checked
// (two password changes at once). Try again.
var ErrConflict = errors.New("engine: changed concurrently")

// confirmPassword checks account's password for a change that needs it
// (email, 2FA off). An account without a password cannot confirm.
func (e *Service) confirmPassword(ctx context.Context, account uint32, password string, verr *engine.ValidationError) error {
	e.reg.RLock()
	r := e.accounts[account]
	e.reg.RUnlock()
	if r == nil {
		return engine.ErrNotFound
	}
	if r.PasswordHash == "" {
		verr.Add("current_password", "Set a password first.")
		return verr
	}
	ok, err := e.reg.CheckPassword(ctx, r.PasswordHash, password)
	if err != nil {
		return err
	}
	if !ok {
		verr.Add("current_password", MsgWrongPassword)
		return verr
	}
	return nil
}

// UpdateProfile sets account's name.
func (e *Service) UpdateProfile(ctx context.Context, account uint32, name string) (Account, error) {
	var verr engine.ValidationError
	name = checkName(name, &verr)
	if name == "" {
		verr.Add("name", "The name field is required.")
	}
	if err := verr.Err(); err != nil {
		return Account{}, err
	}
	return e.modifyAccount(ctx, account, func(r *accountRec) error {
		r.Name = name
		return nil
	})
}

// ChangeEmail sets account's email at once, after checking its password,
// and spends outstanding reset links (it bumps Gen). The web app proves
// the new address first (EmailChangeToken, ConfirmEmailChange).
func (e *Service) ChangeEmail(ctx context.Context, account uint32, email, password string) (Account, error) {
	var verr engine.ValidationError
	email = checkEmail(email, &verr)
	if err := verr.Err(); err != nil {
		return Account{}, err
	}
	if err := e.confirmPassword(ctx, account, password, &verr); err != nil {
		return Account{}, err
	}
	return e.modifyAccount(ctx, account, func(r *accountRec) error { return e.setEmailLocked(r, email) })
}

// Reset tokens are stateless: "<account>.<expiry>.<mac>", the MAC (keyed
// by the server secret "password-reset") over the account, the expiry and
// the account's password hash. Setting a password changes the hash, so a
// token works once; it also ends after ResetLife.

// CreateResetToken returns a password reset token for the account with
// email, and the account (to address the email to). An unknown or disabled
// account is engine.ErrNotFound: the caller answers the same either way.
func (e *Service) CreateResetToken(ctx context.Context, email string) (string, Account, error) {
	key, err := e.Secret(ctx, "password-reset")
	if err != nil {
		return "", Account{}, err
	}
	e.reg.RLock()
	var r *accountRec
	if id, ok := e.emails[strings.ToLower(strings.TrimSpace(email))]; ok && len(email) <= 255 {
		r = e.accounts[id]
	}
	e.reg.RUnlock()
	if r == nil || r.Disabled {
		return "", Account{}, engine.ErrNotFound
	}
	exp := strconv.FormatInt(e.reg.Now().Add(ResetLife).Unix(), 10)
	id := strconv.FormatUint(uint64(r.ID), 10)
	return id + "." + exp + "." + resetMAC(key, id, exp, r), r.view(), nil
}

// resetMAC is the MAC of a reset token of r: over the account, the
// expiry, the password hash, the email and the generation, so that a new
// password, a new email or a disable (each changes one of them) spends
// every earlier link.
func resetMAC(key [32]byte, id, exp string, r *accountRec) string {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(id + "|" + exp + "|" + r.PasswordHash + "|" + strings.ToLower(r.Email) + "|" + strconv.FormatUint(r.Gen, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckResetToken returns the account a reset token is for, or ErrInvite
// when the token is not valid (forged, used, expired).
func (e *Service) CheckResetToken(ctx context.Context, token string) (Account, error) {
	r, err := e.resetAccount(ctx, token)
	if err != nil {
		return Account{}, err
	}
	return r.view(), nil
}

func (e *Service) resetAccount(ctx context.Context, token string) (*accountRec, error) {
	parts := strings.Split(token, ".")
	if len(token) > 128 || len(parts) != 3 {
		return nil, ErrInvite
	}
	id, err1 := strconv.ParseUint(parts[0], 10, 32)
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || e.reg.Now().Unix() >= exp {
		return nil, ErrInvite
	}
	key, err := e.Secret(ctx, "password-reset")
	if err != nil {
		return nil, err
	}
	e.reg.RLock()
	r := e.accounts[uint32(id)]
	e.reg.RUnlock()
	if r == nil || r.Disabled || !hmac.Equal([]byte(parts[2]), []byte(resetMAC(key, parts[0], parts[1], r))) {
		return nil, ErrInvite
	}
	return r, nil
}

// ResetPassword sets the password of the reset token's account, which ends
// the token, every session and every API key of the account (SPEC §13:
// whoever held them before the reset, an attacker who registered the
// address first included, holds nothing after it). The caller says so.
func (e *Service) ResetPassword(ctx context.Context, token, password string) (Account, error) {
	var verr engine.ValidationError
	checkNewPassword(password, &verr)
	if err := verr.Err(); err != nil {
		return Account{}, err
	}
	r, err := e.resetAccount(ctx, token)
	if err != nil {
		return Account{}, err
	}
	hash, err := e.reg.HashPassword(ctx, password)
	if err != nil {
		return Account{}, err
	}
	return e.modifyAccount(ctx, r.ID, func(n *accountRec) error {
		if n.PasswordHash != r.PasswordHash || n.Gen != r.Gen || n.Email != r.Email || n.Disabled {
			return ErrInvite // used meanwhile
		}
		if err := e.endSessionsLocked(n.ID); err != nil {
			return err
		}
		n.Keys = nil
		n.PasswordHash = hash
		n.Gen++
		n.TOTPFails, n.TOTPWait = 0, time.Time{}
		return nil
	})
}

package identity

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

// Proof of an email address (SPEC §13): an address takes effect only once
// its owner opens a link mailed to it, so that no one pre-registers or
// takes another's address. The links are stateless tokens, MACed with the
// server secret "email-proof": nothing is stored until the link is used.

// ProofLife is how long a registration or email-change link lasts: 1 hour.
const ProofLife = time.Hour

// maxProofToken is the longest proof token read: an address of 255 bytes
// and an invitation in base64url, with room to spare.
const maxProofToken = 1024

// proofMAC is the MAC of a proof token's fields for purpose.
func proofMAC(key [32]byte, purpose string, fields ...string) string {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte(purpose))
	for _, f := range fields {
		m.Write([]byte{0})
		m.Write([]byte(f))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// RegistrationToken returns the token of a link that proves email for a
// registration (with the invitation invite, "" for none), valid for
// ProofLife. It reports with taken that the address has an account already
// (the caller mails a notice instead of the link, and answers the same).
func (e *Service) RegistrationToken(ctx context.Context, email, invite string) (token string, taken bool, err error) {
	var verr engine.ValidationError
	email = checkEmail(email, &verr)
	if err := verr.Err(); err != nil {
		return "", false, err
	}
	key, err := e.Secret(ctx, "email-proof")
	if err != nil {
		return "", false, err
	}
	e.reg.RLock()
	_, taken = e.emails[strings.ToLower(email)]
	e.reg.RUnlock()
	exp := strconv.FormatInt(e.reg.Now().Add(ProofLife).Unix(), 10)
	b64 := base64.RawURLEncoding.EncodeToString
	return exp + "." + b64([]byte(email)) + "." + b64([]byte(invite)) + "." + proofMAC(key, "register", exp, email, invite), taken, nil
}

// CheckRegistrationToken returns the proven address and the invitation of
// a registration token, or ErrInvite when it is not valid (forged,
// expired).
func (e *Service) CheckRegistrationToken(ctx context.Context, token string) (email, invite string, err error) {
	parts := strings.Split(token, ".")
	if len(token) > maxProofToken || len(parts) != 4 {
		return "", "", ErrInvite
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	em, err1 := base64.RawURLEncoding.DecodeString(parts[1])
	inv, err2 := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || err1 != nil || err2 != nil || e.reg.Now().Unix() >= exp {
		return "", "", ErrInvite
	}
	key, err := e.Secret(ctx, "email-proof")
	if err != nil {
		return "", "", err
	}
	if !hmac.Equal([]byte(parts[3]), []byte(proofMAC(key, "register", parts[0], string(em), string(inv)))) {
		return "", "", ErrInvite
	}
	return string(em), string(inv), nil
}

// EmailChangeToken checks account's password and the new address, and
// returns the token of a link that proves email and, when opened
// (ConfirmEmailChange), makes it the account's address. The token is
// spent by any credential change of the account, its own use included.
func (e *Service) EmailChangeToken(ctx context.Context, account uint32, email, password string) (string, error) {
	var verr engine.ValidationError
	email = checkEmail(email, &verr)
	if err := verr.Err(); err != nil {
		return "", err
	}
	if err := e.confirmPassword(ctx, account, password, &verr); err != nil {
		return "", err
	}
	key, err := e.Secret(ctx, "email-proof")
	if err != nil {
		return "", err
	}
	e.reg.RLock()
	r := e.accounts[account]
	id, taken := e.emails[strings.ToLower(email)]
	e.reg.RUnlock()
	switch {
	case r == nil:
		return "", engine.ErrNotFound
	case taken && id != account:
		verr.Add("email", "The email has already been taken.")
		return "", &verr
	}
	exp := strconv.FormatInt(e.reg.Now().Add(ProofLife).Unix(), 10)
	sid := strconv.FormatUint(uint64(account), 10)
	return sid + "." + exp + "." + base64.RawURLEncoding.EncodeToString([]byte(email)) + "." + emailChangeMAC(key, sid, exp, email, r), nil
}

func emailChangeMAC(key [32]byte, id, exp, email string, r *accountRec) string {
	return proofMAC(key, "email", id, exp, email, strings.ToLower(r.Email), strconv.FormatUint(r.Gen, 10))
}

// CheckEmailChange returns the account and the new address of an
// email-change token, or ErrInvite when it is not valid (forged, expired,
// used, or spent by a credential change).
func (e *Service) CheckEmailChange(ctx context.Context, token string) (Account, string, error) {
	r, email, err := e.emailChange(ctx, token)
	if err != nil {
		return Account{}, "", err
	}
	return r.view(), email, nil
}

func (e *Service) emailChange(ctx context.Context, token string) (*accountRec, string, error) {
	parts := strings.Split(token, ".")
	if len(token) > maxProofToken || len(parts) != 4 {
		return nil, "", ErrInvite
	}
	id, err1 := strconv.ParseUint(parts[0], 10, 32)
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	em, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || e.reg.Now().Unix() >= exp {
		return nil, "", ErrInvite
	}
	key, err := e.Secret(ctx, "email-proof")
	if err != nil {
		return nil, "", err
	}
	e.reg.RLock()
	r := e.accounts[uint32(id)]
	e.reg.RUnlock()
	if r == nil || r.Disabled || !hmac.Equal([]byte(parts[3]), []byte(emailChangeMAC(key, parts[0], parts[1], string(em), r))) {
		return nil, "", ErrInvite
	}
	return r, string(em), nil
}

// ConfirmEmailChange makes the proven address of an email-change token the
// account's address. It bumps the account's credential generation, which
// spends the token, earlier reset links and earlier email-change links. An
// address taken meanwhile is a validation error under "email".
func (e *Service) ConfirmEmailChange(ctx context.Context, token string) (Account, error) {
	old, email, err := e.emailChange(ctx, token)
	if err != nil {
		return Account{}, err
	}
	return e.modifyAccount(ctx, old.ID, func(r *accountRec) error {
		if r.Gen != old.Gen || r.Email != old.Email || r.Disabled {
			return ErrInvite // used or spent meanwhile
		}
		return e.setEmailLocked(r, email)
	})
}

// SetEmail sets account's address at once, without a password or a proof
// (the CLI's user set-email; an operator vouches for it), and spends its
// outstanding reset and email links.
func (e *Service) SetEmail(ctx context.Context, account uint32, email string) (Account, error) {
	var verr engine.ValidationError
	email = checkEmail(email, &verr)
	if err := verr.Err(); err != nil {
		return Account{}, err
	}
	return e.modifyAccount(ctx, account, func(r *accountRec) error { return e.setEmailLocked(r, email) })
}

// setEmailLocked sets r's address, refusing one another account has, and
// bumps its generation: outstanding reset and email-change links are
// spent. regMu must be held for writing.
func (e *Service) setEmailLocked(r *accountRec, email string) error {
	if id, taken := e.emails[strings.ToLower(email)]; taken && id != r.ID {
		return &engine.ValidationError{Fields: []engine.FieldError{{Field: "email", Msg: "The email has already been taken."}}}
	}
	r.Email = email
	r.Gen++
	return nil
}

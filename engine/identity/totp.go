package identity

import (
	"context"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/webstats/webstats/engine"
)

// Two-factor authentication: TOTP (RFC 6238: SHA-1, 6 digits, 30-second
// steps, one step of clock skew either way) with pquerna/otp, and
// recoveryCodes one-time recovery codes. A code's time step is recorded
// when it is accepted, so the same code (or an older one) cannot be used
// twice.

var totpOpts = totp.ValidateOpts{Period: 30, Skew: 1, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// NewTOTPKey returns a new TOTP secret for account and its otpauth:// URL
// (what authenticator apps read from a QR code). Nothing is stored until
// EnableTOTP confirms a code of it.
func (e *Service) NewTOTPKey(ctx context.Context, account uint32) (secret, url string, err error) {
	a, err := e.Account(ctx, account)
	if err != nil {
		return "", "", err
	}
	k, err := totp.Generate(totp.GenerateOpts{Issuer: "webstats", AccountName: a.Email, Rand: e.reg.Rand()})
	if err != nil {
		return "", "", err
	}
	return k.Secret(), k.URL(), nil
}

// totpStep returns the time step of now at which code is valid for secret
// (now's, or one either side), or -1.
func totpStep(secret, code string, now time.Time) int64 {
	if len(code) != 6 || len(secret) > 128 {
		return -1
	}
	step := now.Unix() / int64(totpOpts.Period)
	for _, s := range []int64{step - 1, step, step + 1} {
		want, err := totp.GenerateCodeCustom(secret, time.Unix(s*int64(totpOpts.Period), 0), totpOpts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return s
		}
	}
	return -1
}

// normCode removes the spaces and dashes people type in codes.
func normCode(code string) string {
	if len(code) > 64 {
		return ""
	}
	return strings.ToLower(strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(code)))
}

// Wrong second-factor codes: codeFreeTries in a row are free; each one
// after makes the account wait before the next try, 1 minute, then 2, 4,
// … up to codeMaxWait, until a right code. With the pages' limit of 5
// tries a minute, that leaves an attacker who has the password a few
// dozen guesses a day at 3 valid codes in a million.
const (
	codeFreeTries = 5
	codeMaxWait   = time.Hour
)

// ErrCodeWait: too many wrong codes in a row; the account's second factor
// takes no code for a while (at most codeMaxWait). Use errors.Is.
var ErrCodeWait = errors.New("engine: too many wrong codes; wait")

// EnableTOTP turns two-factor authentication on with secret (from
// NewTOTPKey), once code shows the owner's app has it and password is the
// account's. It returns the recovery codes, shown only here. The account's
// other sessions go on. An account with two-factor on must turn it off
// first: a stolen session cannot swap the owner's second factor.
func (e *Service) EnableTOTP(ctx context.Context, account uint32, secret, code, password string) ([]string, error) {
	var verr engine.ValidationError
	if a, err := e.Account(ctx, account); err != nil {
		return nil, err
	} else if a.TwoFactor {
		verr.Add("code", "Two-factor authentication is on already. Turn it off first.")
		return nil, &verr
	}
	if err := e.confirmPassword(ctx, account, password, &verr); err != nil {
		return nil, err
	}
	step := totpStep(secret, normCode(code), e.reg.Now())
	if _, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret); err != nil || secret == "" {
		verr.Add("code", "The setup has expired. Start again.")
		return nil, &verr
	}
	if step < 0 {
		verr.Add("code", "This code is not right. Check the time of your device and try the next code.")
		return nil, &verr
	}
	codes := make([]string, recoveryCodes)
	hashes := make([][32]byte, recoveryCodes)
	for i := range codes {
		b := make([]byte, 8)
		if _, err := e.reg.Rand().Read(b); err != nil {
			return nil, err
		}
		s := strings.ToLower(base32.StdEncoding.EncodeToString(b)[:10])
		codes[i] = s[:5] + "-" + s[5:]
		hashes[i] = hashToken(s)
	}
	_, err := e.modifyAccount(ctx, account, func(r *accountRec) error {
		if r.TOTPSecret != "" {
			verr.Add("code", "Two-factor authentication is on already. Turn it off first.")
			return &verr
		}
		r.TOTPSecret, r.TOTPStep, r.Recovery = secret, step, hashes
		r.TOTPFails, r.TOTPWait = 0, time.Time{}
		r.Gen++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return codes, nil
}

// DisableTOTP turns two-factor authentication off, after checking the
// account's password.
func (e *Service) DisableTOTP(ctx context.Context, account uint32, password string) (Account, error) {
	var verr engine.ValidationError
	if err := e.confirmPassword(ctx, account, password, &verr); err != nil {
		return Account{}, err
	}
	return e.modifyAccount(ctx, account, func(r *accountRec) error {
		r.TOTPSecret, r.TOTPStep, r.Recovery = "", 0, nil
		r.TOTPFails, r.TOTPWait = 0, time.Time{}
		r.Gen++
		return nil
	})
}

// CheckSecondFactor checks a TOTP code or a recovery code (which it uses
// up) of account a, as SignIn returned it with ErrSecondFactor. It
// returns the account, or ErrUnauthenticated when the code is wrong or the
// account's credentials changed since a was read, or ErrCodeWait after too
// many wrong codes (see codeFreeTries).
func (e *Service) CheckSecondFactor(ctx context.Context, a Account, code string) (Account, error) {
	code = normCode(code)
	now := e.reg.Now()
	wrong := false
	got, err := e.modifyAccount(ctx, a.ID, func(r *accountRec) error {
		wrong = false // (a run again, in cluster mode, starts afresh)
		if r.Gen != a.Gen || r.Disabled || r.TOTPSecret == "" {
			return ErrUnauthenticated
		}
		if now.Before(r.TOTPWait) {
			return ErrCodeWait
		}
		if ok := e.useCode(r, code, now); !ok {
			// The failure is written: the count survives a restart.
			wrong = true
			r.TOTPFails++
			if n := r.TOTPFails - codeFreeTries; n >= 0 {
				r.TOTPWait = now.Add(min(time.Minute<<min(n, 10), codeMaxWait))
			}
			return nil
		}
		r.TOTPFails, r.TOTPWait = 0, time.Time{}
		return nil
	})
	if err != nil {
		return Account{}, err
	}
	if wrong {
		return Account{}, ErrUnauthenticated
	}
	return got, nil
}

// useCode checks code against r's TOTP secret (a step not used yet) or
// recovery codes (removing the one used), updating r.
func (e *Service) useCode(r *accountRec, code string, now time.Time) bool {
	if code == "" {
		return false
	}
	if step := totpStep(r.TOTPSecret, code, now); step >= 0 {
		if step <= r.TOTPStep {
			return false // used already
		}
		r.TOTPStep = step
		return true
	}
	h := hashToken(code)
	for i, rc := range r.Recovery {
		if subtle.ConstantTimeCompare(rc[:], h[:]) == 1 {
			r.Recovery = append(r.Recovery[:i:i], r.Recovery[i+1:]...)
			return true
		}
	}
	return false
}

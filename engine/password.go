package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/webstats/webstats/engine/internal/password"
)

// Limits of password hashing. Each argon2id hash holds 19 MiB for tens of
// milliseconds, so a flood of password attempts could exhaust memory:
// hashes run at most MaxPasswordHashes at once, engine-wide (the website
// password form, website create and update, and account passwords
// alike), and a hash that cannot start within PasswordHashWait fails with
// ErrBusy.
const (
	// MaxPasswordHashes is how many argon2id hashes run at once: 2.
	MaxPasswordHashes = password.MaxHashes
	// PasswordHashWait is how long a hash waits for its turn before
	// ErrBusy: 1 s.
	PasswordHashWait = password.Wait
	// MaxPasswordLength is the longest password, in characters: 128.
	MaxPasswordLength = password.MaxLength
)

// ErrBusy: MaxPasswordHashes password hashes were already running and none
// finished within PasswordHashWait. Try again a little later (an HTTP
// server answers 503 with Retry-After). Use errors.Is.
var ErrBusy = errors.New("engine: too many password checks at once")

// PasswordHashPriorityWait is how long a hash of a context marked with
// WithPasswordPriority waits for its turn before ErrBusy: 5 s.
const PasswordHashPriorityWait = password.PriorityWait

// WithPasswordPriority marks the password checks and hashes made with ctx
// as a client's that has not failed recently (#38): while the hash slots
// are all taken (a flood of guesses), such a check takes the next free slot
// before any unmarked one and waits up to PasswordHashPriorityWait instead
// of PasswordHashWait, so that an owner typing the right password is
// answered rather than refused with ErrBusy. The caller decides whom to
// mark; marking every request gives no priority to anyone.
func WithPasswordPriority(ctx context.Context) context.Context {
	return password.WithPriority(ctx)
}

// hashPassword returns the PHC string of an argon2id hash of pw, computed
// when the hash gate lets it run. It must not be called with regMu held.
func (e *Engine) hashPassword(ctx context.Context, pw string) (string, error) {
	h, err := e.gate.Hash(ctx, pw, e.opts.Rand)
	return h, passwordErr(err)
}

// checkPassword compares pw with a PHC argon2id hash in constant time, when
// the hash gate lets it run.
func (e *Engine) checkPassword(ctx context.Context, phc, pw string) (bool, error) {
	ok, err := e.gate.Check(ctx, phc, pw)
	return ok, passwordErr(err)
}

// passwordErr is err of package password as the engine says it.
func passwordErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, password.ErrBusy):
		return ErrBusy
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("engine: %w", err)
}

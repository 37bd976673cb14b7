package engine

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// argon2id parameters: OWASP's minimum (19 MiB, 2 passes, 1 lane). Bcrypt
// would cut passwords at 72 bytes.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// Limits of password hashing. Each argon2id hash holds argonMemory (19 MiB)
// for tens of milliseconds, so a flood of password attempts could exhaust
// memory: hashes run at most MaxPasswordHashes at once, engine-wide (the
// website password form, website create and update, and later account
// passwords alike), and a hash that cannot start within PasswordHashWait
// fails with ErrBusy.
const (
	// MaxPasswordHashes is how many argon2id hashes run at once: 2.
	MaxPasswordHashes = 2
	// PasswordHashWait is how long a hash waits for its turn before
	// ErrBusy: 1 s.
	PasswordHashWait = time.Second
	// MaxPasswordLength is the longest password, in characters: 128.
	MaxPasswordLength = 128
)

// ErrBusy: MaxPasswordHashes password hashes were already running and none
// finished within PasswordHashWait. Try again a little later (an HTTP
// server answers 503 with Retry-After). Use errors.Is.
var ErrBusy = errors.New("engine: too many password checks at once")

// hashGate bounds the password hashes that run at once.
type hashGate struct {
	slots chan struct{} // one token per running hash; cap MaxPasswordHashes
	wait  time.Duration // PasswordHashWait; shorter in tests
	held  func()        // tests: called with a slot held, before hashing
	busy  atomic.Int64  // hashes refused with ErrBusy
}

func (g *hashGate) init() {
	g.slots = make(chan struct{}, MaxPasswordHashes)
	g.wait = PasswordHashWait
}

// run calls fn once a slot is free, waiting at most g.wait or until ctx is
// done.
func (g *hashGate) run(ctx context.Context, fn func()) error {
	select {
	case g.slots <- struct{}{}:
	default:
		t := time.NewTimer(g.wait)
		defer t.Stop()
		select {
		case g.slots <- struct{}{}:
		case <-t.C:
			g.busy.Add(1)
			return ErrBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-g.slots }()
	if g.held != nil {
		g.held()
	}
	fn()
	return nil
}

// checkPasswordInput validates a new password: 1 to MaxPasswordLength
// characters of valid UTF-8 without control characters (NUL, newlines,
// tabs, …), which no one types and some systems cut at. It returns the
// message for the password field, or "".
func checkPasswordInput(pw string) string {
	if !utf8.ValidString(pw) || strings.ContainsFunc(pw, unicode.IsControl) {
		return "The password must not contain control characters."
	}
	if utf8.RuneCountInString(pw) > MaxPasswordLength {
		return "The password must not be greater than 128 characters."
	}
	return ""
}

// hashPassword returns the PHC string of an argon2id hash of pw, computed
// when the hash gate lets it run. It must not be called with regMu held.
func (e *Engine) hashPassword(ctx context.Context, pw string) (string, error) {
	salt := make([]byte, 16)
	if _, err := io.ReadFull(e.opts.Rand, salt); err != nil {
		return "", fmt.Errorf("engine: password salt: %w", err)
	}
	var key []byte
	err := e.gate.run(ctx, func() {
		key = argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// checkPassword compares pw with a PHC argon2id hash in constant time, when
// the hash gate lets it run.
func (e *Engine) checkPassword(ctx context.Context, phc, pw string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, nil
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m > 1<<20 || t > 10 || p == 0 {
		return false, nil
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 64 {
		return false, nil
	}
	var got []byte
	if err := e.gate.run(ctx, func() { got = argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want))) }); err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

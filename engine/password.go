package engine

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
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

// PasswordHashPriorityWait is how long a hash of a context marked with
// WithPasswordPriority waits for its turn before ErrBusy: 5 s.
const PasswordHashPriorityWait = 5 * time.Second

type priorityKey struct{}

// WithPasswordPriority marks the password checks and hashes made with ctx
// as a client's that has not failed recently (#38): while the hash slots
// are all taken (a flood of guesses), such a check takes the next free slot
// before any unmarked one and waits up to PasswordHashPriorityWait instead
// of PasswordHashWait, so that an owner typing the right password is
// answered rather than refused with ErrBusy. The caller decides whom to
// mark; marking every request gives no priority to anyone.
func WithPasswordPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, priorityKey{}, true)
}

func hasPriority(ctx context.Context) bool {
	v, _ := ctx.Value(priorityKey{}).(bool)
	return v
}

// hashGate bounds the password hashes that run at once; a waiter of a
// prioritised context goes before the others.
type hashGate struct {
	mu      sync.Mutex
	running int           // hashes running; at most MaxPasswordHashes
	first   int           // prioritised waiters
	free    chan struct{} // closed (and replaced) when a slot may be free
	wait    time.Duration // PasswordHashWait; shorter in tests
	prio    time.Duration // PasswordHashPriorityWait; shorter in tests
	held    func()        // tests: called with a slot held, before hashing
	busy    atomic.Int64  // hashes refused with ErrBusy
}

func (g *hashGate) init() {
	g.free = make(chan struct{})
	g.wait = PasswordHashWait
	g.prio = PasswordHashPriorityWait
}

// wakeLocked wakes every waiter to look again. g.mu is held.
func (g *hashGate) wakeLocked() {
	close(g.free)
	g.free = make(chan struct{})
}

// run calls fn once a slot is free, waiting at most g.wait (g.prio for a
// prioritised ctx) or until ctx is done.
func (g *hashGate) run(ctx context.Context, fn func()) error {
	first, wait := hasPriority(ctx), g.wait
	if first {
		wait = g.prio
	}
	var timeout <-chan time.Time
	queued := false // counted in g.first
	for {
		g.mu.Lock()
		if g.running < MaxPasswordHashes && (first || g.first == 0) {
			g.running++
			if queued {
				g.first--
			}
			g.mu.Unlock()
			break
		}
		if first && !queued {
			g.first++
			queued = true
		}
		free := g.free
		g.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(wait)
			defer t.Stop()
			timeout = t.C
		}
		var err error
		select {
		case <-free:
			continue
		case <-timeout:
			g.busy.Add(1)
			err = ErrBusy
		case <-ctx.Done():
			err = ctx.Err()
		}
		if queued {
			g.mu.Lock()
			if g.first--; g.first == 0 {
				g.wakeLocked() // the others may go now
			}
			g.mu.Unlock()
		}
		return err
	}
	defer func() {
		g.mu.Lock()
		g.running--
		g.wakeLocked()
		g.mu.Unlock()
	}()
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

package password

import (
	"cmp"
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

// Dummy is a hash of this package's parameters whose password is unknown
// to everyone: checked against when a sign-in names no account, so that
// the answer takes as long as for a known one (no account enumeration by
// timing).
const Dummy = "$argon2id$v=19$m=19456,t=2,p=1$c2lnbi1pbi1kdW1teQ$YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE"

// Limits of hashing.
const (
	// MaxHashes is how many hashes run at once.
	MaxHashes = 2
	// Wait is how long a hash waits for its turn before ErrBusy.
	Wait = time.Second
	// PriorityWait is how long a hash of a context marked WithPriority
	// waits for its turn before ErrBusy.
	PriorityWait = 5 * time.Second
	// MaxLength is the longest new password, in characters.
	MaxLength = 128
)

// ErrBusy: MaxHashes hashes were already running and none finished within
// the wait.
var ErrBusy = errors.New("password: too many hashes at once")

type priorityKey struct{}

// WithPriority marks the hashes made with ctx as a client's that has not
// failed recently: while every slot is taken (a flood of guesses), such a
// hash takes the next free slot before any unmarked one and waits up to
// PriorityWait instead of Wait.
func WithPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, priorityKey{}, true)
}

func hasPriority(ctx context.Context) bool {
	v, _ := ctx.Value(priorityKey{}).(bool)
	return v
}

// CheckInput validates a new password: 1 to MaxLength characters of valid
// UTF-8 without control characters (NUL, newlines, tabs, …), which no one
// types and some systems cut at. It returns the message for the password
// field, or "".
func CheckInput(pw string) string {
	if !utf8.ValidString(pw) || strings.ContainsFunc(pw, unicode.IsControl) {
		return "The password must not contain control characters."
	}
	if utf8.RuneCountInString(pw) > MaxLength {
		return "The password must not be greater than 128 characters."
	}
	return ""
}

// Hasher runs argon2id hashes, at most MaxHashes at once; a waiter of a
// prioritised context goes before the others. The zero Hasher is ready to
// use; it must not be copied after first use.
type Hasher struct {
	// Wait and PriorityWait, when not 0, replace Wait and PriorityWait
	// (tests).
	Wait, PriorityWait time.Duration
	// Held, when not nil, is called with a slot held before each hash
	// (tests: to hold slots).
	Held func()

	mu      sync.Mutex
	running int           // hashes running; at most MaxHashes
	first   int           // prioritised waiters
	free    chan struct{} // closed (and replaced) when a slot may be free
	busy    atomic.Int64  // hashes refused with ErrBusy
}

// Busy is how many hashes were refused with ErrBusy.
func (h *Hasher) Busy() int64 { return h.busy.Load() }

// Hash returns the PHC string of an argon2id hash of pw with a salt read
// from rand, computed when a slot is free.
func (h *Hasher) Hash(ctx context.Context, pw string, rand io.Reader) (string, error) {
	salt := make([]byte, 16)
	if _, err := io.ReadFull(rand, salt); err != nil {
		return "", fmt.Errorf("password salt: %w", err)
	}
	var key []byte
	err := h.run(ctx, func() {
		key = argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// Check compares pw with a PHC argon2id hash in constant time, when a slot
// is free. A hash it cannot read (another algorithm, parameters beyond
// this package's bounds) matches no password.
func (h *Hasher) Check(ctx context.Context, phc, pw string) (bool, error) {
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
	if err := h.run(ctx, func() { got = argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want))) }); err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// wakeLocked wakes every waiter to look again. h.mu is held.
func (h *Hasher) wakeLocked() {
	if h.free != nil {
		close(h.free)
	}
	h.free = make(chan struct{})
}

// run calls fn once a slot is free, waiting at most Wait (PriorityWait for
// a prioritised ctx) or until ctx is done.
func (h *Hasher) run(ctx context.Context, fn func()) error {
	first, wait := hasPriority(ctx), cmp.Or(h.Wait, Wait)
	if first {
		wait = cmp.Or(h.PriorityWait, PriorityWait)
	}
	var timeout <-chan time.Time
	queued := false // counted in h.first
	for {
		h.mu.Lock()
		if h.running < MaxHashes && (first || h.first == 0) {
			h.running++
			if queued {
				h.first--
			}
			h.mu.Unlock()
			break
		}
		if first && !queued {
			h.first++
			queued = true
		}
		if h.free == nil {
			h.free = make(chan struct{})
		}
		free := h.free
		h.mu.Unlock()
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
			h.busy.Add(1)
			err = ErrBusy
		case <-ctx.Done():
			err = ctx.Err()
		}
		if queued {
			h.mu.Lock()
			if h.first--; h.first == 0 {
				h.wakeLocked() // the others may go now
			}
			h.mu.Unlock()
		}
		return err
	}
	defer func() {
		h.mu.Lock()
		h.running--
		h.wakeLocked()
		h.mu.Unlock()
	}()
	if h.Held != nil {
		h.Held()
	}
	fn()
	return nil
}

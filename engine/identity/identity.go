package identity

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/internal/ua"
	"github.com/webstats/webstats/snapshot"
)

// Service is the identity of one engine's server: its accounts, keys,
// sessions, invitations, secrets and report claims, stored through the
// engine's registry seam (engine.Registry). Get it with Open.
type Service struct {
	reg *engine.Registry
	// Guarded by the registry lock (reg.Lock): records are replaced,
	// never modified, under it, and a dry run (cluster mode) changes
	// them and puts them back under its write lock.
	accounts    map[uint32]*accountRec
	keys        map[[32]byte]keyRef // API key hash → its account and key
	emails      map[string]uint32   // lower-cased email → account id
	invites     map[uint64]*invite  // by the first 8 bytes of the token's hash
	nextAccount uint32              // last account id assigned

	auth  authState // sessions (sessions.go)
	usage usage     // last uses of keys and sessions, written at snapshots (usage.go)

	loader *engine.Loader // during Load only
	ua     *ua.Parser     // describes sessions
}

// ErrUnauthenticated: no account has this API key (or the session is
// unknown, ended or expired).
var ErrUnauthenticated = errors.New("engine: unknown API key")

// Open attaches identity to e's registry and loads its records, or returns
// the Service attached already: every caller of one engine shares one.
func Open(e *engine.Engine) (*Service, error) {
	reg := e.Registry()
	if s, ok := reg.Attached().(*Service); ok {
		return s, nil
	}
	s := &Service{reg: reg, ua: ua.New(256)}
	err := reg.Attach(s)
	if errors.Is(err, engine.ErrAttached) {
		if s, ok := reg.Attached().(*Service); ok {
			return s, nil // attached meanwhile
		}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Must is Open for callers that cannot fail (tests, and servers whose
// engine was opened with identity already): it panics on an error.
func Must(e *engine.Engine) *Service {
	s, err := Open(e)
	if err != nil {
		panic(err)
	}
	return s
}

// Engine's id counter record of accounts (snapshot.KindCounter; the
// engine's website counter is 2).
const counterAccount = 1

// The API key format: a prefix and 32 random bytes in base64url.
const keyPrefix = "ws_"

func hashKey(key string) [32]byte { return sha256.Sum256([]byte(key)) }

// regDo runs fn as one registry transaction under the write lock.
func (e *Service) regDo(ctx context.Context, fn func() error) error {
	return e.reg.Do(ctx, engine.LockWrite, fn)
}

func (e *Service) putJSON(kind snapshot.Kind, id uint64, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return e.reg.Put(kind, id, b)
}

func (e *Service) putCounterLocked(which uint64, v uint64) error {
	return e.reg.Put(snapshot.KindCounter, which, strconv.AppendUint(nil, v, 10))
}

// rlockShared takes the registry lock for reading in cluster mode, where a
// registry change's dry run (under its write lock) changes sessions that
// must not be seen before it is put back; runlockShared releases it. In one
// process the sessions' own lock is enough.
func (e *Service) rlockShared() {
	if e.reg.Clustered() {
		e.reg.RLock()
	}
}

func (e *Service) runlockShared() {
	if e.reg.Clustered() {
		e.reg.RUnlock()
	}
}

// HasAccount reports whether account exists (engine.Records).
func (e *Service) HasAccount(account uint32) bool {
	_, ok := e.accounts[account]
	return ok
}

// Flush writes the last uses of keys and sessions (engine.Records).
func (e *Service) Flush() error { return e.flushUsage() }

func (e *Service) newKey() (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(e.reg.Rand(), b[:]); err != nil {
		return "", fmt.Errorf("engine: new API key: %w", err)
	}
	return keyPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// CreateAccount creates an account with a first API key ("default") and
// returns it with the key, which is shown only here: only its hash is
// stored. Email must be unique. The first account is an admin.
func (e *Service) CreateAccount(ctx context.Context, name, email string) (Account, string, error) {
	return e.createAccount(ctx, name, email, nil)
}

// createAccount is CreateAccount; check, when not nil, runs under the
// registry lock first (an admin's rights).
func (e *Service) createAccount(ctx context.Context, name, email string, check func() error) (Account, string, error) {
	var verr engine.ValidationError
	email = checkEmail(email, &verr)
	name = checkName(name, &verr)
	if err := verr.Err(); err != nil {
		return Account{}, "", err
	}
	if !e.reg.Enter() {
		return Account{}, "", engine.ErrClosed
	}
	defer e.reg.Exit()
	var a Account
	var key string
	err := e.regDo(ctx, func() error {
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		verr := verr
		r, err := e.newAccountLocked(name, email, &verr)
		if err != nil {
			return err
		}
		if key, err = e.addKeyLocked(r, "default"); err != nil {
			return err
		}
		if err := e.commitNewAccountLocked(r); err != nil {
			return err
		}
		a = r.view()
		return nil
	})
	if err != nil {
		return Account{}, "", err
	}
	return a, key, nil
}

// Accounts returns every account, by id.
func (e *Service) Accounts(ctx context.Context) []Account {
	e.reg.RLock()
	defer e.reg.RUnlock()
	out := make([]Account, 0, len(e.accounts))
	for _, r := range e.accounts {
		out = append(out, e.accountView(r))
	}
	slices.SortFunc(out, func(a, b Account) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// AccountByEmail finds an account by its email (case-insensitive).
func (e *Service) AccountByEmail(ctx context.Context, email string) (Account, error) {
	e.reg.RLock()
	defer e.reg.RUnlock()
	if id, ok := e.emails[strings.ToLower(strings.TrimSpace(email))]; ok {
		return e.accountView(e.accounts[id]), nil
	}
	return Account{}, engine.ErrNotFound
}

// Account returns the account with id.
func (e *Service) Account(ctx context.Context, id uint32) (Account, error) {
	e.reg.RLock()
	defer e.reg.RUnlock()
	r, ok := e.accounts[id]
	if !ok {
		return Account{}, engine.ErrNotFound
	}
	return e.accountView(r), nil
}

// RotateKey replaces every API key of the account with one new key
// ("default"), returned here only: the old keys stop working at once, and
// every session of the account ends. It is the command line's answer to a
// leaked key; the web app revokes keys one by one.
func (e *Service) RotateKey(ctx context.Context, account uint32) (string, error) {
	var key string
	_, err := e.modifyAccount(ctx, account, func(r *accountRec) error {
		// End the sessions before the new key is stored: a crash between
		// the two leaves the account signed out with its old keys, never
		// signed in with sessions the rotation should have ended.
		if err := e.endSessionsLocked(account); err != nil {
			return err
		}
		r.Keys = nil
		r.Gen++
		var err error
		key, err = e.addKeyLocked(r, "default")
		return err
	})
	return key, err
}

// Authenticate returns the account whose API key is key, or
// ErrUnauthenticated (also for a disabled account). Keys are found by
// their hashes and compared in constant time. The key's LastUsed is
// brought up to date (in memory; written at the next snapshot) when it is
// KeyUseResolution old.
func (e *Service) Authenticate(ctx context.Context, key string) (Account, error) {
	h := hashKey(key)
	e.reg.RLock()
	ref, ok := e.keys[h]
	var r *accountRec
	if ok {
		r = e.accounts[ref.account]
	}
	if r == nil || r.Disabled {
		e.reg.RUnlock()
		return Account{}, ErrUnauthenticated
	}
	i := slices.IndexFunc(r.Keys, func(k APIKey) bool { return k.ID == ref.key })
	if i < 0 || subtle.ConstantTimeCompare(r.Keys[i].Hash[:], h[:]) != 1 {
		e.reg.RUnlock()
		return Account{}, ErrUnauthenticated
	}
	stored := r.Keys[i].LastUsed
	a := r.view()
	a.ViaKey = ref.key
	e.reg.RUnlock()
	e.usage.touchKey(ref, stored, e.reg.Now().UTC().Truncate(time.Second))
	return a, nil
}

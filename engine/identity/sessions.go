package identity

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// Sign-in sessions (SPEC §11) are server-side records, so that signing out,
// rotating the API keys, changing the password, disabling the account and
// revoking the key a session signed in with end them at once.
// A session is known by a random 256-bit token that only the client holds;
// the engine keeps the token's SHA-256, so a copy of the data directory
// opens no session. Records are registry records of kind
// snapshot.KindSession, keyed by the first 8 bytes of the hash and
// verified against all 32.
const (
	// SessionLife is how long a session lasts from its creation: 14 days.
	// Use does not extend it (an absolute lifetime costs no write per
	// request).
	SessionLife = 14 * 24 * time.Hour
	// MaxSessionsPerAccount bounds the sessions of one account: 50. A new
	// session beyond it ends the account's oldest.
	MaxSessionsPerAccount = 50
	// maxSessionToken is the longest token SessionAccount reads: a token is
	// 43 characters of base64url.
	maxSessionToken = 64
)

// session is one sign-in session, as stored (JSON).
type session struct {
	Hash    [32]byte  `json:"hash"` // SHA-256 of the token
	Account uint32    `json:"account"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// LastSeen is when the session last opened a page, to
	// KeyUseResolution (written at most once a minute).
	LastSeen time.Time `json:"last_seen,omitzero"`
	// Browser is the user agent's browser and OS ("Firefox on Linux"),
	// IP the client address's network (a /24 or a /48): enough to tell
	// one's own sessions apart, not to track anyone.
	Browser string `json:"browser,omitempty"`
	IP      string `json:"ip,omitempty"`
	// Key is the id of the API key the session signed in with (0: a
	// password): revoking the key ends the session.
	Key uint32 `json:"key,omitempty"`
}

// SessionClient describes the client a session is created for.
type SessionClient struct {
	UserAgent string
	IP        netip.Addr
}

// Session is a sign-in session as its account sees it.
type Session struct {
	ID                         string // for EndSessionID; SessionID of its token
	Created, LastSeen, Expires time.Time
	Browser, IP                string
}

// SessionID returns the Session.ID of the session whose token is token.
func SessionID(token string) string {
	h := hashToken(token)
	return strconv.FormatUint(binary.BigEndian.Uint64(h[:8]), 16)
}

func (s *session) public() Session {
	return Session{ID: strconv.FormatUint(s.id(), 16), Created: s.Created, LastSeen: s.LastSeen, Expires: s.Expires, Browser: s.Browser, IP: s.IP}
}

// describe returns the session fields of c.
func (e *Service) describe(c SessionClient) (browser, ip string) {
	if len(c.UserAgent) <= 1024 {
		ag := e.ua.Parse(c.UserAgent)
		switch {
		case ag.Browser != "" && ag.OS != "":
			browser = ag.Browser + " on " + ag.OS
		case ag.Browser != "":
			browser = ag.Browser
		case ag.OS != "":
			browser = ag.OS
		}
	}
	if c.IP.IsValid() {
		bits := 48
		if c.IP.Unmap().Is4() {
			bits = 24
		}
		if p, err := c.IP.Unmap().Prefix(bits); err == nil {
			ip = p.String()
		}
	}
	return browser, ip
}

// id is the session's registry record id.
func (s *session) id() uint64 { return binary.BigEndian.Uint64(s.Hash[:8]) }

// authState is the sessions. Lock order: the engine's life (Enter)
// before the registry lock before authState.mu.
type authState struct {
	// mu guards sessions and byAccount; never enter or take regMu with it
	// held.
	mu        sync.Mutex
	sessions  map[uint64]*session   // by id
	byAccount map[uint32][]*session // oldest first; at most MaxSessionsPerAccount each
}

func (a *authState) init() {
	a.sessions = make(map[uint64]*session)
	a.byAccount = make(map[uint32][]*session)
}

func hashToken(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// CreateSession starts a session for account a, which must be as returned
// by Authenticate, SignIn or CheckSecondFactor: if its credentials changed
// since (Account.Gen: a key rotation or password change raced with the
// sign-in) or it was disabled, the result is ErrUnauthenticated. It returns the
// session's token, shown only here; put it in a cookie and pass it to
// SessionAccount. The account's expired sessions are purged, and its oldest
// ends when it already has MaxSessionsPerAccount.
func (e *Service) CreateSession(ctx context.Context, a Account, c SessionClient) (token string, err error) {
	var b [32]byte
	if _, err := io.ReadFull(e.reg.Rand(), b[:]); err != nil {
		return "", fmt.Errorf("engine: new session: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b[:])
	now := e.reg.Now()
	s := &session{Hash: hashToken(token), Account: a.ID, Created: now.UTC(), Expires: now.Add(SessionLife).UTC(), LastSeen: now.UTC().Truncate(time.Second)}
	s.Browser, s.IP = e.describe(c)
	s.Key = a.ViaKey
	if !e.reg.Enter() {
		return "", engine.ErrClosed
	}
	defer e.reg.Exit()
	// regMu keeps RotateKey out until the session is stored, so a
	// rotation ends it or refuses it.
	err = e.reg.Do(ctx, engine.LockRead, func() error {
		cur, ok := e.accounts[a.ID]
		if !ok || cur.Gen != a.Gen || cur.Disabled ||
			a.ViaKey != 0 && !slices.ContainsFunc(cur.Keys, func(k APIKey) bool { return k.ID == a.ViaKey }) {
			return ErrUnauthenticated
		}
		e.auth.mu.Lock()
		defer e.auth.mu.Unlock()
		if _, dup := e.auth.sessions[s.id()]; dup {
			// 2^-64 per pair of sessions; refuse rather than shadow one.
			return fmt.Errorf("engine: new session: id collision")
		}
		for _, old := range slices.Clone(e.auth.byAccount[a.ID]) {
			if !now.Before(old.Expires) || len(e.auth.byAccount[a.ID]) >= MaxSessionsPerAccount {
				if err := e.removeSessionLocked(old); err != nil {
					return err
				}
			}
		}
		if err := e.putJSON(snapshot.KindSession, s.id(), s); err != nil {
			return err
		}
		e.auth.sessions[s.id()] = s
		e.auth.byAccount[a.ID] = append(e.auth.byAccount[a.ID], s)
		return nil
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// SessionAccount returns the account of the session whose token is token,
// or ErrUnauthenticated when there is none: never created, ended, or
// expired (an expired session is deleted here; in cluster mode at the
// account's next sign-in, or at Open).
func (e *Service) SessionAccount(ctx context.Context, token string) (Account, error) {
	if token == "" || len(token) > maxSessionToken {
		return Account{}, ErrUnauthenticated
	}
	h := hashToken(token)
	if !e.reg.Enter() {
		return Account{}, engine.ErrClosed
	}
	defer e.reg.Exit()
	e.rlockShared()
	e.auth.mu.Lock()
	s := e.auth.sessions[binary.BigEndian.Uint64(h[:8])]
	if s == nil || subtle.ConstantTimeCompare(s.Hash[:], h[:]) != 1 {
		e.auth.mu.Unlock()
		e.runlockShared()
		return Account{}, ErrUnauthenticated
	}
	if !e.reg.Now().Before(s.Expires) {
		// (In cluster mode a deletion is a registry transaction: the
		// session stays until the account's next sign-in or Open drops
		// it, refused meanwhile.)
		if !e.reg.Clustered() {
			if err := e.removeSessionLocked(s); err != nil {
				e.reg.Logger().Error("delete expired session", "err", err)
			}
		}
		e.auth.mu.Unlock()
		e.runlockShared()
		return Account{}, ErrUnauthenticated
	}
	account, id, seen, key := s.Account, s.id(), s.LastSeen, s.Key
	e.auth.mu.Unlock()
	e.runlockShared()
	a, err := e.Account(ctx, account)
	if err != nil || a.Disabled ||
		key != 0 && !slices.ContainsFunc(a.Keys, func(k APIKey) bool { return k.ID == key }) {
		// (RevokeKey ends the key's sessions; this is the backstop.)
		return Account{}, ErrUnauthenticated
	}
	e.usage.touchSession(id, seen, e.reg.Now().UTC().Truncate(time.Second))
	return a, nil
}

// sessionKey returns the account of the unexpired session whose token is
// token, and the id of the API key it signed in with (0: a password).
func (e *Service) sessionKey(token string) (account, key uint32, ok bool) {
	if token == "" || len(token) > maxSessionToken {
		return 0, 0, false
	}
	h := hashToken(token)
	e.rlockShared()
	defer e.runlockShared()
	e.auth.mu.Lock()
	defer e.auth.mu.Unlock()
	s := e.auth.sessions[binary.BigEndian.Uint64(h[:8])]
	if s == nil || subtle.ConstantTimeCompare(s.Hash[:], h[:]) != 1 || !e.reg.Now().Before(s.Expires) {
		return 0, 0, false
	}
	return s.Account, s.Key, true
}

// EndSession ends the session whose token is token (signing out). An
// unknown token is not an error.
func (e *Service) EndSession(ctx context.Context, token string) error {
	if token == "" || len(token) > maxSessionToken {
		return nil
	}
	h := hashToken(token)
	if !e.reg.Enter() {
		return engine.ErrClosed
	}
	defer e.reg.Exit()
	return e.reg.Do(ctx, engine.LockNone, func() error {
		e.auth.mu.Lock()
		defer e.auth.mu.Unlock()
		s := e.auth.sessions[binary.BigEndian.Uint64(h[:8])]
		if s == nil || subtle.ConstantTimeCompare(s.Hash[:], h[:]) != 1 {
			return nil
		}
		return e.removeSessionLocked(s)
	})
}

// replaceSessionLocked puts ns in the place of s (records are replaced,
// never modified, as Sessions copies them). e.auth.mu must be held.
func (e *Service) replaceSessionLocked(s, ns *session) {
	e.auth.sessions[ns.id()] = ns
	list := e.auth.byAccount[s.Account]
	if i := slices.Index(list, s); i >= 0 {
		list[i] = ns
	}
}

// Sessions returns the unexpired sessions of account, newest first.
func (e *Service) Sessions(ctx context.Context, account uint32) []Session {
	now := e.reg.Now()
	e.rlockShared()
	defer e.runlockShared()
	e.auth.mu.Lock()
	defer e.auth.mu.Unlock()
	var out []Session
	for _, s := range e.auth.byAccount[account] {
		if now.Before(s.Expires) {
			ps := s.public()
			if t := e.usage.session(s.id()); t.After(ps.LastSeen) {
				ps.LastSeen = t
			}
			out = append(out, ps)
		}
	}
	slices.Reverse(out)
	// Sessions made at the same instant (on several nodes of a cluster, or
	// in one's order and after a restart in another's) by id.
	slices.SortStableFunc(out, func(a, b Session) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// EndSessionID ends account's session whose Session.ID is id. Another
// account's session is engine.ErrNotFound.
func (e *Service) EndSessionID(ctx context.Context, account uint32, id string) error {
	n, err := strconv.ParseUint(id, 16, 64)
	if err != nil {
		return engine.ErrNotFound
	}
	if !e.reg.Enter() {
		return engine.ErrClosed
	}
	defer e.reg.Exit()
	return e.reg.Do(ctx, engine.LockNone, func() error {
		e.auth.mu.Lock()
		defer e.auth.mu.Unlock()
		s := e.auth.sessions[n]
		if s == nil || s.Account != account {
			return engine.ErrNotFound
		}
		return e.removeSessionLocked(s)
	})
}

// EndSessions ends every session of account ("sign out everywhere").
// RotateKey does it too.
func (e *Service) EndSessions(ctx context.Context, account uint32) error {
	if !e.reg.Enter() {
		return engine.ErrClosed
	}
	defer e.reg.Exit()
	return e.reg.Do(ctx, engine.LockNone, func() error { return e.endSessionsLocked(account) })
}

// endSessionsLocked ends every session of account. It takes e.auth.mu; the
// caller may hold regMu and must have entered.
func (e *Service) endSessionsLocked(account uint32) error {
	e.auth.mu.Lock()
	defer e.auth.mu.Unlock()
	for _, s := range slices.Clone(e.auth.byAccount[account]) {
		if err := e.removeSessionLocked(s); err != nil {
			return err
		}
	}
	return nil
}

// endKeySessionsLocked ends the sessions of account that signed in with
// API key key. It takes e.auth.mu; the caller may hold regMu.
func (e *Service) endKeySessionsLocked(account, key uint32) error {
	e.auth.mu.Lock()
	defer e.auth.mu.Unlock()
	for _, s := range slices.Clone(e.auth.byAccount[account]) {
		if s.Key == key {
			if err := e.removeSessionLocked(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeSessionLocked deletes s from the store, then from memory.
// e.auth.mu must be held, and the caller must have entered.
func (e *Service) removeSessionLocked(s *session) error {
	if err := e.reg.Delete(snapshot.KindSession, s.id()); err != nil {
		return fmt.Errorf("engine: end session: %w", err)
	}
	e.forgetSessionLocked(s)
	return nil
}

// forgetSessionLocked removes s from memory. e.auth.mu must be held.
func (e *Service) forgetSessionLocked(s *session) {
	delete(e.auth.sessions, s.id())
	list := e.auth.byAccount[s.Account]
	if i := slices.Index(list, s); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(e.auth.byAccount, s.Account)
	} else {
		e.auth.byAccount[s.Account] = list
	}
}

// loadSessions reads the sessions from the store after the accounts, and
// deletes those that expired, belong to no account, or exceed
// MaxSessionsPerAccount (the oldest go): the work is one pass over the
// stored sessions.
func (e *Service) loadSessions() error {
	now := e.reg.Now()
	var drop []uint64
	err := e.loader.Scan(snapshot.KindSession, func(id uint64, v []byte) error {
		s := new(session)
		if err := json.Unmarshal(v, s); err != nil || s.id() != id {
			return fmt.Errorf("engine: session %x: %w", id, snapshot.ErrCorrupt)
		}
		if _, ok := e.accounts[s.Account]; !ok || !now.Before(s.Expires) {
			drop = append(drop, id)
			return nil
		}
		e.auth.sessions[id] = s
		e.auth.byAccount[s.Account] = append(e.auth.byAccount[s.Account], s)
		return nil
	})
	if err != nil {
		return err
	}
	for acc, list := range e.auth.byAccount {
		slices.SortFunc(list, func(a, b *session) int { return cmp.Compare(a.Created.UnixNano(), b.Created.UnixNano()) })
		for len(list) > MaxSessionsPerAccount {
			drop = append(drop, list[0].id())
			delete(e.auth.sessions, list[0].id())
			list = list[1:]
		}
		e.auth.byAccount[acc] = list
	}
	for _, id := range drop {
		if err := e.reg.DeleteNow(snapshot.KindSession, id); err != nil {
			return fmt.Errorf("engine: delete session: %w", err)
		}
	}
	return nil
}

package engine

import (
	"slices"
	"sync"
	"time"

	"github.com/webstats/webstats/snapshot"
)

// usage holds the last-use times of API keys and sessions between
// snapshots. A request that finds its key's or session's time more than
// KeyUseResolution old records the new one here, in memory, and never
// waits for a store write under the registry lock; each snapshot (and
// Close) writes the times into the records and empties the table. Its
// entries are bounded by the keys and sessions that exist (at most
// MaxKeysPerAccount and MaxSessionsPerAccount an account).
type usage struct {
	mu       sync.Mutex
	keys     map[keyRef]time.Time
	sessions map[uint64]time.Time // by session id
}

func (u *usage) init() {
	u.keys = make(map[keyRef]time.Time)
	u.sessions = make(map[uint64]time.Time)
}

// key returns the last use of ref recorded here, or the zero time.
func (u *usage) key(ref keyRef) time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.keys[ref]
}

// session returns the last use of session id recorded here, or zero.
func (u *usage) session(id uint64) time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.sessions[id]
}

// touchKey records that ref was used at now when its last use (stored
// or recorded) is KeyUseResolution old.
func (u *usage) touchKey(ref keyRef, stored, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if last := later(stored, u.keys[ref]); now.Sub(last) >= KeyUseResolution {
		u.keys[ref] = now
	}
}

// touchSession likewise for session id.
func (u *usage) touchSession(id uint64, stored, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if last := later(stored, u.sessions[id]); now.Sub(last) >= KeyUseResolution {
		u.sessions[id] = now
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// take empties the table and returns what it held.
func (u *usage) take() (map[keyRef]time.Time, map[uint64]time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	k, s := u.keys, u.sessions
	if len(k) == 0 && len(s) == 0 {
		return nil, nil
	}
	u.init()
	return k, s
}

// flushUsage writes the recorded last-use times into the account and
// session records. A record that is gone (a revoked key, an ended session)
// is skipped. On a write error the remaining times are put back for the
// next snapshot.
func (e *Engine) flushUsage() error {
	keys, sessions := e.usage.take()
	if keys == nil && sessions == nil {
		return nil
	}
	byAccount := make(map[uint32][]keyRef)
	for ref := range keys {
		byAccount[ref.account] = append(byAccount[ref.account], ref)
	}
	e.regMu.Lock()
	for acc, refs := range byAccount {
		old := e.accounts[acc]
		if old == nil {
			continue
		}
		r := old.clone()
		changed := false
		for _, ref := range refs {
			if i := slices.IndexFunc(r.Keys, func(k APIKey) bool { return k.ID == ref.key }); i >= 0 && keys[ref].After(r.Keys[i].LastUsed) {
				r.Keys[i].LastUsed = keys[ref]
				changed = true
			}
		}
		if !changed {
			continue
		}
		if err := e.putAccountLocked(r); err != nil {
			e.regMu.Unlock()
			e.restoreUsage(keys, sessions)
			return err
		}
	}
	e.regMu.Unlock()
	e.auth.mu.Lock()
	defer e.auth.mu.Unlock()
	for id, t := range sessions {
		s := e.auth.sessions[id]
		if s == nil || !t.After(s.LastSeen) {
			continue
		}
		ns := *s
		ns.LastSeen = t
		if err := e.putJSON(snapshot.KindSession, id, &ns); err != nil {
			e.restoreUsage(nil, sessions)
			return err
		}
		e.replaceSessionLocked(s, &ns)
	}
	return nil
}

// restoreUsage puts times back after a failed flush.
func (e *Engine) restoreUsage(keys map[keyRef]time.Time, sessions map[uint64]time.Time) {
	for ref, t := range keys {
		e.usage.touchKey(ref, time.Time{}, t)
	}
	for id, t := range sessions {
		e.usage.touchSession(id, time.Time{}, t)
	}
}

// accountView is r.view() with the key uses recorded since the last
// snapshot.
func (e *Engine) accountView(r *accountRec) Account {
	a := r.view()
	for i := range a.Keys {
		if t := e.usage.key(keyRef{r.ID, a.Keys[i].ID}); t.After(a.Keys[i].LastUsed) {
			a.Keys[i].LastUsed = t
		}
	}
	return a
}

package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/webstats/webstats/engine"
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

// copy returns a copy of the table.
func (u *usage) copy() (map[keyRef]time.Time, map[uint64]time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.keys) == 0 && len(u.sessions) == 0 {
		return nil, nil
	}
	return maps.Clone(u.keys), maps.Clone(u.sessions)
}

// forget removes the entries of keys and sessions that still hold the
// same time (written); newer ones stay for the next flush.
func (u *usage) forget(keys map[keyRef]time.Time, sessions map[uint64]time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for ref, t := range keys {
		if u.keys[ref].Equal(t) {
			delete(u.keys, ref)
		}
	}
	for id, t := range sessions {
		if u.sessions[id].Equal(t) {
			delete(u.sessions, id)
		}
	}
}

// flushUsage writes the recorded last-use times into the account and
// session records, in one batch per kind (one sync for all). The account
// records are made and written under the registry's read lock, so no
// account changes in between (a writer waits one sync; readers, tracking
// among them, go on); the session records under e.auth.mu, so that a
// session ended meanwhile cannot be written back. A time is forgotten
// only once written and installed; readers see the table until then.
func (e *Service) flushUsage() error {
	keys, sessions := e.usage.copy()
	if keys == nil && sessions == nil {
		return nil
	}
	if e.reg.Clustered() {
		return e.flushUsageShared(keys, sessions)
	}
	if err := e.flushKeyUses(keys); err != nil {
		return err
	}
	if err := e.flushSessionUses(sessions); err != nil {
		return err
	}
	e.usage.forget(keys, sessions)
	return nil
}

// flushKeyUses writes the key uses into their accounts' records under the
// registry's read lock and installs the records under its lock; a time
// whose account changed between the two is taken out of keys, so that it
// stays recorded for the next flush.
func (e *Service) flushKeyUses(keys map[keyRef]time.Time) error {
	byAccount := make(map[uint32][]keyRef)
	for ref := range keys {
		byAccount[ref.account] = append(byAccount[ref.account], ref)
	}
	type pending struct{ old, new *accountRec }
	var accs []pending
	var ids []uint64
	var vals [][]byte
	e.reg.RLock()
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
		b, err := json.Marshal(r)
		if err != nil {
			e.reg.RUnlock()
			return err
		}
		accs = append(accs, pending{old, r})
		ids, vals = append(ids, uint64(r.ID)), append(vals, b)
	}
	err := e.reg.PutMany(snapshot.KindAccount, ids, vals)
	e.reg.RUnlock()
	if err != nil {
		return fmt.Errorf("engine: write key uses: %w", err)
	}
	e.reg.Lock()
	defer e.reg.Unlock()
	for _, p := range accs {
		if e.accounts[p.new.ID] == p.old {
			e.indexAccountLocked(p.new)
			continue
		}
		// Changed between the locks, by a write made after ours: its
		// record lacks the times, which stay for the next flush.
		for ref := range keys {
			if ref.account == p.new.ID {
				delete(keys, ref)
			}
		}
	}
	return nil
}

// flushSessionUses writes the sessions' last-seen times into their
// records and installs them, all under e.auth.mu, so that a session ended
// meanwhile cannot be written back.
func (e *Service) flushSessionUses(sessions map[uint64]time.Time) error {
	var ids []uint64
	var vals [][]byte
	var olds, news []*session
	e.auth.mu.Lock()
	defer e.auth.mu.Unlock()
	for id, t := range sessions {
		s := e.auth.sessions[id]
		if s == nil || !t.After(s.LastSeen) {
			continue
		}
		ns := *s
		ns.LastSeen = t
		b, err := json.Marshal(&ns)
		if err != nil {
			return err
		}
		olds, news = append(olds, s), append(news, &ns)
		ids, vals = append(ids, id), append(vals, b)
	}
	if err := e.reg.PutMany(snapshot.KindSession, ids, vals); err != nil {
		return fmt.Errorf("engine: write session uses: %w", err)
	}
	for i := range olds {
		e.replaceSessionLocked(olds[i], news[i])
	}
	return nil
}

// accountView is r.view() with the key uses recorded since the last
// snapshot.
func (e *Service) accountView(r *accountRec) Account {
	a := r.view()
	for i := range a.Keys {
		if t := e.usage.key(keyRef{r.ID, a.Keys[i].ID}); t.After(a.Keys[i].LastUsed) {
			a.Keys[i].LastUsed = t
		}
	}
	return a
}

// flushUsageShared is flushUsage in cluster mode: the times go into the
// records as registry transactions of about half the log's largest message
// at most, and are forgotten once all are applied (a failed flush is made
// again at the next snapshot; what was applied then changes nothing).
func (e *Service) flushUsageShared(keys map[keyRef]time.Time, sessions map[uint64]time.Time) error {
	accounts := make(map[uint32]bool)
	for ref := range keys {
		accounts[ref.account] = true
	}
	ids := slices.Sorted(maps.Keys(accounts))
	err := e.flushShared(len(ids), false, func(i int) error {
		acc := ids[i]
		old := e.accounts[acc]
		if old == nil {
			return nil
		}
		r, changed := old.clone(), false
		for j, k := range r.Keys {
			if t, ok := keys[keyRef{acc, k.ID}]; ok && t.After(k.LastUsed) {
				r.Keys[j].LastUsed, changed = t, true
			}
		}
		if !changed {
			return nil
		}
		return e.putAccountLocked(r)
	})
	if err != nil {
		return fmt.Errorf("engine: write key uses: %w", err)
	}
	sids := slices.Sorted(maps.Keys(sessions))
	err = e.flushShared(len(sids), true, func(i int) error {
		id := sids[i]
		s := e.auth.sessions[id]
		if s == nil || !sessions[id].After(s.LastSeen) {
			return nil
		}
		ns := *s
		ns.LastSeen = sessions[id]
		if err := e.putJSON(snapshot.KindSession, id, &ns); err != nil {
			return err
		}
		e.replaceSessionLocked(s, &ns)
		return nil
	})
	if err != nil {
		return fmt.Errorf("engine: write session uses: %w", err)
	}
	e.usage.forget(keys, sessions)
	return nil
}

// flushShared calls put(i) for i in [0, n) in registry transactions (with
// e.auth.mu held too when auth), each cut once its records reach half the
// log's largest message. One the log refuses as too large is made again
// with half as many records; a single record too large for the log is
// left out (logged): its times are lost rather than every flush after.
func (e *Service) flushShared(n int, auth bool, put func(i int) error) error {
	limit := e.reg.MaxTxBytes() / 2
	for start, most := 0, n; start < n; {
		done := 0
		err := e.regDo(context.Background(), func() error {
			done = 0
			if auth {
				e.auth.mu.Lock()
				defer e.auth.mu.Unlock()
			}
			for i := start; i < n && done < most; i++ {
				if done > 0 && e.reg.TxBytes() >= limit {
					break
				}
				done++
				if err := put(i); err != nil {
					return err
				}
			}
			return nil
		})
		switch {
		case errors.Is(err, engine.ErrTooLarge) && done > 1:
			most = done / 2
			continue
		case errors.Is(err, engine.ErrTooLarge):
			e.reg.Logger().Error("cluster: a record with its last-use times is larger than the log takes; the times are dropped", "err", err)
		case err != nil:
			return err
		}
		start, most = start+done, n // (one large record does not slow the rest)
	}
	return nil
}

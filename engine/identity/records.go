package identity

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// The records of identity in the engine's registry keep the kinds and ids
// they had when they were the engine's (a data directory of an earlier
// version opens unchanged): snapshot.KindAccount by account id,
// KindSession and KindInvite by the first 8 bytes of their token's hash,
// KindSecret by the first 8 bytes of the name's hash, KindReport by
// website<<8 | kind, and the account counter (KindCounter 1).

// Load reads the accounts, invitations and sessions (engine.Records), with
// the migrations of older stores.
func (e *Service) Load(l *engine.Loader) error {
	e.loader = l
	defer func() { e.loader = nil }()
	e.accounts = make(map[uint32]*accountRec)
	e.keys = make(map[[32]byte]keyRef)
	e.emails = make(map[string]uint32)
	e.invites = make(map[uint64]*invite)
	e.auth.init()
	e.usage.init()
	err := l.Scan(snapshot.KindCounter, func(id uint64, v []byte) error {
		if id != counterAccount {
			return nil
		}
		n, err := strconv.ParseUint(string(v), 10, 32)
		if err != nil {
			return fmt.Errorf("engine: counter %d: %w: %w", id, snapshot.ErrCorrupt, err)
		}
		e.nextAccount = uint32(n)
		return nil
	})
	if err != nil {
		return err
	}
	var migrate []*accountRec
	err = l.Scan(snapshot.KindAccount, func(id uint64, v []byte) error {
		r := new(accountRec)
		if err := json.Unmarshal(v, r); err != nil || uint64(r.ID) != id {
			return fmt.Errorf("engine: account %d: %w", id, snapshot.ErrCorrupt)
		}
		if r.LegacyKeyHash != ([32]byte{}) {
			// Format 1 kept one key per account: it becomes "default".
			r.NextKey++
			r.Keys = append(r.Keys, APIKey{ID: r.NextKey, Name: "default", Hash: r.LegacyKeyHash, CreatedAt: r.CreatedAt})
			r.LegacyKeyHash = [32]byte{}
			migrate = append(migrate, r)
		}
		e.indexAccountLocked(r)
		e.nextAccount = max(e.nextAccount, r.ID)
		return nil
	})
	if err != nil {
		return err
	}
	if !e.reg.Clustered() && e.enabledAdminsLocked() == 0 {
		// (Not in cluster mode: a node's own write would make its
		// registry differ from the others'.)
		// Stores from before admins: the first enabled account becomes
		// one (and a store whose admins are all disabled gets one back).
		ids := slices.Sorted(maps.Keys(e.accounts))
		if i := slices.IndexFunc(ids, func(id uint32) bool { return !e.accounts[id].Disabled }); i >= 0 {
			r := e.accounts[ids[i]].clone()
			r.Admin = true
			e.indexAccountLocked(r)
			migrate = append(migrate, r)
		}
	}
	for _, r := range migrate {
		b, err := json.Marshal(e.accounts[r.ID])
		if err != nil {
			return err
		}
		if err := l.Put(snapshot.KindAccount, uint64(r.ID), b); err != nil {
			return fmt.Errorf("engine: write registry: %w", err)
		}
	}
	if err := e.loadInvites(); err != nil {
		return err
	}
	return e.loadSessions()
}

// Save returns what puts memory back as it was before a dry run's first
// write of a record (engine.Records). The changes write a record before
// they change memory, so this is memory as it was. The registry lock is
// held for writing, and e.auth.mu too for a session.
func (e *Service) Save(kind snapshot.Kind, id uint64, value []byte) func() {
	switch kind {
	case snapshot.KindCounter:
		a := e.nextAccount
		return func() { e.nextAccount = a }
	case snapshot.KindAccount:
		old := e.accounts[uint32(id)]
		return func() { e.setAccountLocked(uint32(id), old) }
	case snapshot.KindInvite:
		old := e.invites[id]
		return func() {
			if old == nil {
				delete(e.invites, id)
			} else {
				e.invites[id] = old
			}
		}
	case snapshot.KindSession:
		return e.saveSession(id, value)
	}
	return nil
}

// saveSession is Save of a session; its undo takes e.auth.mu.
func (e *Service) saveSession(id uint64, value []byte) func() {
	old := e.auth.sessions[id]
	var account uint32
	if old != nil {
		account = old.Account
	} else if value != nil {
		var s session
		if json.Unmarshal(value, &s) == nil {
			account = s.Account
		}
	}
	list, had := e.auth.byAccount[account]
	list = slices.Clone(list)
	return func() {
		e.auth.mu.Lock()
		defer e.auth.mu.Unlock()
		if old == nil {
			delete(e.auth.sessions, id)
		} else {
			e.auth.sessions[id] = old
		}
		if had {
			e.auth.byAccount[account] = list
		} else {
			delete(e.auth.byAccount, account)
		}
	}
}

// Decode reads a record of an applied transaction into what installs it
// (engine.Records); the install runs with the registry lock held for
// writing.
func (e *Service) Decode(kind snapshot.Kind, id uint64, value []byte) (func(), error) {
	del := value == nil
	switch kind {
	case snapshot.KindCounter:
		var n uint64
		if !del {
			var err error
			if n, err = strconv.ParseUint(string(value), 10, 32); err != nil {
				return nil, err
			}
		}
		return func() {
			if id == counterAccount {
				e.nextAccount = uint32(n)
			}
		}, nil
	case snapshot.KindAccount:
		var r *accountRec
		if !del {
			r = new(accountRec)
			if err := json.Unmarshal(value, r); err != nil || uint64(r.ID) != id {
				return nil, fmt.Errorf("account: %v", err)
			}
		}
		return func() { e.setAccountLocked(uint32(id), r) }, nil
	case snapshot.KindInvite:
		var inv *invite
		if !del {
			inv = new(invite)
			if err := json.Unmarshal(value, inv); err != nil || inv.id() != id {
				return nil, fmt.Errorf("invite: %v", err)
			}
		}
		return func() {
			if inv == nil {
				delete(e.invites, id)
			} else {
				e.invites[id] = inv
			}
		}, nil
	case snapshot.KindSession:
		var ns *session
		if !del {
			ns = new(session)
			if err := json.Unmarshal(value, ns); err != nil || ns.id() != id {
				return nil, fmt.Errorf("session: %v", err)
			}
		}
		return func() {
			e.auth.mu.Lock()
			defer e.auth.mu.Unlock()
			old := e.auth.sessions[id]
			switch {
			case old != nil && ns != nil:
				e.replaceSessionLocked(old, ns)
			case old != nil:
				e.forgetSessionLocked(old)
			case ns != nil:
				e.auth.sessions[id] = ns
				e.auth.byAccount[ns.Account] = append(e.auth.byAccount[ns.Account], ns)
			}
		}, nil
	}
	// Reports and secrets: only in the store.
	return func() {}, nil
}

// setAccountLocked makes r account id's record, or removes the account
// when r is nil, with its key and email indexes.
func (e *Service) setAccountLocked(id uint32, r *accountRec) {
	if r != nil {
		e.indexAccountLocked(r)
		return
	}
	if old := e.accounts[id]; old != nil {
		for _, k := range old.Keys {
			delete(e.keys, k.Hash)
		}
		delete(e.emails, strings.ToLower(old.Email))
		delete(e.accounts, id)
	}
}

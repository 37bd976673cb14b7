package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/webstats/webstats/snapshot"
)

// The registry seam (SPEC §1): the engine owns websites, their goals and
// the website id counter; every other registry record (an account, a
// session, an invitation, a secret, a report claim, the account counter) is
// stored through a Registry by the one package attached to it (package
// engine/identity). The engine stores, replicates in cluster mode (regtx.go)
// and backs up those records without reading them: the attached package
// keeps them in memory and is told, through its Records, what to install
// when a transaction applies and what to put back after a dry run.

// Records is what a package attached to the registry (Registry.Attach)
// implements. The engine calls Load once, at Attach; the others with the
// registry lock held for writing.
type Records interface {
	// Load reads the package's records from the store (l.Scan) and may
	// migrate them (l.Put, l.Delete: straight to the store).
	Load(l *Loader) error
	// Save is called at a dry run's first write of a record (cluster
	// mode, Registry.Do): it returns what puts memory back as it was.
	// The undo runs with the registry lock held for writing, after the
	// dry run's function returned.
	Save(kind snapshot.Kind, id uint64, value []byte) (undo func())
	// Decode reads a record of an applied transaction (value nil: a
	// delete), as every node applies it; it returns what installs it
	// in memory, called with the registry lock held for writing.
	Decode(kind snapshot.Kind, id uint64, value []byte) (install func(), err error)
	// Flush writes what the package keeps in memory only (last uses of
	// keys and sessions) at each snapshot and at Close. It must not be
	// called with the registry lock held.
	Flush() error
	// HasAccount reports whether account exists; the registry lock is
	// held. A website is created only for an existing account.
	HasAccount(account uint32) bool
}

// Registry is the engine's registry seam: named records (a kind and an id)
// changed in transactions, replicated through the cluster's log in cluster
// mode. Get one with Engine.Registry.
type Registry struct{ e *Engine }

// Registry returns the engine's registry seam.
func (e *Engine) Registry() *Registry { return &Registry{e: e} }

// ErrAttached: a package is attached to the registry already.
var ErrAttached = errors.New("engine: a package is attached to the registry already")

// Attach makes h the package whose records the registry holds, and loads
// them (h.Load). Only one can be attached; Attached returns it.
func (r *Registry) Attach(h Records) error {
	e := r.e
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	// No transaction applies meanwhile: what the follower stored before
	// is loaded here, what it applies after is installed through h.
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	e.regMu.Lock()
	defer e.regMu.Unlock()
	if e.records != nil {
		return ErrAttached
	}
	if err := h.Load(&Loader{e: e}); err != nil {
		return err
	}
	e.records = h
	return nil
}

// Attached returns the package attached to the registry, or nil.
func (r *Registry) Attached() Records {
	r.e.regMu.RLock()
	defer r.e.regMu.RUnlock()
	return r.e.records
}

// Loader reads and migrates records during Records.Load.
type Loader struct{ e *Engine }

// Scan calls fn for each stored record of kind, by id.
func (l *Loader) Scan(kind snapshot.Kind, fn func(id uint64, v []byte) error) error {
	return l.e.store.Scan(kind, fn)
}

// Put stores a record directly (a migration, in one process).
func (l *Loader) Put(kind snapshot.Kind, id uint64, v []byte) error {
	if !attachedRecord(kind, id) {
		return notAttached(kind, id)
	}
	return l.e.store.Put(kind, id, v)
}

// Delete deletes a record directly.
func (l *Loader) Delete(kind snapshot.Kind, id uint64) error {
	if !attachedRecord(kind, id) {
		return notAttached(kind, id)
	}
	return l.e.store.Delete(kind, id)
}

// Lock modes of Registry.Do in one process.
const (
	LockWrite = regWrite // the registry lock for writing
	LockRead  = regRead  // for reading: the function guards what it changes with its own lock
	LockNone  = regNone  // none
)

// Do runs fn, a change of the registry, as one transaction: with the
// registry lock held as lock says in one process; in cluster mode as a dry
// run under the write lock, published and applied on every node, run again
// if another node's change came first. fn writes through Put and Delete
// and must leave its results in variables set afresh by each run.
func (r *Registry) Do(ctx context.Context, lock LockMode, fn func() error) error {
	return r.e.regDoAs(ctx, lock, fn)
}

// Put stores a record; only inside Do. Only the attached package's
// records (attachedRecord) can be written through the seam: a website, its
// goals, the website counter or statistics are the engine's
// (ErrNotAttachedRecord).
func (r *Registry) Put(kind snapshot.Kind, id uint64, v []byte) error {
	if !attachedRecord(kind, id) {
		return notAttached(kind, id)
	}
	return r.e.regPut(kind, id, v)
}

// Delete deletes a record; only inside Do.
func (r *Registry) Delete(kind snapshot.Kind, id uint64) error {
	if !attachedRecord(kind, id) {
		return notAttached(kind, id)
	}
	return r.e.regDelete(kind, id)
}

// ErrNotAttachedRecord: a write through the Registry of a record that is
// not the attached package's.
var ErrNotAttachedRecord = errors.New("engine: not a record of the package attached to the registry")

func notAttached(kind snapshot.Kind, id uint64) error {
	return fmt.Errorf("%w: %s %d", ErrNotAttachedRecord, kind, id)
}

// attachedRecord reports whether a record is one the attached package
// stores through the Registry: the kinds a registry transaction carries for
// it (decodeOps), the engine's own records aside.
func attachedRecord(kind snapshot.Kind, id uint64) bool {
	switch kind {
	case snapshot.KindCounter:
		return id != counterWebsite
	case snapshot.KindAccount, snapshot.KindInvite, snapshot.KindSession, snapshot.KindReport, snapshot.KindSecret:
		return true
	}
	return false
}

// TxBytes is the size of the records the dry run in progress wrote so far
// (0 outside one, and in one process).
func (r *Registry) TxBytes() int { return r.e.regTxBytes() }

// MaxTxBytes is the largest transaction the cluster's log takes (0: no
// cluster).
func (r *Registry) MaxTxBytes() int {
	if r.e.opts.Cluster == nil {
		return 0
	}
	return r.e.opts.Cluster.MaxMessage()
}

// Get reads a stored record (snapshot.ErrNotFound when there is none).
func (r *Registry) Get(kind snapshot.Kind, id uint64) ([]byte, error) {
	return r.e.store.Get(kind, id)
}

// PutMany stores records directly, in one batch: for what is not shared
// between nodes (last uses, in one process).
func (r *Registry) PutMany(kind snapshot.Kind, ids []uint64, vs [][]byte) error {
	for _, id := range ids {
		if !attachedRecord(kind, id) {
			return notAttached(kind, id)
		}
	}
	return r.e.store.PutMany(kind, ids, vs)
}

// DeleteNow deletes a record directly (an expired session, in one
// process).
func (r *Registry) DeleteNow(kind snapshot.Kind, id uint64) error {
	if !attachedRecord(kind, id) {
		return notAttached(kind, id)
	}
	return r.e.store.Delete(kind, id)
}

// HasWebsite reports whether website exists; the registry lock is held.
func (r *Registry) HasWebsite(website uint32) bool {
	_, ok := r.e.sites[website]
	return ok
}

// Lock, Unlock, RLock and RUnlock take the registry lock, which guards the
// attached package's records in memory too (a dry run changes them under
// the write lock and puts them back).
func (r *Registry) Lock()    { r.e.regMu.Lock() }
func (r *Registry) Unlock()  { r.e.regMu.Unlock() }
func (r *Registry) RLock()   { r.e.regMu.RLock() }
func (r *Registry) RUnlock() { r.e.regMu.RUnlock() }

// Enter holds the engine open until Exit; false once it is closed.
func (r *Registry) Enter() bool { return r.e.enter() }

// Exit ends an Enter.
func (r *Registry) Exit() { r.e.exit() }

// Clustered reports whether the engine runs in cluster mode.
func (r *Registry) Clustered() bool { return r.e.opts.Cluster != nil }

// Now is the engine's clock (Options.Now).
func (r *Registry) Now() time.Time { return r.e.now() }

// Rand is the engine's source of randomness (Options.Rand).
func (r *Registry) Rand() io.Reader { return r.e.opts.Rand }

// Logger is the engine's logger.
func (r *Registry) Logger() *slog.Logger { return r.e.opts.Logger }

// HashPassword returns the PHC string of an argon2id hash of pw, computed
// when the engine's hash gate lets it (MaxPasswordHashes at once, ErrBusy
// after PasswordHashWait). It must not be called with the lock held.
func (r *Registry) HashPassword(ctx context.Context, pw string) (string, error) {
	return r.e.hashPassword(ctx, pw)
}

// CheckPassword compares pw with a PHC argon2id hash, through the same
// gate.
func (r *Registry) CheckPassword(ctx context.Context, phc, pw string) (bool, error) {
	return r.e.checkPassword(ctx, phc, pw)
}

// engineRecord reports whether a registry record is the engine's own.
func engineRecord(kind snapshot.Kind, id uint64) bool {
	switch kind {
	case snapshot.KindWebsite, snapshot.KindGoals:
		return true
	case snapshot.KindCounter:
		return id == counterWebsite
	}
	return false
}

// storeHas reports whether the store holds a record of kind.
func (e *Engine) storeHas(kind snapshot.Kind) (bool, error) {
	found := errors.New("found")
	err := e.store.Scan(kind, func(uint64, []byte) error { return found })
	if errors.Is(err, found) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("engine: %s records: %w", kind, err)
	}
	return false, nil
}

// flushRecords writes what the attached package keeps in memory only.
func (e *Engine) flushRecords() error {
	e.regMu.RLock()
	h := e.records
	e.regMu.RUnlock()
	if h == nil {
		return nil
	}
	return h.Flush()
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/webstats/webstats/engine/internal/regtx"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/website"
	"github.com/webstats/webstats/snapshot"
)

// Registry changes in cluster mode (docs/design.md, "Cluster mode"): each
// is a dry run whose writes a regtx.Tx collects, published on the shared
// log with the registry version it saw and applied by every node's
// follower if that is still the version (package regtx says how). The
// engine keeps what locks, installs and waits.

// regDo runs fn, a change of the registry, with regMu held for writing.
// In one process fn's writes go to the store as it makes them. In cluster
// mode fn is a dry run, published and applied as a transaction (see
// above), and run again when another transaction came first, until
// regtx.Wait; regDo returns once this node applied it. fn must leave its
// results in variables the caller reads after regDo, set afresh by each
// run: a run that conflicted is followed by another. A node makes one
// change at a time (regtx.Runner), so its own changes queue instead of
// conflicting.
func (e *Engine) regDo(ctx context.Context, fn func() error) error {
	return e.regDoAs(ctx, regWrite, fn)
}

// LockMode is the lock a change takes in one process (Registry.Do).
type LockMode int

const (
	regWrite LockMode = iota // regMu for writing
	regRead                  // regMu for reading (fn guards what it changes with its own lock, or only writes the store)
	regNone                  // none (fn takes its own)
)

// regDoAs is regDo for a change that, in one process, needs only the lock
// given (sessions and reports, which had no need of regMu's write lock,
// keep off it). In cluster mode every change is a dry run under regMu's
// write lock.
func (e *Engine) regDoAs(ctx context.Context, lock LockMode, fn func() error) error {
	if e.opts.Cluster == nil {
		switch lock {
		case regWrite:
			e.regMu.Lock()
			defer e.regMu.Unlock()
		case regRead:
			e.regMu.RLock()
			defer e.regMu.RUnlock()
		}
		return fn()
	}
	return e.regRunner.Do(ctx, func() (*regtx.Tx, error) { return e.dryRun(fn) })
}

// dryRun runs fn under regMu with its writes collected, then puts memory
// back as it was.
func (e *Engine) dryRun(fn func() error) (*regtx.Tx, error) {
	e.regMu.Lock()
	defer e.regMu.Unlock()
	tx := regtx.New(e.regSeq)
	e.regTx = tx
	defer func() {
		e.regTx = nil
		tx.Undo()
	}()
	return tx, fn()
}

// regTxBytes is the size of the records the dry run in progress has
// written so far (0 outside one). regMu is held for writing.
func (e *Engine) regTxBytes() int {
	if tx := e.regTx; tx != nil {
		return tx.Bytes()
	}
	return 0
}

// regPut stores a registry record (in a dry run: collects it).
func (e *Engine) regPut(kind snapshot.Kind, id uint64, value []byte) error {
	if tx := e.regTx; tx != nil {
		if tx.Put(kind, id, value) {
			e.saveLocked(tx, kind, id, value)
		}
		return nil
	}
	if err := e.store.Put(kind, id, value); err != nil {
		return fmt.Errorf("engine: write registry: %w", err)
	}
	return nil
}

// regDelete deletes a registry record (in a dry run: collects it).
func (e *Engine) regDelete(kind snapshot.Kind, id uint64) error {
	if tx := e.regTx; tx != nil {
		if tx.Delete(kind, id) {
			e.saveLocked(tx, kind, id, nil)
		}
		return nil
	}
	if err := e.store.Delete(kind, id); err != nil {
		return fmt.Errorf("engine: delete %s %d: %w", kind, id, err)
	}
	return nil
}

// saveLocked records, at a dry run's first write of a record, how to put
// back what memory holds for it. regMu is held for writing (and, for the
// attached package's records, what that package holds).
func (e *Engine) saveLocked(tx *regtx.Tx, kind snapshot.Kind, id uint64, value []byte) {
	if !engineRecord(kind, id) {
		if e.records != nil {
			if undo := e.records.Save(kind, id, value); undo != nil {
				tx.OnUndo(undo)
			}
		}
		return
	}
	switch kind {
	case snapshot.KindCounter:
		w := e.nextWebsite
		tx.OnUndo(func() { e.nextWebsite = w })
	case snapshot.KindWebsite:
		s := e.sites[uint32(id)]
		var web *Website
		if s != nil {
			web = s.web
		}
		tx.OnUndo(func() {
			if cur := e.sites[uint32(id)]; cur != nil {
				delete(e.domains, cur.web.Domain)
				delete(e.sites, uint32(id))
			}
			if s != nil {
				if s.web != web {
					s.setWebsite(web)
				}
				e.sites[uint32(id)] = s
				e.domains[web.Domain] = uint32(id)
			}
		})
	case snapshot.KindGoals:
		if s := e.sites[uint32(id)]; s != nil {
			old := s.goals
			tx.OnUndo(func() { s.goals = old })
		}
	}
}

// applyRegistry applies the registry transaction of log position seq if
// the registry is still at the version it was made on, on every node alike;
// it is dropped otherwise. Its records and the new version are stored in
// one batch, then installed in memory. A transaction this store already
// decided (before a restart) is skipped.
func (e *Engine) applyRegistry(seq uint64, m regtx.Message) error {
	// Only the follower changes regSeq (under regMu, for the dry runs
	// that read it), so it reads it without the lock, and writes the
	// store before taking it: tracking and queries wait for no fsync.
	// applyMu keeps Registry.Attach out, which loads what was stored
	// before and installs through the package what applies after.
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	if seq <= e.regSeq {
		e.seq.Store(seq)
		return nil
	}
	applied := m.Base == e.regSeq
	var dropped []*site
	if applied {
		var err error
		if dropped, err = e.installRegistry(seq, m.Ops); err != nil {
			return err
		}
	}
	var err error
	for _, s := range dropped {
		err = errors.Join(err, e.dropSiteData(s))
	}
	e.seq.Store(seq)
	e.regRunner.Decided(m.ID, applied)
	if err != nil {
		// The registry changed; only the deleted website's keys may be
		// left, which Open ignores.
		e.opts.Logger.Error("cluster: delete website data", "seq", seq, "err", err)
	}
	return nil
}

// installRegistry stores the records of the transaction at seq with the
// new version, installs them and returns the sites it removed, whose data
// the caller drops after the locks. applyMu is held.
func (e *Engine) installRegistry(seq uint64, ops []snapshot.Op) ([]*site, error) {
	// Decode everything first: a record this version cannot read stops
	// the follower here, before anything changed.
	apply, err := e.decodeOps(ops)
	if err != nil {
		return nil, fmt.Errorf("message %d: %w", seq, err)
	}
	if err := e.store.Write(append(slices.Clone(ops), regtx.VersionOp(seq))); err != nil {
		return nil, fmt.Errorf("engine: apply registry transaction %d: %w", seq, err)
	}
	e.regMu.Lock()
	defer e.regMu.Unlock()
	var dropped []*site
	for _, fn := range apply {
		if s := fn(); s != nil {
			dropped = append(dropped, s)
		}
	}
	e.regSeq = seq
	return dropped, nil
}

// install puts a decoded record of a transaction into memory, with regMu
// held; it returns the site it removed, if any.
type install func() *site

// decodeOps reads a transaction's records into what installs each in
// memory (with regMu held).
func (e *Engine) decodeOps(ops []snapshot.Op) ([]install, error) {
	out := make([]install, 0, len(ops))
	for _, o := range ops {
		var value []byte
		if !o.Delete {
			value = o.Value
		}
		var fn install
		var err error
		switch {
		case !engineRecord(o.Kind, o.ID):
			fn, err = e.decodeAttached(o.Kind, o.ID, value)
		case o.Kind == snapshot.KindCounter:
			fn, err = e.decodeCounter(o.Delete, value)
		case o.Kind == snapshot.KindWebsite:
			fn, err = e.decodeWebsite(uint32(o.ID), o.Delete, value)
		case o.Kind == snapshot.KindGoals:
			fn, err = e.decodeGoals(uint32(o.ID), o.Delete, value)
		}
		if err != nil {
			return nil, fmt.Errorf("engine: registry transaction: %s %d: %w: %w", o.Kind, o.ID, snapshot.ErrCorrupt, err)
		}
		out = append(out, fn)
	}
	return out, nil
}

// decodeAttached reads a record of the attached package (value nil: a
// delete); without one, it is only stored.
func (e *Engine) decodeAttached(kind snapshot.Kind, id uint64, value []byte) (install, error) {
	if !attachedRecord(kind, id) {
		return nil, errors.New("unknown kind")
	}
	if e.records == nil {
		return func() *site { return nil }, nil
	}
	fn, err := e.records.Decode(kind, id, value)
	if err != nil {
		return nil, err
	}
	return func() *site { fn(); return nil }, nil
}

// decodeCounter reads the website counter.
func (e *Engine) decodeCounter(deleted bool, value []byte) (install, error) {
	var n uint64
	if !deleted {
		var err error
		if n, err = strconv.ParseUint(string(value), 10, 32); err != nil {
			return nil, err
		}
	}
	return func() *site { e.nextWebsite = uint32(n); return nil }, nil
}

// decodeWebsite reads website id's record; its install adds, replaces or
// removes the site.
func (e *Engine) decodeWebsite(id uint32, deleted bool, value []byte) (install, error) {
	var w *Website
	if !deleted {
		w = new(Website)
		if err := json.Unmarshal(value, w); err != nil {
			return nil, err
		}
		if w.ID != id {
			return nil, fmt.Errorf("the record of website %d", w.ID)
		}
		if _, err := website.LoadLocation(w.Timezone); err != nil {
			return nil, err
		}
	}
	return func() *site {
		s := e.sites[id]
		switch {
		case w == nil && s != nil:
			delete(e.sites, id)
			delete(e.domains, s.web.Domain)
			return s
		case w != nil && s != nil:
			delete(e.domains, s.web.Domain)
			s.setWebsite(w)
			e.domains[w.Domain] = w.ID
		case w != nil:
			e.addSiteLocked(w, newSiteState(w.ID))
		}
		return nil
	}, nil
}

// decodeGoals reads website id's goals.
func (e *Engine) decodeGoals(id uint32, deleted bool, value []byte) (install, error) {
	var g *segments.GoalSet
	if !deleted {
		g = new(segments.GoalSet)
		if err := json.Unmarshal(value, g); err != nil {
			return nil, err
		}
		if len(g.Goals) > MaxGoals {
			return nil, fmt.Errorf("%d goals", len(g.Goals))
		}
		if err := g.Compile(); err != nil {
			return nil, err
		}
	}
	return func() *site {
		if s := e.sites[id]; s != nil {
			s.goals = g
		}
		return nil
	}, nil
}

// loadRegVersion reads the log position of the last registry transaction
// this store applied (cluster mode).
func (e *Engine) loadRegVersion() error {
	v, err := e.store.Get(snapshot.KindCluster, regtx.VersionID)
	if errors.Is(err, snapshot.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: registry version: %w", err)
	}
	if e.regSeq, err = regtx.ParseVersion(v); err != nil {
		return fmt.Errorf("engine: registry version: %w", snapshot.ErrCorrupt)
	}
	return nil
}

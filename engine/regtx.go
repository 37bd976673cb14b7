package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/wire"
	"github.com/webstats/webstats/snapshot"
)

// Registry changes in cluster mode (docs/design.md, "Cluster mode").
//
// Every change of the registry (accounts, keys, websites, goals, sessions,
// invitations, reports sent, secrets) is a transaction that goes through
// the shared log like the hits, so that every node applies the same
// changes in the same order. A node makes one in three steps:
//
//  1. It runs the change as one process does (regDo), under regMu, but the
//     registry records it writes are collected instead of stored, and what
//     it changed in memory is put back as it was before regMu is released:
//     a dry run, whose result (a website with its id, a key) is kept.
//  2. It publishes the records with the registry version the dry run saw:
//     the log position of the last transaction applied.
//  3. Every node's follower applies a transaction only if its version is
//     still the registry's (applyRegistry): nothing changed since the dry
//     run, so applying its records gives what the dry run computed. If
//     another transaction came first, every node drops it alike, and the
//     node that made it runs the change again on the newer registry (two
//     nodes creating one domain: the second is refused as in one process).
//
// Random and time values are decided by the dry run and travel as data: a
// follower never draws or reads the clock. Secrets travel as their hashes
// only, as they are stored.

// regWait bounds a change in cluster mode twice: the wait for its turn on
// the node, then its runs, publishes and the waits for this node to apply
// them, after conflicts included.
const regWait = 10 * time.Second

// regVersionID is the snapshot.KindCluster record that holds the log
// position of the last registry transaction applied (decimal).
const regVersionID = 2

// msgRegistry is the kind byte of a registry transaction's message; its
// website (for Cluster.Publish) is 0.
const msgRegistry = 'r'

// regTx collects the writes of a dry run, with what puts memory back.
type regTx struct {
	base  uint64
	ops   []snapshot.Op
	bytes int // of ops, about as encoded
	seen  map[regKey]bool
	undo  []func()
}

type regKey struct {
	kind snapshot.Kind
	id   uint64
}

// regDo runs fn, a change of the registry, with regMu held for writing.
// In one process fn's writes go to the store as it makes them. In cluster
// mode fn is a dry run, published and applied as a transaction (see
// above), and run again (at most regTries times) when another transaction
// came first, until regWait; regDo returns once this node applied it. fn
// must leave its results in variables the caller reads after regDo, set
// afresh by each run: a run that conflicted is followed by another. A node
// makes one change at a time (regTxSem), so its own changes queue instead
// of conflicting.
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
	// The caller going away (or its deadline) does not cut a change
	// short: once published it may apply anyway, and its outcome should
	// be known. Its regWait starts once it has its turn on this node, so
	// that time spent queued cannot cut short one already published.
	ctx = context.WithoutCancel(ctx)
	queued, cancelQueue := context.WithTimeout(ctx, regWait)
	select {
	case e.regTxSem <- struct{}{}:
		cancelQueue()
	case <-queued.Done():
		cancelQueue()
		return fmt.Errorf("%w: registry changes are queued on this node: %w", ErrClusterUnavailable, queued.Err())
	}
	defer func() { <-e.regTxSem }()
	ctx, cancel := context.WithTimeout(ctx, regWait)
	defer cancel()
	for tries := 1; ; tries++ {
		e.regMu.Lock()
		tx := &regTx{base: e.regSeq, seen: make(map[regKey]bool)}
		e.regTx = tx
		err := func() (err error) {
			defer func() {
				e.regTx = nil
				e.undoLocked(tx)
			}()
			return fn()
		}()
		e.regMu.Unlock()
		if err != nil || len(tx.ops) == 0 {
			return err
		}
		ok, err := e.commitShared(ctx, tx)
		if err != nil || ok {
			return err
		}
		// Another node's change came first: run again on the registry
		// with it, after a pause of up to a millisecond, so that nodes
		// making changes in step do not collide every time.
		e.cluster.regConflicts.Add(1)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: the registry change lost to other nodes' %d times: %w", ErrClusterUnavailable, tries, ctx.Err())
		case <-time.After(time.Duration(rand.Int64N(int64(time.Millisecond)))):
		}
	}
}

// regTxBytes is the size of the records the dry run in progress has
// written so far (0 outside one). regMu is held for writing.
func (e *Engine) regTxBytes() int {
	if tx := e.regTx; tx != nil {
		return tx.bytes
	}
	return 0
}

// regPut stores a registry record (in a dry run: collects it).
func (e *Engine) regPut(kind snapshot.Kind, id uint64, value []byte) error {
	if tx := e.regTx; tx != nil {
		e.saveLocked(tx, kind, id, value)
		tx.ops = append(tx.ops, snapshot.Op{Kind: kind, ID: id, Value: slices.Clone(value)})
		tx.bytes += len(value) + 16
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
		e.saveLocked(tx, kind, id, nil)
		tx.ops = append(tx.ops, snapshot.Op{Kind: kind, ID: id, Delete: true})
		tx.bytes += 16
		return nil
	}
	if err := e.store.Delete(kind, id); err != nil {
		return fmt.Errorf("engine: delete %s %d: %w", kind, id, err)
	}
	return nil
}

// saveLocked records, at a dry run's first write of a record, how to put
// back what memory holds for it. The changes write a record before they
// change memory, so this is memory as it was. regMu is held for writing
// (and, for the attached package's records, what that package holds).
func (e *Engine) saveLocked(tx *regTx, kind snapshot.Kind, id uint64, value []byte) {
	k := regKey{kind, id}
	if tx.seen[k] {
		return
	}
	tx.seen[k] = true
	if !engineRecord(kind, id) {
		if e.records != nil {
			if undo := e.records.Save(kind, id, value); undo != nil {
				tx.undo = append(tx.undo, undo)
			}
		}
		return
	}
	switch kind {
	case snapshot.KindCounter:
		w := e.nextWebsite
		tx.undo = append(tx.undo, func() { e.nextWebsite = w })
	case snapshot.KindWebsite:
		s := e.sites[uint32(id)]
		var web *Website
		if s != nil {
			web = s.web
		}
		tx.undo = append(tx.undo, func() {
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
			tx.undo = append(tx.undo, func() { s.goals = old })
		}
	}
}

// undoLocked puts memory back as it was before tx's dry run, latest change
// first. regMu is held for writing.
func (e *Engine) undoLocked(tx *regTx) {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		tx.undo[i]()
	}
}

// regWaiters are the transactions this node published and waits for, by
// their id; applyRegistry says whether each was applied.
type regWaiters struct {
	mu sync.Mutex
	m  map[[16]byte]chan bool
}

// commitShared publishes tx and waits until this node's follower decided
// it: true when applied, false when another transaction came first.
func (e *Engine) commitShared(ctx context.Context, tx *regTx) (bool, error) {
	var id [16]byte
	if _, err := io.ReadFull(e.opts.Rand, id[:]); err != nil {
		return false, fmt.Errorf("engine: registry transaction id: %w", err)
	}
	msg, err := encodeRegistry(tx.base, id, tx.ops)
	if err != nil {
		return false, err
	}
	if len(msg) > e.opts.Cluster.MaxMessage() {
		return false, fmt.Errorf("%w: a registry change of %d bytes; the cluster's log takes %d", ErrTooLarge, len(msg), e.opts.Cluster.MaxMessage())
	}
	done := make(chan bool, 1)
	e.regWaiting.mu.Lock()
	if e.regWaiting.m == nil {
		e.regWaiting.m = make(map[[16]byte]chan bool)
	}
	e.regWaiting.m[id] = done
	e.regWaiting.mu.Unlock()
	defer func() {
		e.regWaiting.mu.Lock()
		delete(e.regWaiting.m, id)
		e.regWaiting.mu.Unlock()
	}()
	t0 := time.Now()
	if err := e.opts.Cluster.Publish(ctx, 0, msg); err != nil {
		e.cluster.publishErrs.Add(1)
		return false, fmt.Errorf("%w: %w", ErrClusterUnavailable, err)
	}
	e.cluster.publishNs.Add(int64(time.Since(t0)))
	e.cluster.publishes.Add(1)
	select {
	case ok := <-done:
		return ok, nil
	case <-ctx.Done():
		// Published but not applied here yet (the follower is behind
		// or stopped): it may still apply, on every node.
		return false, fmt.Errorf("%w: the registry change was published but this node has not applied it yet: %w", ErrClusterUnavailable, ctx.Err())
	}
}

// encodeRegistry makes a transaction's message: msgRegistry, the registry
// version it was made on (uvarint), its id, the number of writes (uvarint),
// then each write: kind, id (uvarint), 0 for a delete or 1 and the value's
// length (uvarint) and value.
func encodeRegistry(base uint64, id [16]byte, ops []snapshot.Op) ([]byte, error) {
	msg := binary.AppendUvarint([]byte{msgRegistry}, base)
	msg = append(msg, id[:]...)
	msg = binary.AppendUvarint(msg, uint64(len(ops)))
	for _, o := range ops {
		if o.Kind == 0 || o.Kind == snapshot.KindCluster || o.Kind == snapshot.KindSalt {
			return nil, fmt.Errorf("engine: registry transaction: kind %s is not shared", o.Kind)
		}
		msg = append(msg, byte(o.Kind))
		msg = binary.AppendUvarint(msg, o.ID)
		if o.Delete {
			msg = append(msg, 0)
			continue
		}
		msg = append(msg, 1)
		msg = binary.AppendUvarint(msg, uint64(len(o.Value)))
		msg = append(msg, o.Value...)
	}
	return msg, nil
}

// regMessage is a decoded registry transaction.
type regMessage struct {
	base uint64
	id   [16]byte
	ops  []snapshot.Op
}

// decodeRegistry reads a message of encodeRegistry. Values alias msg.
func decodeRegistry(msg []byte) (regMessage, error) {
	var m regMessage
	bad := fmt.Errorf("engine: registry transaction: %w", wire.ErrRecord)
	if len(msg) == 0 || msg[0] != msgRegistry {
		return m, bad
	}
	msg = msg[1:]
	base, k := binary.Uvarint(msg)
	if k <= 0 || len(msg)-k < 16 {
		return m, bad
	}
	m.base = base
	msg = msg[k:]
	copy(m.id[:], msg)
	msg = msg[16:]
	n, k := binary.Uvarint(msg)
	if k <= 0 || n > uint64(len(msg)) {
		return m, bad
	}
	msg = msg[k:]
	m.ops = make([]snapshot.Op, 0, n)
	for range n {
		if len(msg) < 1 {
			return m, bad
		}
		o := snapshot.Op{Kind: snapshot.Kind(msg[0])}
		if o.Kind == 0 || o.Kind == snapshot.KindCluster || o.Kind == snapshot.KindSalt {
			return m, bad
		}
		if o.ID, k = binary.Uvarint(msg[1:]); k <= 0 || len(msg) < 2+k {
			return m, bad
		}
		msg = msg[1+k:]
		put := msg[0]
		msg = msg[1:]
		switch put {
		case 0:
			o.Delete = true
		case 1:
			l, k := binary.Uvarint(msg)
			if k <= 0 || l > uint64(len(msg)-k) {
				return m, bad
			}
			o.Value = msg[k : k+int(l)]
			msg = msg[k+int(l):]
		default:
			return m, bad
		}
		m.ops = append(m.ops, o)
	}
	if len(msg) != 0 {
		return m, bad
	}
	return m, nil
}

// applyRegistry applies the registry transaction of log position seq if
// the registry is still at the version it was made on, on every node alike;
// it is dropped otherwise. Its records and the new version are stored in
// one batch, then installed in memory. A transaction this store already
// decided (before a restart) is skipped.
func (e *Engine) applyRegistry(seq uint64, m regMessage) error {
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
	applied := m.base == e.regSeq
	var dropped []*site
	if applied {
		// Decode everything first: a record this version cannot read
		// stops the follower here, before anything changed.
		apply, err := e.decodeOps(m.ops)
		if err != nil {
			return fmt.Errorf("message %d: %w", seq, err)
		}
		ops := append(slices.Clone(m.ops), snapshot.Op{Kind: snapshot.KindCluster, ID: regVersionID, Value: strconv.AppendUint(nil, seq, 10)})
		if err := e.store.Write(ops); err != nil {
			return fmt.Errorf("engine: apply registry transaction %d: %w", seq, err)
		}
		e.regMu.Lock()
		for _, fn := range apply {
			if s := fn(); s != nil {
				dropped = append(dropped, s)
			}
		}
		e.regSeq = seq
		e.regMu.Unlock()
	}
	var err error
	for _, s := range dropped {
		err = errors.Join(err, e.dropSiteData(s))
	}
	e.seq.Store(seq)
	e.regWaiting.mu.Lock()
	if done := e.regWaiting.m[m.id]; done != nil {
		select {
		case done <- applied:
		default: // (an id twice in the log: the first answer stands)
		}
	}
	e.regWaiting.mu.Unlock()
	if err != nil {
		// The registry changed; only the deleted website's keys may be
		// left, which Open ignores.
		e.opts.Logger.Error("cluster: delete website data", "seq", seq, "err", err)
	}
	return nil
}

// decodeOps reads a transaction's records into what installs each in
// memory (with regMu held); an install returns the site it
// removed, whose data is dropped after the locks.
func (e *Engine) decodeOps(ops []snapshot.Op) ([]func() *site, error) {
	out := make([]func() *site, 0, len(ops))
	for _, o := range ops {
		id := o.ID
		bad := func(err error) error {
			return fmt.Errorf("engine: registry transaction: %s %d: %w: %w", o.Kind, id, snapshot.ErrCorrupt, err)
		}
		var fn func() *site
		if !engineRecord(o.Kind, id) {
			switch o.Kind {
			case snapshot.KindCounter, snapshot.KindAccount, snapshot.KindInvite, snapshot.KindSession, snapshot.KindReport, snapshot.KindSecret:
			default:
				return nil, bad(errors.New("unknown kind"))
			}
			fn = func() *site { return nil } // only in the store
			if e.records != nil {
				var v []byte
				if !o.Delete {
					v = o.Value
				}
				install, err := e.records.Decode(o.Kind, id, v)
				if err != nil {
					return nil, bad(err)
				}
				fn = func() *site { install(); return nil }
			}
			out = append(out, fn)
			continue
		}
		switch o.Kind {
		case snapshot.KindCounter:
			var n uint64
			if !o.Delete {
				var err error
				if n, err = strconv.ParseUint(string(o.Value), 10, 32); err != nil {
					return nil, bad(err)
				}
			}
			fn = func() *site { e.nextWebsite = uint32(n); return nil }
		case snapshot.KindWebsite:
			var w *Website
			if !o.Delete {
				w = new(Website)
				if err := json.Unmarshal(o.Value, w); err != nil || uint64(w.ID) != id {
					return nil, bad(err)
				}
				if _, err := loadLocation(w.Timezone); err != nil {
					return nil, bad(err)
				}
			}
			fn = func() *site {
				s := e.sites[uint32(id)]
				switch {
				case w == nil && s != nil:
					delete(e.sites, uint32(id))
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
			}
		case snapshot.KindGoals:
			var g *segments.GoalSet
			if !o.Delete {
				g = new(segments.GoalSet)
				if err := json.Unmarshal(o.Value, g); err != nil || len(g.Goals) > MaxGoals {
					return nil, bad(err)
				}
				if err := g.Compile(); err != nil {
					return nil, bad(err)
				}
			}
			fn = func() *site {
				if s := e.sites[uint32(id)]; s != nil {
					s.goals = g
				}
				return nil
			}
		default:
			return nil, bad(errors.New("unknown kind"))
		}
		out = append(out, fn)
	}
	return out, nil
}

// loadRegVersion reads the log position of the last registry transaction
// this store applied (cluster mode).
func (e *Engine) loadRegVersion() error {
	v, err := e.store.Get(snapshot.KindCluster, regVersionID)
	if errors.Is(err, snapshot.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: registry version: %w", err)
	}
	if e.regSeq, err = strconv.ParseUint(string(v), 10, 64); err != nil {
		return fmt.Errorf("engine: registry version: %w", snapshot.ErrCorrupt)
	}
	return nil
}

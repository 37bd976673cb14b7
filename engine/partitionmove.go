package engine

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/partitions"
	"github.com/webstats/webstats/snapshot"
)

// partitionNode is the engine as its partitions.Mover sees it.
type partitionNode struct{ e *Engine }

// Position is e.seq: only the follower, which runs the Mover, moves it.
func (n partitionNode) Position() uint64       { return n.e.seq.Load() }
func (n partitionNode) SetPosition(seq uint64) { n.e.seq.Store(seq) }

func (n partitionNode) Websites(p int) []uint32 {
	var out []uint32
	for _, s := range n.e.partitionSites(p) {
		out = append(out, s.state.id)
	}
	return out
}

// Replace is replaceSite, then, for a website given keys, the rebuild of
// its realtime state from them.
func (n partitionNode) Replace(website uint32, next func() ([]byte, []byte, bool, error)) error {
	n.e.regMu.RLock()
	s := n.e.sites[website]
	n.e.regMu.RUnlock()
	if s == nil {
		return nil // (only the follower deletes websites)
	}
	if err := n.e.replaceSite(s, next); err != nil || next == nil {
		return err
	}
	return n.e.rebuildSiteRealtime(s)
}

func (n partitionNode) SaveHeld(record []byte) error {
	if err := n.e.store.Put(snapshot.KindCluster, heldID, record); err != nil {
		return fmt.Errorf("engine: partitions held: %w", err)
	}
	return nil
}

func (n partitionNode) LowerTrim(seq uint64) error {
	n.e.snapMu.Lock()
	defer n.e.snapMu.Unlock()
	return n.e.store.LowerTrim(seq)
}

// fetchDir is where fetches are written: the data directory, unless the
// store is not on the operating system's file system.
func (e *Engine) fetchDir() string {
	if e.opts.FS != nil || e.opts.Dir == "" {
		return ""
	}
	return e.opts.Dir
}

// sweep empties the websites of partitions not held that have statistics
// here: a crash during a drop, or an import given up.
func (e *Engine) sweep() error {
	var errs []error
	for _, s := range e.allSites() {
		if !e.applies(s.state.id) && e.hasStats(s) {
			if err := e.replaceSite(s, nil); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// allSites returns every website of the registry.
func (e *Engine) allSites() []*site {
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	out := make([]*site, 0, len(e.sites))
	for _, s := range e.sites {
		out = append(out, s)
	}
	return out
}

// hasStats reports whether s has statistics in memory or in the store.
func (e *Engine) hasStats(s *site) bool {
	sh := e.shardOf(s.state.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := s.state
	return st.lastSeq > 0 || len(st.dates) > 0 || len(st.stored) > 0
}

// exportPartition writes partition p's state (partitions.Writer) from a
// snapshot taken now. It is Serve's fetch function.
func (e *Engine) exportPartition(ctx context.Context, p int, w io.Writer) error {
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	gen := e.held.Gen()
	if !e.held.Has(p) {
		return errElsewhere
	}
	if err := e.snapshot(); err != nil {
		return err
	}
	v, err := e.store.View()
	if err != nil {
		return err
	}
	defer v.Close()
	// Checked after the view is taken: a drop clears the bit (and moves
	// the generation) before it deletes anything, so the view holds the
	// partition whole unless it was dropped, or dropped and gained again,
	// meanwhile.
	if e.held.Gen() != gen || !e.held.Has(p) {
		return errElsewhere
	}
	trim, err := v.Trim()
	if err != nil {
		return err
	}
	sw, err := partitions.NewWriter(w, trim)
	if err != nil {
		return err
	}
	for _, s := range e.partitionSites(p) {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := sw.Website(s.state.id, func(key func(k, v []byte) error) error {
			return v.Website(s.state.id, key)
		})
		if err != nil {
			return err
		}
	}
	return sw.Close()
}

// replaceSite replaces website s's statistics, in memory and in the store,
// with the keys next gives (none when next is nil), and loads its state
// from them as Open does. Nothing of s may be applied meanwhile: the
// follower calls it, and s's partition is not held (queries go
// elsewhere).
func (e *Engine) replaceSite(s *site, next func() ([]byte, []byte, bool, error)) error {
	if next == nil {
		next = func() ([]byte, []byte, bool, error) { return nil, nil, false, nil }
	}
	id := s.state.id
	// No snapshot may write the website's keys meanwhile.
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	sh := e.shardOf(id)
	sh.mu.Lock()
	st := s.state
	deleted := st.deleted
	if !deleted {
		e.resetSiteLocked(st)
	}
	sh.mu.Unlock()
	e.wholes.Drop(id)
	e.results.Drop(id)
	e.forgetValues() // its values go with its days
	if deleted {
		return nil
	}
	err := e.store.ReplaceWebsite(id, next)
	// Its imports were replaced with the rest (the keys under its
	// prefix): read again by the next query.
	e.dropImports(id)
	if err != nil {
		return fmt.Errorf("engine: website %d: %w", id, err)
	}
	meta, err := e.store.Site(id)
	if errors.Is(err, snapshot.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	stored := make(map[buckets.Date]struct{})
	err = e.store.StatePeriods(id, func(first int32) error {
		stored[buckets.Date(first)] = struct{}{}
		return nil
	})
	if err != nil {
		return err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e.resetSiteLocked(st)
	st.stored = stored
	if err := e.decodeMetaLocked(st, meta); err != nil {
		return fmt.Errorf("engine: website %d state: %w", id, err)
	}
	return nil
}

// resetSiteLocked empties st, as a website without statistics: what a
// read made with the lock released brings back is not used (evictGen).
func (e *Engine) resetSiteLocked(st *siteState) {
	e.releaseLocked(st)
	gen, roll := st.evictGen+1, st.rollGen+1
	*st = *newSiteState(st.id)
	st.evictGen, st.rollGen = gen, roll
}

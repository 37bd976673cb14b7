package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/partitions"
	"github.com/webstats/webstats/snapshot"
)

// startFetches starts fetching the partitions of the target that are not
// held, not being fetched and not fetched yet (partitions.Fetches).
func (e *Engine) startFetches(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	for _, p := range e.fetches.Start(e.opts.Partitions.Target() &^ e.held.Mask()) {
		e.opts.Logger.Debug("cluster: fetch", "partition", p)
		e.bg.Add(1)
		go e.fetchPartition(ctx, p)
	}
}

// maxDropWait bounds how long a drop waits for the answers being computed
// from the partition (answers take milliseconds; the HTTP server's write
// timeout ends a request long before).
const maxDropWait = 30 * time.Second

// fetchPartition fetches partition p into a file. A failure other than
// no holder is logged and forgotten: the next startFetches tries again.
func (e *Engine) fetchPartition(ctx context.Context, p int) {
	defer e.bg.Done()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	path, err := e.download(fctx, p)
	e.opts.Logger.Debug("cluster: fetched", "partition", p, "err", err)
	switch {
	case err == nil || errors.Is(err, ErrNoHolder):
		e.fetches.Done(p, path, err)
	case errors.Is(err, ErrBusy):
		e.fetches.Retry(p) // again at the next tick
	default:
		e.fetches.Failed(p)
		if ctx.Err() == nil {
			e.opts.Logger.Warn("cluster: fetch partition", "partition", p, "err", err)
		}
	}
}

// download fetches partition p's state from a holder into a file. With no
// holder, it is ErrNoHolder if the partition can be rebuilt from the log
// (never trimmed); otherwise the partition waits for a holder.
func (e *Engine) download(ctx context.Context, p int) (string, error) {
	rc, err := e.opts.Partitions.Fetch(ctx, p)
	if errors.Is(err, ErrNoHolder) {
		first, ferr := e.opts.Partitions.First(ctx)
		if ferr != nil {
			return "", ferr
		}
		if first > 1 {
			return "", fmt.Errorf("%v, and the log no longer starts at its first message (it starts at %d): the partition's statistics wait for a node that holds it", err, first)
		}
	}
	if err != nil {
		return "", err
	}
	defer rc.Close()
	return e.fetches.Spool(rc)
}

// fetchDir is where fetches are written: the data directory, unless the
// store is not on the operating system's file system.
func (e *Engine) fetchDir() string {
	if e.opts.FS != nil || e.opts.Dir == "" {
		return ""
	}
	return e.opts.Dir
}

// planned reports whether rebalance has something to do now: a fetch is
// ready, or a partition no longer owned may go.
func (e *Engine) planned() bool {
	pt := e.opts.Partitions
	if e.fetches.AnyDone() {
		return true
	}
	for p := range partitions.Each(e.held.Mask() &^ pt.Target()) {
		if pt.Covered(p) {
			return true
		}
	}
	return false
}

// rebalance moves the held partitions towards the target: it drops what
// may go and imports what was fetched. It returns the position to follow
// from (e.seq, which a gain may move back). It runs in the follower, so
// nothing is applied meanwhile.
func (e *Engine) rebalance(ctx context.Context) (uint64, error) {
	target := e.opts.Partitions.Target()
	var errs []error
	if !e.swept {
		// Websites of partitions not held that have statistics here: a
		// crash during a drop, or an import given up.
		e.swept = true
		for _, s := range e.allSites() {
			if !e.applies(s.state.id) && e.hasStats(s) {
				errs = appendErr(errs, e.replaceSite(s, nil))
			}
		}
	}
	if err := e.dropCovered(ctx, target, &errs); err != nil {
		return e.seq.Load(), err
	}
	if err := e.gainFetched(ctx, target, &errs); err != nil {
		return e.seq.Load(), err
	}
	e.promote(ctx)
	e.opts.Partitions.SetHeld(e.held.Ready())
	return e.seq.Load(), errors.Join(errs...)
}

// appendErr appends err to errs if it is not nil.
func appendErr(errs []error, err error) []error {
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

// dropCovered drops the partitions held but not in target that every node
// of their target holds: no longer answered here first (a fetch in
// progress sees it and fails), and the questions already being answered
// finish, then their websites' statistics go. Failures to empty a website
// are added to errs; one to record what is held is returned.
func (e *Engine) dropCovered(ctx context.Context, target uint64, errs *[]error) error {
	held := e.held.Mask()
	for p := range partitions.Each(held &^ target) {
		if !e.opts.Partitions.Covered(p) {
			continue
		}
		held &^= 1 << p
		if err := e.saveHeld(held); err != nil {
			return err
		}
		e.held.Drain(ctx, p, maxDropWait)
		for _, s := range e.partitionSites(p) {
			*errs = appendErr(*errs, e.replaceSite(s, nil))
		}
		e.opts.Logger.Info("cluster: partition dropped", "partition", p)
	}
	return nil
}

// gainFetched imports the partitions of target fetched, each answered
// here once the follower has applied what the log holds of it now. A gain
// that fails is added to errs, and its websites emptied; a failure to
// record what is held is returned.
func (e *Engine) gainFetched(ctx context.Context, target uint64, errs *[]error) error {
	for p := range MaxPartitions {
		f := e.fetches.Take(p)
		if f == nil {
			continue
		}
		if target&^e.held.Mask()&(1<<p) == 0 { // no longer wanted
			f.Discard()
			continue
		}
		before := e.seq.Load()
		from, err := e.gain(ctx, p, f)
		if err != nil {
			// The position the gain moved back is needed by nothing
			// now, and the log may no longer reach it.
			e.seq.Store(before)
			e.fetches.Failed(p)
			*errs = append(*errs, fmt.Errorf("partition %d: %w", p, err))
			for _, s := range e.partitionSites(p) { // what was imported
				*errs = appendErr(*errs, e.replaceSite(s, nil))
			}
			continue
		}
		// The store must follow again from there: a snapshot may have
		// stored a later trim point, which a restart would resume after,
		// skipping the partition's records between the two.
		e.snapMu.Lock()
		err = e.store.LowerTrim(e.seq.Load())
		e.snapMu.Unlock()
		if err != nil {
			return err
		}
		if err := e.saveHeld(e.held.Mask() | 1<<p); err != nil {
			return err
		}
		e.held.Gained(p)
		e.opts.Logger.Info("cluster: partition gained", "partition", p, "from", from)
	}
	return nil
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

// rewind makes the follower resume after seq, if that is before its
// position: before anything of the gained partition is written, so that
// no snapshot stores a trim point past what the partition holds. Only the
// follower moves e.seq, and it is the caller.
func (e *Engine) rewind(seq uint64) {
	if seq < e.seq.Load() {
		e.seq.Store(seq)
	}
}

// gain brings partition p's websites' statistics into this node, from
// what f fetched or, when no node holds it, from the log, and returns the
// position the follower must resume after (see Partitions).
func (e *Engine) gain(ctx context.Context, p int, f *partitions.Fetch) (uint64, error) {
	pt := e.opts.Partitions
	if errors.Is(f.Err, ErrNoHolder) {
		first, err := pt.First(ctx)
		if err != nil {
			return 0, err
		}
		if first > 1 {
			return 0, fmt.Errorf("%w, and the log was trimmed since (it starts at %d)", f.Err, first)
		}
		e.rewind(0)
		for _, s := range e.partitionSites(p) {
			if err := e.replaceSite(s, nil); err != nil {
				return 0, err
			}
		}
		return 0, nil // from the log's start
	}
	defer f.Discard()
	file, err := os.Open(f.Path)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	// The log must still hold what follows the state: fetched a while
	// ago, it may have been trimmed past it since. Checked before and
	// after the import (the node's recorded position, which holds back
	// the trimming, is its store's trim point, lowered only after).
	check := func(trim uint64) error {
		first, err := pt.First(ctx)
		if err != nil {
			return err
		}
		if first > trim+1 {
			return fmt.Errorf("the log starts at %d, after the fetched state's %d; fetching again", first, trim)
		}
		return nil
	}
	trim, err := e.importPartition(p, file, check)
	if err == nil {
		err = check(trim)
	}
	return trim, err
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

// importPartition replaces the statistics of partition p's websites with
// those r holds (exportPartition's) and returns its trim point.
// Websites this node does not know yet are skipped (the registry
// transaction that creates them, after this node's position, comes with
// their records); websites r lacks are emptied.
func (e *Engine) importPartition(p int, r io.Reader, check func(trim uint64) error) (uint64, error) {
	sr, trim, err := partitions.NewReader(r, p, e.opts.Partitions.Count())
	if err != nil {
		return 0, fmt.Errorf("engine: partition %d: %w", p, err)
	}
	if err := check(trim); err != nil {
		return 0, err
	}
	e.rewind(trim)
	mine := make(map[uint32]*site)
	for _, s := range e.partitionSites(p) {
		mine[s.state.id] = s
	}
	for {
		id, err := sr.Website()
		if err != nil {
			return 0, fmt.Errorf("engine: partition %d: %w", p, err)
		}
		if id == 0 {
			break
		}
		s := mine[id]
		delete(mine, id)
		if s == nil {
			err = sr.Skip() // not known here yet
		} else if err = e.replaceSite(s, sr.Next); err == nil {
			err = e.rebuildSiteRealtime(s)
		}
		if err != nil {
			return 0, fmt.Errorf("engine: partition %d: %w", p, err)
		}
	}
	for _, s := range mine {
		if err := e.replaceSite(s, nil); err != nil {
			return 0, err
		}
	}
	return trim, nil
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
	e.results.drop(id)
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

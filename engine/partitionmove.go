package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/wire"
	"github.com/webstats/webstats/snapshot"
)

// fetches are the partitions being fetched for this node to gain.
type fetches struct {
	mu sync.Mutex
	m  map[int]*fetch
	// failed holds when each partition's last fetch or gain failed: it
	// is tried again fetchBackoff later.
	failed map[int]time.Time
	// promote holds the gained partitions not yet answered for, with
	// the log position the node must reach first.
	promote map[int]uint64
	// done receives when a fetch is ready.
	done chan struct{}
}

// fetch is a partition being fetched; once ready, path holds its state
// (exportPartition's format), or err is ErrNoHolder.
type fetch struct {
	ready bool
	path  string
	err   error
}

// startFetches starts fetching the partitions of the target that are not
// held, not being fetched and not fetched yet, at most maxFetching at
// once (a holder sends two at a time, and answers more with ErrBusy).
func (e *Engine) startFetches(ctx context.Context) {
	want := e.opts.Partitions.Target() &^ e.held.Load()
	e.fetches.mu.Lock()
	defer e.fetches.mu.Unlock()
	fetching := 0
	for _, f := range e.fetches.m {
		if !f.ready {
			fetching++
		}
	}
	for ; want != 0 && fetching < maxFetching; want &= want - 1 {
		p := bits.TrailingZeros64(want)
		if e.fetches.m[p] != nil || ctx.Err() != nil || time.Since(e.fetches.failed[p]) < fetchBackoff {
			continue
		}
		fetching++
		e.opts.Logger.Debug("cluster: fetch", "partition", p)
		f := &fetch{}
		e.fetches.m[p] = f
		e.bg.Add(1)
		go e.fetchPartition(ctx, p, f)
	}
}

// maxDropWait bounds how long a drop waits for the answers being computed
// from the partition (answers take milliseconds; the HTTP server's write
// timeout ends a request long before).
const maxDropWait = 30 * time.Second

// maxFetching bounds the fetches a node makes at once.
const maxFetching = 2

// fetchBackoff is how long a partition whose fetch or gain failed waits
// before it is fetched again.
const fetchBackoff = 10 * time.Second

// fetchPrefix starts the names of the files fetches write (in the data
// directory; a crash's are removed at Open).
const fetchPrefix = "webstats-partition-"

// fetchPartition fetches partition p into a file. A failure other than
// no holder is logged and forgotten: the next startFetches tries again.
func (e *Engine) fetchPartition(ctx context.Context, p int, f *fetch) {
	defer e.bg.Done()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	path, err := func() (string, error) {
		rc, err := e.opts.Partitions.Fetch(fctx, p)
		if errors.Is(err, ErrNoHolder) {
			// Rebuilt from the log only if it was never trimmed;
			// otherwise the partition waits for a holder.
			first, ferr := e.opts.Partitions.First(fctx)
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
		file, err := os.CreateTemp(e.fetchDir(), fetchPrefix+"*")
		if err != nil {
			return "", err
		}
		_, err = io.Copy(file, rc)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(file.Name())
			return "", err
		}
		return file.Name(), nil
	}()
	e.opts.Logger.Debug("cluster: fetched", "partition", p, "err", err)
	e.fetches.mu.Lock()
	defer e.fetches.mu.Unlock()
	if err != nil && !errors.Is(err, ErrNoHolder) {
		delete(e.fetches.m, p)
		if errors.Is(err, ErrBusy) {
			return // again at the next tick
		}
		e.fetches.failed[p] = time.Now()
		if ctx.Err() == nil {
			e.opts.Logger.Warn("cluster: fetch partition", "partition", p, "err", err)
		}
		return
	}
	f.ready, f.path, f.err = true, path, err
	select {
	case e.fetches.done <- struct{}{}:
	default:
	}
}

// fetchDir is where fetches are written: the data directory, unless the
// store is not on the operating system's file system.
func (e *Engine) fetchDir() string {
	if e.opts.FS != nil || e.opts.Dir == "" {
		return ""
	}
	return e.opts.Dir
}

// removeFetches removes the files of fetches a crash left.
func (e *Engine) removeFetches() {
	if e.fetchDir() == "" {
		return // the system's temporary directory is shared: left alone
	}
	names, _ := filepath.Glob(filepath.Join(e.fetchDir(), fetchPrefix+"*"))
	for _, n := range names {
		os.Remove(n)
	}
}

// dropFetches removes the files of fetches not imported (Close, after the
// follower and the fetches stopped).
func (e *Engine) dropFetches() {
	e.fetches.mu.Lock()
	defer e.fetches.mu.Unlock()
	for p, f := range e.fetches.m {
		if f.path != "" {
			os.Remove(f.path)
		}
		delete(e.fetches.m, p)
	}
}

// takeFetch returns partition p's fetch if it is ready, and forgets it.
func (e *Engine) takeFetch(p int) *fetch {
	e.fetches.mu.Lock()
	defer e.fetches.mu.Unlock()
	f := e.fetches.m[p]
	if f == nil || !f.ready {
		return nil
	}
	delete(e.fetches.m, p)
	return f
}

// planned reports whether rebalance has something to do now: a fetch is
// ready, or a partition no longer owned may go.
func (e *Engine) planned() bool {
	pt := e.opts.Partitions
	held, target := e.held.Load(), pt.Target()
	e.fetches.mu.Lock()
	for _, f := range e.fetches.m {
		if f.ready {
			e.fetches.mu.Unlock()
			return true
		}
	}
	e.fetches.mu.Unlock()
	for drop := held &^ target; drop != 0; drop &= drop - 1 {
		if pt.Covered(bits.TrailingZeros64(drop)) {
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
	pt := e.opts.Partitions
	held, target := e.held.Load(), pt.Target()
	var errs []error
	if !e.swept {
		// Websites of partitions not held that have statistics here: a
		// crash during a drop, or an import given up.
		e.swept = true
		for _, s := range e.allSites() {
			if !e.applies(s.state.id) && e.hasStats(s) {
				if err := e.replaceSite(s, nil); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for drop := held &^ target; drop != 0; drop &= drop - 1 {
		p := bits.TrailingZeros64(drop)
		if !pt.Covered(p) {
			continue
		}
		// No longer answered here first (a fetch in progress sees it and
		// fails), and the questions already being answered finish, then
		// it is dropped.
		held &^= 1 << p
		if err := e.saveHeld(held); err != nil {
			return e.seq.Load(), err
		}
		for wait := time.Now(); e.inflight[p].Load() > 0 && time.Since(wait) < maxDropWait && ctx.Err() == nil; {
			time.Sleep(time.Millisecond)
		}
		for _, s := range e.partitionSites(p) {
			if err := e.replaceSite(s, nil); err != nil {
				errs = append(errs, err)
			}
		}
		e.opts.Logger.Info("cluster: partition dropped", "partition", p)
	}
	for p := range MaxPartitions {
		f := e.takeFetch(p)
		if f == nil {
			continue
		}
		if target&^held&(1<<p) == 0 { // no longer wanted
			if f.path != "" {
				os.Remove(f.path)
			}
			continue
		}
		before := e.seq.Load()
		from, err := e.gain(ctx, p, f)
		if err != nil {
			// The position the gain moved back is needed by nothing
			// now, and the log may no longer reach it.
			e.seq.Store(before)
			e.fetches.mu.Lock()
			e.fetches.failed[p] = time.Now()
			e.fetches.mu.Unlock()
			errs = append(errs, fmt.Errorf("partition %d: %w", p, err))
			for _, s := range e.partitionSites(p) { // what was imported
				if err := e.replaceSite(s, nil); err != nil {
					errs = append(errs, err)
				}
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
			return e.seq.Load(), err
		}
		held |= 1 << p
		if err := e.saveHeld(held); err != nil {
			return e.seq.Load(), err
		}
		// Answered here once the follower has applied what the log holds
		// of it now.
		e.fetches.mu.Lock()
		e.fetches.promote[p] = unknownLast
		e.fetches.mu.Unlock()
		e.opts.Logger.Info("cluster: partition gained", "partition", p, "from", from)
	}
	e.promote(ctx)
	pt.SetHeld(e.ready.Load())
	return e.seq.Load(), errors.Join(errs...)
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
func (e *Engine) gain(ctx context.Context, p int, f *fetch) (uint64, error) {
	pt := e.opts.Partitions
	if errors.Is(f.err, ErrNoHolder) {
		first, err := pt.First(ctx)
		if err != nil {
			return 0, err
		}
		if first > 1 {
			return 0, fmt.Errorf("%w, and the log was trimmed since (it starts at %d)", f.err, first)
		}
		e.rewind(0)
		for _, s := range e.partitionSites(p) {
			if err := e.replaceSite(s, nil); err != nil {
				return 0, err
			}
		}
		return 0, nil // from the log's start
	}
	defer os.Remove(f.path)
	file, err := os.Open(f.path)
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

// The state of a partition as Serve's fetch writes it: partMagic, the
// view's trim point (uvarint), then for each website its id (uvarint,
// never 0) and its keys, each as key length, key, value length, value
// (uvarint lengths), ended by a key length 0; a website id 0 ends it.
var partMagic = []byte("wsp1")

// Bounds of what importPartition reads: a key is a few dozen bytes; a
// value is a day, a strings chunk or a period-state chunk.
const (
	maxPartKey   = 64
	maxPartValue = 1 << 30
)

// exportPartition writes partition p's state (the format above) from a
// snapshot taken now. It is Serve's fetch function.
func (e *Engine) exportPartition(ctx context.Context, p int, w io.Writer) error {
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	gen := e.heldGen.Load()
	if e.held.Load()&(1<<p) == 0 {
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
	if e.heldGen.Load() != gen || e.held.Load()&(1<<p) == 0 {
		return errElsewhere
	}
	trim, err := v.Trim()
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf []byte
	buf = binary.AppendUvarint(append(buf[:0], partMagic...), trim)
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	for _, s := range e.partitionSites(p) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := bw.Write(binary.AppendUvarint(buf[:0], uint64(s.state.id))); err != nil {
			return err
		}
		err := v.Website(s.state.id, func(key, val []byte) error {
			buf = binary.AppendUvarint(buf[:0], uint64(len(key)))
			buf = append(buf, key...)
			buf = binary.AppendUvarint(buf, uint64(len(val)))
			if _, err := bw.Write(buf); err != nil {
				return err
			}
			_, err := bw.Write(val)
			return err
		})
		if err != nil {
			return err
		}
		if err := bw.WriteByte(0); err != nil {
			return err
		}
	}
	if err := bw.WriteByte(0); err != nil {
		return err
	}
	return bw.Flush()
}

// importPartition replaces the statistics of partition p's websites with
// those r holds (exportPartition's format) and returns its trim point.
// Websites this node does not know yet are skipped (the registry
// transaction that creates them, after this node's position, comes with
// their records); websites r lacks are emptied.
func (e *Engine) importPartition(p int, r io.Reader, check func(trim uint64) error) (uint64, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil || !bytes.Equal(magic[:], partMagic) {
		return 0, fmt.Errorf("engine: partition %d: not a partition's state: %w", p, errors.Join(err, wire.ErrRecord))
	}
	trim, err := binary.ReadUvarint(br)
	if err != nil {
		return 0, fmt.Errorf("engine: partition %d: %w", p, err)
	}
	if err := check(trim); err != nil {
		return 0, err
	}
	e.rewind(trim)
	n := e.opts.Partitions.Count()
	mine := make(map[uint32]*site)
	for _, s := range e.partitionSites(p) {
		mine[s.state.id] = s
	}
	var key, val []byte
	next := func() ([]byte, []byte, bool, error) {
		kl, err := binary.ReadUvarint(br)
		switch {
		case err != nil:
			return nil, nil, false, err
		case kl == 0:
			return nil, nil, false, nil
		case kl > maxPartKey:
			return nil, nil, false, fmt.Errorf("a key of %d bytes: %w", kl, wire.ErrRecord)
		}
		key = slices.Grow(key[:0], int(kl))[:kl]
		if _, err := io.ReadFull(br, key); err != nil {
			return nil, nil, false, err
		}
		vl, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, nil, false, err
		}
		if vl > maxPartValue {
			return nil, nil, false, fmt.Errorf("a value of %d bytes: %w", vl, wire.ErrRecord)
		}
		val = slices.Grow(val[:0], int(vl))[:vl]
		if _, err := io.ReadFull(br, val); err != nil {
			return nil, nil, false, err
		}
		return key, val, true, nil
	}
	for {
		id, err := binary.ReadUvarint(br)
		if err != nil {
			return 0, fmt.Errorf("engine: partition %d: %w", p, err)
		}
		if id == 0 {
			break
		}
		if id > 1<<32-1 || PartitionOf(uint32(id), n) != p {
			return 0, fmt.Errorf("engine: partition %d: website %d is not of it: %w", p, id, wire.ErrRecord)
		}
		s := mine[uint32(id)]
		if s == nil {
			for { // not known here yet: skipped
				_, _, ok, err := next()
				if err != nil {
					return 0, fmt.Errorf("engine: partition %d: %w", p, err)
				}
				if !ok {
					break
				}
			}
			continue
		}
		delete(mine, uint32(id))
		if err := e.replaceSite(s, next); err != nil {
			return 0, fmt.Errorf("engine: partition %d: %w", p, err)
		}
		if err := e.rebuildSiteRealtime(s); err != nil {
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

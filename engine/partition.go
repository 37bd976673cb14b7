package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/snapshot"
)

// Partitions (cluster mode with Options.Partitions; docs/design.md,
// "Partitions"). The websites are spread over the log's MaxPartitions
// subjects, grouped into Count partitions; a node applies the records of
// the partitions it holds only (and every registry transaction: each node
// keeps the whole registry), and asks a node that holds a website's
// partition for that website's statistics.
//
// Which partitions a node should hold (its target) is the Partitioner's
// business: engine/jetstream computes it from the live nodes. The engine
// moves towards it in its follower goroutine, so that nothing is applied
// meanwhile (rebalance):
//
//   - A partition it gains comes from a node that holds it: that node takes
//     a snapshot and sends every key of the partition's websites from a
//     consistent view of its store, with the view's trim point T; all of a
//     website's records up to T are in its keys, and its stored lastSeq
//     covers every record its keys hold. The keys replace the website's,
//     and the follower resumes just after min(own position, T): each
//     website (and the registry) skips the records it already holds, by its
//     own lastSeq, so resuming from further back is only rereading.
//   - A partition no live node holds is rebuilt from the log, from its
//     start, when the log was never trimmed (a new cluster); otherwise it
//     stays missing, its websites' statistics unavailable, until a node
//     that holds it comes back.
//   - A partition it no longer should hold is kept until every node of
//     that partition's target holds it (Covered), then dropped: its
//     websites' statistics leave memory and the store.
//
// The partitions held are stored (KindCluster heldID) with the data they
// describe: a restart follows the same subjects from its snapshot.

// MaxPartitions is how many subjects the shared log spreads websites over;
// a cluster groups them into 1 to MaxPartitions partitions.
const MaxPartitions = 64

// PartitionOf returns the partition of website among n (1 to
// MaxPartitions).
func PartitionOf(website uint32, n int) int { return int(website%MaxPartitions) % n }

// ErrNoHolder is the answer of Partitioner.Fetch and Ask when no live node
// holds the partition.
var ErrNoHolder = errors.New("engine: no live node holds the partition")

// errElsewhere is a node's answer to a question about a website of a
// partition it does not hold (any more).
var errElsewhere = errors.New("engine: this node does not hold the website's partition")

// Partitioner is what the engine needs, beyond Cluster, to hold some
// partitions only. Partitions are bits of a uint64 (bit p: partition p).
type Partitioner interface {
	// Count is the number of partitions, 1 to MaxPartitions; every node of
	// a cluster has the same.
	Count() int
	// Target returns the partitions this node should hold now.
	Target() uint64
	// Covered reports whether every other node that should hold partition p
	// holds it: this node, no longer among them, may drop it.
	Covered(p int) bool
	// Changed receives when Target or Covered may have changed.
	Changed() <-chan struct{}
	// SetHeld tells the other nodes which partitions this one holds.
	SetHeld(held uint64)
	// Follow is Cluster.Follow for the registry's messages and those of
	// the partitions parts only.
	Follow(ctx context.Context, after uint64, parts uint64, fn func(LogMessage) error) error
	// Last returns the sequence of the last of those messages (0: none).
	Last(ctx context.Context, parts uint64) (uint64, error)
	// First returns the sequence of the log's first message; 1 means it
	// was never trimmed (or is empty).
	First(ctx context.Context) (uint64, error)
	// Fetch returns the state of partition p from a node that holds it
	// (what that node's Serve fetch function writes); ErrNoHolder if none.
	Fetch(ctx context.Context, p int) (io.ReadCloser, error)
	// Ask sends req to a node that holds partition p and returns what its
	// Serve ask function answered; ErrNoHolder if none.
	Ask(ctx context.Context, p int, req []byte) ([]byte, error)
	// Serve answers the other nodes' Fetch and Ask with these functions
	// until stop is called.
	Serve(fetch func(ctx context.Context, p int, w io.Writer) error, ask func(ctx context.Context, req []byte) ([]byte, error)) (stop func(), err error)
}

// heldID is the snapshot.KindCluster record of the partitions held: the
// partition count, then the mask (8 bytes, big-endian).
const heldID = 3

// loadHeld reads the partitions the store holds; a store written with
// another partition count is refused.
func (e *Engine) loadHeld() error {
	n := e.opts.Partitions.Count()
	if n < 1 || n > MaxPartitions {
		return fmt.Errorf("engine: %d partitions: want 1 to %d", n, MaxPartitions)
	}
	v, err := e.store.Get(snapshot.KindCluster, heldID)
	if errors.Is(err, snapshot.ErrNotFound) {
		// A new store holds none; one written by a node of a cluster
		// without partitions holds them all.
		applied := e.store.Trim() > 0
		for _, s := range e.sites {
			applied = applied || s.state.lastSeq > 0
		}
		var held uint64
		if applied {
			held = uint64(1)<<n - 1
		}
		// Recorded now: once this node has applied anything, "no
		// record" would read as "all".
		v := binary.BigEndian.AppendUint64([]byte{byte(n)}, held)
		if err := e.store.Put(snapshot.KindCluster, heldID, v); err != nil {
			return fmt.Errorf("engine: partitions held: %w", err)
		}
		e.held.Store(held)
		e.catchUpHeld(held)
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: partitions held: %w", err)
	}
	if len(v) != 9 {
		return fmt.Errorf("engine: partitions held: %d bytes: %w", len(v), snapshot.ErrCorrupt)
	}
	if int(v[0]) != n {
		return fmt.Errorf("engine: this store holds %d partitions' websites, the node is started with %d; a node of this cluster starts from an empty directory", v[0], n)
	}
	held := binary.BigEndian.Uint64(v[1:])
	e.held.Store(held)
	e.catchUpHeld(held)
	return nil
}

// catchUpHeld makes the partitions a store holds at Open answered for
// once the node has caught up with them, as gained ones are (promote):
// the node may be far behind.
func (e *Engine) catchUpHeld(held uint64) {
	for ; held != 0; held &= held - 1 {
		e.fetches.promote[bits.TrailingZeros64(held)] = unknownLast
	}
}

// unknownLast marks a partition to promote whose last message is not
// known yet: promote asks the log.
const unknownLast = math.MaxUint64

// saveHeld stores held as the partitions this node applies. Those it no
// longer holds are no longer answered for either (ready); a gained one is
// answered for once the node has caught up with it (promote).
func (e *Engine) saveHeld(held uint64) error {
	v := binary.BigEndian.AppendUint64([]byte{byte(e.opts.Partitions.Count())}, held)
	if err := e.store.Put(snapshot.KindCluster, heldID, v); err != nil {
		return fmt.Errorf("engine: partitions held: %w", err)
	}
	// Under the lock promote changes ready with: ready stays within held.
	e.fetches.mu.Lock()
	e.held.Store(held)
	e.heldGen.Add(1)
	ready := e.ready.Load() & held
	e.ready.Store(ready)
	e.fetches.mu.Unlock()
	e.opts.Partitions.SetHeld(ready)
	return nil
}

// applies reports whether this node applies website's records: always
// without partitions.
func (e *Engine) applies(website uint32) bool {
	if e.opts.Partitions == nil {
		return true
	}
	return e.held.Load()&(1<<PartitionOf(website, e.opts.Partitions.Count())) != 0
}

// promote makes the gained partitions the node has caught up with
// answered here, and tells the other nodes.
func (e *Engine) promote(ctx context.Context) {
	e.fetches.mu.Lock()
	var unknown []int
	for p, seq := range e.fetches.promote {
		if seq == unknownLast {
			unknown = append(unknown, p)
		}
	}
	e.fetches.mu.Unlock()
	for _, p := range unknown {
		// The last message of the partition (and of the registry) now:
		// once applied, the node has caught up with it.
		last, err := e.opts.Partitions.Last(ctx, 1<<p)
		if err != nil {
			continue // at the next tick
		}
		e.fetches.mu.Lock()
		if _, ok := e.fetches.promote[p]; ok {
			e.fetches.promote[p] = last
		}
		e.fetches.mu.Unlock()
	}
	e.fetches.mu.Lock()
	ready := e.ready.Load()
	for p, seq := range e.fetches.promote {
		if e.held.Load()&(1<<p) == 0 {
			delete(e.fetches.promote, p)
		} else if e.seq.Load() >= seq {
			ready |= 1 << p
			delete(e.fetches.promote, p)
		}
	}
	changed := ready != e.ready.Load()
	e.ready.Store(ready)
	e.fetches.mu.Unlock()
	if changed {
		e.opts.Partitions.SetHeld(ready)
	}
}

// partitionSites returns the websites of partition p in the registry.
func (e *Engine) partitionSites(p int) []*site {
	n := e.opts.Partitions.Count()
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	var out []*site
	for id, s := range e.sites {
		if PartitionOf(id, n) == p {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *site) int { return int(a.state.id) - int(b.state.id) })
	return out
}

// followPartitions is the follower's loop in partitioned mode: move
// towards the target, then follow the held partitions until a move is
// ready or the log fails. Partitions to gain are fetched meanwhile, each
// into a file (fetchPartition), so that the follower stops only to import
// one that has arrived.
func (e *Engine) followPartitions(ctx context.Context, fn func(LogMessage) error) error {
	pt := e.opts.Partitions
	after, err := e.rebalance(ctx)
	if err != nil {
		e.opts.Logger.Error("cluster: partitions", "err", err)
	}
	e.startFetches(ctx)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	moved := make(chan struct{})
	go func() {
		defer close(moved)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		at, still := e.seq.Load(), time.Now()
		for {
			select {
			case <-fctx.Done():
				return
			case <-pt.Changed():
			case <-e.fetches.done:
			case <-tick.C:
			}
			if seq := e.seq.Load(); seq != at {
				at, still = seq, time.Now()
			} else if time.Since(still) > quietAfter {
				still = time.Now()
				e.publishNoop(fctx)
			}
			e.promote(ctx)
			e.startFetches(ctx)
			if e.planned() {
				cancel()
				return
			}
		}
	}()
	err = pt.Follow(fctx, after, e.held.Load(), fn)
	// Read before cancel: Follow returned on its own (an error to report
	// and back off from) unless the watcher stopped it for a move. (An
	// error of Follow's own at the moment of a move is dropped: the next
	// round meets it again.)
	moving := fctx.Err() != nil
	cancel()
	<-moved
	if ctx.Err() == nil && moving {
		return nil // a move to make: the follower calls again at once
	}
	return err
}

// quietAfter is how long a node's position may stay still before it
// publishes a no-op on the registry's subject (msgNoop).
const quietAfter = time.Hour

// msgNoop is the kind byte of a message that changes nothing. A node
// follows the registry's subject and its partitions' only: when none of
// them gets a message, its position stays still, holding back the log's
// trimming (its snapshots record it) and, once the log's age limit passes
// it, looking like a gap. A no-op on the registry's subject, which every
// node follows, moves every node's position.
const msgNoop = 'n'

// publishNoop publishes a no-op (failures are logged: the next quiet hour
// tries again).
func (e *Engine) publishNoop(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.opts.Cluster.Publish(ctx, 0, []byte{msgNoop}); err != nil && ctx.Err() == nil {
		e.opts.Logger.Warn("cluster: publish a no-op", "err", err)
	}
}

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
		return 0, fmt.Errorf("engine: partition %d: not a partition's state: %w", p, errors.Join(err, errRecord))
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
			return nil, nil, false, fmt.Errorf("a key of %d bytes: %w", kl, errRecord)
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
			return nil, nil, false, fmt.Errorf("a value of %d bytes: %w", vl, errRecord)
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
			return 0, fmt.Errorf("engine: partition %d: website %d is not of it: %w", p, id, errRecord)
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
	e.wholes.drop(id)
	e.results.drop(id)
	e.forgetValues() // its values go with its days
	if deleted {
		return nil
	}
	if err := e.store.ReplaceWebsite(id, next); err != nil {
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

// Questions to the node that holds a website (Partitioner.Ask): the
// statistics calls of an Owner, gob-encoded, answered with their result
// or error.
type askRequest struct {
	Op      byte // askStat, askTotals, askRealtime, askQuery
	Account uint32
	All     bool
	Website uint32
	Stat    StatQuery
	From    Date
	To      Date
	// Query is the query as a request body (Query.MarshalJSON), which
	// ParseQuery reads back as it was.
	Query []byte
}

const (
	askStat = iota + 1
	askTotals
	askRealtime
	askQuery
)

type askReply struct {
	Page     Page
	Totals   Totals
	Realtime Realtime
	Result   QueryResult
	// Err is the error, by kind (askErr*) and message.
	Err    byte
	Msg    string
	Limit  string
	Fields []FieldError
	// Gob decodes an empty slice as nil: these say which of the answer's
	// were empty, so that it decodes as it was (they are written as [] or
	// null).
	RowsSet, ResultsSet bool
	DimsSet             []bool // of each result row
	EchoSet             [4]bool
	// Nor does it send a pointer to a zero value: Meta's, as 0 for nil,
	// 1 for false or 0, 2 for true (ImportsIncluded), 1 for set
	// (TotalRows).
	Imports, TotalRows byte
}

// markSlices records in rep which of its slices are empty, not nil.
func (rep *askReply) markSlices() {
	rep.RowsSet = rep.Page.Rows != nil
	r := &rep.Result
	rep.ResultsSet = r.Results != nil
	rep.DimsSet = make([]bool, len(r.Results))
	for i, row := range r.Results {
		rep.DimsSet[i] = row.Dimensions != nil
	}
	q := &r.Query
	rep.EchoSet = [4]bool{q.Metrics != nil, q.Filters != nil, q.Dimensions != nil, q.OrderBy != nil}
	if m := r.Meta.ImportsIncluded; m != nil {
		rep.Imports = 1
		if *m {
			rep.Imports = 2
		}
	}
	if r.Meta.TotalRows != nil {
		rep.TotalRows = 1
	}
}

// restoreSlices makes the empty slices markSlices recorded empty again.
func (rep *askReply) restoreSlices() {
	if rep.RowsSet && rep.Page.Rows == nil {
		rep.Page.Rows = []Row{}
	}
	r := &rep.Result
	if rep.ResultsSet && r.Results == nil {
		r.Results = []QueryRow{}
	}
	for i := range r.Results {
		if i < len(rep.DimsSet) && rep.DimsSet[i] && r.Results[i].Dimensions == nil {
			r.Results[i].Dimensions = []any{}
		}
	}
	q := &r.Query
	if rep.EchoSet[0] && q.Metrics == nil {
		q.Metrics = []string{}
	}
	if rep.EchoSet[1] && q.Filters == nil {
		q.Filters = []Filter{}
	}
	if rep.EchoSet[2] && q.Dimensions == nil {
		q.Dimensions = []string{}
	}
	if rep.EchoSet[3] && q.OrderBy == nil {
		q.OrderBy = []OrderBy{}
	}
	if rep.Imports > 0 && r.Meta.ImportsIncluded == nil {
		v := rep.Imports == 2
		r.Meta.ImportsIncluded = &v
	}
	if rep.TotalRows > 0 && r.Meta.TotalRows == nil {
		r.Meta.TotalRows = new(int)
	}
}

const (
	askErrOther = iota + 1
	askErrNotFound
	askErrBusy
	askErrTooLarge
	askErrQuery
	askErrValidation
	askErrUnavailable
)

func init() {
	// The values of QueryRow's slices.
	gob.Register(int64(0))
	gob.Register(float64(0))
	gob.Register("")
	gob.Register(&Revenue{})
}

// ask answers o's question from the node that holds website.
func (o Owner) ask(ctx context.Context, website uint32, req askRequest) (askReply, error) {
	e := o.e
	req.Account, req.All, req.Website = o.account, o.all, website
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&req); err != nil {
		return askReply{}, fmt.Errorf("engine: ask: %w", err)
	}
	out, err := e.opts.Partitions.Ask(ctx, PartitionOf(website, e.opts.Partitions.Count()), b.Bytes())
	if err != nil {
		if ctx.Err() != nil {
			return askReply{}, ctx.Err()
		}
		return askReply{}, fmt.Errorf("%w: website %d: %w", ErrClusterUnavailable, website, err)
	}
	var rep askReply
	if err := gob.NewDecoder(bytes.NewReader(out)).Decode(&rep); err != nil {
		return askReply{}, fmt.Errorf("engine: ask: %w", err)
	}
	rep.restoreSlices()
	switch rep.Err {
	case 0:
		return rep, nil
	case askErrNotFound:
		return rep, ErrNotFound
	case askErrBusy:
		return rep, ErrBusy
	case askErrTooLarge:
		return rep, fmt.Errorf("%w (said the website's node)", ErrTooLarge)
	case askErrQuery:
		return rep, &QueryError{Msg: rep.Msg, Limit: rep.Limit}
	case askErrValidation:
		return rep, &ValidationError{Fields: rep.Fields}
	case askErrUnavailable:
		return rep, fmt.Errorf("%w: website %d: %s", ErrClusterUnavailable, website, rep.Msg)
	}
	return rep, fmt.Errorf("engine: website %d, answered by its node: %s", website, rep.Msg)
}

// serveAsk is Serve's ask function: o's question answered here, never
// passed on (a node that no longer holds the website says so).
func (e *Engine) serveAsk(ctx context.Context, b []byte) ([]byte, error) {
	var req askRequest
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&req); err != nil {
		return nil, fmt.Errorf("engine: ask: %w", err)
	}
	o := Owner{e: e, account: req.Account, all: req.All, local: true}
	var rep askReply
	var err error
	switch req.Op {
	case askStat:
		rep.Page, err = o.Stat(ctx, req.Stat)
	case askTotals:
		rep.Totals, err = o.Totals(ctx, req.Website, req.From, req.To)
	case askRealtime:
		rep.Realtime, err = o.Realtime(ctx, req.Website)
	case askQuery:
		var q Query
		if q, err = ParseQuery(req.Query); err == nil {
			rep.Result, err = o.Query(ctx, req.Website, q)
		}
	default:
		err = fmt.Errorf("engine: ask: unknown question %d", req.Op)
	}
	var qe *QueryError
	var ve *ValidationError
	switch {
	case err == nil:
	case errors.Is(err, errElsewhere):
		return nil, err // the asker tries another holder
	case errors.Is(err, ErrClusterUnavailable), errors.Is(err, ErrClosed), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		rep.Err = askErrUnavailable
	case errors.Is(err, ErrNotFound):
		rep.Err = askErrNotFound
	case errors.Is(err, ErrBusy):
		rep.Err = askErrBusy
	case errors.Is(err, ErrTooLarge):
		rep.Err = askErrTooLarge
	case errors.As(err, &qe):
		rep.Err, rep.Limit = askErrQuery, qe.Limit
		err = errors.New(qe.Msg)
	case errors.As(err, &ve):
		rep.Err, rep.Fields = askErrValidation, ve.Fields
	default:
		rep.Err = askErrOther
	}
	if err != nil {
		rep.Msg = err.Error()
	}
	rep.markSlices()
	var out bytes.Buffer
	if err := gob.NewEncoder(&out).Encode(&rep); err != nil {
		return nil, fmt.Errorf("engine: ask: %w", err)
	}
	return out.Bytes(), nil
}

// elsewhere reports whether o must ask another node about website: this
// node does not answer for its partition. A question asked by another
// node (o.local) is never passed on: it is errElsewhere. When the answer
// is here, done must be called once it is computed: a drop of the
// partition waits for it.
func (o Owner) elsewhere(website uint32) (far bool, done func(), err error) {
	e := o.e
	if e.opts.Partitions == nil {
		return false, func() {}, nil
	}
	p := PartitionOf(website, e.opts.Partitions.Count())
	e.inflight[p].Add(1) // before the check: see rebalance
	if e.ready.Load()&(1<<p) != 0 {
		return false, func() { e.inflight[p].Add(-1) }, nil
	}
	e.inflight[p].Add(-1)
	if o.local {
		return false, nil, errElsewhere
	}
	return true, nil, nil
}

package partitions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// ErrNoHolder is the answer of Cluster.Fetch when no live node holds the
// partition.
var ErrNoHolder = errors.New("engine: no live node holds the partition")

// Cluster is what a Mover needs of the cluster: the engine's Partitioner.
type Cluster interface {
	// Count is the number of partitions, 1 to Max.
	Count() int
	// Target returns the partitions this node should hold now.
	Target() uint64
	// Covered reports whether every other node that should hold
	// partition p holds it.
	Covered(p int) bool
	// SetHeld tells the other nodes which partitions this one answers
	// for.
	SetHeld(held uint64)
	// Last returns the sequence of the last message of the registry and
	// the partitions parts.
	Last(ctx context.Context, parts uint64) (uint64, error)
	// First returns the sequence of the log's first message; 1 means it
	// was never trimmed.
	First(ctx context.Context) (uint64, error)
	// Fetch returns the state of partition p (Writer's stream) from a
	// node that holds it; ErrNoHolder if none.
	Fetch(ctx context.Context, p int) (io.ReadCloser, error)
}

// Node is what a Mover needs of the engine. A Mover calls it from the
// node's follower, which applies nothing meanwhile.
type Node interface {
	// Position is the log position the follower applied up to;
	// SetPosition moves it (the follower resumes after it).
	Position() uint64
	SetPosition(seq uint64)
	// Websites returns the websites of partition p in the registry.
	Websites(p int) []uint32
	// Replace replaces website's statistics, in memory and in the store,
	// with the keys next gives, as reader.Next does (next nil: none), and
	// loads them as Open does.
	Replace(website uint32, next func() (key, val []byte, ok bool, err error)) error
	// SaveHeld stores the partitions held (Record).
	SaveHeld(record []byte) error
	// LowerTrim makes the store's trim point at most seq: a restart
	// follows the log from there.
	LowerTrim(seq uint64) error
}

// Config configures a Mover.
type Config struct {
	Cluster Cluster
	Node    Node
	// Held is the partitions held, which the Mover changes.
	Held *Held
	// Dir is where fetches are written (newFetches).
	Dir    string
	Logger *slog.Logger
	// ErrBusy is what Fetch returns when the holder sends enough
	// partitions already: the partition is fetched again at once.
	ErrBusy error
}

// Mover moves a node's held partitions towards its target
// (docs/design.md, "Partitions"):
//
//   - A partition it gains comes from a node that holds it (Cluster.Fetch), as the
//     keys of its websites from a consistent view of the holder's store
//     with the view's trim point T: they replace the websites' keys, and
//     the follower resumes just after min(own position, T). each website
//     (and the registry) skips the records it already holds, so resuming
//     from further back is only rereading. It is answered for once the
//     follower has applied the log up to its last message at that time.
//   - A partition no live node holds is rebuilt from the log, from its
//     start, when the log was never trimmed (a new cluster); otherwise it
//     waits for a node that holds it.
//   - A partition it no longer should hold is kept until every node of its
//     target holds it (Covered), then dropped: no longer answered for, the
//     answers being computed finish, and its websites' statistics go.
type Mover struct {
	Config
	fetches *fetches
	wg      sync.WaitGroup // the fetches in progress
}

// NewMover returns a Mover, and removes the files of fetches a crash left
// in c.Dir.
func NewMover(c Config) *Mover {
	return &Mover{Config: c, fetches: newFetches(c.Dir)}
}

// maxDropWait bounds how long a drop waits for the answers being computed
// from the partition (answers take milliseconds; the HTTP server's write
// timeout ends a request long before).
const maxDropWait = 30 * time.Second

// Planned reports whether Rebalance has something to do now: a fetch is
// done, or a partition no longer in the target may go.
func (m *Mover) Planned() bool {
	if m.fetches.AnyDone() {
		return true
	}
	for p := range each(m.Held.Mask() &^ m.Cluster.Target()) {
		if m.Cluster.Covered(p) {
			return true
		}
	}
	return false
}

// Fetched receives when a fetch is done.
func (m *Mover) Fetched() <-chan struct{} { return m.fetches.Ready() }

// Rebalance moves the held partitions towards the target: it drops what
// may go and gains what was fetched. It returns the position to follow
// from (Node.Position, which a gain may move back).
func (m *Mover) Rebalance(ctx context.Context) (uint64, error) {
	target := m.Cluster.Target()
	var errs []error
	if err := m.dropCovered(ctx, target, &errs); err != nil {
		return m.Node.Position(), err
	}
	if err := m.gainFetched(ctx, target, &errs); err != nil {
		return m.Node.Position(), err
	}
	m.Promote(ctx)
	m.Cluster.SetHeld(m.Held.Ready())
	return m.Node.Position(), errors.Join(errs...)
}

// save stores held as the partitions held. Those no longer held are no
// longer answered for either; the other nodes are told.
func (m *Mover) save(held uint64) error {
	if err := m.Node.SaveHeld(Record(m.Cluster.Count(), held)); err != nil {
		return err
	}
	m.Cluster.SetHeld(m.Held.set(held))
	return nil
}

// empty empties the websites of partition p, adding failures to errs.
func (m *Mover) empty(p int, errs *[]error) {
	for _, id := range m.Node.Websites(p) {
		if err := m.Node.Replace(id, nil); err != nil {
			*errs = append(*errs, err)
		}
	}
}

// dropCovered drops the partitions held but not in target that every node
// of their target holds: no longer answered here first (a fetch in
// progress from this node sees it and fails), and the answers already
// being computed finish, then their websites' statistics go. Failures to
// empty a website are added to errs; one to save what is held is returned.
func (m *Mover) dropCovered(ctx context.Context, target uint64, errs *[]error) error {
	held := m.Held.Mask()
	for p := range each(held &^ target) {
		if !m.Cluster.Covered(p) {
			continue
		}
		held &^= 1 << p
		if err := m.save(held); err != nil {
			return err
		}
		m.Held.drain(ctx, p, maxDropWait)
		m.empty(p, errs)
		m.Logger.Info("cluster: partition dropped", "partition", p)
	}
	return nil
}

// gainFetched gains the partitions of target fetched. A gain that fails is
// added to errs, its websites emptied and its fetch made again after
// backoff; a failure to save what is held is returned.
func (m *Mover) gainFetched(ctx context.Context, target uint64, errs *[]error) error {
	for p := range Max {
		f := m.fetches.Take(p)
		if f == nil {
			continue
		}
		if target&^m.Held.Mask()&(1<<p) == 0 { // no longer wanted
			f.Discard()
			continue
		}
		before := m.Node.Position()
		from, err := m.gain(ctx, p, f)
		if err != nil {
			// The position the gain moved back is needed by nothing
			// now, and the log may no longer reach it.
			m.Node.SetPosition(before)
			m.fetches.Failed(p)
			*errs = append(*errs, fmt.Errorf("partition %d: %w", p, err))
			m.empty(p, errs) // what was imported
			continue
		}
		// The store must follow again from there: a snapshot may have
		// stored a later trim point, which a restart would resume after,
		// skipping the partition's records between the two.
		if err := m.Node.LowerTrim(m.Node.Position()); err != nil {
			return err
		}
		if err := m.save(m.Held.Mask() | 1<<p); err != nil {
			return err
		}
		m.Held.gained(p)
		m.Logger.Info("cluster: partition gained", "partition", p, "from", from)
	}
	return nil
}

// rewind makes the follower resume after seq, if that is before its
// position: before anything of the gained partition is written, so that
// no snapshot stores a trim point past what the partition holds.
func (m *Mover) rewind(seq uint64) {
	if seq < m.Node.Position() {
		m.Node.SetPosition(seq)
	}
}

// gain brings partition p's websites' statistics into this node, from
// what f fetched or, when no node holds it, from the log, and returns the
// position the follower must resume after.
func (m *Mover) gain(ctx context.Context, p int, f *fetched) (uint64, error) {
	if errors.Is(f.Err, ErrNoHolder) {
		first, err := m.Cluster.First(ctx)
		if err != nil {
			return 0, err
		}
		if first > 1 {
			return 0, fmt.Errorf("%w, and the log was trimmed since (it starts at %d)", f.Err, first)
		}
		m.rewind(0)
		for _, id := range m.Node.Websites(p) {
			if err := m.Node.Replace(id, nil); err != nil {
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
		first, err := m.Cluster.First(ctx)
		if err != nil {
			return err
		}
		if first > trim+1 {
			return fmt.Errorf("the log starts at %d, after the fetched state's %d; fetching again", first, trim)
		}
		return nil
	}
	trim, err := m.load(p, file, check)
	if err == nil {
		err = check(trim)
	}
	return trim, err
}

// load replaces the statistics of partition p's websites with those r
// holds (Writer's stream) and returns its trim point. Websites this node
// does not know yet are skipped (the registry transaction that creates
// them, after this node's position, comes with their records); websites r
// lacks are emptied.
func (m *Mover) load(p int, r io.Reader, check func(trim uint64) error) (uint64, error) {
	sr, trim, err := newReader(r, p, m.Cluster.Count())
	if err != nil {
		return 0, fmt.Errorf("engine: partition %d: %w", p, err)
	}
	if err := check(trim); err != nil {
		return 0, err
	}
	m.rewind(trim)
	mine := make(map[uint32]bool)
	for _, id := range m.Node.Websites(p) {
		mine[id] = true
	}
	for {
		id, err := sr.Website()
		if err != nil {
			return 0, fmt.Errorf("engine: partition %d: %w", p, err)
		}
		if id == 0 {
			break
		}
		if mine[id] {
			delete(mine, id)
			err = m.Node.Replace(id, sr.Next)
		} else {
			err = sr.Skip() // not known here yet
		}
		if err != nil {
			return 0, fmt.Errorf("engine: partition %d: %w", p, err)
		}
	}
	for id := range mine {
		if err := m.Node.Replace(id, nil); err != nil {
			return 0, err
		}
	}
	return trim, nil
}

// Promote makes the gained partitions the node has caught up with
// answered here, and tells the other nodes.
func (m *Mover) Promote(ctx context.Context) {
	for _, p := range m.Held.unknown() {
		// The last message of the partition (and of the registry) now:
		// once applied, the node has caught up with it.
		last, err := m.Cluster.Last(ctx, 1<<p)
		if err != nil {
			continue // at the next tick
		}
		m.Held.learn(p, last)
	}
	if ready, changed := m.Held.promote(m.Node.Position()); changed {
		m.Cluster.SetHeld(ready)
	}
}

// StartFetches starts fetching the partitions of the target that are not
// held, not being fetched and not fetched yet, at most maxFetching at
// once, until ctx is done.
func (m *Mover) StartFetches(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	for _, p := range m.fetches.Start(m.Cluster.Target() &^ m.Held.Mask()) {
		m.Logger.Debug("cluster: fetch", "partition", p)
		m.wg.Add(1)
		go m.fetch(ctx, p)
	}
}

// fetch fetches partition p into a file. A failure other than no holder
// is logged and forgotten: the next StartFetches tries again.
func (m *Mover) fetch(ctx context.Context, p int) {
	defer m.wg.Done()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	path, err := m.download(fctx, p)
	m.Logger.Debug("cluster: fetched", "partition", p, "err", err)
	switch {
	case err == nil || errors.Is(err, ErrNoHolder):
		m.fetches.Done(p, path, err)
	case m.ErrBusy != nil && errors.Is(err, m.ErrBusy):
		m.fetches.Retry(p) // again at the next tick
	default:
		m.fetches.Failed(p)
		if ctx.Err() == nil {
			m.Logger.Warn("cluster: fetch partition", "partition", p, "err", err)
		}
	}
}

// download fetches partition p's state from a holder into a file. With no
// holder, it is ErrNoHolder if the partition can be rebuilt from the log
// (never trimmed); otherwise the partition waits for a holder.
func (m *Mover) download(ctx context.Context, p int) (string, error) {
	rc, err := m.Cluster.Fetch(ctx, p)
	if errors.Is(err, ErrNoHolder) {
		first, ferr := m.Cluster.First(ctx)
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
	return m.fetches.Spool(rc)
}

// Close waits for the fetches in progress, whose context must be done,
// and removes the files of those not gained.
func (m *Mover) Close() {
	m.wg.Wait()
	m.fetches.Close()
}

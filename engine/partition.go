package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/webstats/webstats/engine/internal/config"
	"github.com/webstats/webstats/engine/internal/logmsg"
	"github.com/webstats/webstats/engine/internal/partitions"
	"github.com/webstats/webstats/snapshot"
)

// Partitions (cluster mode with Options.Partitions; docs/design.md,
// "Partitions"). The websites are spread over the log's MaxPartitions
// subjects, grouped into Count partitions; a node applies the records of
// the partitions it holds only (and every registry transaction: each node
// keeps the whole registry), and asks a node that holds a website's
// partition for that website's statistics (partitionask.go).
//
// Which partitions a node should hold (its target) is the Partitioner's
// business: engine/jetstream computes it from the live nodes. The node
// moves towards it in its follower goroutine, so that nothing is applied
// meanwhile: a partitions.Mover decides the moves, and the engine, its
// Node (partitionmove.go), replaces the websites' statistics. The
// partitions held are stored (KindCluster heldID) with the data they
// describe: a restart follows the same subjects from its snapshot.

// MaxPartitions is how many subjects the shared log spreads websites over;
// a cluster groups them into 1 to MaxPartitions partitions.
const MaxPartitions = partitions.Max

// PartitionOf returns the partition of website among n (1 to
// MaxPartitions).
func PartitionOf(website uint32, n int) int { return partitions.Of(website, n) }

// ErrNoHolder is the answer of Partitioner.Fetch and Ask when no live node
// holds the partition.
var ErrNoHolder = partitions.ErrNoHolder

// errElsewhere is a node's answer to a question about a website of a
// partition it does not hold (any more).
var errElsewhere = errors.New("engine: this node does not hold the website's partition")

// Partitioner is what the engine needs, beyond Cluster, to hold some
// partitions only (package config documents its methods).
type Partitioner = config.Partitioner

// heldID is the snapshot.KindCluster record of the partitions held
// (partitions.Record).
const heldID = 3

// loadHeld reads the partitions the store holds; a store written with
// another partition count is refused. Each is answered for once the node
// has caught up with it, as gained ones are: the node may be far behind.
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
			held = partitions.All(n)
		}
		// Recorded now: once this node has applied anything, "no
		// record" would read as "all".
		if err := e.store.Put(snapshot.KindCluster, heldID, partitions.Record(n, held)); err != nil {
			return fmt.Errorf("engine: partitions held: %w", err)
		}
		e.held.Init(held)
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: partitions held: %w", err)
	}
	count, held, ok := partitions.ParseRecord(v)
	if !ok {
		return fmt.Errorf("engine: partitions held: %d bytes: %w", len(v), snapshot.ErrCorrupt)
	}
	if count != n {
		return fmt.Errorf("engine: this store holds %d partitions' websites, the node is started with %d; a node of this cluster starts from an empty directory", count, n)
	}
	e.held.Init(held)
	return nil
}

// applies reports whether this node applies website's records: always
// without partitions.
func (e *Engine) applies(website uint32) bool {
	if e.opts.Partitions == nil {
		return true
	}
	return e.held.Has(PartitionOf(website, e.opts.Partitions.Count()))
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
// into a file, so that the follower stops only to import one that has
// arrived.
func (e *Engine) followPartitions(ctx context.Context, fn func(LogMessage) error) error {
	pt := e.opts.Partitions
	var err error
	if !e.swept {
		e.swept = true
		err = e.sweep()
	}
	after, merr := e.mover.Rebalance(ctx)
	if err = errors.Join(err, merr); err != nil {
		e.opts.Logger.Error("cluster: partitions", "err", err)
	}
	e.mover.StartFetches(ctx)
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
			case <-e.mover.Fetched():
			case <-tick.C:
			}
			if seq := e.seq.Load(); seq != at {
				at, still = seq, time.Now()
			} else if time.Since(still) > quietAfter {
				still = time.Now()
				e.publishNoop(fctx)
			}
			e.mover.Promote(ctx)
			e.mover.StartFetches(ctx)
			if e.mover.Planned() {
				cancel()
				return
			}
		}
	}()
	err = pt.Follow(fctx, after, e.held.Mask(), fn)
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
// publishes a no-op on the registry's subject.
const quietAfter = time.Hour

// A node follows the registry's subject and its partitions' only: when
// none of them gets a message, its position stays still, holding back the
// log's trimming (its snapshots record it) and, once the log's age limit
// passes it, looking like a gap. A no-op (logmsg.Noop) on the registry's
// subject, which every node follows, moves every node's position.

// publishNoop publishes a no-op (failures are logged: the next quiet hour
// tries again).
func (e *Engine) publishNoop(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.opts.Cluster.Publish(ctx, 0, []byte{logmsg.Noop}); err != nil && ctx.Err() == nil {
		e.opts.Logger.Warn("cluster: publish a no-op", "err", err)
	}
}

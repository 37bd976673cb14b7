package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/webstats/webstats/engine/internal/config"
	"github.com/webstats/webstats/engine/internal/idem"
	"github.com/webstats/webstats/engine/internal/importlog"
	"github.com/webstats/webstats/engine/internal/logmsg"
	"github.com/webstats/webstats/engine/internal/partitions"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/regtx"
	"github.com/webstats/webstats/engine/internal/wire"
	"github.com/webstats/webstats/snapshot"
)

// Cluster is what the engine needs from a replicated log shared by several
// engines (cluster mode, SPEC §12; package config documents its methods).
// engine/jetstream implements it on NATS JetStream; without it
// (Options.Cluster nil) the engine is one process with its own log in the
// store, as always.
type Cluster = config.Cluster

// publish is ingest in cluster mode: the records go to the shared log, and
// the follower (follow) applies them, here as on every other node. They go
// as one message (package logmsg), so that a call is counted whole or not
// at all, on every node: more than the log takes in one message is
// ErrTooLarge.
func (e *Engine) publish(ctx context.Context, website uint32, recs []record.Hit, idx []int, mark *idem.Mark) (ok bool, err error) {
	e.regMu.RLock()
	s := e.sites[website]
	e.regMu.RUnlock()
	if s == nil {
		return false, nil
	}
	msg, n := logmsg.EncodeHits(recs, idx, mark)
	if n > logmsg.MaxRecords || len(msg) > e.opts.Cluster.MaxMessage() {
		return false, fmt.Errorf("%w: %d hits of one website make a message of %d bytes; the cluster's log takes %d", ErrTooLarge, len(idx), len(msg), e.opts.Cluster.MaxMessage())
	}
	if err := e.publishCounted(ctx, website, msg); err != nil {
		return false, err
	}
	return true, nil
}

// initCluster makes what cluster mode needs beside the log: the runner of
// this node's registry transactions and, with partitions, the mover of its
// partitions (which removes the fetches a crash left).
func (e *Engine) initCluster() {
	e.regRunner = regtx.NewRunner(regtx.Config{
		Publish:    func(ctx context.Context, msg []byte) error { return e.publishCounted(ctx, 0, msg) },
		MaxMessage: func() int { return e.opts.Cluster.MaxMessage() },
		Rand:       e.opts.Rand, Unavailable: ErrClusterUnavailable, TooLarge: ErrTooLarge,
	})
	if e.opts.Partitions != nil {
		e.mover = partitions.NewMover(partitions.Config{
			Cluster: e.opts.Partitions, Node: partitionNode{e}, Held: &e.held,
			Dir: e.fetchDir(), Logger: e.opts.Logger, ErrBusy: ErrBusy,
		})
	}
}

// publishCounted publishes msg, counted in the cluster's metrics.
func (e *Engine) publishCounted(ctx context.Context, website uint32, msg []byte) error {
	t0 := time.Now()
	if err := e.opts.Cluster.Publish(ctx, website, msg); err != nil {
		e.cluster.publishErrs.Add(1)
		return fmt.Errorf("%w: %w", ErrClusterUnavailable, err)
	}
	e.cluster.publishNs.Add(int64(time.Since(t0)))
	e.cluster.publishes.Add(1)
	return nil
}

// LogMessage is a message of the shared log as Follow gives it.
type LogMessage = config.LogMessage

// ClusterMetrics describe a node's place in its cluster (Metrics.Cluster).
type ClusterMetrics struct {
	// Applied is the sequence of the last message applied (or skipped);
	// Pending how many the log held after it when it came.
	Applied, Pending uint64
	// Lag is how long the last message applied waited in the log before
	// this node applied it, when more were pending after it; 0 when it
	// was the last (the node had caught up).
	Lag time.Duration
	// Publishes counts the messages this node published (acknowledged),
	// and PublishTime the time they took to be acknowledged, in all.
	Publishes   uint64
	PublishTime time.Duration
	// PublishErrors counts the publishes that failed.
	PublishErrors uint64
	// RegistryConflicts counts this node's registry changes that another
	// node's came before, and that were run again (regtx.go).
	RegistryConflicts uint64
	// FollowError is why the follower is not following, since its last
	// progress ("" while it follows); FollowErrors counts its failures.
	// A node with a FollowError answers from a log position that may be
	// behind: Applied stops, and Pending and Lag are those of the last
	// message it applied.
	FollowError  string
	FollowErrors uint64
	// Partitions is the cluster's partition count (0: every node holds
	// every website); Held the partitions this node holds (bit p:
	// partition p), Ready those of them it has caught up with and answers
	// for, and Target those it should hold.
	Partitions          int
	Held, Ready, Target uint64
}

// clusterCounters feed ClusterMetrics.
type clusterCounters struct {
	pending, lagNs                    atomic.Int64
	publishes, publishNs, publishErrs atomic.Int64
	followErrs                        atomic.Int64
	followErr                         atomic.Pointer[string]
	gap                               atomic.Bool // the last follow error was ErrLogGap
}

// ClusterMetrics returns the node's place in its cluster, or nil when the
// engine is not a node of one. It costs a few atomic loads (Metrics, which
// includes it, walks every website).
func (e *Engine) ClusterMetrics() *ClusterMetrics {
	if e.opts.Cluster == nil {
		return nil
	}
	c := &e.cluster
	m := &ClusterMetrics{
		Applied:       e.seq.Load(),
		Pending:       uint64(c.pending.Load()),
		Lag:           time.Duration(c.lagNs.Load()),
		Publishes:     uint64(c.publishes.Load()),
		PublishTime:   time.Duration(c.publishNs.Load()),
		PublishErrors: uint64(c.publishErrs.Load()),
		FollowErrors:  uint64(c.followErrs.Load()),

		RegistryConflicts: uint64(e.regRunner.Conflicts()),
	}
	if p := c.followErr.Load(); p != nil {
		m.FollowError = *p
	}
	if pt := e.opts.Partitions; pt != nil {
		m.Partitions, m.Held, m.Ready, m.Target = pt.Count(), e.held.Mask(), e.held.Ready(), pt.Target()
	}
	return m
}

// checkLog makes sure the store follows the cluster's log: it records the
// log's identity in a store that has applied nothing yet, and refuses a
// store that follows another log or was written by a single process (its
// sequence numbers are its own log's).
func (e *Engine) checkLog() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := e.opts.Cluster.Identity(ctx)
	if err != nil {
		return fmt.Errorf("engine: cluster log: %w", err)
	}
	stored, err := e.store.Get(snapshot.KindCluster, 1)
	switch {
	case err == nil && string(stored) == id:
		return e.loadRegVersion()
	case err == nil:
		return fmt.Errorf("%w: it follows %q, the cluster's is %q (recreated?); a node of this cluster starts from an empty directory", ErrWrongLog, stored, id)
	case !errors.Is(err, snapshot.ErrNotFound):
		return fmt.Errorf("engine: cluster log: %w", err)
	}
	// (A cluster's registry comes from its log: accounts or websites
	// made by a single process would exist on this node only.)
	accounts, err := e.storeHas(snapshot.KindAccount)
	if err != nil {
		return err
	}
	applied := e.store.Trim() > 0 || accounts || len(e.sites) > 0
	for _, s := range e.sites {
		applied = applied || s.state.lastSeq > 0
	}
	if applied {
		return fmt.Errorf("%w: it was written without cluster mode (or for another log); a cluster node starts from an empty directory", ErrWrongLog)
	}
	if err := e.store.Put(snapshot.KindCluster, 1, []byte(id)); err != nil {
		return fmt.Errorf("engine: cluster log: %w", err)
	}
	return nil
}

// follow applies the shared log from the last record applied until Close,
// starting again after an error (a lost connection, a record whose day
// could not be read) from the first record not applied.
func (e *Engine) follow() {
	defer e.bg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-e.stop
		cancel()
	}()
	defer cancel()
	var recs []record.Hit
	apply := func(m LogMessage) error { return e.applyMessage(ctx, m, &recs) }
	lastAt, wait := e.seq.Load(), time.Second/2
	for ctx.Err() == nil {
		var err error
		if e.opts.Partitions != nil {
			if err = e.followPartitions(ctx, apply); err == nil {
				continue // a move between partitions, made next round
			}
		} else {
			err = e.opts.Cluster.Follow(ctx, e.seq.Load(), apply)
		}
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return
		}
		// Again after a second, then less and less often (at most every
		// 10 s) while it makes no progress: a lasting cause (a gap in the
		// log, a message this version cannot read) is logged, not spun on.
		if at := e.seq.Load(); at != lastAt {
			lastAt, wait = at, time.Second
		} else {
			wait = min(2*wait, 10*time.Second)
		}
		msg := err.Error()
		e.cluster.followErr.Store(&msg)
		e.cluster.gap.Store(errors.Is(err, ErrLogGap))
		e.cluster.followErrs.Add(1)
		e.opts.Logger.Error("cluster: follow the log", "after", lastAt, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// applyMessage applies message m of the log, whatever its kind; recs is
// the records of the last message applied, reused.
func (e *Engine) applyMessage(ctx context.Context, m LogMessage, recs *[]record.Hit) error {
	// Not e.enter: a registry change waits for the follower while it
	// holds enter's read lock, which Close's write lock would then keep
	// the follower from taking. Close stops the follower (ctx) and waits
	// for it (e.bg) before it closes the store.
	if ctx.Err() != nil {
		return ErrClosed
	}
	seq := m.Seq
	var lag time.Duration
	if m.Pending > 0 {
		lag = max(0, time.Since(m.Time))
	}
	e.cluster.pending.Store(int64(m.Pending))
	e.cluster.lagNs.Store(int64(lag))
	e.cluster.followErr.Store(nil)
	var kind byte
	if len(m.Data) > 0 {
		kind = m.Data[0]
	}
	switch {
	case kind == logmsg.Noop && len(m.Data) == 1:
		e.seq.Store(seq)
		return nil
	case kind == regtx.Kind:
		rm, err := regtx.Decode(m.Data)
		if err != nil {
			return fmt.Errorf("message %d: %w", seq, err)
		}
		return e.applyRegistry(seq, rm)
	case kind == importlog.Kind:
		im, err := importlog.Decode(m.Data)
		if err != nil {
			return fmt.Errorf("message %d: %w", seq, err)
		}
		return e.applyImport(seq, m.Time, im)
	}
	var err error
	var mark *idem.Mark
	if *recs, mark, err = logmsg.DecodeHits(m.Data, *recs); err != nil {
		// Skipping it would make this node differ from those that can
		// read it (a newer version's record during an upgrade): the
		// follower stops here and retries, and the lag shows.
		return fmt.Errorf("message %d: %w", seq, err)
	}
	return e.applyShared(seq, *recs, mark)
}

// applyShared applies the records of the message of log sequence seq (one
// website's), as ingest does with its own durable records: pinned, queued,
// applied, all under one hold of the shard lock. A message its website has
// already applied (saved state newer than the snapshot's trim point) is
// skipped, and so is one whose idempotency key the website's table holds
// (an earlier message's, younger than KeyTTL at mark's time): every node
// decides it alike, in log order.
func (e *Engine) applyShared(seq uint64, recs []record.Hit, mark *idem.Mark) error {
	website := recs[0].Website
	for i := range recs {
		if recs[i].Website != website {
			return fmt.Errorf("engine: cluster message %d: records of two websites: %w", seq, wire.ErrRecord)
		}
	}
	e.regMu.RLock()
	s := e.sites[website]
	e.regMu.RUnlock()
	if s == nil || !e.applies(website) {
		// (Another partition's: the follower asks for none, but its
		// filter and the held partitions change between two rounds.)
		e.seq.Store(seq)
		return nil
	}
	st := s.state
	sh := e.shardOf(website)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if seq <= st.lastSeq || st.deleted {
		e.seq.Store(seq)
		return nil
	}
	if mark != nil {
		if !st.keys.Accepts(mark) {
			st.appliedLocked(seq)
			e.seq.Store(seq)
			return nil
		}
	}
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	hits, err := e.pinLocked(sh, st, recs, idx, nil)
	if err != nil {
		return err
	}
	if hits == nil { // deleted meanwhile
		e.seq.Store(seq)
		return nil
	}
	for i := range hits {
		hits[i].seq = seq
	}
	if mark != nil {
		mark.Seq = seq
		hits[len(hits)-1].mark = mark
	}
	st.pending = append(st.pending, hits...)
	e.seq.Store(seq)
	e.drainLocked(st, seq, s.cfg.Load().domain)
	return nil
}

// catchUp waits, at most Options.CatchUp, until the follower has applied
// the log up to its last message now: Open returns a node that answers
// with the registry and statistics of the cluster, not from behind.
func (e *Engine) catchUp() error {
	if e.opts.CatchUp < 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.CatchUp)
	defer cancel()
	var last uint64
	var err error
	if e.opts.Partitions != nil {
		last, err = e.opts.Partitions.Last(ctx, e.held.Mask())
	} else {
		last, err = e.opts.Cluster.Last(ctx)
	}
	if err != nil {
		e.opts.Logger.Warn("cluster: the log's last message", "err", err)
		return nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for e.seq.Load() < last {
		if e.cluster.gap.Load() {
			// The log will not come to hold what it lacks: a node that
			// opened anyway would answer without that history.
			msg := ""
			if p := e.cluster.followErr.Load(); p != nil {
				msg = *p
			}
			return fmt.Errorf("%w (%s): start the node on an empty data directory, from the cluster's seed", ErrLogGap, msg)
		}
		select {
		case <-ctx.Done():
			e.opts.Logger.Warn("cluster: open before catching up", "applied", e.seq.Load(), "last", last)
			return nil
		case <-tick.C:
		}
	}
	return nil
}

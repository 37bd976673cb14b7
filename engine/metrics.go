package engine

import (
	"context"
	"time"

	"github.com/webstats/webstats/engine/internal/stored"
	"github.com/webstats/webstats/snapshot"
)

// Metrics are the engine's running counts.
type Metrics struct {
	Tracked       uint64                // hits counted since Open
	Dropped       map[DropReason]uint64 // hits dropped since Open, by reason
	ResidentBytes int64                 // bytes of resident closed days, what their memos keep with them
	StateBytes    int64                 // bytes of resident visitor state
	KeyBytes      int64                 // bytes of the idempotency keys (TrackOnce), counted in MemoryBudget
	RealtimeBytes int64                 // bytes of the realtime visitor slots (in MemoryBudget)
	Evicted       uint64                // days and visitor state evicted since Open
	Overflow      uint64                // values counted as "(other)" (Options.MaxValues) since Open
	Snapshots     uint64                // snapshots written since Open
	LastSnapshot  time.Duration         // how long the last snapshot took
	Websites      int
	// OpenSegmentBytes estimates the segments rows of open days (today's):
	// exact filtered statistics keep a row per hit and per visit (SPEC
	// §10.1), so this grows with the day's hits, not with MemoryBudget.
	OpenSegmentBytes int64
	// OpenBytes estimates the memory of open days whole (their buckets
	// and segments), outside MemoryBudget until a snapshot freezes them
	// (MakeRoom watches those before today).
	OpenBytes int64
	// LogSeq is the sequence of the last log record applied (or skipped:
	// its website was gone). In cluster mode it is the shared log's, and
	// every node that has caught up reports the same.
	LogSeq uint64
	// SnapshotSeq is the log sequence the last snapshot in the store
	// covers: a restart replays the log after it (0: none).
	SnapshotSeq uint64
	// Cluster is nil unless the engine is a node of a cluster
	// (Options.Cluster).
	Cluster *ClusterMetrics
}

// SnapshotSeq is Metrics().SnapshotSeq, without the rest: the log sequence
// the last snapshot in the store covers.
func (e *Engine) SnapshotSeq() uint64 { return e.store.Trim() }

// Metrics returns the engine's running counts.
func (e *Engine) Metrics() Metrics {
	m := Metrics{
		Tracked:       e.counters.tracked.Load(),
		Dropped:       make(map[DropReason]uint64),
		ResidentBytes: e.counters.resident.Load() + e.counters.dimMemos.Load(),
		StateBytes:    e.counters.state.Load(),
		KeyBytes:      e.counters.keys.Load(),
		RealtimeBytes: e.counters.realtime.Load(),
		Evicted:       e.counters.evicted.Load(),
		Overflow:      e.counters.overflow.Load(),
		Snapshots:     e.counters.snapshots.Load(),
		LastSnapshot:  time.Duration(e.counters.lastSnapNs.Load()),
		LogSeq:        e.seq.Load(),
		SnapshotSeq:   e.store.Trim(),
		Cluster:       e.ClusterMetrics(),
	}
	for _, r := range DropReasons() {
		m.Dropped[r] = e.counters.dropped[r].Load()
	}
	e.regMu.RLock()
	m.Websites = len(e.sites)
	e.regMu.RUnlock()
	m.OpenSegmentBytes, m.OpenBytes = e.openBytes()
	return m
}

// StoreUsage is what the engine's store holds, by part (snapshot.Usage):
// the bytes of its live keys and values, for measurements (webstats-bench
// reports disk per hit by part). It reads the whole store.
type StoreUsage = snapshot.Usage

// StoreUsage reads the whole store once and sums its bytes by part; a
// day's segments are told apart from its buckets. Like Metrics it covers
// every website and shows only sizes. It takes as long as reading the
// store (Close waits for it): not for a server's requests.
func (e *Engine) StoreUsage(ctx context.Context) (StoreUsage, error) {
	if !e.enter() {
		return StoreUsage{}, ErrClosed
	}
	defer e.exit()
	return e.store.Usage(ctx, func(day []byte) int {
		_, seg, _, err := stored.SplitDay(day)
		if err != nil {
			return 0
		}
		return len(seg)
	})
}

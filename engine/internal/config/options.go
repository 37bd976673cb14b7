package config

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/webstats/webstats/engine/internal/salts"
	"github.com/webstats/webstats/snapshot"
)

// Options configures an Engine. The zero value is valid: an in-memory engine
// with the defaults given beside each field.
type Options struct {
	// Dir is the data directory (a Pebble store). Default "": the engine keeps
	// its store in memory and everything is lost at Close.
	Dir string
	// FS is the file system Dir lives on. Default nil: the operating system's
	// (or an in-memory one when Dir is ""). Tests pass snapshot.NewMemFS().
	FS snapshot.FS
	// NoSync, when true, acknowledges hits and registry writes before they are
	// synced to disk. Default false: Track returns only once its hits are
	// durable (group commit).
	NoSync bool
	// SyncInterval, when positive, acknowledges hits, imports and registry
	// writes once they are written to the operating system, without an
	// fsync, and syncs the log every SyncInterval in the background (and at
	// each snapshot and at Close): a crash of the process (kill -9) loses
	// nothing acknowledged, a crash of the machine at most about the last
	// interval (snapshot.Options.SyncInterval says what else it risks). A
	// failed background sync is logged and fails the writes after it as a
	// failed sync does by default (ErrLogFailed). Not with NoSync, nor with
	// Cluster (there the cluster's log acknowledges hits). Default 0: Track
	// returns only once its hits are synced. Negative is invalid.
	SyncInterval time.Duration

	// SaltPeriod is how long a visitor stays the same visitor. Default salts.Day (engine.SaltDay).
	SaltPeriod salts.Period
	// GeoIP is the path of a MaxMind or DB-IP .mmdb (City or Country) used for
	// countries and cities. Default "": countries from the embedded database,
	// no cities.
	GeoIP string
	// UACacheSize bounds the cache of parsed user agents. Default 4096.
	UACacheSize int

	// SnapshotEvery is the interval of the background snapshots. Default 30s;
	// a negative value turns the background loop off (snapshots are then taken
	// only by Snapshot and Close).
	SnapshotEvery time.Duration
	// MemoryBudget caps the bytes of resident day buckets of closed days
	// and of resident visitor state of past salt periods: the least
	// recently used are evicted (they are in the store) and read back on
	// demand. Today's days and the current period's state are not evicted,
	// but today's segment rows are sealed into the store once they pass a
	// sixteenth of the budget (at most 8 MiB, the default without one).
	// A budget also sizes the store's block cache and memtables, a
	// sixteenth each, and the table of the values queries group by (a
	// sixteenth, 1 to 16 MiB, outside the budget). The idempotency keys
	// of imports (Metrics.KeyBytes) count in the budget but are never
	// evicted: days and visitor state make room for them. Default 0: no cap.
	MemoryBudget int64
	// MaxValues bounds the distinct values a day keeps per dimension (pages,
	// referrers, ...): further new values count as "(other)" (SPEC §13),
	// so a flood of unique values cannot grow memory without bound.
	// Default 50,000; a negative value means no limit.
	MaxValues int
	// Retention drops days older than this many days from memory and disk.
	// Default 0: keep everything.
	Retention int
	// QueryCache is how many answers of Owner.Query are kept for a repeated
	// query whose website got no new data since (see docs/design.md,
	// "Query caches"). Default 0: 256; a negative value keeps none (the
	// benchmarks measure queries so).
	QueryCache int

	// MaxImportKeys bounds the idempotency keys a website holds (TrackOnce):
	// past it, a call with a new key is refused (*KeysFullError) until the
	// oldest is KeyTTL old. Default DefaultMaxImportKeys.
	MaxImportKeys int

	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Rand is the source of salts and API keys. Default crypto/rand.Reader.
	Rand io.Reader
	// Cluster, when set, makes the engine one node of a cluster: hits go
	// to the shared log it gives and are applied from it (see Cluster).
	// The store keeps this node's days, visitor state and registry. Nil:
	// one process, the log in the store.
	Cluster Cluster
	// Partitions, with Cluster, makes the node hold the statistics of
	// some partitions of the websites only, those Partitions gives it,
	// and ask the nodes that hold the others (engine/partition.go). Nil: every
	// node holds every website.
	Partitions Partitioner
	// CatchUp bounds how long Open waits, in cluster mode, for the node to
	// apply the log up to its last message at Open (the registry with it),
	// so that a new or restarted node does not answer from behind. Default
	// one minute; past it Open returns and the follower goes on (/healthz
	// shows the lag). Negative: no wait.
	CatchUp time.Duration
	// Logger receives the engine's logs. Default: discarded.
	Logger *slog.Logger
}

// DefaultMaxValues is the default of Options.MaxValues.
const DefaultMaxValues = 50_000

// DefaultMaxImportKeys is the default of Options.MaxImportKeys.
const DefaultMaxImportKeys = 10_000

// Fill returns a copy of o (nil: the zero Options) with every unset field
// filled in, or an error when o is invalid.
func Fill(o *Options) (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.SaltPeriod > salts.Month {
		return c, fmt.Errorf("engine: invalid salt period %d", c.SaltPeriod)
	}
	if c.Retention < 0 {
		return c, fmt.Errorf("engine: negative retention %d", c.Retention)
	}
	if c.MemoryBudget < 0 {
		return c, fmt.Errorf("engine: negative memory budget %d", c.MemoryBudget)
	}
	if c.SyncInterval < 0 {
		return c, fmt.Errorf("engine: negative sync interval %v", c.SyncInterval)
	}
	if c.SyncInterval > 0 && c.NoSync {
		return c, errors.New("engine: SyncInterval and NoSync are exclusive")
	}
	if c.SyncInterval > 0 && c.Cluster != nil {
		// Hits are acknowledged once the cluster's log has them; the
		// store's syncs would change nothing a client is promised.
		return c, errors.New("engine: SyncInterval with a cluster: the cluster's log acknowledges hits")
	}
	if c.Partitions != nil && c.Cluster == nil {
		return c, errors.New("engine: partitions without a cluster")
	}
	if c.MaxImportKeys <= 0 {
		c.MaxImportKeys = DefaultMaxImportKeys
	}
	if c.MaxValues == 0 {
		c.MaxValues = DefaultMaxValues
	}
	if c.UACacheSize <= 0 {
		c.UACacheSize = 4096
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = 30 * time.Second
	}
	if c.CatchUp == 0 {
		c.CatchUp = time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Dir == "" {
		c.Dir = "webstats-mem"
		if c.FS == nil {
			c.FS = snapshot.NewMemFS()
		}
	}
	return c, nil
}

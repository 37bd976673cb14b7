package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	_ "time/tzdata" // time zones in a static binary

	"github.com/webstats/webstats/engine/internal/config"
	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/importlog"
	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/internal/partitions"
	"github.com/webstats/webstats/engine/internal/password"
	"github.com/webstats/webstats/engine/internal/regtx"
	"github.com/webstats/webstats/engine/internal/salts"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/ua"
	"github.com/webstats/webstats/engine/internal/waiters"
	"github.com/webstats/webstats/engine/internal/website"
	"github.com/webstats/webstats/snapshot"
)

// Engine is a webstats engine. It is safe for concurrent use. Open one with
// Open and Close it when done.
type Engine struct {
	opts  Options
	now   func() time.Time
	store *snapshot.Store
	ua    *ua.Parser
	geo   *geo.Locator

	// seq is the last log sequence number assigned. Numbers are assigned
	// under the shard lock of the hit's website, as the hit is applied.
	seq atomic.Uint64

	// regMu guards the registry: sites, domains, the website counter and
	// the attached package's records (seam.go). A site's web and cfg are
	// replaced, never modified, under it.
	regMu       sync.RWMutex
	sites       map[uint32]*site
	domains     map[string]uint32 // normalised domain → website id
	nextWebsite uint32            // last website id assigned
	records     Records           // the package attached (Registry.Attach), or nil
	// applyMu is held while a registry transaction applies (cluster
	// mode) and while a package attaches.
	applyMu sync.Mutex
	// Cluster mode (regtx.go): the dry run in progress, whose writes are
	// collected; the log position of the last registry transaction
	// applied; what publishes this node's, one at a time, and waits for
	// them.
	regTx     *regtx.Tx
	regSeq    uint64
	regRunner *regtx.Runner
	// importWaiting are the imports this node published (cluster mode).
	importWaiting waiters.Set[importlog.Result]

	gate password.Hasher // password hashes running at once

	// shards guard the statistics state of websites (site.state): a website
	// lives in shard id % len(shards).
	shards []shard

	salts salts.Box

	// intern is the table of values queries group by (segments.Interns).
	intern      atomic.Pointer[segments.Interns]
	internStats segments.InternStats

	// held is the partitions this node holds and answers for
	// (partition.go), which mover changes; unused without
	// Options.Partitions. serveStop ends its answers to the other nodes.
	// swept is set once the follower removed statistics of partitions
	// not held.
	held      partitions.Held
	mover     *partitions.Mover
	serveStop func()
	swept     bool
	// snapMu serialises snapshots with each other and with the deletion of
	// a website's keys; it guards lastTrim and trimmedSince.
	snapMu       sync.Mutex
	lastTrim     uint64    // trim point of the last snapshot
	trimmedSince uint64    // log entries trimmed since the log was last compacted
	lastSnapTick int64     // LRU clock at the start of the last snapshot
	lastCompact  time.Time // when the trimmed log was last compacted
	// sinceRoom counts the hits of calls of several hits since MakeRoom
	// last looked (under a memory budget); roomMu lets one caller at a
	// time decide to snapshot, so that callers deciding together take one.
	sinceRoom atomic.Int64
	roomMu    sync.Mutex

	counters counters
	cluster  clusterCounters // cluster mode's (Options.Cluster)

	// imported is the imported layer of the websites read so far
	// (imported.go).
	imported importedLayer

	// sealBytes is the size of an open day's segment rows at which a
	// snapshot seals them into the store (SPEC §13), and at which an apply
	// asks for an early snapshot on kick (see loop).
	sealBytes int
	kick      chan struct{}
	// parts caches decoded sealed parts for queries.
	parts *segments.PartCache
	// wholes caches open days made whole for queries (segments.WholeCache).
	wholes *segments.WholeCache
	// wholeLimit bounds the rows of a day with sealed parts a segment
	// query makes whole (a quarter of MemoryBudget, at least 4 MiB; 0,
	// none, without a budget): a day beyond it is read in chunks of at
	// most about that size (segments.Chunks), counted in streamed.
	wholeLimit int64
	streamed   atomic.Int64
	// streamSlot is held while a chunk of a streamed day is built and
	// scanned (streamChunk): one at a time, engine-wide.
	streamSlot chan struct{}
	// results caches the answers of queries (segments.Answers).
	results *segments.Answers

	// logFailed holds the error of a failed log sync: every later write
	// is refused (ErrLogFailed) until the engine is opened again.
	logFailed atomic.Pointer[error]
	// stateFailed holds the error of a store read a logged hit needed
	// and did not get (repinLocked): memory then lacks a logged hit, so
	// nothing more is logged or snapshotted until a restart replays it.
	stateFailed atomic.Pointer[error]

	// life guards closed: every operation that touches the store holds it
	// for reading (enter/exit), and Close takes it for writing, so the store
	// is never used after it is closed.
	life   sync.RWMutex
	closed bool
	stop   chan struct{}
	// closing is closed when Close begins, before it waits for the
	// operations in flight (life): an import's wait for the follower
	// ends on it rather than hold Close (importcluster.go).
	closing     chan struct{}
	closingOnce sync.Once
	bg          sync.WaitGroup
}

// enter starts an operation; it reports false when the engine is closed.
// Every true must be matched by exit.
func (e *Engine) enter() bool {
	e.life.RLock()
	if e.closed {
		e.life.RUnlock()
		return false
	}
	return true
}

func (e *Engine) exit() { e.life.RUnlock() }

// shard guards the statistics state of the websites in it.
type shard struct {
	mu sync.Mutex
	_  [56]byte // keep shards on their own cache lines
}

// site is one website: its record, the settings the tracking path reads
// without locks, and its statistics state.
type site struct {
	web   *Website                   // guarded by Engine.regMu
	goals *segments.GoalSet          // guarded by Engine.regMu; nil: none
	cfg   atomic.Pointer[siteConfig] // replaced on update; read without locks
	state *siteState                 // guarded by the shard's mu
}

// siteConfig is what the ingestion pipeline needs of a website, parsed once.
type siteConfig struct {
	id          uint32
	domain      string
	loc         *time.Location
	excludeBots bool
	rules       norm.PageRules
	ips         norm.IPSet
}

func (s *site) setWebsite(w *Website) {
	s.web = w
	c := &siteConfig{id: w.ID, domain: w.Domain, excludeBots: w.ExcludeBots == 1,
		loc: website.Location(w), rules: website.PageRules(w), ips: website.IPs(w)}
	s.cfg.Store(c)
}

// putWebsiteLocked stamps w's UpdatedAt, stores it and makes it the
// website's record. In a cluster's dry run the record is only collected:
// s.cfg is read without regMu, and the record is installed when its
// transaction is applied. e.regMu must be held for writing.
func (e *Engine) putWebsiteLocked(s *site, w *Website) error {
	w.UpdatedAt = e.now().UTC().Truncate(time.Microsecond)
	if err := e.putJSON(snapshot.KindWebsite, uint64(w.ID), w); err != nil {
		return err
	}
	if e.regTx == nil {
		s.setWebsite(w)
	}
	return nil
}

// addSiteLocked registers w. e.regMu must be held.
func (e *Engine) addSiteLocked(w *Website, st *siteState) {
	s := &site{state: st}
	s.setWebsite(w)
	e.sites[w.ID] = s
	e.domains[w.Domain] = w.ID
}

func (e *Engine) shardOf(website uint32) *shard {
	return &e.shards[website%uint32(len(e.shards))]
}

// Open opens an engine. A nil opts means the defaults (see Options): an
// in-memory engine. Open reads the registry and the last snapshot and replays
// the log written after it.
func Open(opts *Options) (*Engine, error) {
	o, err := config.Fill(opts)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		opts:       o,
		now:        o.Now,
		sites:      make(map[uint32]*site),
		domains:    make(map[string]uint32),
		shards:     make([]shard, 4*runtime.GOMAXPROCS(0)),
		stop:       make(chan struct{}),
		closing:    make(chan struct{}),
		kick:       make(chan struct{}, 1),
		streamSlot: make(chan struct{}, 1),
		// The log is compacted compactLogEvery after start first (by
		// the engine's clock: a simulated history compacts as the real
		// one would).
		lastCompact: o.Now(),
	}
	e.sealBytes = config.SealBytes(o.MemoryBudget)
	// The caches are outside MemoryBudget: each is a sixteenth of it at
	// most (sealBytes), at least 1 MiB.
	e.parts = segments.NewPartCache(max(e.sealBytes, 1<<20))
	if o.MemoryBudget > 0 {
		e.wholeLimit = max(o.MemoryBudget/4, 4<<20)
	}
	e.wholes = segments.NewWholeCache(max(e.sealBytes, 1<<20))
	e.results = segments.NewAnswers(o.QueryCache, max(e.sealBytes, 1<<20))
	e.ua = ua.New(o.UACacheSize)
	if e.geo, err = geo.Open(o.GeoIP); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	so := &snapshot.Options{Dir: o.Dir, FS: o.FS, NoSync: o.NoSync, SyncInterval: o.SyncInterval, Logger: o.Logger}
	if o.MemoryBudget > 0 {
		// Pebble's block cache and memtables live outside the Go heap
		// (with cgo; in it without): a budget sizes them too, a
		// sixteenth each (the cache at most its default, memtables at
		// most snapshot.MaxMemTableSize). Smaller memtables flush some
		// log entries a later trim would have dropped; larger ones make
		// larger write-ahead log files.
		so.CacheSize = min(max(o.MemoryBudget/16, 1<<20), snapshot.DefaultCacheSize)
		so.MemTableSize = min(max(o.MemoryBudget/16, 1<<20), snapshot.MaxMemTableSize)
	}
	e.initCluster()
	e.store, err = snapshot.Open(so)
	if err != nil {
		e.geo.Close()
		return nil, fmt.Errorf("engine: %w", err)
	}
	if err := e.load(); err != nil {
		e.store.Close()
		e.geo.Close()
		return nil, err
	}
	if o.SnapshotEvery > 0 {
		e.bg.Add(1)
		go e.loop(o.SnapshotEvery)
	}
	if o.Cluster != nil {
		e.bg.Add(1)
		go e.follow()
		if err := e.catchUp(); err != nil {
			return nil, errors.Join(err, e.Close())
		}
	}
	if o.Partitions != nil {
		if e.serveStop, err = o.Partitions.Serve(e.exportPartition, e.serveAsk); err != nil {
			return nil, errors.Join(fmt.Errorf("engine: partitions: %w", err), e.Close())
		}
	}
	return e, nil
}

// loop takes a snapshot every interval until Close.
func (e *Engine) loop(every time.Duration) {
	defer e.bg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
		case <-e.kick:
			// An open day's rows reached sealBytes: an early snapshot
			// seals them, at most one a kickGap (a day that cannot be
			// sealed, such as a past day written again, asks again).
			if time.Since(last) < kickGap {
				continue
			}
		}
		last = time.Now()
		if err := e.Snapshot(context.Background()); err != nil && !errors.Is(err, ErrClosed) {
			e.opts.Logger.Error("snapshot failed", "err", err)
		}
	}
}

// kickGap is the shortest time between two early snapshots.
const kickGap = time.Second

// kickLocked asks the background loop for an early snapshot when ent, just
// written, is a day a snapshot seals (not a past one) and holds sealBytes of
// segment rows or more.
func (e *Engine) kickLocked(ent *dayEntry) {
	if ent.closed || ent.seg.RowBytes() < e.sealBytes {
		return
	}
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Close takes a final snapshot and closes the store. Calls after the first
// return ErrClosed.
func (e *Engine) Close() error {
	e.closingOnce.Do(func() { close(e.closing) })
	if e.serveStop != nil {
		// First: a partition being sent holds the engine open.
		e.serveStop()
	}
	e.life.Lock()
	if e.closed {
		e.life.Unlock()
		return ErrClosed
	}
	e.closed = true // no operation is in flight now, and none starts
	e.life.Unlock()
	if e.opts.Cluster != nil {
		// The last uses of keys and sessions go into the registry while
		// the follower still runs (a registry transaction waits for it to
		// apply): the final snapshot comes after it has stopped. With
		// the log down this waits regtx.Wait and they are lost.
		if err := e.flushRecords(); err != nil {
			e.opts.Logger.Error("write key and session uses", "err", err)
		}
	}
	close(e.stop)
	e.bg.Wait()
	if e.mover != nil {
		e.mover.Close()
	}
	err := e.snapshot()
	return errors.Join(err, e.store.Close(), e.geo.Close())
}

// Backup writes a consistent copy of the store to dir (which must not exist)
// while tracking goes on. Opening an engine on the copy gives the same answers.
func (e *Engine) Backup(ctx context.Context, dir string) error {
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	if err := e.store.Backup(ctx, dir); err != nil {
		return fmt.Errorf("engine: backup: %w", err)
	}
	return nil
}

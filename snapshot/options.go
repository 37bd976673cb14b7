package snapshot

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FS is a file system the Store lives on. It is Pebble's vfs.FS, re-exported
// so that callers need not import Pebble.
type FS = vfs.FS

// NewMemFS returns an empty in-memory file system, for tests and benchmarks.
// A Store on it lives as long as the FS value; closing and reopening the Store
// on the same FS keeps its contents.
func NewMemFS() FS { return vfs.NewMem() }

// DefaultCacheSize is the default size of the block cache, in bytes;
// DefaultMemTableSize (below) that of a memtable.
const DefaultCacheSize = 32 << 20

// Options configure a Store. The zero value (apart from Dir, which is
// required) gives the defaults. Open copies the Options; changing them after
// Open has no effect.
type Options struct {
	// Dir is the directory of the store. It is created if missing. Required;
	// on a MemFS any name works.
	Dir string

	// FS is the file system. Default (nil): the operating system's, where
	// the store keeps its directory 0700 and its files 0600 (see Open).
	FS FS

	// NoSync, when true, lets write methods return before their data is
	// synced to stable storage, or even written to the operating system:
	// Pebble writes its log buffer to the file when a 32 KiB block fills or
	// a sync is asked for (Flush), so a crash of the process can lose the
	// last block (TestNoSyncKillLoses), and one of the machine more. For
	// benchmarks and embedders that accept the loss; SyncInterval loses
	// nothing to a crash of the process. Default (false): every write
	// method returns only once its data is synced (fsync).
	NoSync bool

	// SyncInterval, when positive, lets write methods return once their
	// data is written to the operating system (it survives a crash of the
	// process, kill -9 included), and syncs the write-ahead log every
	// SyncInterval in the background, at Close, and in Flush and
	// WriteSnapshot: a crash of the machine loses at most about the last
	// interval (walsync.go says what else it risks). Not with NoSync.
	// Default (0): every write method returns only once its data is synced.
	// Negative is invalid.
	SyncInterval time.Duration

	// Logger receives the Store's and Pebble's log messages: Pebble's
	// informational messages and events (flushes, compactions, WAL files) at
	// Debug, its errors at Error. Default (nil): discard everything.
	Logger *slog.Logger

	// CacheSize is the size of Pebble's block cache in bytes.
	// Default (0): DefaultCacheSize, 32 MiB. Negative is invalid.
	CacheSize int64

	// MemTableSize is the size of each of Pebble's memtables in bytes (at
	// most 4 are held while flushes are behind). Default (0):
	// DefaultMemTableSize, 4 MiB; at least 1 MiB. Negative is invalid.
	MemTableSize int64

	// MinFreeBytes is the free space the Store keeps on its file system for
	// Pebble's flushes and compactions: a write that would leave less fails
	// with ErrDiskFull before it reaches Pebble, and Open fails with
	// ErrDiskFull when less is free. Default (0): DefaultMinFreeBytes,
	// 256 MiB. Negative disables the check. It is also off on a file system
	// that cannot report its free space (NewMemFS).
	MinFreeBytes int64
}

// withDefaults returns a copy of o with defaults filled in, or an error when o
// is invalid. A nil o is the zero Options (and fails: Dir is required).
func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Dir == "" {
		return c, fmt.Errorf("snapshot: open: Options.Dir is required")
	}
	if c.FS == nil {
		c.FS = privateFS{vfs.Default}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SyncInterval < 0 {
		return c, fmt.Errorf("snapshot: open %s: Options.SyncInterval is negative (%v)", c.Dir, c.SyncInterval)
	}
	if c.SyncInterval > 0 && c.NoSync {
		return c, fmt.Errorf("snapshot: open %s: Options.SyncInterval and Options.NoSync are exclusive", c.Dir)
	}
	if c.CacheSize < 0 {
		return c, fmt.Errorf("snapshot: open %s: Options.CacheSize is negative (%d)", c.Dir, c.CacheSize)
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.MemTableSize < 0 {
		return c, fmt.Errorf("snapshot: open %s: Options.MemTableSize is negative (%d)", c.Dir, c.MemTableSize)
	}
	if c.MemTableSize == 0 {
		c.MemTableSize = DefaultMemTableSize
	}
	c.MemTableSize = max(c.MemTableSize, 1<<20)
	switch {
	case c.MinFreeBytes == 0:
		c.MinFreeBytes = DefaultMinFreeBytes
	case c.MinFreeBytes < 0:
		c.MinFreeBytes = 0 // no check
	}
	return c, nil
}

// Pebble tuning. The workload is: a write-ahead log of small entries (about
// 150 bytes) appended at up to a few 100k/s and deleted in ranges at each
// snapshot; a few large values (day buckets) rewritten every snapshot; point
// reads and short scans only at start-up and for queries of past days.
const (
	// formatMajorVersion is pinned, not FormatNewest: a Pebble upgrade must
	// not silently ratchet the on-disk format past what the previous release
	// of webstatsd can open. TableFormatV6 includes WAL sync chunks, which
	// tell a torn WAL tail (a crash) from corruption during recovery.
	formatMajorVersion = pebble.FormatTableFormatV6

	// DefaultMemTableSize is Pebble's own default. The memtable sizes the
	// write-ahead log's files, which are what a store holds beyond its
	// data: Pebble would preallocate each at 1.1 × the memtable (the store
	// allocates a step ahead instead: steppedPrealloc) and keeps up to
	// memTableStopWritesThreshold + 1 old ones for reuse. With 32 MiB
	// memtables that was about 200 MiB for any site, a small one's store
	// included (246 MiB for a year of the small site, 25 MiB with 4 MiB;
	// the memory run of webstats-bench). At 100k entries/s the log writes
	// ~17 MB/s, so 4 MiB memtables flush about four times a second, and
	// flush log entries a later snapshot's trim would have dropped:
	// BenchmarkPipeline with batches of 1,000 measured about 9% fewer
	// hits/s than with 32 MiB. A memory budget (the engine's) sizes them
	// up to MaxMemTableSize.
	DefaultMemTableSize = 4 << 20

	// MaxMemTableSize is the largest memtable an engine's memory budget
	// gives: larger ones let trims happen before flushes and flush fewer,
	// larger L0 files, for a WAL of about 7 × 35 MiB.
	MaxMemTableSize = 32 << 20

	// memTableStopWritesThreshold: memtables queued for flush before writes
	// stall. 4 × the memtable bounds their memory (16 MiB by default, 128
	// MiB at most) while absorbing a slow flush on a busy disk.
	memTableStopWritesThreshold = 4

	// l0CompactionThreshold / l0StopWritesThreshold follow CockroachDB:
	// compact L0 early (2 files), and stall writes only when L0 is badly
	// behind (1000 sublevels, instead of Pebble's 12): a stall of the
	// write-ahead log is a stall of every tracking request.
	l0CompactionThreshold = 2
	l0StopWritesThreshold = 1000
)

// pebbleOptions returns the Pebble options for a Store with options o.
func pebbleOptions(o *Options, lock *pebble.Lock) *pebble.Options {
	po := &pebble.Options{
		FS:                          o.FS,
		Lock:                        lock,
		CacheSize:                   o.CacheSize,
		FormatMajorVersion:          formatMajorVersion,
		MemTableSize:                uint64(o.MemTableSize),
		MemTableStopWritesThreshold: memTableStopWritesThreshold,
		L0CompactionThreshold:       l0CompactionThreshold,
		L0StopWritesThreshold:       l0StopWritesThreshold,
	}
	pl := newPebbleLogger(o.Logger)
	po.Logger = pl
	// Events at Debug, and only when someone listens: formatting them costs.
	var el pebble.EventListener
	if o.Logger.Enabled(context.Background(), slog.LevelDebug) {
		el = pebble.MakeLoggingEventListener(pl)
	}
	// Pebble's default for detected corruption is Fatalf (exit the process).
	// The read that found it returns an error already (ErrCorrupt here);
	// log it and let the caller decide.
	el.DataCorruption = func(info pebble.DataCorruptionInfo) {
		o.Logger.Error("pebble: data corruption", "info", info.String())
	}
	po.EventListener = &el
	po.EnsureDefaults()
	return po
}

// pebbleLogger routes Pebble's logging to a slog.Logger, at most
// logBurst messages per format string per logWindow: a background flush or
// compaction that fails (no file descriptors left, say) is retried at once
// and logged each time, 144,621 lines in 20 s in one incident. Beyond the
// burst, messages are counted, and the first message of that format in a
// later window is preceded by one "suppressed N similar messages" line.
type pebbleLogger struct {
	l    *slog.Logger
	info slog.Level // level of Infof

	now func() time.Time // time.Now; a fake clock in tests

	mu     sync.Mutex
	counts map[string]*logCount // by format string; at most maxLogFormats
}

// Limits of pebbleLogger. Format strings are Pebble's constants, so the map
// stays small; maxLogFormats bounds it anyway (it is cleared when full).
const (
	logBurst      = 3
	logWindow     = time.Second
	maxLogFormats = 256
)

// logCount is the messages of one format string in the current window.
type logCount struct {
	start      time.Time // of the window
	n          int       // logged in the window
	suppressed int       // not logged since the last line of this format
}

func newPebbleLogger(l *slog.Logger) *pebbleLogger {
	return &pebbleLogger{l: l, info: slog.LevelDebug, now: time.Now, counts: map[string]*logCount{}}
}

// log writes one message at level, unless its format is over its limit.
func (p *pebbleLogger) log(level slog.Level, format string, args ...any) {
	ctx := context.Background()
	if !p.l.Enabled(ctx, level) {
		return
	}
	ok, suppressed := p.allow(format)
	if !ok {
		return
	}
	msg := "pebble: " + fmt.Sprintf(format, args...)
	if suppressed > 0 {
		p.l.Log(ctx, level, fmt.Sprintf("pebble: suppressed %d similar messages", suppressed), "like", msg)
	}
	p.l.Log(ctx, level, msg)
}

// allow reports whether a message of format may be logged now, and how many
// of its kind were suppressed before it.
func (p *pebbleLogger) allow(format string) (ok bool, suppressed int) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts[format]
	if c == nil {
		if len(p.counts) >= maxLogFormats {
			clear(p.counts)
		}
		c = &logCount{start: now}
		p.counts[format] = c
	}
	if now.Sub(c.start) >= logWindow {
		c.start, c.n = now, 0
	}
	if c.n >= logBurst {
		c.suppressed++
		return false, 0
	}
	c.n++
	suppressed, c.suppressed = c.suppressed, 0
	return true, suppressed
}

func (p *pebbleLogger) Infof(format string, args ...any) { p.log(p.info, format, args...) }

func (p *pebbleLogger) Errorf(format string, args ...any) { p.log(slog.LevelError, format, args...) }

// Fatalf logs and panics: Pebble calls it only when it cannot go on safely
// (for example a failed MANIFEST or WAL write), and it must not return. A
// panic, unlike Pebble's default os.Exit, runs deferred functions and shows
// a stack. A full disk does not get here: the Store refuses writes while
// less than Options.MinFreeBytes is free (ErrDiskFull), and its synced
// commits use ApplyNoSyncWait, whose sync errors are returned.
func (p *pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic(msg)
}

package snapshot

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultMinFreeBytes is the default of Options.MinFreeBytes: 256 MiB, twice
// the memtables Pebble may hold before it stalls writes at their largest
// (memTableStopWritesThreshold × MaxMemTableSize = 4 × 32 MiB). Data already
// accepted needs that much again on disk when it is flushed to sstables (the
// WAL it replaces is only recycled after the flush), and the L0 compaction
// that follows writes its output before it deletes its inputs: up to the
// same amount once more. The rest of the headroom is for Pebble's small
// files (MANIFEST, OPTIONS) and the WAL of the writes in flight.
const DefaultMinFreeBytes = 256 << 20

// diskCheckInterval is how old the free-space figure of the guard may get:
// at most one statfs per interval, made by the write that finds it due.
const diskCheckInterval = 100 * time.Millisecond

// diskGuard refuses writes that would leave less than min bytes free on the
// store's file system, before they reach Pebble: Pebble turns a failed WAL
// or MANIFEST write into Logger.Fatalf or a panic, and a restart on a full
// disk hangs in its Open. The hot path costs two atomic loads and an atomic
// add: the free space is read by statfs (FS.GetDiskUsage) at most every
// diskCheckInterval, and the bytes admitted since are subtracted from it.
//
// The figure is an estimate: space taken by other processes within the
// interval is seen late, and Pebble's own flushes and compactions are not
// counted (min is the headroom for them). A refused write never reaches
// Pebble, so nothing is written and the store stays usable: writes succeed
// again once the next refresh sees the space back.
type diskGuard struct {
	fs    vfs.FS
	dir   string
	min   uint64
	every time.Duration // diskCheckInterval; longer in tests
	log   *slog.Logger
	start time.Time // monotonic base of due

	avail atomic.Uint64 // free bytes (AvailBytes) at the last refresh
	used  atomic.Uint64 // bytes admitted since the last refresh
	due   atomic.Int64  // time.Since(start) at which a refresh is due

	mu sync.Mutex // one refresh at a time; waiters use the old figure
}

// newDiskGuard returns a guard for dir, with a first reading of its free
// space, or nil when the check is disabled (min 0) or the file system cannot
// tell its free space (a MemFS, for example).
func newDiskGuard(fs vfs.FS, dir string, min uint64, log *slog.Logger) (*diskGuard, error) {
	if min == 0 {
		return nil, nil
	}
	u, err := fs.GetDiskUsage(dir)
	if errors.Is(err, vfs.ErrUnsupported) {
		log.Debug("snapshot: the file system does not report free space; no disk-full check", "dir", dir)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("free space of %s: %w", dir, err)
	}
	g := &diskGuard{fs: fs, dir: dir, min: min, every: diskCheckInterval, log: log, start: time.Now()}
	g.avail.Store(u.AvailBytes)
	g.due.Store(int64(g.every))
	return g, nil
}

// admit reserves n bytes for a write, or returns an error matching
// ErrDiskFull when the write would leave less than min bytes free. A nil
// guard admits everything.
func (g *diskGuard) admit(n uint64) error {
	if g == nil {
		return nil
	}
	if now := int64(time.Since(g.start)); now >= g.due.Load() {
		g.refresh(now)
	}
	used := g.used.Add(n)
	avail := g.avail.Load()
	if avail >= g.min && avail-g.min >= used {
		return nil
	}
	g.used.Add(^(n - 1)) // subtracts n (0 for n == 0)
	free := avail - min(avail, used-n)
	return &plainError{
		msg: fmt.Sprintf("disk full: %s free in %s, %s needed (Options.MinFreeBytes %s kept free for Pebble's flushes and compactions, plus %s for this write)",
			formatBytes(free), g.dir, formatBytes(g.min+n), formatBytes(g.min), formatBytes(n)),
		sentinel: ErrDiskFull,
	}
}

// refresh reads the free space again, unless another write is doing it.
func (g *diskGuard) refresh(now int64) {
	if !g.mu.TryLock() {
		return
	}
	defer g.mu.Unlock()
	if now < g.due.Load() {
		return // refreshed meanwhile
	}
	g.due.Store(now + int64(g.every))
	u, err := g.fs.GetDiskUsage(g.dir)
	if err != nil {
		// Keep the old figure (and what was admitted since): a transient
		// statfs error must not open the gate.
		g.log.Warn("snapshot: cannot read free disk space", "dir", g.dir, "err", err)
		return
	}
	g.avail.Store(u.AvailBytes)
	g.used.Store(0)
}

// checkOpen is the check of Open: the file system must have min bytes free
// before Pebble opens, which writes (a new WAL, MANIFEST and OPTIONS file)
// and hangs retrying when it cannot.
func (g *diskGuard) checkOpen() error {
	if g == nil {
		return nil
	}
	avail := g.avail.Load()
	if avail >= g.min {
		return nil
	}
	return &plainError{
		msg: fmt.Sprintf("snapshot: open %s: disk full: %s free, %s needed (Options.MinFreeBytes); free some space and start again",
			g.dir, formatBytes(avail), formatBytes(g.min)),
		sentinel: ErrDiskFull,
	}
}

// formatBytes formats n bytes for a message: "512 B", "3.2 MiB".
func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

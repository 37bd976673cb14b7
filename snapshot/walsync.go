package snapshot

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options.SyncInterval: write methods return once their data is written to
// the operating system, and the write-ahead log is synced every interval.
//
// Pebble writes a record to its log file only from its flusher goroutine,
// and only when a block of 32 KiB fills or a commit asks for a sync
// (record.LogWriter.SyncRecordGeneralized signals the flusher only then). A
// commit with pebble.NoSync can therefore return while its record is still
// in Pebble's buffer, in the process: a kill -9 loses it. So the Store keeps
// committing with pebble.Sync and waiting (log.go, unchanged), and its log
// files are wrapped (walFS) so that the flusher's sync is not an fsync: the
// flusher writes the record to the file (write(2): the operating system has
// it), calls Sync, which returns at once, and releases the waiters. A
// background loop (walSyncer) fsyncs the open log files every interval, and
// a log file is fsynced for real when Pebble closes it (a rotation), so
// every log file but the current one is whole on disk, as Pebble expects at
// recovery.
//
// What a power loss costs: at most what was written in the last interval
// (and in the fsync under way). One more cost: since TableFormatV6 each
// chunk of Pebble's log records the offset up to which the log was synced,
// so that recovery tells a torn tail from corruption; here that offset is
// the one written to the operating system. If a power loss leaves a later
// block of the current log file on disk but not an earlier one (the disk
// or the page cache wrote them out of order), Pebble's recovery takes the
// hole for corruption and Open fails (ErrCorrupt) instead of dropping the
// tail. The default (fsync before acknowledging) has neither cost.

// walSyncer fsyncs the store's open write-ahead log files: every interval
// (loop), when asked (syncAll), and when Pebble closes one. Its first failed
// fsync is sticky, and the Store reads it (failed): a write checks it before
// it reaches Pebble and again after its commit's sync, so that the writes
// waiting fail as they would on a failed fsync in the default mode (the
// engine's ErrLogFailed), and nothing is acknowledged again until the store
// is opened again. Pebble itself never sees the error: it panics (its
// Logger.Fatalf) on a failed log sync or close, in a commit that raced the
// Store's check, at a rotation, a flush or a backup.
type walSyncer struct {
	log *slog.Logger

	mu    sync.Mutex // guards files
	files map[*walFile]struct{}

	err atomic.Pointer[error] // the first failed fsync

	stop chan struct{} // closed by halt
	done chan struct{} // closed when loop returns
}

func newWALSyncer(log *slog.Logger) *walSyncer {
	return &walSyncer{log: log, files: make(map[*walFile]struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// loop fsyncs the open log files every interval until halt.
func (w *walSyncer) loop(every time.Duration) {
	defer close(w.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			_ = w.syncAll() // failed() remembers and logs an error
		}
	}
}

// halt stops loop and waits for it.
func (w *walSyncer) halt() {
	close(w.stop)
	<-w.done
}

// syncAll fsyncs every open log file written since its last fsync. When it
// returns nil, everything written to the log files before it was called is
// on disk.
func (w *walSyncer) syncAll() error {
	w.mu.Lock()
	files := make([]*walFile, 0, len(w.files))
	for f := range w.files {
		files = append(files, f)
	}
	w.mu.Unlock()
	for _, f := range files {
		f.sync()
	}
	return w.failed()
}

// failed returns the error of the first failed fsync, or nil.
// A nil walSyncer (the default: fsync before acknowledging) never failed.
func (w *walSyncer) failed() error {
	if w == nil {
		return nil
	}
	if p := w.err.Load(); p != nil {
		return *p
	}
	return nil
}

// fail records err as the syncer's error, unless one is already recorded,
// and logs it.
func (w *walSyncer) fail(err error) {
	err = fmt.Errorf("write-ahead log sync failed: %w", err)
	if w.err.CompareAndSwap(nil, &err) {
		w.log.Error("snapshot: write-ahead log sync failed; no write is acknowledged until the store is opened again", "err", err)
	}
}

// walFS wraps the log files Pebble creates or reuses on FS (walCategory).
type walFS struct {
	vfs.FS
	w *walSyncer
}

// Unwrap returns the wrapped FS (vfs.Root).
func (fs walFS) Unwrap() vfs.FS { return fs.FS }

func (fs walFS) wrap(f vfs.File, err error, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err != nil || c != walCategory {
		return f, err
	}
	wf := &walFile{File: f, w: fs.w}
	fs.w.mu.Lock()
	fs.w.files[wf] = struct{}{}
	fs.w.mu.Unlock()
	return wf, nil
}

func (fs walFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(f, err, c)
}

func (fs walFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return fs.wrap(f, err, c)
}

func (fs walFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(f, err, c)
}

// walFile is a log file whose syncs Pebble asks for are not fsyncs (see the
// comment at the top of this file): the walSyncer fsyncs it.
type walFile struct {
	vfs.File
	w *walSyncer

	dirty atomic.Bool // written since the last fsync began

	mu     sync.Mutex // serialises fsyncs and Close
	closed bool       // under mu
}

// Write writes p and marks the file dirty afterwards: an fsync that starts
// after the mark covers p.
func (f *walFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.dirty.Store(true)
	return n, err
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	f.dirty.Store(true)
	return n, err
}

// Sync is Pebble's flusher asking for durability: what it wrote is in the
// operating system already; the walSyncer makes it durable later. It never
// fails (see walSyncer: the Store reports a failed fsync).
func (f *walFile) Sync() error { return nil }

// SyncData is Sync.
func (f *walFile) SyncData() error { return nil }

// SyncTo queues nothing and promises nothing (fullSync false), as
// vfs.File allows.
func (f *walFile) SyncTo(int64) (bool, error) { return false, nil }

// sync fsyncs the file if it was written since its last fsync.
func (f *walFile) sync() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || !f.dirty.Swap(false) {
		return
	}
	if err := f.File.Sync(); err != nil {
		f.w.fail(err)
	}
}

// Close fsyncs the file, for real, and closes it: Pebble closes a log file
// when it moves to the next one, and expects every log file but the last to
// be whole after a crash.
func (f *walFile) Close() error {
	f.mu.Lock()
	f.closed = true
	if f.dirty.Swap(false) {
		if err := f.File.Sync(); err != nil {
			f.w.fail(err) // reported by the Store, not to Pebble (walSyncer)
		}
	}
	f.mu.Unlock()
	f.w.mu.Lock()
	delete(f.w.files, f)
	f.w.mu.Unlock()
	return f.File.Close()
}

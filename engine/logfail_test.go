package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
)

// syncFailFS fails a sync of the log when fail says so.
type syncFailFS struct {
	vfs.FS
	fail func() bool
}

type syncFailFile struct {
	vfs.File
	fail func() bool
}

func (f syncFailFile) Sync() error {
	if f.fail() {
		return errors.New("injected fsync error")
	}
	return f.File.Sync()
}
func (f syncFailFile) SyncData() error { return f.Sync() }

func (s syncFailFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return syncFailFile{f, s.fail}, nil
}
func (s syncFailFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := s.FS.Create(name, c)
	return s.wrap(name, f, err)
}
func (s syncFailFS) ReuseForWrite(o, n string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := s.FS.ReuseForWrite(o, n, c)
	return s.wrap(n, f, err)
}
func (s syncFailFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := s.FS.OpenReadWrite(name, c, opts...)
	return s.wrap(name, f, err)
}

// TestLogSyncFailure: once a sync of the log fails (Pebble's sync errors are
// sticky), the failed call counts nothing, every later write is refused with
// ErrLogFailed instead of queueing for ever, and after a restart every
// acknowledged hit is there (the failed batch may be too: its outcome was
// unknown, as after a crash).
func TestLogSyncFailure(t *testing.T) {
	fail := &atomic.Bool{}
	fs := syncFailFS{vfs.NewMem(), fail.Load}
	e, site := hardEngine(t, fs, Options{})
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	batch := func(tag string) []Hit {
		var hs []Hit
		for i := range 10 {
			hs = append(hs, hardHit(site, day.Add(time.Duration(i)*time.Minute), tag+fmt.Sprint(i), "/p"))
		}
		return hs
	}
	pv := func(e *Engine) uint64 {
		tot, err := e.Unscoped().Totals(ctx, site, buckets.DateFromTime(day), buckets.DateFromTime(day))
		if err != nil {
			t.Fatal(err)
		}
		return tot.Pageviews
	}
	if _, err := e.Track(ctx, batch("warm")...); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if _, err := e.Track(ctx, batch("a")...); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("Track with a failing fsync: %v, want ErrLogFailed", err)
	}
	if got := pv(e); got != 10 {
		t.Errorf("pageviews after the failed Track = %d, want 10", got)
	}
	fail.Store(false)
	for i := range 3 {
		res, err := e.Track(ctx, batch("b")...)
		if !errors.Is(err, ErrLogFailed) || res.Accepted != 0 {
			t.Errorf("Track %d after the failure: accepted %d, %v; want 0, ErrLogFailed", i, res.Accepted, err)
		}
		sh := e.shardOf(site)
		sh.mu.Lock()
		n := len(e.sites[site].state.pending)
		sh.mu.Unlock()
		if n != 0 {
			t.Errorf("Track %d after the failure: %d records pending", i, n)
		}
	}
	e.Close() // fails: the log is broken
	e2, err := Open(&Options{FS: fs, Dir: "data", SnapshotEvery: -1, Now: e.opts.Now})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer e2.Close()
	if got := pv(e2); got != 10 && got != 20 {
		t.Errorf("pageviews after reopen = %d, want 10 (acknowledged) or 20 (with the batch of unknown outcome)", got)
	}
}

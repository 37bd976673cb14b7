package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
)

// syncDay is the day of the hits of the SyncInterval tests.
var syncDay = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// pageviewsOn returns the pageviews of site on syncDay in an engine opened
// on fs (a crash image, or the store after Close).
func pageviewsOn(t *testing.T, fs vfs.FS, now func() time.Time, site uint32) uint64 {
	t.Helper()
	e, err := Open(&Options{FS: fs, Dir: "data", SnapshotEvery: -1, Now: now})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer e.Close()
	d := buckets.DateFromTime(syncDay)
	tot, err := e.Unscoped().Totals(context.Background(), site, d, d)
	if err != nil {
		t.Fatal(err)
	}
	return tot.Pageviews
}

// TestSyncIntervalTrack: under SyncInterval (an hour here, so that no
// background sync helps), every hit Track acknowledged survives a kill -9
// (a crash image keeping what was written to the OS), taken while 8
// goroutines track and once they are done; the website created before
// (a registry write) too. After Close, a power-loss image has them all:
// Close syncs.
func TestSyncIntervalTrack(t *testing.T) {
	fs := vfs.NewCrashableMem()
	e, site := hardEngine(t, fs, Options{SyncInterval: time.Hour})
	ctx := context.Background()
	kill := func() *vfs.MemFS {
		return fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(4, 1))})
	}
	var acked atomic.Uint64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				res, err := e.Track(ctx, hardHit(site, syncDay.Add(time.Duration(i)*time.Second), fmt.Sprint("v", g, "-", i%13), "/p"))
				if err != nil {
					t.Error(err)
					return
				}
				acked.Add(uint64(res.Accepted))
			}
		})
	}
	for acked.Load() < 400 {
		time.Sleep(time.Millisecond)
	}
	busyAcked := acked.Load()
	busy := kill()
	wg.Wait()
	if acked.Load() != 1600 {
		t.Fatalf("acknowledged %d of 1600 hits", acked.Load())
	}
	idle := kill()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	powered := fs.CrashClone(vfs.CrashCloneCfg{})

	if got := pageviewsOn(t, busy, e.opts.Now, site); got < busyAcked || got > 1600 {
		t.Errorf("kill -9 while tracking: %d pageviews, want %d (acknowledged before the image) to 1600", got, busyAcked)
	}
	if got := pageviewsOn(t, idle, e.opts.Now, site); got != 1600 {
		t.Errorf("kill -9 after tracking: %d pageviews, want 1600", got)
	}
	if got := pageviewsOn(t, powered, e.opts.Now, site); got != 1600 {
		t.Errorf("power loss after Close: %d pageviews, want 1600", got)
	}
}

// TestSyncIntervalLogFailure: a failed background sync of the log stops
// tracking as a failed fsync does by default (TestLogSyncFailure): the next
// Track calls fail with ErrLogFailed, for good, and a restart replays what
// was acknowledged.
func TestSyncIntervalLogFailure(t *testing.T) {
	fail := &atomic.Bool{}
	fs := syncFailFS{vfs.NewMem(), fail.Load}
	e, site := hardEngine(t, fs, Options{SyncInterval: time.Millisecond})
	ctx := context.Background()
	var acked uint64
	track := func(i int) error {
		res, err := e.Track(ctx, hardHit(site, syncDay.Add(time.Duration(i)*time.Second), fmt.Sprint("v", i), "/p"))
		acked += uint64(res.Accepted)
		return err
	}
	for i := range 10 {
		if err := track(i); err != nil {
			t.Fatal(err)
		}
	}
	fail.Store(true)
	i := 10
	deadline := time.Now().Add(10 * time.Second)
	for ; ; i++ {
		err := track(i)
		if err != nil {
			if !errors.Is(err, ErrLogFailed) || !strings.Contains(err.Error(), "injected fsync error") {
				t.Errorf("Track after the sync failed: %v, want ErrLogFailed with the fsync's error", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Track still succeeds 10 s after the log's fsyncs began to fail")
		}
		time.Sleep(time.Millisecond)
	}
	fail.Store(false)
	if err := track(i + 1); !errors.Is(err, ErrLogFailed) {
		t.Errorf("Track after the failure: %v, want ErrLogFailed", err)
	}
	e.Close() // fails: the log is broken
	// The MemFS kept everything written: what was acknowledged is there
	// (the failed call's hit may be too).
	if got := pageviewsOn(t, fs, e.opts.Now, site); got != acked && got != acked+1 {
		t.Errorf("pageviews after reopen = %d, want %d (acknowledged) or one more", got, acked)
	}
}

// stubCluster is a Cluster for the option checks: never called.
type stubCluster struct{ Cluster }

// TestSyncIntervalOptions: SyncInterval is not negative, not with NoSync,
// and not in cluster mode, where the cluster's log acknowledges hits.
func TestSyncIntervalOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"negative", Options{SyncInterval: -time.Second}, "negative sync interval"},
		{"with NoSync", Options{SyncInterval: time.Second, NoSync: true}, "exclusive"},
		{"with Cluster", Options{SyncInterval: time.Second, Cluster: stubCluster{}}, "cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := Open(&tc.o)
			if err == nil {
				e.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open: %v, want an error about %q", err, tc.want)
			}
		})
	}
}

package snapshot

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The review of -sync interval (issue #41): a failed fsync of the log under
// load, and power loss right after Pebble moves to a new log file.

// TestSyncIntervalFailureUnderLoad: an fsync of the log fails while 16
// appenders commit, with small memtables so that Pebble rotates its log
// files meanwhile. Nothing panics (Pebble's Fatalf on a failed log sync or
// close: walSyncer), every append after the failure was seen returns the
// error, and Backup, Compact and CompactLog refuse.
func TestSyncIntervalFailureUnderLoad(t *testing.T) {
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		fail := &atomic.Bool{}
		s, err := Open(&Options{Dir: "db", FS: failSyncFS{vfs.NewMem(), fail}, SyncInterval: time.Millisecond, MemTableSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		var seq atomic.Uint64
		data := []byte(strings.Repeat("y", 2000))
		done := make(chan struct{})
		var wg sync.WaitGroup
		var lateOK atomic.Int64 // appends acknowledged after the failure was recorded before them
		for range 16 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					before := s.wal.failed()
					err := s.Append(LogEntry{Seq: seq.Add(1), Data: data})
					if err == nil && before != nil {
						lateOK.Add(1)
					}
				}
			})
		}
		time.Sleep(time.Duration(20+round*7) * time.Millisecond)
		fail.Store(true)
		for s.wal.failed() == nil {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		close(done)
		wg.Wait()
		if n := lateOK.Load(); n > 0 {
			t.Errorf("round %d: %d appends acknowledged after the failed fsync was recorded", round, n)
		}
		for name, op := range map[string]func() error{
			"Backup":     func() error { return s.Backup(context.Background(), "bk") },
			"Compact":    s.Compact,
			"CompactLog": s.CompactLog,
			"Flush":      s.Flush,
			"Put":        func() error { return s.Put(KindAccount, 1, []byte("a")) },
		} {
			if err := op(); err == nil {
				t.Errorf("round %d: %s after a failed fsync of the log succeeded", round, name)
			}
		}
		if err := s.Close(); err != nil && !errors.Is(err, s.wal.failed()) {
			t.Logf("round %d: Close: %v", round, err)
		}
	}
}

// TestSyncIntervalRotationPowerLoss: power-loss images taken just after
// each of Pebble's log rotations (small memtables), each after an fsync of
// the open log files as the background loop makes them (syncAll; the loop
// itself runs once an hour here), open, and their log has no hole: the log
// file Pebble closed at the rotation was fsynced then (walFile.Close), not
// left to the loop, which fsyncs only the open ones.
func TestSyncIntervalRotationPowerLoss(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open(&Options{Dir: "db", FS: fs, SyncInterval: time.Hour, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(strings.Repeat("x", 1000))
	n := uint64(8000)
	if testing.Short() {
		n = 4000
	}
	var imgs []*vfs.MemFS
	cur, after := newestLog(fs), 0
	for seq := uint64(1); seq <= n; seq++ {
		must(t, s.Append(LogEntry{Seq: seq, Data: data}))
		if l := newestLog(fs); l != cur {
			cur, after = l, 10
		}
		if after > 0 { // the first appends to the new log file
			after--
			must(t, s.wal.syncAll())
			imgs = append(imgs, powerClone(fs))
		}
	}
	must(t, s.Close())
	if len(imgs) == 0 {
		t.Fatal("no log rotation: the test measures nothing")
	}
	for i, img := range imgs {
		got, last, gap, err := replaySeqs(img)
		if err != nil || gap {
			t.Errorf("image %d of %d: %d entries up to %d, hole %v, %v; want a whole prefix", i, len(imgs), got, last, gap, err)
		}
	}
}

// newestLog returns the name of the newest log file of the store in db.
func newestLog(fs vfs.FS) string {
	names, _ := fs.List("db")
	newest := ""
	for _, n := range names {
		if strings.HasSuffix(n, ".log") && n > newest {
			newest = n
		}
	}
	return newest
}

// replaySeqs opens the store in db on fs and returns how many log entries
// it holds, the last one's Seq, and whether a Seq is missing before it.
func replaySeqs(fs vfs.FS) (n int, last uint64, gap bool, err error) {
	s, err := Open(&Options{Dir: "db", FS: fs})
	if err != nil {
		return 0, 0, false, err
	}
	defer s.Close()
	err = s.ReplayLog(0, func(seq uint64, _ []byte) error {
		gap = gap || seq != last+1
		last = seq
		n++
		return nil
	})
	return n, last, gap, err
}

package snapshot

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// killClone is a crash image of fs as after a kill -9 of the process: the
// operating system keeps everything written to it, synced or not.
func killClone(fs *vfs.MemFS) *vfs.MemFS {
	return fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 2))})
}

// powerClone is a crash image of fs as after a power loss: only what was
// synced.
func powerClone(fs *vfs.MemFS) *vfs.MemFS { return fs.CrashClone(vfs.CrashCloneCfg{}) }

func appendN(t *testing.T, s *Store, from, to uint64) map[uint64]bool {
	t.Helper()
	want := map[uint64]bool{}
	for seq := from; seq <= to; seq++ {
		must(t, s.Append(LogEntry{Seq: seq, Data: fmt.Appendf(nil, "hit %d", seq)}))
		want[seq] = true
	}
	return want
}

func logLen(t *testing.T, fs vfs.FS) int {
	t.Helper()
	s, err := Open(&Options{Dir: "db", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := s.logCount()
	must(t, err)
	return n
}

// TestNoSyncKillLoses is why SyncInterval does not commit with pebble.NoSync:
// a NoSync commit can return while its record is still in Pebble's buffer
// (the flusher writes a partial block only when a sync is asked for), so a
// kill -9 loses acknowledged entries. If this starts failing, Pebble writes
// NoSync records out at once and walsync.go's first comment is stale.
func TestNoSyncKillLoses(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open(&Options{Dir: "db", FS: fs, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, 1, 20)
	killed := killClone(fs)
	must(t, s.Close())
	if n := logLen(t, killed); n >= 20 {
		t.Errorf("NoSync: %d of 20 acknowledged entries survive a kill -9; want some lost", n)
	}
}

// TestSyncIntervalKill: under SyncInterval, an Append that returned is in
// the operating system: a kill -9 (a crash image keeping all written data)
// loses none, taken while appenders run and after a few appends alone
// (TestNoSyncKillLoses's case), before any background sync (the interval
// is an hour). A power loss at the same moment may lose them: nothing was
// fsynced.
func TestSyncIntervalKill(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open(&Options{Dir: "db", FS: fs, SyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	a := startAppenders(t, s, 16)
	a.wait(2000)
	acked := a.ackedSoFar()
	killedBusy := killClone(fs)
	a.halt()
	for seq := range appendN(t, s, a.seq.Load()+1, a.seq.Load()+20) {
		a.acked[seq] = true
	}
	killed, powered := killClone(fs), powerClone(fs)
	must(t, s.Close())

	for _, c := range []struct {
		fs    *vfs.MemFS
		acked map[uint64]bool
	}{{killedBusy, acked}, {killed, a.acked}} {
		s, err = Open(&Options{Dir: "db", FS: c.fs})
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, s, c.acked)
		must(t, s.Close())
	}
	// Not a promise, the cost of the mode: without an fsync since Open the
	// power-loss image has (almost) nothing.
	if n := logLen(t, powered); n >= len(a.acked) {
		t.Errorf("power loss before any background sync kept %d of %d entries: were they fsynced?", n, len(a.acked))
	}
}

// TestSyncIntervalSyncs: the background loop fsyncs the log every interval,
// and Flush, WriteSnapshot and Close fsync it at once: each is durable in a
// power-loss image taken right after it.
func TestSyncIntervalSyncs(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open(&Options{Dir: "db", FS: fs, SyncInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := appendN(t, s, 1, 100)
	deadline := time.Now().Add(10 * time.Second)
	for logLen(t, powerClone(fs)) < 100 {
		if time.Now().After(deadline) {
			t.Fatal("the background loop did not sync the log in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	must(t, s.Close())

	check := func(name string, fs *vfs.MemFS, want map[uint64]bool) {
		t.Helper()
		s, err := Open(&Options{Dir: "db", FS: fs})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer s.Close()
		checkLog(t, s, want)
	}
	for _, tc := range []struct {
		name string
		sync func(s *Store) error
	}{
		{"Flush", func(s *Store) error { return s.Flush() }},
		{"WriteSnapshot", func(s *Store) error {
			return s.WriteSnapshot(&Snapshot{Sites: []SiteRecord{{Website: 1, Data: []byte("x")}}})
		}},
	} {
		s, err := Open(&Options{Dir: "db", FS: fs, SyncInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		from := uint64(len(want) + 1)
		for seq := range appendN(t, s, from, from+99) {
			want[seq] = true
		}
		must(t, tc.sync(s))
		powered := powerClone(fs)
		must(t, s.Close())
		check(tc.name, powered, want)
	}

	// Close: the power-loss image after it has everything.
	s, err = Open(&Options{Dir: "db", FS: fs, SyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	from := uint64(len(want) + 1)
	for seq := range appendN(t, s, from, from+99) {
		want[seq] = true
	}
	must(t, s.Close())
	check("Close", powerClone(fs), want)
}

// failSyncFS fails the fsyncs of log files once fail is set.
type failSyncFS struct {
	vfs.FS
	fail *atomic.Bool
}

type failSyncFile struct {
	vfs.File
	fail *atomic.Bool
}

func (f failSyncFile) Sync() error {
	if f.fail.Load() {
		return errors.New("injected fsync error")
	}
	return f.File.Sync()
}

func (f failSyncFile) SyncData() error { return f.Sync() }

func (fs failSyncFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || c != walCategory {
		return f, err
	}
	return failSyncFile{f, fs.fail}, nil
}

func (fs failSyncFS) ReuseForWrite(o, n string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(o, n, c)
	if err != nil || c != walCategory {
		return f, err
	}
	return failSyncFile{f, fs.fail}, nil
}

// TestSyncIntervalSyncFailure: a failed background fsync is sticky: the
// appends after it fail (Wait returns the error, as a failed fsync does by
// default), so the engine stops acknowledging, and so do the other writes.
func TestSyncIntervalSyncFailure(t *testing.T) {
	fail := &atomic.Bool{}
	s, err := Open(&Options{Dir: "db", FS: failSyncFS{vfs.NewMem(), fail}, SyncInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, s, 1, 10)
	fail.Store(true)
	seq := uint64(11)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Append(LogEntry{Seq: seq, Data: []byte("x")})
		if err != nil {
			if got := err.Error(); !strings.Contains(got, "injected fsync error") {
				t.Errorf("Append after the failure: %v, want the fsync's error", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("appends still succeed 10 s after fsyncs began to fail")
		}
		seq++
		time.Sleep(time.Millisecond)
	}
	fail.Store(false)
	if err := s.Append(LogEntry{Seq: seq + 1, Data: []byte("x")}); err == nil {
		t.Error("Append after a failed sync succeeded; want the failure to be sticky")
	}
	if err := s.Flush(); err == nil {
		t.Error("Flush after a failed sync succeeded")
	}
	// Registry writes and snapshots are refused too, before Pebble.
	if err := s.Put(KindAccount, 1, []byte("a")); err == nil || !strings.Contains(err.Error(), "injected fsync error") {
		t.Errorf("Put after a failed sync: %v, want the fsync's error", err)
	}
	if err := s.WriteSnapshot(&Snapshot{Sites: []SiteRecord{{Website: 1, Data: []byte("x")}}}); err == nil {
		t.Error("WriteSnapshot after a failed sync succeeded")
	}
	s.Close() // fails: the log is broken
}

// TestSyncIntervalOptions: SyncInterval is exclusive with NoSync, and not
// negative.
func TestSyncIntervalOptions(t *testing.T) {
	for _, o := range []Options{
		{Dir: "db", FS: vfs.NewMem(), SyncInterval: time.Second, NoSync: true},
		{Dir: "db", FS: vfs.NewMem(), SyncInterval: -time.Second},
	} {
		if s, err := Open(&o); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}

// TestPowerLossOutOfOrder takes power-loss images that keep a random half
// of the blocks written but not synced (a disk that wrote them back out of
// order) while appenders run. By default (fsync before acknowledging) every
// image opens with every acknowledged entry. Under SyncInterval an image
// may lose acknowledged entries or be refused, but only as corrupt
// (ErrCorrupt: walsync.go, first comment); the test logs how many, the
// mode's costs on a power loss.
func TestPowerLossOutOfOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("30 stores per mode")
	}
	for _, iv := range []time.Duration{0, time.Hour} {
		refused, lost := 0, 0
		for seed := range 30 {
			fs := vfs.NewCrashableMem()
			s, err := Open(&Options{Dir: "db", FS: fs, SyncInterval: iv})
			if err != nil {
				t.Fatal(err)
			}
			a := startAppenders(t, s, 8)
			a.wait(3000)
			acked := a.ackedSoFar()
			img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(uint64(seed), 7))})
			a.halt()
			must(t, s.Close())
			s, err = Open(&Options{Dir: "db", FS: img})
			if err != nil {
				refused++
				if iv == 0 || !errors.Is(err, ErrCorrupt) {
					t.Errorf("SyncInterval %v, seed %d: %v, want it to open (default) or ErrCorrupt", iv, seed, err)
				}
				continue
			}
			if iv == 0 {
				checkLog(t, s, acked)
			} else if n, err := s.logCount(); err == nil && n < len(acked) {
				lost++
			}
			must(t, s.Close())
		}
		t.Logf("SyncInterval %v: of 30 images, %d refused at Open, %d lost acknowledged entries", iv, refused, lost)
	}
}

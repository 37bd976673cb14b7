package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
)

// appenders runs n goroutines appending one entry per call with increasing
// sequence numbers until stop is closed, recording acknowledged sequences.
type appenders struct {
	seq   atomic.Uint64
	mu    sync.Mutex
	acked map[uint64]bool
	n     atomic.Int64 // len(acked)
	wg    sync.WaitGroup
	stop  chan struct{}
}

func startAppenders(t *testing.T, s *Store, n int) *appenders {
	a := &appenders{acked: map[uint64]bool{}, stop: make(chan struct{})}
	for range n {
		a.wg.Go(func() {
			for {
				select {
				case <-a.stop:
					return
				default:
				}
				seq := a.seq.Add(1)
				if err := s.Append(LogEntry{Seq: seq, Data: fmt.Appendf(nil, "hit %d", seq)}); err != nil {
					t.Error(err)
					return
				}
				a.mu.Lock()
				a.acked[seq] = true
				a.mu.Unlock()
				a.n.Add(1)
			}
		})
	}
	return a
}

// ackedSoFar returns a copy of the sequences acknowledged until now.
func (a *appenders) ackedSoFar() map[uint64]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[uint64]bool, len(a.acked))
	for k := range a.acked {
		m[k] = true
	}
	return m
}

// wait returns once n entries are acknowledged.
func (a *appenders) wait(n int64) {
	for a.n.Load() < n {
		runtime.Gosched()
	}
}

func (a *appenders) halt() { close(a.stop); a.wg.Wait() }

// checkLog checks that s's log holds every sequence of want above its trim
// point, in ascending order, with the data startAppenders wrote.
func checkLog(t *testing.T, s *Store, want map[uint64]bool) {
	t.Helper()
	got := map[uint64]bool{}
	var last uint64
	must(t, s.ReplayLog(0, func(seq uint64, data []byte) error {
		if seq <= last {
			t.Fatalf("replay: %d after %d", seq, last)
		}
		last = seq
		if w := fmt.Sprintf("hit %d", seq); string(data) != w {
			t.Fatalf("entry %d holds %q, want %q", seq, data, w)
		}
		got[seq] = true
		return nil
	}))
	missing := 0
	for seq := range want {
		if seq > s.Trim() && !got[seq] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d acknowledged entries missing (of %d, trim %d)", missing, len(want), s.Trim())
	}
}

// TestConcurrentAppend appends from many goroutines while snapshots trim the
// log, synced and unsynced (NoSync), then Flushes: no acknowledged entry is missing.
func TestConcurrentAppend(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("nosync=%v", noSync), func(t *testing.T) {
			s, err := Open(&Options{Dir: "db", FS: NewMemFS(), NoSync: noSync})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			a := startAppenders(t, s, 32)
			for range 20 {
				trim := a.seq.Load() / 2
				must(t, s.WriteSnapshot(&Snapshot{Sites: []SiteRecord{{Website: 1, Data: []byte("x")}}, Trim: trim}))
			}
			a.wait(2000)
			a.halt()
			must(t, s.Flush())
			checkLog(t, s, a.acked)
		})
	}
}

// TestCrash takes a crash image of a MemFS (only what was synced survives)
// while appends and snapshots go on, then opens it: every Append that
// returned before the image was taken is there.
func TestCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open(&Options{Dir: "db", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	a := startAppenders(t, s, 16)
	a.wait(500)
	must(t, s.WriteSnapshot(&Snapshot{Trim: 100, Sites: []SiteRecord{{Website: 3, Data: []byte("seq=100")}}}))
	a.wait(1000)
	acked := a.ackedSoFar()
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	a.halt()
	must(t, s.Close())

	s, err = Open(&Options{Dir: "db", FS: crashed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Trim() != 100 {
		t.Errorf("Trim() after crash = %d, want 100", s.Trim())
	}
	checkLog(t, s, acked)
}

// TestKill kills (SIGKILL) a process that appends, then opens its directory:
// every entry the child reported as acknowledged is there.
func TestKill(t *testing.T) {
	if dir := os.Getenv("SNAPSHOT_KILL_CHILD"); dir != "" {
		killChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns a process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill$")
	cmd.Env = append(os.Environ(), "SNAPSHOT_KILL_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	must(t, cmd.Start())
	acked := map[uint64]bool{}
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 1000 {
		seq, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err != nil {
			continue // test framework output
		}
		acked[seq] = true
	}
	must(t, cmd.Process.Kill())
	cmd.Wait()
	if len(acked) < 1000 {
		t.Fatalf("child acknowledged only %d entries", len(acked))
	}
	s, err := Open(&Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, acked)
}

// killChild appends from 8 goroutines forever, printing each acknowledged
// sequence number on its own line.
func killChild(dir string) {
	s, err := Open(&Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var seq atomic.Uint64
	var mu sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	for range 8 {
		go func() {
			for {
				n := seq.Add(1)
				if err := s.Append(LogEntry{Seq: n, Data: fmt.Appendf(nil, "hit %d", n)}); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintln(w, n)
				w.Flush()
				mu.Unlock()
			}
		}()
	}
	select {}
}

// TestBackup takes a backup while other goroutines append, then opens the
// copy: it holds every write that returned before Backup was called.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(&Options{Dir: filepath.Join(dir, "db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	must(t, s.Put(KindAccount, 1, []byte("admin")))
	must(t, s.WriteSnapshot(&Snapshot{
		Days:  []DayRecord{{Website: 1, Date: -1, Data: []byte("day")}},
		Sites: []SiteRecord{{Website: 1, Data: []byte("site")}},
		Trim:  0,
	}))
	a := startAppenders(t, s, 8)
	a.wait(300)
	acked := a.ackedSoFar()
	backup := filepath.Join(dir, "backup")
	must(t, s.Backup(context.Background(), backup))
	a.halt()
	if err := s.Backup(context.Background(), backup); err == nil {
		t.Error("Backup into an existing directory: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Backup(ctx, filepath.Join(dir, "other")); err == nil {
		t.Error("Backup with a cancelled context: no error")
	}

	b, err := Open(&Options{Dir: backup})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	checkLog(t, b, acked)
	if diff := cmp.Diff([]rec{{1, "admin"}}, scanAll(t, b, KindAccount)); diff != "" {
		t.Errorf("registry mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]day{{-1, "day"}}, days(t, b, 1, minDate, maxDate)); diff != "" {
		t.Errorf("days mismatch (-want +got):\n%s", diff)
	}
}

// TestAppendAsyncOrder appends from many goroutines, each AppendAsync under
// one lock (as the engine does per website) and Wait outside it, and takes a
// crash image meanwhile: the log that survives is a prefix 1..k of the calls'
// order that holds every acknowledged entry.
func TestAppendAsyncOrder(t *testing.T) {
	for round := range 5 {
		t.Run(fmt.Sprintf("round=%d", round), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			s, err := Open(&Options{Dir: "db", FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu      sync.Mutex // orders AppendAsync calls
				seq     uint64
				ackedMu sync.Mutex
				acked   uint64 // highest acknowledged seq
				n       atomic.Int64
				stop    = make(chan struct{})
				wg      sync.WaitGroup
			)
			for range 8 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						mu.Lock()
						seq++
						my := seq
						p, err := s.AppendAsync(LogEntry{Seq: my, Data: fmt.Appendf(nil, "hit %d", my)})
						mu.Unlock()
						if err == nil {
							err = p.Wait()
						}
						if err != nil {
							t.Error(err)
							return
						}
						ackedMu.Lock()
						acked = max(acked, my)
						ackedMu.Unlock()
						n.Add(1)
					}
				})
			}
			for n.Load() < 300 {
				runtime.Gosched()
			}
			ackedMu.Lock()
			want := acked
			ackedMu.Unlock()
			crashed := fs.CrashClone(vfs.CrashCloneCfg{})
			close(stop)
			wg.Wait()
			must(t, s.Close())

			s, err = Open(&Options{Dir: "db", FS: crashed})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var k uint64
			must(t, s.ReplayLog(0, func(seq uint64, _ []byte) error {
				if seq != k+1 {
					return fmt.Errorf("log after crash: entry %d follows %d (not a prefix)", seq, k)
				}
				k = seq
				return nil
			}))
			if k < want {
				t.Errorf("log after crash ends at %d, but %d was acknowledged", k, want)
			}
		})
	}
}

// TestFlushSyncs: under NoSync, entries appended before Flush survive a
// crash (power loss) once Flush returns.
func TestFlushSyncs(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := Open(&Options{Dir: "db", FS: fs, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]bool{}
	for seq := uint64(1); seq <= 100; seq++ {
		must(t, s.Append(LogEntry{Seq: seq, Data: fmt.Appendf(nil, "hit %d", seq)}))
		want[seq] = true
	}
	must(t, s.Flush())
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	must(t, s.Close())
	s, err = Open(&Options{Dir: "db", FS: crashed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkLog(t, s, want)
}

// TestPendingWaitTwice: a second Wait is an error, not a hang or a panic, and
// Close still works.
func TestPendingWaitTwice(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("nosync=%v", noSync), func(t *testing.T) {
			s, err := Open(&Options{Dir: "db", FS: NewMemFS(), NoSync: noSync})
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.AppendAsync(LogEntry{Seq: 1, Data: []byte("a")})
			if err != nil {
				t.Fatal(err)
			}
			must(t, p.Wait())
			if err := p.Wait(); err == nil {
				t.Error("second Wait: no error")
			}
			must(t, s.Close())
		})
	}
}

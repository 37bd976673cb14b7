package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// tmpfs mounts a tmpfs of size bytes on a new directory and unmounts it at
// the end of t. It needs root: without, the test is skipped, except under
// CI=true, where CI runs as root and a skip would hide the test.
func tmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a tmpfs on %s: %v (CI runs as root: this test must run there)", dir, err)
		}
		t.Skipf("mount a tmpfs: %v (needs root)", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full, and returns its
// name.
func fill(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return name
		}
	}
}

// TestDiskFullReal fills a real (tmpfs) file system under an open store: no
// panic, ErrDiskFull, nothing lost, writes again once space is back; and Open
// on the full file system fails at once.
func TestDiskFullReal(t *testing.T) {
	mnt := tmpfs(t, 32<<20)
	dir := filepath.Join(mnt, "db")
	opts := &Options{Dir: dir, MinFreeBytes: 4 << 20}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	want := map[uint64]bool{}
	appendHit := func(seq uint64) error {
		err := s.Append(LogEntry{Seq: seq, Data: fmt.Appendf(nil, "hit %d", seq)})
		if err == nil {
			want[seq] = true
		}
		return err
	}
	for seq := uint64(1); seq <= 100; seq++ {
		must(t, appendHit(seq))
	}

	filler := fill(t, mnt)
	time.Sleep(diskCheckInterval + 50*time.Millisecond) // the guard reads the free space again
	if err := appendHit(101); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Append on a full disk: %v, want ErrDiskFull", err)
	}
	if err := s.WriteSnapshot(&Snapshot{Sites: []SiteRecord{{Website: 1, Data: []byte("x")}}, Trim: 50}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("WriteSnapshot on a full disk: %v, want ErrDiskFull", err)
	}
	checkLog(t, s, want)

	must(t, os.Remove(filler))
	time.Sleep(diskCheckInterval + 50*time.Millisecond)
	for seq := uint64(101); seq <= 200; seq++ {
		must(t, appendHit(seq))
	}
	must(t, s.Close())
	s = nil

	filler = fill(t, mnt)
	start := time.Now()
	_, err = Open(opts)
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Open on a full disk: %v, want ErrDiskFull", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open on a full disk took %v", d)
	}
	must(t, os.Remove(filler))
	s, err = Open(opts)
	if err != nil {
		t.Fatalf("Open once space is back: %v", err)
	}
	checkLog(t, s, want)
}

// TestLogPreallocation checks that the write-ahead log's files have blocks
// allocated a step ahead of what was written, and no more: Pebble's own
// preallocation (1.1 × the memtable per file, several files kept) was most
// of a small site's data directory. A backup's copy of the log is not
// allocated ahead at all.
func TestLogPreallocation(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(&Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := make([]byte, 150)
	for seq := uint64(1); seq <= 2000; seq++ { // 300 KB, a small site's day or two
		if err := s.Append(LogEntry{Seq: seq, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	// Whether this file system allocates ahead at all (tmpfs and ext4 do).
	probe := filepath.Join(t.TempDir(), "probe")
	f, err := os.Create(probe)
	if err != nil {
		t.Fatal(err)
	}
	fallocates := syscall.Fallocate(int(f.Fd()), 1 /* FALLOC_FL_KEEP_SIZE */, 0, preallocStep) == nil
	f.Close()

	backup := filepath.Join(t.TempDir(), "backup")
	if err := s.Backup(context.Background(), backup); err != nil {
		t.Fatal(err)
	}
	check := func(dir string, ahead int64) {
		t.Helper()
		logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
		if err != nil || len(logs) == 0 {
			t.Fatalf("no log files in %s (%v)", dir, err)
		}
		var written int64
		for _, name := range logs {
			var st syscall.Stat_t
			if err := syscall.Stat(name, &st); err != nil {
				t.Fatal(err)
			}
			written += st.Size
			allocated := st.Blocks * 512
			// The step ahead, rounded up to the file system's blocks.
			if limit := st.Size + ahead + 64<<10; allocated > limit {
				t.Errorf("%s: %d bytes written, %d allocated (more than %d)", name, st.Size, allocated, limit)
			}
			if fallocates && ahead > 0 && st.Size > 0 && allocated < preallocStep {
				t.Errorf("%s: %d bytes written, only %d allocated: not a step ahead", name, st.Size, allocated)
			}
		}
		if written < 2000*150 {
			t.Errorf("%s: the logs hold %d bytes, less than was appended", dir, written)
		}
	}
	check(dir, preallocStep)
	check(backup, 0)
}

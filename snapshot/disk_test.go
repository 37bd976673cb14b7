package snapshot

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
)

// smallDisk is a file system that reports the free space the test sets.
type smallDisk struct {
	vfs.FS
	avail atomic.Uint64
}

func newSmallDisk(avail uint64) *smallDisk {
	d := &smallDisk{FS: vfs.NewMem()}
	d.avail.Store(avail)
	return d
}

func (d *smallDisk) GetDiskUsage(string) (vfs.DiskUsage, error) {
	a := d.avail.Load()
	return vfs.DiskUsage{AvailBytes: a, TotalBytes: 1 << 40, UsedBytes: 1<<40 - a}, nil
}

// logRecorder is a slog.Handler that keeps the messages.
type logRecorder struct {
	mu    sync.Mutex
	msgs  []string
	lines []string // message and attributes
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, rec.Message)
	line := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	r.lines = append(r.lines, line)
	r.mu.Unlock()
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// find returns the lines (with attributes) that contain s.
func (r *logRecorder) find(s string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found []string
	for _, l := range r.lines {
		if strings.Contains(l, s) {
			found = append(found, l)
		}
	}
	return found
}

// refreshDisk makes the next write read the free space again.
func refreshDisk(s *Store) { s.disk.due.Store(0) }

// TestDiskFull: with less than MinFreeBytes free, every write method fails
// with ErrDiskFull and writes nothing; once space is back, writes succeed
// without a restart.
func TestDiskFull(t *testing.T) {
	const minFree = 1 << 20
	fs := newSmallDisk(1 << 30)
	logs := &logRecorder{}
	s, err := Open(&Options{Dir: "db", FS: fs, MinFreeBytes: minFree, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.disk.every = time.Hour // refreshes only where the test asks
	must(t, s.Put(KindAccount, 1, []byte("a")))
	must(t, s.Append(LogEntry{Seq: 1, Data: []byte("hit 1")}))
	must(t, s.WriteSnapshot(&Snapshot{Days: []DayRecord{{Website: 1, Date: 5, Data: []byte("day 5")}}}))

	fs.avail.Store(minFree - 1)
	refreshDisk(s)
	for _, tc := range []struct {
		name  string
		write func() error
	}{
		{name: "Append", write: func() error { return s.Append(LogEntry{Seq: 2, Data: []byte("hit 2")}) }},
		{name: "AppendAsync", write: func() error {
			_, err := s.AppendAsync(LogEntry{Seq: 2, Data: []byte("hit 2")})
			return err
		}},
		{name: "Put", write: func() error { return s.Put(KindAccount, 2, []byte("b")) }},
		{name: "Delete", write: func() error { return s.Delete(KindAccount, 1) }},
		{name: "WriteSnapshot", write: func() error {
			return s.WriteSnapshot(&Snapshot{Days: []DayRecord{{Website: 1, Date: 6, Data: []byte("day 6")}}, Trim: 1})
		}},
		{name: "DeleteWebsite", write: func() error { return s.DeleteWebsite(1) }},
		{name: "DeleteDaysBefore", write: func() error { return s.DeleteDaysBefore(1, 10) }},
		{name: "Backup", write: func() error { return s.Backup(context.Background(), "backup") }},
		{name: "Compact", write: func() error { return s.Compact() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			if !errors.Is(err, ErrDiskFull) {
				t.Fatalf("%s on a full disk: %v, want ErrDiskFull", tc.name, err)
			}
			for _, want := range []string{"disk full", "1024.0 KiB free in db", "needed", "MinFreeBytes"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not say %q", err, want)
				}
			}
		})
	}
	must(t, s.Flush()) // makes durable what was admitted: not refused

	// Nothing was written.
	if diff := cmp.Diff([]entry{{1, "hit 1"}}, replay(t, s, 0)); diff != "" {
		t.Errorf("log mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]rec{{1, "a"}}, scanAll(t, s, KindAccount)); diff != "" {
		t.Errorf("registry mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]day{{5, "day 5"}}, days(t, s, 1, minDate, maxDate)); diff != "" {
		t.Errorf("days mismatch (-want +got):\n%s", diff)
	}
	if s.Trim() != 0 {
		t.Errorf("Trim() = %d after a refused snapshot, want 0", s.Trim())
	}
	if _, err := fs.Stat("backup"); err == nil {
		t.Error("a refused Backup created its directory")
	}

	// Space is back: writes succeed.
	fs.avail.Store(1 << 30)
	refreshDisk(s)
	must(t, s.Append(LogEntry{Seq: 2, Data: []byte("hit 2")}))
	must(t, s.Put(KindAccount, 2, []byte("b")))
	if diff := cmp.Diff([]entry{{1, "hit 1"}, {2, "hit 2"}}, replay(t, s, 0)); diff != "" {
		t.Errorf("log after recovery mismatch (-want +got):\n%s", diff)
	}
	for _, m := range logs.messages() {
		if strings.Contains(m, "fatal") {
			t.Errorf("logged %q", m)
		}
	}
}

// TestDiskFullCountsWrites: between two readings of the free space, the
// bytes admitted are subtracted, so a burst of writes stops at the limit.
func TestDiskFullCountsWrites(t *testing.T) {
	const minFree = 1 << 20
	fs := newSmallDisk(minFree + 10<<10)
	s, err := Open(&Options{Dir: "db", FS: fs, MinFreeBytes: minFree})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.disk.every = time.Hour
	data := make([]byte, 1000)
	n := 0
	for seq := uint64(1); seq <= 100; seq++ {
		err := s.Append(LogEntry{Seq: seq, Data: data})
		if errors.Is(err, ErrDiskFull) {
			break
		}
		must(t, err)
		n++
	}
	// 10 KiB of room, ~1 KiB per entry (data, key and batch overhead).
	if n < 9 || n > 10 {
		t.Errorf("%d appends of 1000 bytes admitted with 10 KiB above MinFreeBytes, want 9 or 10", n)
	}
	if got, err := s.logCount(); err != nil || got != n {
		t.Errorf("log holds %d entries (%v), want %d", got, err, n)
	}
}

// TestOpenDiskFull: Open on a full disk fails at once with ErrDiskFull and
// releases the directory; a negative MinFreeBytes disables the check.
func TestOpenDiskFull(t *testing.T) {
	fs := newSmallDisk(1 << 30)
	s, err := Open(&Options{Dir: "db", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(LogEntry{Seq: 1, Data: []byte("hit 1")}))
	must(t, s.Close())

	fs.avail.Store(100 << 20)
	start := time.Now()
	_, err = Open(&Options{Dir: "db", FS: fs})
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Open with 100 MiB free (default MinFreeBytes 256 MiB): %v, want ErrDiskFull", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Open on a full disk took %v", d)
	}
	want := `snapshot: open db: disk full: 100.0 MiB free, 256.0 MiB needed (Options.MinFreeBytes); free some space and start again`
	if err.Error() != want {
		t.Errorf("message\n%q, want\n%q", err, want)
	}

	s, err = Open(&Options{Dir: "db", FS: fs, MinFreeBytes: -1})
	if err != nil {
		t.Fatalf("Open with the check disabled: %v", err)
	}
	must(t, s.Append(LogEntry{Seq: 2, Data: []byte("hit 2")}))
	must(t, s.Close())
	fs.avail.Store(1 << 30)
	s, err = Open(&Options{Dir: "db", FS: fs})
	if err != nil {
		t.Fatalf("Open once space is back: %v", err)
	}
	defer s.Close()
	if diff := cmp.Diff([]entry{{1, "hit 1"}, {2, "hit 2"}}, replay(t, s, 0)); diff != "" {
		t.Errorf("log mismatch (-want +got):\n%s", diff)
	}
}

// TestPebbleLoggerRateLimit: a message repeated in a loop is logged
// logBurst times per window, then once per window with the number of
// messages suppressed meanwhile; other formats are not affected.
func TestPebbleLoggerRateLimit(t *testing.T) {
	logs := &logRecorder{}
	p := newPebbleLogger(slog.New(logs))
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	for i := range 1000 {
		p.Errorf("background error: %d", i)
	}
	p.Errorf("other %s", "message")
	now = now.Add(logWindow)
	p.Errorf("background error: %d", 1000)
	want := []string{
		"pebble: background error: 0",
		"pebble: background error: 1",
		"pebble: background error: 2",
		"pebble: other message",
		"pebble: suppressed 997 similar messages",
		"pebble: background error: 1000",
	}
	if diff := cmp.Diff(want, logs.messages()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{n: 0, want: "0 B"},
		{n: 1023, want: "1023 B"},
		{n: 1024, want: "1.0 KiB"},
		{n: 256 << 20, want: "256.0 MiB"},
		{n: 3 << 30, want: "3.0 GiB"},
		{n: 1 << 62, want: "4096.0 PiB"},
	} {
		if got := formatBytes(tc.n); got != tc.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

package snapshot

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// modes returns the permission bits of dir and of everything in it, by path
// relative to dir.
func modes(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	m := map[string]fs.FileMode{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		m[rel] = info.Mode().Perm()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// ownerOnly returns a map with the same keys as m: dirPerm for the top
// directory, filePerm for the rest.
func ownerOnly(m map[string]fs.FileMode) map[string]fs.FileMode {
	want := map[string]fs.FileMode{}
	for k := range m {
		want[k] = filePerm
	}
	want["."] = dirPerm
	return want
}

// TestPermissions: a store on the operating system's file system is 0700
// with 0600 files, whatever the umask, backups too; a directory left more
// open is narrowed at Open, with a warning that says what changed.
func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(&Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Append(LogEntry{Seq: 1, Data: []byte("hit 1")}))
	must(t, s.WriteSnapshot(&Snapshot{Days: []DayRecord{{Website: 1, Date: 1, Data: []byte("day")}}}))
	must(t, s.Compact()) // sstables
	backup := filepath.Join(t.TempDir(), "backup")
	must(t, s.Backup(context.Background(), backup))
	must(t, s.Close())

	for name, d := range map[string]string{"store": dir, "backup": backup} {
		got := modes(t, d)
		if len(got) < 5 {
			t.Fatalf("%s: only %v", name, got)
		}
		if diff := cmp.Diff(ownerOnly(got), got); diff != "" {
			t.Errorf("%s: modes mismatch (-want +got):\n%s", name, diff)
		}
	}

	// A copy made with the permissions of before (0755, 0644 and 0666).
	must(t, os.Chmod(dir, 0o755))
	n := 0
	for name := range modes(t, dir) {
		if name == "." {
			continue
		}
		mode := fs.FileMode(0o644)
		if n%2 == 1 {
			mode = 0o666
		}
		n++
		must(t, os.Chmod(filepath.Join(dir, name), mode))
	}
	logs := &logRecorder{}
	s, err = Open(&Options{Dir: dir, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Close())
	got := modes(t, dir)
	if diff := cmp.Diff(ownerOnly(got), got); diff != "" {
		t.Errorf("after Open: modes mismatch (-want +got):\n%s", diff)
	}
	warn := logs.find("permissions")
	if len(warn) != 1 {
		t.Fatalf("warnings about permissions: %q, want one", warn)
	}
	for _, want := range []string{"WARN", "dir=" + dir, ". -rwxr-xr-x→-rwx------", "-rw-r--r--→-rw-------", "-rw-rw-rw-→-rw-------"} {
		if !strings.Contains(warn[0], want) {
			t.Errorf("warning %q does not say %q", warn[0], want)
		}
	}

	// Owner-only already: nothing to say.
	logs = &logRecorder{}
	s, err = Open(&Options{Dir: dir, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Close())
	if warn := logs.find("permissions"); len(warn) != 0 {
		t.Errorf("warning on an owner-only directory: %q", warn)
	}
}

// TestTightenPermsWhileFilesChange: files created and removed in a
// subdirectory while the walk runs (the embedded NATS server's store under
// the data directory does so) never fail it; a file that stays is still
// tightened. (Before, a file gone between the listing and its lstat failed
// Open: "lstat …/nats/…/tav.idx.tmp: no such file or directory".)
func TestTightenPermsWhileFilesChange(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "nats")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	stay := filepath.Join(dir, "stay")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := filepath.Join(sub, fmt.Sprintf("f%d.tmp", i%64))
			os.WriteFile(name, nil, 0o644)
			os.Remove(name)
		}
	}()
	for range 300 {
		if err := os.WriteFile(stay, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(stay, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := tightenPerms(dir, slog.New(slog.DiscardHandler)); err != nil {
			close(stop)
			<-done
			t.Fatalf("tightenPerms with files coming and going: %v", err)
		}
		if fi, err := os.Stat(stay); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("the lasting file: %v, %v", fi.Mode(), err)
		}
	}
	close(stop)
	<-done
}

package snapshot

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The data directory holds every account's statistics, session secrets and
// password hashes: only its owner may read it. A local user who could read a
// 0755 directory of 0644 files forged a session cookie from a copy.
const (
	dirPerm  fs.FileMode = 0o700
	filePerm fs.FileMode = 0o600
)

// privateFS is the operating system's file system (vfs.Default) with the
// modes of what Pebble creates narrowed to dirPerm and filePerm. vfs.Default
// creates files with 0666 and the process umask (os.OpenFile in Create,
// OpenReadWrite, ReuseForWrite, and os.Create in Lock) and directories with
// the mode Pebble asks for (0755 for a checkpoint). The mode is set right
// after creation: the window in between is closed by the directory itself,
// which Open makes dirPerm before Pebble creates anything in it.
type privateFS struct{ vfs.FS }

func (p privateFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, c)
	if f, err = private(name, f, err); err == nil && c == walCategory {
		f = &steppedPrealloc{File: f}
	}
	return f, err
}

func (p privateFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, c, opts...)
	return private(name, f, err)
}

func (p privateFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, c)
	if f, err = private(newname, f, err); err == nil && c == walCategory {
		f = &steppedPrealloc{File: f}
	}
	return f, err
}

func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	if err == nil {
		if err := os.Chmod(name, filePerm); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, err
}

func (p privateFS) MkdirAll(dir string, _ os.FileMode) error { return p.FS.MkdirAll(dir, dirPerm) }

func (p privateFS) Unwrap() vfs.FS { return p.FS }

// private sets the mode of a file just created or opened for writing.
func private(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	if err := os.Chmod(name, filePerm); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// walCategory is the category Pebble creates and reuses its write-ahead
// log files with (package wal), which append with Write from offset 0;
// a backup's copies of them have another, and keep their size.
const walCategory vfs.DiskWriteCategory = "pebble-wal"

// preallocStep is how far ahead of its writes a file written by the store
// has its blocks allocated.
const preallocStep = 1 << 20

// steppedPrealloc is a file that allocates its blocks ahead of its writes in
// steps of preallocStep, and ignores Pebble's own preallocation. Pebble
// preallocates its write-ahead log files in steps of 1.1 × the memtable
// (fallocate with FALLOC_FL_KEEP_SIZE) and keeps up to
// memTableStopWritesThreshold + 1 old ones for reuse: for a small site,
// whose logs hold a few hundred KB between snapshots, that was 4.4 MiB of
// allocated blocks per log file, three quarters of its data directory
// (webstats-bench's memory run). Allocating ahead at all keeps a synced
// append from allocating blocks itself: without it, BenchmarkDurableTrack
// measured about 5% slower.
type steppedPrealloc struct {
	vfs.File
	off       int64 // where the next Write goes
	allocated int64 // blocks are allocated below this offset
}

func (f *steppedPrealloc) Write(p []byte) (int, error) {
	if end := f.off + int64(len(p)); end > f.allocated {
		to := (end + preallocStep - 1) / preallocStep * preallocStep
		// As Pebble does, ignore a failure: the write allocates instead.
		_ = f.File.Preallocate(f.allocated, to-f.allocated)
		f.allocated = to
	}
	n, err := f.File.Write(p)
	f.off += int64(n)
	return n, err
}

func (*steppedPrealloc) Preallocate(offset, length int64) error { return nil }

// tightenPerms clears the group and other permission bits of dir and of
// everything in it, where set, and logs a warning saying what it changed.
// Symbolic links are not followed. A file that goes away during the walk is
// passed over: the directory may hold what another writer changes meanwhile
// (the embedded NATS server's store, <data>/nats, with its temporary files).
func tightenPerms(dir string, log *slog.Logger) error {
	var changed []string
	gone := func(err error) bool { return errors.Is(err, fs.ErrNotExist) }
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if gone(err) && path != dir {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if gone(err) {
			return nil
		}
		if err != nil {
			return err
		}
		mode := info.Mode().Perm()
		want := mode &^ 0o077 // dirPerm or filePerm for what Pebble made
		if mode == want {
			return nil
		}
		if err := os.Chmod(path, want); gone(err) {
			return nil
		} else if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		changed = append(changed, rel+" "+mode.String()+"→"+want.String())
		return nil
	})
	if err != nil {
		return err
	}
	if len(changed) > 0 {
		const maxListed = 10
		list := changed[:min(len(changed), maxListed)]
		more := ""
		if len(changed) > maxListed {
			more = " …"
		}
		log.Warn("snapshot: the data directory was readable by other users; its permissions are now owner-only. Check who could copy it meanwhile (it holds session secrets).",
			"dir", dir, "changed", len(changed), "modes", strings.Join(list, ", ")+more)
	}
	return nil
}

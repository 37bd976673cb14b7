//go:build unix

package bench

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// dirAllocated returns the bytes the file system allocated to the files
// under dir: what du counts, and what the files take from the disk. It
// includes space reserved ahead (Pebble preallocates each write-ahead log
// file) that the files' sizes do not show.
func dirAllocated(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += int64(st.Blocks) * 512
			} else {
				n += info.Size()
			}
		}
		return nil
	})
	return n, err
}

//go:build unix

package bench

import (
	"io/fs"
	"syscall"
)

// allocated is the bytes the file system allocated to a file.
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return info.Size()
}

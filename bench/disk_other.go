//go:build !unix

package bench

import "io/fs"

// allocated is the file's size where its allocated blocks are not known.
func allocated(info fs.FileInfo) int64 { return info.Size() }

//go:build !unix

package bench

// dirAllocated is dirSize where the allocated blocks are not known.
func dirAllocated(dir string) (int64, error) { return dirSize(dir) }

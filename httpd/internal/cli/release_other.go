//go:build !linux

package cli

// releaseBinaryPages does nothing outside Linux (see release_linux.go).
func releaseBinaryPages() (int64, error) { return 0, nil }

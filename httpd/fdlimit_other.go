//go:build !unix

package httpd

// fileLimit reports that the limit on open files is not known here.
func fileLimit() (uint64, bool) { return 0, false }

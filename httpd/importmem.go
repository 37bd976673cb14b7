package httpd

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// Memory of an import (SPEC §13: an import of 10,000 events of new values
// grows the resident set by at most 64 MiB over the idle process; issue
// #38 row 7). An import holds its body, the events decoded from it, their
// records and the log batch at once: tens of MiB for a 10 MiB body. Two
// things keep that bounded: imports are decoded and tracked one at a time
// (Server.imports), so concurrent imports do not multiply it, and the body is
// read into one buffer of its declared length, not grown by doubling
// (io.ReadAll made up to twice the body in garbage, which the collector
// paces against the live heap).

// acquireImport waits for s's import slot (one import decoded and tracked
// at a time; others wait for it, or for their request to end); release
// frees it.
func (s *Server) acquireImport(ctx context.Context) (release func(), err error) {
	select {
	case s.imports <- struct{}{}:
		return func() { <-s.imports }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readImportBody reads r's body whole, into a buffer of its Content-Length
// when it declares one within limit (the route's MaxBytesReader still
// refuses more).
func readImportBody(r *http.Request, limit int64) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= limit {
		var buf bytes.Buffer
		buf.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead spare to end without growing
		_, err := buf.ReadFrom(r.Body)
		return buf.Bytes(), err
	}
	return io.ReadAll(r.Body)
}

package httpd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/webstats/webstats/engine"
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

// importWait is how long an import waits for the slot before it is
// answered 503 with Retry-After (engine.ErrBusy). The slot is held while
// its body is read, so a client sending slowly holds it up to the
// server's ReadTimeout: an unbounded wait left every other import on the
// server hanging behind it, with no answer, until its own read deadline
// had passed too. A 503 is retried by the command line with the same
// Idempotency-Key.
const importWait = 5 * time.Second

// acquireImport waits for s's import slot (one import decoded and tracked
// at a time; others wait for it up to importWait, or for their request to
// end); release frees it.
func (s *Server) acquireImport(ctx context.Context) (release func(), err error) {
	t := time.NewTimer(importWait)
	defer t.Stop()
	select {
	case s.imports <- struct{}{}:
		return func() { <-s.imports }, nil
	case <-t.C:
		return nil, engine.ErrBusy
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

package httpd

import (
	"context"
	"time"

	"github.com/webstats/webstats/engine"
)

// Memory of an import (SPEC §13: an import of 10,000 events of new values
// grows the resident set by at most 64 MiB over the idle process; issue
// #38 row 7). An import holds the events decoded from its body, their
// records and the log batch: tens of MiB for a 10 MiB body. What keeps
// that bounded: imports are decoded and tracked one at a time
// (Server.imports), so concurrent imports do not multiply it; the body is
// read an event at a time as it is checked, never whole (importread.go);
// and the engine counts the hits in parts, letting go of each part's
// hits once enriched (engine.Import).

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

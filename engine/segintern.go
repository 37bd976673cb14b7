package engine

import (
	"time"

	"github.com/webstats/webstats/engine/internal/segments"
)

// interns returns the engine's table: a new one if there is none, or if
// it is full and was made segments.InternRefill ago.
func (e *Engine) interns() *segments.Interns {
	t := e.intern.Load()
	if t != nil && (!t.Full.Load() || time.Since(t.Made) < segments.InternRefill) {
		return t
	}
	n := segments.NewInterns(segments.InternBytes(e.opts.MemoryBudget), &e.internStats)
	if e.intern.CompareAndSwap(t, n) {
		e.internStats.Tables.Add(1)
		return n
	}
	return e.intern.Load()
}

// forgetValues drops the engine's table of values (the next query makes
// a new one): called when values must no longer be kept, a website
// deleted or days dropped by retention.
func (e *Engine) forgetValues() { e.intern.Store(nil) }

package engine

import (
	"sync/atomic"
	"time"

	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/visitors"
)

// SetDayMemo turns the queries' memo of frozen days (segments.Memo) on or off,
// for benchmarks that measure a query on its own (off: every query
// evaluates its filters). It returns the previous setting.
func SetDayMemo(on bool) bool {
	return segments.UseDayMemo.Swap(on)
}

// DayMemoHits counts the times a day's memo knew a query's filters.
func DayMemoHits() int64 { return segments.DayMemoHits.Load() }

// SetFilterMemo turns on or off only the part of the day memo that keeps
// the visits recent queries' filters excluded, for benchmarks of a query
// whose filters were just chosen. It returns the previous setting.
func SetFilterMemo(on bool) bool {
	return segments.UseFilterMemo.Swap(on)
}

// SetInternMaxBytes sets the most an engine's table of query values
// holds (engine/internal/segments/intern.go), for tables that fill within a test; it returns
// the previous setting. Set it before the engine's first query.
func SetInternMaxBytes(n int) int {
	old := segments.InternMaxBytes
	segments.InternMaxBytes = n
	return old
}

// InternCounts are the counts of an engine's tables of query values
// (engine/internal/segments/intern.go): tables made, days scanned with their values' ids in
// one (Stale: after dropping those of an older table), groups found by a
// value's id, and the values in the current table.
type InternCounts struct {
	Tables, Days, Stale, Found int64
	Values                     int
	Full                       bool
}

// InternStats returns e's InternCounts.
func InternStats(e *Engine) InternCounts {
	c := InternCounts{Tables: e.internStats.Tables.Load(), Days: e.internStats.Days.Load(), Stale: e.internStats.Stale.Load(), Found: e.internStats.Found.Load()}
	if t := e.intern.Load(); t != nil {
		c.Values = t.Values()
		c.Full = t.Full.Load()
	}
	return c
}

// SetInternRefill sets how often a full table of query values may be
// replaced, and returns the previous setting.
func SetInternRefill(d time.Duration) time.Duration {
	old := segments.InternRefill
	segments.InternRefill = d
	return old
}

// SetGidPageBits sets the log2 of the pages of a plan's groups by value
// id, and returns the previous setting.
func SetGidPageBits(n int) int {
	old := segments.GidPageBits
	segments.GidPageBits = n
	return old
}

// Every day of a test has a memo, however small, so that the randomized
// tests (model, metamorphic, sealed, determinism) check it against their
// references; TestDayMemo sets the threshold back to test it.
func init() { segments.MinMemoVisits = 1 }

// SetQueryGroupLimit sets the most groups a query may make (MaxQueryGroups
// outside tests) and returns the old limit.
func SetQueryGroupLimit(n int) int {
	old := segments.QueryGroupLimit
	segments.QueryGroupLimit = n
	return old
}

// Pins sums the pins of every resident day and visitor state of e. Once
// every Track and query has returned, nothing is pinned: a pin left over
// keeps its day resident forever, one released twice lets it be evicted
// while a hit waits for it.
func Pins(e *Engine) int {
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	n := 0
	for id, s := range e.sites {
		sh := e.shardOf(id)
		sh.mu.Lock()
		for _, ent := range s.state.days {
			n += ent.pins
		}
		for _, p := range s.state.periods {
			n += p.pins
		}
		sh.mu.Unlock()
	}
	return n
}

// TestAccount is an account id for the tests: the engine knows the ids
// that own websites, not the accounts (package identity keeps those).
type TestAccount struct{ ID uint32 }

var testAccounts atomic.Uint32

// NewTestAccount returns a fresh account id, as identity's CreateAccount
// returned an account, key and error.
func NewTestAccount() (TestAccount, string, error) {
	return TestAccount{ID: testAccounts.Add(1)}, "", nil
}

// SetImportedCacheBytes sets the bound of the imports loaded for queries
// without a MemoryBudget (imported.go) and returns the previous one.
func SetImportedCacheBytes(n int64) int64 {
	old := importedCacheBytes
	importedCacheBytes = n
	return old
}

// ImportedResident returns the websites whose imports are loaded and the
// rows they hold, counted from the loaded lists themselves.
func ImportedResident(e *Engine) (sites, rows int) {
	e.imported.mu.Lock()
	defer e.imported.mu.Unlock()
	return e.imported.cache.Resident()
}

// QueryRuns counts the queries run on the segments (not answered by the
// day buckets or the result cache), in every engine.
func QueryRuns() int64 { return queryRuns.Load() }

// SetDimMemo turns the memo of closed days' unfiltered breakdowns
// (engine/internal/segments/memodim.go) on or off, and returns what it was.
func SetDimMemo(on bool) bool { return segments.UseDimMemo.Swap(on) }

// DimMemoHits counts the days a query added from their memo's breakdown.
func DimMemoHits() int64 { return segments.DimMemoHits.Load() }

// SetPartHits sets how many hits a call logs and applies as one batch and
// returns the previous value.
func SetPartHits(n int) int {
	old := partHits
	partHits = n
	return old
}

// SetPaging makes periods page from minBytes, in chunks of chunkVisitors
// visitors, indexing at most perSnapshot of their older visitors a
// snapshot (pagein.go), and returns a function that restores the old
// values: for tests that page a few visitors.
func SetPaging(minBytes, chunkVisitors, perSnapshot int) (restore func()) {
	oldMin, oldPer := pageMinBytes, indexPerSnapshot
	pageMinBytes, indexPerSnapshot = minBytes, perSnapshot
	oldChunk := visitors.SetChunkVisitors(chunkVisitors)
	return func() {
		pageMinBytes, indexPerSnapshot = oldMin, oldPer
		visitors.SetChunkVisitors(oldChunk)
	}
}

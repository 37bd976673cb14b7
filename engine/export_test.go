package engine

// SetDayMemo turns the queries' memo of frozen days (dayMemo) on or off,
// for benchmarks that measure a query on its own (off: every query
// evaluates its filters). It returns the previous setting.
func SetDayMemo(on bool) bool {
	return useDayMemo.Swap(on)
}

// DayMemoHits counts the times a day's memo knew a query's filters.
func DayMemoHits() int64 { return dayMemoHits.Load() }

// SetFilterMemo turns on or off only the part of the day memo that keeps
// the visits recent queries' filters excluded, for benchmarks of a query
// whose filters were just chosen. It returns the previous setting.
func SetFilterMemo(on bool) bool {
	return useFilterMemo.Swap(on)
}

// SetInternMaxBytes sets the most an engine's table of query values
// holds (segintern.go), for tables that fill within a test; it returns
// the previous setting. Set it before the engine's first query.
func SetInternMaxBytes(n int) int {
	old := internMaxBytes
	internMaxBytes = n
	return old
}

// InternStats returns how many tables of query values e made, and how
// many days its queries scanned with their values' ids in one.
func InternStats(e *Engine) (tables, days int64) {
	return e.internStats.tables.Load(), e.internStats.days.Load()
}

// Every day of a test has a memo, however small, so that the randomized
// tests (model, metamorphic, sealed, determinism) check it against their
// references; TestDayMemo sets the threshold back to test it.
func init() { minMemoVisits = 1 }

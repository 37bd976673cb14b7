package engine

// SetDayMemo turns the queries' memo of frozen days (dayMemo) on or off,
// for benchmarks that measure a query on its own (off: every query
// evaluates its filters). It returns the previous setting.
func SetDayMemo(on bool) bool {
	return useDayMemo.Swap(on)
}

// DayMemoHits counts the times a day's memo knew a query's filters.
func DayMemoHits() int64 { return dayMemoHits.Load() }

// Every day of a test has a memo, however small, so that the randomized
// tests (model, metamorphic, sealed, determinism) check it against their
// references; TestDayMemo sets the threshold back to test it.
func init() { minMemoVisits = 1 }

package engine

// SetDayMemo turns the queries' memo of frozen days (dayMemo) on or off,
// for benchmarks that measure a query on its own (off: every query
// evaluates its filters). It returns the previous setting.
func SetDayMemo(on bool) bool {
	return useDayMemo.Swap(on)
}

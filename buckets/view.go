package buckets

// Values returns the interned strings indexed by id. The slice is a view
// that stays valid, and unchanged, while the table grows (interning only
// appends), so a reader may use it after releasing the lock that guards the
// table. Callers must not modify it.
func (s *Strings) Values() []string {
	return s.values[:len(s.values):len(s.values)]
}

// VisitorsOnly returns a new Day holding only d's Period and a copy of its
// day visitor bitmap: enough for [UniqueVisitors], cheaper than [Day.Clone].
func (d *Day) VisitorsOnly() *Day {
	n := NewDay(d.Period)
	if d.visitors != nil {
		n.visitors = d.visitors.Clone()
	}
	return n
}

// Rollup returns a compacted Day holding the sums of the counts, hourly
// pageviews, visits and events of days, without visitor bitmaps: a closed
// month kept as one bucket, so a long range merges a dozen rollups instead
// of hundreds of days. Its Period is 0 and its visitor methods report
// nothing; unique visitors still come from the days themselves.
func Rollup(days ...*Day) *Day {
	r := NewDay(0)
	var acc []uint64
	for dim := range NumDims {
		clear(acc)
		acc = SumCounts(acc, dim, days...)
		for id, n := range acc {
			if n > 0 {
				r.Add(dim, uint32(id), n)
			}
		}
	}
	for _, d := range days {
		if d == nil {
			continue
		}
		r.Visits += d.Visits
		r.Events += d.Events
		for h, n := range d.Hours {
			r.Hours[h] += n
		}
	}
	r.Compact()
	return r
}

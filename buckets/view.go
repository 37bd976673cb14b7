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

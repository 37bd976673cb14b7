package buckets

// VisitorsOnly returns a new Day holding only d's Period and a copy of its
// day visitor bitmap: enough for [UniqueVisitors], cheaper than [Day.Clone].
func (d *Day) VisitorsOnly() *Day {
	n := NewDay(d.Period)
	if d.visitors != nil {
		n.visitors = d.visitors.Clone()
	}
	return n
}

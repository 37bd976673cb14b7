package engine

import "github.com/webstats/webstats/engine/internal/segments"

// Streaming a day too large to be made whole (SPEC §13: "a query over any
// range streams its days within the budget"; issue #38 row 8).
//
// A day with sealed parts is read made whole (segments.Day.Whole): every row of
// the day in memory at once, hits ordered by visit, a sealed visit's
// columns derived from its hits. A day whose rows are more than
// Engine.wholeLimit is instead read in chunks, each a day of its own made
// of the visits whose visitor id is k modulo the number of chunks, with
// their hits (orphan events by their row modulo the number of chunks): the parts are read one at a time
// for each chunk, so what is resident is one chunk, one decoded part and
// a row map of 4 bytes a visit. A visitor (an id within a salt period)
// is in one chunk only, so the chunks' distinct visitors add up; a visit
// and its hits are in one chunk, so its columns are derived from its hits
// as whole derives them. Queries count a chunk's visitors in roaring
// bitmaps by salt period (never as a day of its own salt period), so the
// memory of a query over such a day is bounded by those bitmaps: a bit a
// visitor at worst, as the README says.

// chunks returns how many chunks a day of est bytes of rows is read in
// under limit bytes each (1: made whole).
func chunks(est, limit int64) int {
	if limit <= 0 || est <= limit {
		return 1
	}
	return int((est + limit - 1) / limit)
}

// wholeEstimate is the bytes of rows of d made whole: every visit and hit
// row of the day (d holds the rows after its sealed parts, whose counts
// it knows), and their props at the rate of d's own rows. (Counting a
// part as sealBytes was wrong both ways: a part holds what the day had
// at its snapshot, which may be many times sealBytes.)
func (e *Engine) wholeEstimate(d *segments.Day) int64 {
	nv, nh := int64(d.OffV)+int64(d.Visits()), int64(d.OffH)+int64(d.Hits())
	props := int64(4 * len(d.Props))
	if d.Hits() > 0 {
		props = props * nh / int64(d.Hits())
	}
	return nv*(segments.VisitBytes+4) + nh*segments.HitBytes + props
}

package segments

import (
	"fmt"

	"github.com/webstats/webstats/engine/internal/wire"
)

// Streaming a day too large to be made whole (SPEC §13: "a query over any
// range streams its days within the budget"; issue #38 row 8).
//
// A day with sealed parts is read made whole (Day.Whole): every row of
// the day in memory at once, hits ordered by visit, a sealed visit's
// columns derived from its hits. A day whose rows are more than
// the engine's limit (a quarter of its memory budget) is instead read in chunks, each a day of its own made
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

// Chunks returns how many chunks day d is read in under limit bytes of
// rows each (1: made whole; limit 0: no limit).
func Chunks(d *Day, limit int64) int {
	est := wholeBytes(d)
	if limit <= 0 || est <= limit {
		return 1
	}
	return int((est + limit - 1) / limit)
}

// wholeBytes is the bytes of rows of d made whole: every visit and hit
// row of the day (d holds the rows after its sealed parts, whose counts
// it knows), and their props at the rate of d's own rows. (Counting a
// part as the engine's seal size was wrong both ways: a part holds what
// the day had at its snapshot, which may be many times that.)
func wholeBytes(d *Day) int64 {
	nv, nh := int64(d.OffV)+int64(d.Visits()), int64(d.OffH)+int64(d.Hits())
	props := int64(4 * len(d.Props))
	if d.Hits() > 0 {
		props = props * nh / int64(d.Hits())
	}
	return nv*(VisitBytes+4) + nh*HitBytes + props
}

// ChunkOf returns chunk k of n of the day d (with sealed parts, not made
// whole) and its parts: the visits whose visitor id is k modulo n and
// their hits, the orphan events whose day row is k modulo n, ordered and derived as whole
// orders and derives them. remap is scratch of at least the day's visits
// (offV + visits of d), reused across chunks. The chunk shares d's
// strings; it is read only, and never kept.
func (d *Day) ChunkOf(parts [][]byte, cache *PartCache, k, n int, remap []uint32) (*Day, error) {
	if len(parts) < int(d.Parts) {
		return nil, fmt.Errorf("segments: %d of %d sealed parts: %w", len(parts), d.Parts, wire.ErrRecord)
	}
	clear(remap)
	w := &Day{Strs: d.Strs, counts: d.counts}
	// Room for a chunk's share of the rows and an eighth more (visitor
	// ids spread evenly over the chunks): grown row by row, a chunk's
	// columns held up to twice its rows.
	nv, nh := int(d.OffV)+d.Visits(), int(d.OffH)+d.Hits()
	w.grow(nv/n+nv/(8*n)+64, nh/n+nh/(8*n)+64)
	for i := 0; i <= int(d.Parts); i++ {
		src := d
		if i < int(d.Parts) {
			p, err := cache.Decode(parts[i], len(d.Strs))
			if err != nil {
				return nil, fmt.Errorf("part %d: %w", i, err)
			}
			src = p
		}
		if err := w.appendChunkOf(src, k, n, remap); err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
	}
	w.sortByVisit()
	if !w.visitsFromHits() {
		return nil, fmt.Errorf("segments: a visit without a pageview or event: %w", wire.ErrRecord)
	}
	w.Size = w.Estimate()
	return w, nil
}

// appendChunkOf appends the rows of p (a part, or the rows since the last
// one) that belong to chunk k of n; remap maps a day's visit row to its
// row in w plus one (0: in another chunk).
func (w *Day) appendChunkOf(p *Day, k, n int, remap []uint32) error {
	if int(p.OffV)+p.Visits() > len(remap) {
		return fmt.Errorf("segments: visit rows past the day's: %w", wire.ErrRecord)
	}
	for j, id := range p.VVisitor {
		if int(id%uint32(n)) != k {
			continue
		}
		remap[int(p.OffV)+j] = uint32(w.Visits()) + 1
		w.VPeriod = append(w.VPeriod, p.VPeriod[j])
		w.VVisitor = append(w.VVisitor, id)
		w.VFirst = append(w.VFirst, p.VFirst[j])
		w.vStart = append(w.vStart, p.vStart[j])
		w.VEnd = append(w.VEnd, p.VEnd[j])
		w.VLastPV = append(w.VLastPV, p.VLastPV[j])
		w.VPageviews = append(w.VPageviews, p.VPageviews[j])
		w.VFlags = append(w.VFlags, p.VFlags[j])
		w.VEntry = append(w.VEntry, p.VEntry[j])
		w.VExit = append(w.VExit, p.VExit[j])
		w.VEntryHost = append(w.VEntryHost, p.VEntryHost[j])
		w.VExitHost = append(w.VExitHost, p.VExitHost[j])
		w.VCityID = append(w.VCityID, p.VCityID[j])
		for a := range NumAttrs {
			w.VAttr[a] = append(w.VAttr[a], p.VAttr[a][j])
		}
	}
	for i, v := range p.HVisit {
		switch {
		case v == NoVisit && (int(p.OffH)+i)%n != k:
			continue // an orphan counts no visitor: spread by its row, as a day of them would be one chunk
		case v == NoVisit:
		case int(v) >= len(remap):
			return fmt.Errorf("segments: a hit of visit row %d past the day's: %w", v, wire.ErrRecord)
		case remap[v] == 0:
			continue // another chunk's (or a later row's: corrupt, found by visitsFromHits)
		default:
			v = remap[v] - 1
		}
		w.HVisit = append(w.HVisit, v)
		w.HMs = append(w.HMs, p.HMs[i])
		w.HKind = append(w.HKind, p.HKind[i])
		w.HName = append(w.HName, p.HName[i])
		w.HPage = append(w.HPage, p.HPage[i])
		w.HHost = append(w.HHost, p.HHost[i])
		w.HValue = append(w.HValue, p.HValue[i])
		w.HUnit = append(w.HUnit, p.HUnit[i])
		w.HEngaged = append(w.HEngaged, p.HEngaged[i])
		w.HScroll = append(w.HScroll, p.HScroll[i])
		w.HFlags = append(w.HFlags, p.HFlags[i])
		w.Props = append(w.Props, p.PropsOf(i)...)
		w.hPropEnd = append(w.hPropEnd, uint32(len(w.Props)/2))
	}
	return nil
}

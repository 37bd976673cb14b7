package engine

import (
	"fmt"

	"github.com/webstats/webstats/engine/internal/wire"
)

// Streaming a day too large to be made whole (SPEC §13: "a query over any
// range streams its days within the budget"; issue #38 row 8).
//
// A day with sealed parts is read made whole (segDay.whole): every row of
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
func (e *Engine) wholeEstimate(d *segDay) int64 {
	nv, nh := int64(d.offV)+int64(d.visits()), int64(d.offH)+int64(d.hits())
	props := int64(4 * len(d.props))
	if d.hits() > 0 {
		props = props * nh / int64(d.hits())
	}
	return nv*(segVisitBytes+4) + nh*segHitBytes + props
}

// chunkOf returns chunk k of n of the day d (with sealed parts, not made
// whole) and its parts: the visits whose visitor id is k modulo n and
// their hits, the orphan events whose day row is k modulo n, ordered and derived as whole
// orders and derives them. remap is scratch of at least the day's visits
// (offV + visits of d), reused across chunks. The chunk shares d's
// strings; it is read only, and never kept.
func (d *segDay) chunkOf(parts [][]byte, cache *partCache, k, n int, remap []uint32) (*segDay, error) {
	if len(parts) < int(d.parts) {
		return nil, fmt.Errorf("segments: %d of %d sealed parts: %w", len(parts), d.parts, wire.ErrRecord)
	}
	clear(remap)
	w := &segDay{strs: d.strs, counts: d.counts}
	// Room for a chunk's share of the rows and an eighth more (visitor
	// ids spread evenly over the chunks): grown row by row, a chunk's
	// columns held up to twice its rows.
	nv, nh := int(d.offV)+d.visits(), int(d.offH)+d.hits()
	w.grow(nv/n+nv/(8*n)+64, nh/n+nh/(8*n)+64)
	for i := 0; i <= int(d.parts); i++ {
		src := d
		if i < int(d.parts) {
			p, err := cache.decode(parts[i], len(d.strs))
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
	w.size = w.estimate()
	return w, nil
}

// appendChunkOf appends the rows of p (a part, or the rows since the last
// one) that belong to chunk k of n; remap maps a day's visit row to its
// row in w plus one (0: in another chunk).
func (w *segDay) appendChunkOf(p *segDay, k, n int, remap []uint32) error {
	if int(p.offV)+p.visits() > len(remap) {
		return fmt.Errorf("segments: visit rows past the day's: %w", wire.ErrRecord)
	}
	for j, id := range p.vVisitor {
		if int(id%uint32(n)) != k {
			continue
		}
		remap[int(p.offV)+j] = uint32(w.visits()) + 1
		w.vPeriod = append(w.vPeriod, p.vPeriod[j])
		w.vVisitor = append(w.vVisitor, id)
		w.vFirst = append(w.vFirst, p.vFirst[j])
		w.vStart = append(w.vStart, p.vStart[j])
		w.vEnd = append(w.vEnd, p.vEnd[j])
		w.vLastPV = append(w.vLastPV, p.vLastPV[j])
		w.vPageviews = append(w.vPageviews, p.vPageviews[j])
		w.vFlags = append(w.vFlags, p.vFlags[j])
		w.vEntry = append(w.vEntry, p.vEntry[j])
		w.vExit = append(w.vExit, p.vExit[j])
		w.vEntryHost = append(w.vEntryHost, p.vEntryHost[j])
		w.vExitHost = append(w.vExitHost, p.vExitHost[j])
		w.vCityID = append(w.vCityID, p.vCityID[j])
		for a := range numVA {
			w.vAttr[a] = append(w.vAttr[a], p.vAttr[a][j])
		}
	}
	for i, v := range p.hVisit {
		switch {
		case v == noVisit && (int(p.offH)+i)%n != k:
			continue // an orphan counts no visitor: spread by its row, as a day of them would be one chunk
		case v == noVisit:
		case int(v) >= len(remap):
			return fmt.Errorf("segments: a hit of visit row %d past the day's: %w", v, wire.ErrRecord)
		case remap[v] == 0:
			continue // another chunk's (or a later row's: corrupt, found by visitsFromHits)
		default:
			v = remap[v] - 1
		}
		w.hVisit = append(w.hVisit, v)
		w.hMs = append(w.hMs, p.hMs[i])
		w.hKind = append(w.hKind, p.hKind[i])
		w.hName = append(w.hName, p.hName[i])
		w.hPage = append(w.hPage, p.hPage[i])
		w.hHost = append(w.hHost, p.hHost[i])
		w.hValue = append(w.hValue, p.hValue[i])
		w.hUnit = append(w.hUnit, p.hUnit[i])
		w.hEngaged = append(w.hEngaged, p.hEngaged[i])
		w.hScroll = append(w.hScroll, p.hScroll[i])
		w.hFlags = append(w.hFlags, p.hFlags[i])
		w.props = append(w.props, p.propsOf(i)...)
		w.hPropEnd = append(w.hPropEnd, uint32(len(w.props)/2))
	}
	return nil
}

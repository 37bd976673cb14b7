package segments

import (
	"context"
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
// their hits (orphan events by their row modulo the number of chunks).
// The parts are read once (Day.Split), each split into the chunks' shares
// of its rows, which are kept encoded as sealed parts are (zstd); a chunk
// is then made of its shares (Chunked.Chunk), one at a time. (Reading
// every part again for each chunk, as before, cost n reads of the day's
// parts, n growing with the day: a query of a day of 2 million visits
// under an 8 MiB budget ran for over 10 minutes.) What is resident is one
// chunk and one decoded part (or share), the day's rows encoded once (as
// its parts were, which the split releases as it goes) and, while it
// splits, a row map of 8 bytes a visit. A visitor (an id within a salt
// period) is in one chunk only, so the chunks' distinct visitors add up;
// a visit and its hits are in one chunk, so its columns are derived from
// its hits as whole derives them. Queries count a chunk's visitors in
// roaring bitmaps by salt period (never as a day of its own salt period),
// so the memory of a query over such a day is bounded by those bitmaps: a
// bit a visitor at worst, as the README says.

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

// Chunked is a day with sealed parts split into n chunks (Day.Split):
// each chunk's rows, in the day's order, as parts of a day of their own,
// encoded as sealed parts are. It shares the day's strings; it is read
// only, and never kept.
type Chunked struct {
	d      *Day
	shares [][][]byte // shares[k]: chunk k's parts, in order
	nv, nh []int      // chunk k's visit and hit rows
	// growV, growH: the rows a chunk's share of a flush is made room for.
	growV, growH int
}

// Split reads day d (with sealed parts, not made whole) from its parts,
// each once (decoded through cache), and returns it split into n chunks:
// chunk k holds the visits whose visitor id is k modulo n and their hits,
// and the orphan events whose day row is k modulo n. Split releases the
// entries of parts (sets them to nil) as it reads them, so that the day
// is held encoded once, not twice. The rows split from the parts are
// encoded (Day.AppendPart) whenever they reach about a chunk's size
// (checked after each part), so that what Split holds beyond one decoded
// part is about one chunk, the day encoded once, and a map of 8 bytes a
// visit of the day. It stops with ctx's error between parts.
func (d *Day) Split(ctx context.Context, parts [][]byte, cache *PartCache, n int) (*Chunked, error) {
	if len(parts) < int(d.Parts) {
		return nil, fmt.Errorf("segments: %d of %d sealed parts: %w", len(parts), d.Parts, wire.ErrRecord)
	}
	c := &Chunked{d: d, shares: make([][][]byte, n), nv: make([]int, n), nh: make([]int, n)}
	nv, nh := int(d.OffV)+d.Visits(), int(d.OffH)+d.Hits()
	c.growV, c.growH = nv/(n*n)+nv/(8*n*n)+16, nh/(n*n)+nh/(8*n*n)+16
	// remap maps a day's visit row to its chunk (high 32 bits) and its
	// row in the chunk plus one (0: none yet).
	remap := make([]uint64, nv)
	ws := make([]*Day, n) // the rows of each chunk not yet encoded
	flushAt := wholeBytes(d)/int64(n) + 1
	var pending int64
	flush := func() {
		for k, w := range ws {
			if w == nil {
				continue
			}
			c.shares[k] = append(c.shares[k], w.AppendPart(nil))
			c.nv[k] += w.Visits()
			c.nh[k] += w.Hits()
			ws[k] = nil
		}
		pending = 0
	}
	for i := 0; i <= int(d.Parts); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		src := d
		if i < int(d.Parts) {
			p, err := cache.Decode(parts[i], len(d.Strs))
			if err != nil {
				return nil, fmt.Errorf("part %d: %w", i, err)
			}
			parts[i] = nil
			src = p
		}
		if err := c.split(src, ws, remap); err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		pending += int64(src.Visits())*(VisitBytes+4) + int64(src.Hits())*HitBytes + 4*int64(len(src.Props))
		if pending >= flushAt {
			flush()
		}
	}
	flush()
	return c, nil
}

// split appends the rows of p (a part, or the rows since the last one)
// to the rows of their chunks not yet encoded, ws (a nil entry: none).
func (c *Chunked) split(p *Day, ws []*Day, remap []uint64) error {
	n := len(ws)
	if int(p.OffV)+p.Visits() > len(remap) {
		return fmt.Errorf("segments: visit rows past the day's: %w", wire.ErrRecord)
	}
	to := func(k int) *Day {
		if ws[k] == nil {
			ws[k] = &Day{OffV: uint32(c.nv[k]), OffH: uint32(c.nh[k])}
			// Room for a chunk's share of the rows split before a flush
			// (about n flushes) and an eighth more, not grown row by row.
			ws[k].grow(c.growV, c.growH)
		}
		return ws[k]
	}
	for j, id := range p.VVisitor {
		k := int(id % uint32(n))
		w := to(k)
		remap[int(p.OffV)+j] = uint64(k)<<32 | (uint64(w.OffV) + uint64(w.Visits()) + 1)
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
		var k int
		switch {
		case v == NoVisit:
			k = (int(p.OffH) + i) % n // an orphan counts no visitor: spread by its row, as a day of them would be one chunk
		case int(v) >= len(remap):
			return fmt.Errorf("segments: a hit of visit row %d past the day's: %w", v, wire.ErrRecord)
		case remap[v] == 0:
			continue // a later row's: corrupt, found by visitsFromHits
		default:
			k, v = int(remap[v]>>32), uint32(remap[v])-1
		}
		w := to(k)
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

// Chunk returns chunk k of c, made of its parts: its rows ordered and its
// visits derived as whole orders and derives them. It releases chunk k's
// parts: a chunk is made once. The chunk shares the day's strings; it is
// read only, and never kept.
func (c *Chunked) Chunk(k int) (*Day, error) {
	w := &Day{Strs: c.d.Strs, counts: c.d.counts}
	w.grow(c.nv[k], c.nh[k])
	shares := c.shares[k]
	c.shares[k] = nil
	for i, b := range shares {
		p, err := DecodePart(b, len(w.Strs))
		if err != nil {
			return nil, fmt.Errorf("chunk %d part %d: %w", k, i, err)
		}
		if err := w.appendRowsOf(p); err != nil {
			return nil, fmt.Errorf("chunk %d part %d: %w", k, i, err)
		}
	}
	w.sortByVisit()
	if !w.visitsFromHits() {
		return nil, fmt.Errorf("segments: a visit without a pageview or event: %w", wire.ErrRecord)
	}
	w.Size = w.Estimate()
	return w, nil
}

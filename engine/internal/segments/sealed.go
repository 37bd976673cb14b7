package segments

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/webstats/webstats/engine/internal/wire"
)

// Estimate recomputes the memory estimate of d.
func (d *Day) Estimate() int {
	n := int(unsafe.Sizeof(*d)) + len(d.vStart)*(VisitBytes+4) + len(d.HMs)*HitBytes + 4*len(d.Props)
	if d.dm != nil {
		n += memoBytes(len(d.vStart), len(d.Strs))
	}
	for _, s := range d.Strs {
		n += len(s) + 16
	}
	return n
}

// Whole returns d made whole from its sealed parts (the encodings of
// appendPart, parts[i] being part i; more than d has are ignored): every row
// of the day in its columns, hits ordered by visit, sealed visits' columns
// derived from their hits. A day without parts, or whole already, is
// returned as it is. d is not modified, and must not be afterwards: the
// whole day keeps it as its tail and shares its strings. cache decodes the
// parts (nil: no cache).
func (d *Day) Whole(parts [][]byte, cache *PartCache) (*Day, error) {
	if d.Parts == 0 || d.Tail != nil {
		return d, nil
	}
	if len(parts) < int(d.Parts) {
		return nil, fmt.Errorf("segments: %d of %d sealed parts: %w", len(parts), d.Parts, wire.ErrRecord)
	}
	w := &Day{Strs: d.Strs, counts: d.counts, Parts: d.Parts, Tail: d}
	w.grow(int(d.OffV)+d.Visits(), int(d.OffH)+d.Hits())
	for i, b := range parts[:d.Parts] {
		p, err := cache.Decode(b, len(d.Strs))
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		if err := w.appendRowsOf(p); err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
	}
	if err := w.appendRowsOf(d); err != nil {
		return nil, err
	}
	w.sortByVisit()
	// (A sealed visit's columns and flags are as they were when it was
	// sealed: they are derived from its hits.)
	if !w.visitsFromHits() {
		return nil, fmt.Errorf("segments: a visit without a pageview or event: %w", wire.ErrRecord)
	}
	w.dm = newMemo(w.Visits())
	w.Size = w.Estimate() + d.RowBytes()
	return w, nil
}

// grow makes room for nv visit rows and nh hit rows in every column of
// w, so that the parts appended to it (appendRowsOf) are copied once: a
// day of 300,000 hits grown part by part allocated ten times its rows.
func (w *Day) grow(nv, nh int) {
	w.VPeriod = slices.Grow(w.VPeriod, nv)
	w.VVisitor = slices.Grow(w.VVisitor, nv)
	w.VFirst = slices.Grow(w.VFirst, nv)
	w.vStart = slices.Grow(w.vStart, nv)
	w.VEnd = slices.Grow(w.VEnd, nv)
	w.VLastPV = slices.Grow(w.VLastPV, nv)
	w.VPageviews = slices.Grow(w.VPageviews, nv)
	w.VFlags = slices.Grow(w.VFlags, nv)
	w.VEntry = slices.Grow(w.VEntry, nv)
	w.VExit = slices.Grow(w.VExit, nv)
	w.VEntryHost = slices.Grow(w.VEntryHost, nv)
	w.VExitHost = slices.Grow(w.VExitHost, nv)
	w.VCityID = slices.Grow(w.VCityID, nv)
	for a := range NumAttrs {
		w.VAttr[a] = slices.Grow(w.VAttr[a], nv)
	}
	w.HVisit = slices.Grow(w.HVisit, nh)
	w.HMs = slices.Grow(w.HMs, nh)
	w.HKind = slices.Grow(w.HKind, nh)
	w.HName = slices.Grow(w.HName, nh)
	w.HPage = slices.Grow(w.HPage, nh)
	w.HHost = slices.Grow(w.HHost, nh)
	w.HValue = slices.Grow(w.HValue, nh)
	w.HUnit = slices.Grow(w.HUnit, nh)
	w.HEngaged = slices.Grow(w.HEngaged, nh)
	w.HScroll = slices.Grow(w.HScroll, nh)
	w.HFlags = slices.Grow(w.HFlags, nh)
	w.hPropEnd = slices.Grow(w.hPropEnd, nh)
}

// appendRowsOf appends p's rows, which must be the next rows of w's day.
func (w *Day) appendRowsOf(p *Day) error {
	if p.OffV != uint32(w.Visits()) || p.OffH != uint32(w.Hits()) {
		return fmt.Errorf("segments: rows from %d/%d after %d/%d: %w", p.OffV, p.OffH, w.Visits(), w.Hits(), wire.ErrRecord)
	}
	w.VPeriod = append(w.VPeriod, p.VPeriod...)
	w.VVisitor = append(w.VVisitor, p.VVisitor...)
	w.VFirst = append(w.VFirst, p.VFirst...)
	w.vStart = append(w.vStart, p.vStart...)
	w.VEnd = append(w.VEnd, p.VEnd...)
	w.VLastPV = append(w.VLastPV, p.VLastPV...)
	w.VPageviews = append(w.VPageviews, p.VPageviews...)
	w.VFlags = append(w.VFlags, p.VFlags...)
	w.VEntry = append(w.VEntry, p.VEntry...)
	w.VExit = append(w.VExit, p.VExit...)
	w.VEntryHost = append(w.VEntryHost, p.VEntryHost...)
	w.VExitHost = append(w.VExitHost, p.VExitHost...)
	w.VCityID = append(w.VCityID, p.VCityID...)
	for a := range NumAttrs {
		w.VAttr[a] = append(w.VAttr[a], p.VAttr[a]...)
	}
	w.HVisit = append(w.HVisit, p.HVisit...)
	w.HMs = append(w.HMs, p.HMs...)
	w.HKind = append(w.HKind, p.HKind...)
	w.HName = append(w.HName, p.HName...)
	w.HPage = append(w.HPage, p.HPage...)
	w.HHost = append(w.HHost, p.HHost...)
	w.HValue = append(w.HValue, p.HValue...)
	w.HUnit = append(w.HUnit, p.HUnit...)
	w.HEngaged = append(w.HEngaged, p.HEngaged...)
	w.HScroll = append(w.HScroll, p.HScroll...)
	w.HFlags = append(w.HFlags, p.HFlags...)
	base := uint32(len(w.Props) / 2)
	for _, e := range p.hPropEnd {
		w.hPropEnd = append(w.hPropEnd, base+e)
	}
	w.Props = append(w.Props, p.Props...)
	return nil
}

// Sealed returns what d's value holds once its rows are sealed as part
// d.parts: its strings, no rows. It shares d's strings and must not be
// written.
func (d *Day) Sealed() *Day {
	return &Day{
		Strs: d.Strs, counts: d.counts, Parts: d.Parts + 1,
		OffV: d.OffV + uint32(d.Visits()), OffH: d.OffH + uint32(d.Hits()),
	}
}

// DropSealed returns d without the rows that part (an earlier form of d,
// sealed as part number part.parts) moved to the store: d may have gained
// rows since; a sealed visit's columns change no more (see whole).
func (d *Day) DropSealed(part *Day) *Day {
	nv, nh := part.Visits(), part.Hits()
	c := &Day{
		Strs: d.Strs, ids: d.ids, counts: d.counts, Parts: part.Parts + 1,
		OffV: d.OffV + uint32(nv), OffH: d.OffH + uint32(nh),
	}
	c.VPeriod, c.VVisitor = slices.Clone(d.VPeriod[nv:]), slices.Clone(d.VVisitor[nv:])
	c.VFirst, c.vStart, c.VEnd, c.VLastPV = slices.Clone(d.VFirst[nv:]), slices.Clone(d.vStart[nv:]), slices.Clone(d.VEnd[nv:]), slices.Clone(d.VLastPV[nv:])
	c.VPageviews, c.VFlags = slices.Clone(d.VPageviews[nv:]), slices.Clone(d.VFlags[nv:])
	c.VEntry, c.VExit = slices.Clone(d.VEntry[nv:]), slices.Clone(d.VExit[nv:])
	c.VEntryHost, c.VExitHost = slices.Clone(d.VEntryHost[nv:]), slices.Clone(d.VExitHost[nv:])
	c.VCityID = slices.Clone(d.VCityID[nv:])
	for a := range NumAttrs {
		c.VAttr[a] = slices.Clone(d.VAttr[a][nv:])
	}
	c.HVisit, c.HMs, c.HKind = slices.Clone(d.HVisit[nh:]), slices.Clone(d.HMs[nh:]), slices.Clone(d.HKind[nh:])
	c.HName, c.HPage, c.HHost = slices.Clone(d.HName[nh:]), slices.Clone(d.HPage[nh:]), slices.Clone(d.HHost[nh:])
	c.HValue, c.HUnit = slices.Clone(d.HValue[nh:]), slices.Clone(d.HUnit[nh:])
	c.HEngaged, c.HScroll, c.HFlags = slices.Clone(d.HEngaged[nh:]), slices.Clone(d.HScroll[nh:]), slices.Clone(d.HFlags[nh:])
	var base uint32
	if nh > 0 {
		base = d.hPropEnd[nh-1]
	}
	c.Props = slices.Clone(d.Props[2*base:])
	c.hPropEnd = make([]uint32, 0, len(d.hPropEnd)-nh)
	for _, e := range d.hPropEnd[nh:] {
		c.hPropEnd = append(c.hPropEnd, e-base)
	}
	c.Size = c.Estimate()
	return c
}

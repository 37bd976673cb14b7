package segments

import (
	"fmt"
	"slices"

	"github.com/webstats/webstats/engine/internal/wire"
)

// DecodeDay decodes a day's value (appendBinary). It never panics, and
// bounds what it allocates by the size of the data.
func DecodeDay(b []byte) (*Day, error) {
	c, version, err := segColumns(b)
	if err != nil {
		return nil, err
	}
	bad := func(what string) (*Day, error) {
		return nil, fmt.Errorf("segments: %s: %w", what, wire.ErrRecord)
	}
	dd := wire.Decoder{B: c}
	d := &Day{}
	ns := dd.Count()
	if ns == 0 {
		return bad("strings")
	}
	d.Strs = make([]string, ns)
	for i := 1; i < ns; i++ {
		d.Strs[i] = dd.String()
	}
	for i := range d.counts {
		n := dd.Uvarint()
		if n > uint64(ns) {
			dd.Bad = true
		}
		d.counts[i] = int32(n)
	}
	if version >= 2 {
		n := dd.Uvarint()
		if n > maxParts {
			dd.Bad = true
		}
		d.Parts = uint32(n)
	}
	if dd.Bad {
		return bad("header")
	}
	if err := d.decodeRows(&dd, ns, version); err != nil {
		return nil, err
	}
	if d.Parts == 0 && (d.OffV != 0 || d.OffH != 0) {
		return bad("rows before the first without parts")
	}
	if d.Parts == 0 {
		d.dm = newMemo(d.Visits()) // a day with parts is read made whole
	}
	d.Size = d.Estimate()
	return d, nil
}

// maxParts bounds the sealed parts of one day.
const maxParts = 1 << 20

// strCols returns the columns of d that hold string ids.
func (d *Day) strCols() [][]uint32 {
	cols := [][]uint32{d.VEntry, d.VExit, d.VEntryHost, d.VExitHost, d.HName, d.HPage, d.HHost, d.HValue, d.HUnit, d.Props}
	return append(cols, d.VAttr[:]...)
}

// DecodePart decodes a sealed part (AppendPart) of a day with ns strings.
func DecodePart(b []byte, ns int) (*Day, error) {
	c, version, err := segColumns(b)
	if err != nil {
		return nil, err
	}
	if version < 2 {
		return nil, fmt.Errorf("segments: part of version %d: %w", version, wire.ErrRecord)
	}
	dd := wire.Decoder{B: c}
	d := &Day{Strs: make([]string, 0)}
	if err := d.decodeRows(&dd, ns, version); err != nil {
		return nil, err
	}
	return d, nil
}

// decodeRows decodes appendRows' encoding into d, whose strings number ns.
func (d *Day) decodeRows(dd *wire.Decoder, ns int, version byte) error {
	r := &rowReader{dd: dd}
	nv, grouped := d.decodeVisits(r, version)
	nh := dd.Count()
	d.decodeHitVisits(r, nv, nh, grouped)
	for i := range nh {
		r.ms(&d.HMs[i])
	}
	if dd.Bad {
		return corrupt("rows")
	}
	pe := d.decodeHits(r, nh, version)
	if dd.Bad {
		return corrupt("columns")
	}
	d.Props = r.u32s(int(2 * pe))
	for _, p := range r.pending {
		*p += int64(dd.Uvarint())
	}
	if dd.Bad || len(dd.B) != 0 {
		return corrupt("columns")
	}
	// Every reference must be in range, so that queries index without checks.
	for _, col := range d.strCols() {
		for _, v := range col {
			if int(v) >= ns {
				return corrupt("string id")
			}
		}
	}
	end := uint64(d.OffV) + uint64(nv)
	for i, v := range d.HVisit {
		if v != NoVisit && uint64(v) >= end || d.HKind[i] > KindEngagement || i > 0 && d.hPropEnd[i] < d.hPropEnd[i-1] {
			return corrupt("hit row")
		}
	}
	if err := d.absoluteTimes(nv, nh, grouped); err != nil {
		return err
	}
	if d.OffV != 0 || d.OffH != 0 {
		return nil // rows of a day with sealed parts: never grouped
	}
	d.index()
	if grouped && !d.Grouped {
		return corrupt("hit order")
	}
	if !grouped && d.Grouped {
		d.checkGrouped()
	}
	return nil
}

// corrupt returns the error of a malformed encoding: what was wrong.
func corrupt(what string) error {
	return fmt.Errorf("segments: %s: %w", what, wire.ErrRecord)
}

// rowReader reads appendRows' columns.
type rowReader struct {
	dd *wire.Decoder
	// Times are read as whole-second deltas; their milliseconds come at
	// the end, added through these pointers.
	pending []*int64
}

// u32s reads a column of n ids.
func (r *rowReader) u32s(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		v := r.dd.Uvarint()
		if v > 1<<32-1 {
			r.dd.Bad = true
		}
		out[i] = uint32(v)
	}
	return out
}

// ms reads a time's whole seconds into dst; its milliseconds come later.
func (r *rowReader) ms(dst *int64) {
	*dst = r.dd.Varint() * 1000
	r.pending = append(r.pending, dst)
}

// decodeVisits reads the visit columns: nv rows, grouped reports that the
// hits follow by visit (the visits' times and pages are derived from them).
func (d *Day) decodeVisits(r *rowReader, version byte) (nv int, grouped bool) {
	dd := r.dd
	if version >= 2 {
		ov, oh := dd.Uvarint(), dd.Uvarint()
		if ov > 1<<32-1 || oh > 1<<32-1 {
			dd.Bad = true
		}
		d.OffV, d.OffH = uint32(ov), uint32(oh)
	}
	nv = dd.Count()
	if uint64(d.OffV)+uint64(nv) >= uint64(NoVisit) {
		dd.Bad = true
	}
	d.VPeriod = make([]int32, nv)
	var prev int64
	for i := range d.VPeriod {
		prev += dd.Varint()
		d.VPeriod[i] = int32(prev)
	}
	d.VVisitor = make([]uint32, nv)
	prev = 0
	for i := range d.VVisitor {
		prev += dd.Varint()
		if prev < 0 || prev > 1<<32-1 {
			dd.Bad = true
		}
		d.VVisitor[i] = uint32(prev)
	}
	grouped = dd.Byte() == 1
	if grouped && (d.OffV != 0 || d.OffH != 0) {
		dd.Bad = true
	}
	d.VFirst, d.vStart, d.VEnd, d.VLastPV = make([]int64, nv), make([]int64, nv), make([]int64, nv), make([]int64, nv)
	if !grouped {
		for i := range nv {
			r.ms(&d.vStart[i])
			r.ms(&d.VEnd[i])
			r.ms(&d.VLastPV[i])
		}
		d.VPageviews, d.VEntry, d.VExit = r.u32s(nv), r.u32s(nv), r.u32s(nv)
		d.VEntryHost, d.VExitHost = r.u32s(nv), r.u32s(nv)
	}
	d.VCityID = r.u32s(nv)
	d.VFlags = make([]uint8, nv)
	for i := range d.VFlags {
		d.VFlags[i] = dd.Byte()
	}
	for a := range NumAttrs {
		d.VAttr[a] = r.u32s(nv)
	}
	return nv, grouped
}

// decodeHitVisits reads the visit rows of nh hits: grouped, the number of
// hits of each of the nv visits (the orphans after them); else each hit's.
func (d *Day) decodeHitVisits(r *rowReader, nv, nh int, grouped bool) {
	dd := r.dd
	d.HVisit, d.HMs = make([]uint32, nh), make([]int64, nh)
	if !grouped {
		var prev int64
		for i := range nh {
			prev += dd.Varint()
			d.HVisit[i] = uint32(prev - 1)
		}
		return
	}
	k := 0
	for v := range nv {
		n := dd.Uvarint()
		if n == 0 || n > uint64(nh-k) {
			dd.Bad = true // a visit has at least its first hit
			break
		}
		for range n {
			d.HVisit[k] = uint32(v)
			k++
		}
	}
	for ; k < nh; k++ {
		d.HVisit[k] = NoVisit
	}
}

// decodeHits reads the other hit columns of nh hits, and returns the
// number of their props.
func (d *Day) decodeHits(r *rowReader, nh int, version byte) (props uint64) {
	dd := r.dd
	d.HKind = make([]uint8, nh)
	for i := range d.HKind {
		d.HKind[i] = dd.Byte()
	}
	d.HName, d.HPage, d.HHost = r.u32s(nh), r.u32s(nh), r.u32s(nh)
	d.HValue, d.HUnit, d.HEngaged = r.u32s(nh), r.u32s(nh), r.u32s(nh)
	d.HScroll = make([]int8, nh)
	for i := range d.HScroll {
		d.HScroll[i] = int8(dd.Byte())
	}
	d.HFlags = make([]uint8, nh)
	if version >= 2 {
		for i := range d.HFlags {
			d.HFlags[i] = dd.Byte()
		}
	}
	d.hPropEnd = make([]uint32, nh)
	var pe uint64
	for i := range nh {
		pe += dd.Uvarint()
		if pe > uint64(len(dd.B)) {
			dd.Bad = true
			break
		}
		d.hPropEnd[i] = uint32(pe)
	}
	return pe
}

// absoluteTimes turns the times' deltas into times: grouped, by visit, and
// derives the visits' times and pages from their hits.
func (d *Day) absoluteTimes(nv, nh int, grouped bool) error {
	var prev int64
	if grouped {
		for i := range nh {
			if i > 0 && d.HVisit[i-1] == d.HVisit[i] {
				d.HMs[i] += d.HMs[i-1]
			} else {
				d.HMs[i] += prev
				prev = d.HMs[i]
			}
		}
		if !d.visitsFromHits() {
			return corrupt("a visit without a pageview or event")
		}
		return nil
	}
	for i := range nv {
		d.vStart[i] += prev
		prev = d.vStart[i]
		d.VEnd[i] += prev
		d.VLastPV[i] += prev
	}
	prev = 0
	for i := range nh {
		d.HMs[i] += prev
		prev = d.HMs[i]
	}
	d.firstFromHits()
	return nil
}

// checkGrouped keeps d, stored in hit order, grouped (index found that
// order by visit) only if the visit columns agree with the hits (a grouped
// encoding derives them).
func (d *Day) checkGrouped() {
	c := *d
	c.VFirst, c.vStart, c.VEnd, c.VLastPV = slices.Clone(d.VFirst), slices.Clone(d.vStart), slices.Clone(d.VEnd), slices.Clone(d.VLastPV)
	c.VFlags = slices.Clone(d.VFlags)
	if !c.visitsFromHits() || !slices.Equal(c.vStart, d.vStart) || !slices.Equal(c.VEnd, d.VEnd) ||
		!slices.Equal(c.VFirst, d.VFirst) || !slices.Equal(c.VFlags, d.VFlags) ||
		!slices.Equal(c.VLastPV, d.VLastPV) || !slices.Equal(c.VPageviews, d.VPageviews) ||
		!slices.Equal(c.VEntry, d.VEntry) || !slices.Equal(c.VExit, d.VExit) ||
		!slices.Equal(c.VEntryHost, d.VEntryHost) || !slices.Equal(c.VExitHost, d.VExitHost) {
		d.Grouped, d.HitEnd = false, nil
	}
}

// visitsFromHits sets what a grouped day's hits determine of its visits
// (hits are ordered by time, ties in the order they were applied, as apply
// decides entry and exit): first hit and end from the first and last
// pageview or custom event, start and entry from the first pageview, last
// pageview and exit from the last (a visit without pageviews, started by a
// custom event, keeps its first hit's time and blank pages), pageviews, and
// the interactivity flags (SPEC §10.1). False when a visit has no pageview
// and no custom event.
func (d *Day) visitsFromHits() bool {
	nv := d.Visits()
	d.VPageviews = make([]uint32, nv)
	d.VEntry, d.VExit = make([]uint32, nv), make([]uint32, nv)
	d.VEntryHost, d.VExitHost = make([]uint32, nv), make([]uint32, nv)
	seen := make([]bool, nv)
	for i, v := range d.HVisit {
		if v == NoVisit {
			break
		}
		kind := d.HKind[i]
		if kind == KindEngagement {
			continue
		}
		t := d.HMs[i]
		inter := kind == KindPageview || d.HFlags[i]&HitInteractive != 0
		if !seen[v] {
			seen[v] = true
			d.VFirst[v], d.vStart[v], d.VEnd[v], d.VLastPV[v] = t, t, t, t
			d.VFlags[v] &^= VisitInteractive | VisitFirstInteractive
			if inter {
				d.VFlags[v] |= VisitFirstInteractive
			}
		} else if inter {
			d.VFlags[v] |= VisitInteractive
		}
		d.VEnd[v] = max(d.VEnd[v], t)
		if kind == KindPageview {
			if d.VPageviews[v] == 0 {
				d.vStart[v], d.VEntry[v], d.VEntryHost[v] = t, d.HPage[i], d.HHost[i]
			}
			d.VPageviews[v]++
			d.VLastPV[v], d.VExit[v], d.VExitHost[v] = t, d.HPage[i], d.HHost[i]
		}
	}
	for v := range seen {
		if !seen[v] {
			return false
		}
	}
	return true
}

// firstFromHits sets, for the visit rows of an ungrouped day's columns
// (every hit of such a row is among its hits, after it), the first hit's
// time and interactivity, which the encoding leaves out.
func (d *Day) firstFromHits() {
	seen := make([]bool, len(d.VFirst))
	copy(d.VFirst, d.vStart)
	for i, v := range d.HVisit {
		if v == NoVisit || v < d.OffV || d.HKind[i] == KindEngagement {
			continue
		}
		r := v - d.OffV
		if int(r) >= len(seen) {
			continue
		}
		if t := d.HMs[i]; !seen[r] || t < d.VFirst[r] {
			seen[r] = true
			d.VFirst[r] = t
			d.VFlags[r] &^= VisitFirstInteractive
			if d.HKind[i] == KindPageview || d.HFlags[i]&HitInteractive != 0 {
				d.VFlags[r] |= VisitFirstInteractive
			}
		}
	}
}

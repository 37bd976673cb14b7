package engine

import (
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/visitors"
)

// The segments store's part of applying a record (SPEC §10.1): visit rows
// and hit rows. Like the day buckets it runs under the shard lock, after
// the record is durable, and cannot fail: ingest pinned every day it
// writes.

// ids interns strings in sd: at most MaxValues new values a kind and
// day, more count as "(other)" (SPEC §13), counted in Metrics.Overflow.
func (e *Engine) ids(sd *segments.Day) segments.IDs {
	return func(cat segments.Cat, s string) uint32 {
		id, other := sd.ID(s, cat, e.opts.MaxValues)
		if other {
			e.counters.overflow.Add(1)
		}
		return id
	}
}

// segHitLocked records pageview or custom event r of visitor id in the
// segments store, by Plausible's visit rule (SPEC §10.1): a hit more than
// 30 minutes from the visitor's previous one, or a pageview whose referrer
// §2.2 says starts a visit (external, host another than the one that
// started the current visit), starts a visit; every hit extends its visit.
// ent is r's day, writable; external and host describe r's referrer (host:
// its HostKey, 0 when not external). v is the visitor's state: v.Day and
// v.Row are left at the row of the visit whose time v.SegLast keeps.
func (e *Engine) segHitLocked(st *siteState, r *record.Hit, ent *dayEntry, id uint32, v *visitors.Visit, external bool, host uint64) {
	pageview := !r.Event
	newVisit := v.SegLast == 0 || r.Ms-v.SegLast > visitGap || r.Ms < v.SegLast-visitGap ||
		(pageview && external && host != v.SegHost)
	vent, row := ent, v.Row
	var vd *segments.Day
	if !newVisit && row != segments.NoVisit {
		if vent = e.visitDayLocked(st, r, id, v); vent != nil {
			vd = vent.seg
		}
	}
	fresh := vd == nil
	if fresh {
		// A new visit, or one whose row is unknown (state from before the
		// segments store, or a day retention dropped): a row here. A visit
		// an event starts has blank entry and exit pages.
		vent, vd = ent, ent.seg
		ids := e.ids(vd)
		attr := segments.VisitAttrs(r, external, ids)
		var page, phost uint32
		if pageview {
			page, phost = ids(segments.CatPath, r.Seg.Path), ids(segments.CatHost, r.Seg.Host)
		}
		row = vd.AddVisit(int32(r.Period), id, segments.Time(r.Ms), &attr, r.Seg.CityID, page, phost)
		if !newVisit || v.SegLast == 0 || r.Ms >= v.SegLast {
			v.Day, v.Row = r.Date, row
			if newVisit {
				v.SegHost = host
			}
		}
		// Else an earlier visit imported after a later one: the visit
		// rule keeps the later one's time (v.SegLast), so the next hit
		// continues the later visit, and v keeps the later one's row.
	}
	v.SegLast = max(v.SegLast, r.Ms)
	// The hit's own local day, as an offset from the day its visit's rows
	// live in (weekly and monthly salts: a visit may pass midnight).
	var delta buckets.Date
	if !fresh {
		delta = r.Date - v.Day
	}
	h := segments.HitOf(r, row, delta, e.ids(vd))
	if row >= vd.OffV {
		// (A sealed visit's columns are derived from its hits.)
		vd.ExtendVisit(row-vd.OffV, &h, fresh)
	}
	vd.AddHit(&h)
	e.kickLocked(vent)
}

// visitDayLocked returns the day holding visit v of visitor id (r's),
// writable, or nil when that day is gone (retention).
func (e *Engine) visitDayLocked(st *siteState, r *record.Hit, id uint32, v *visitors.Visit) *dayEntry {
	vent, ok := st.days[v.Day]
	if !ok || segMissing(vent) {
		// Not resident (or without its segments): ingest pins the day of
		// every visit a record continues, with its segments, so only
		// retention can have dropped it.
		return nil
	}
	if int(v.Row) >= int(vent.seg.OffV)+vent.seg.Visits() {
		return nil
	}
	// A row another visitor's (or period's) is not this visit's: state
	// that outlived its day (retention keeps the visitor state of a salt
	// period that ends after the cut, and forgets its rows there:
	// forgetRowsBefore) would otherwise merge two visitors' visits in the
	// day made again. A row < offV is sealed, of a day that was today
	// then: a day made again is past, frozen before it could be sealed.
	if s := vent.seg; v.Row >= s.OffV {
		if i := v.Row - s.OffV; s.VVisitor[i] != id || s.VPeriod[i] != int32(r.Period) {
			return nil
		}
	}
	vent = e.writableDayLocked(st, v.Day, r.Period, vent)
	vent.dirty = true
	return vent
}

// segEventLocked records engagement report r in its visitor's current
// visit of the segments if it has one (a report never starts or extends a
// visit; without one it is dropped), or custom event r as an orphan of its
// day when its visitor has no id (the ids of its salt period exhausted, or
// no visitor state). ent is r's day, writable for an event (nil for an
// engagement report).
func (e *Engine) segEventLocked(st *siteState, r *record.Hit, ent *dayEntry, p *period) {
	var vd *segments.Day
	vent := ent
	row := segments.NoVisit
	var delta buckets.Date
	if p != nil {
		if id, v, ok := p.Find(r.Hash); ok {
			if v.Row != segments.NoVisit && v.SegLast != 0 && r.Ms <= v.SegLast+visitGap && r.Ms >= v.SegLast-visitGap {
				if x := e.visitDayLocked(st, r, id, v); x != nil {
					vent, vd, row, delta = x, x.seg, v.Row, r.Date-v.Day
				}
			}
		}
	}
	if r.Seg.Engagement && vd == nil {
		return
	}
	if !r.Seg.Engagement {
		vent, vd, row, delta = ent, ent.seg, segments.NoVisit, 0
	}
	h := segments.HitOf(r, row, delta, e.ids(vd))
	vd.AddHit(&h)
	e.kickLocked(vent)
}

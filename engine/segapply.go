package engine

import (
	"strings"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/source"
)

// The segments store's part of applying a record (SPEC §10.1): visit rows
// and hit rows. Like the day buckets it runs under the shard lock, after
// the record is durable, and cannot fail: ingest pinned every day it
// writes.

// segTime is a hit's time as the segments keep it: Unix milliseconds
// truncated to the second, as Plausible keeps them (a range is tested and a
// duration counted in whole seconds), so that the milliseconds column of
// the encoding is all zeros.
func segTime(ms int64) int64 { return floorDiv(ms, 1000) * 1000 }

// sid interns s in sd as a value of kind cat: at most MaxValues new
// values a kind and day, more count as "(other)" (SPEC §13), counted in
// Metrics.Overflow.
func (e *Engine) sid(sd *segDay, cat segCat, s string) uint32 {
	id, other := sd.id(s, cat, e.opts.MaxValues)
	if other {
		e.counters.overflow.Add(1)
	}
	return id
}

// segHitLocked records pageview or custom event r of visitor id in the
// segments store, by Plausible's visit rule (SPEC §10.1): a hit more than
// 30 minutes from the visitor's previous one, or a pageview whose referrer
// §2.2 says starts a visit (external, host another than the one that
// started the current visit), starts a visit; every hit extends its visit.
// ent is r's day, writable; external and host describe r's referrer (host:
// its hostKey, 0 when not external). v is the visitor's state: v.day and
// v.row are left at the row of the visit whose time v.sLast keeps.
func (e *Engine) segHitLocked(st *siteState, r *record, ent *dayEntry, id uint32, v *visit, external bool, host uint64) {
	pageview := !r.event
	newVisit := v.sLast == 0 || r.ms-v.sLast > visitGap || r.ms < v.sLast-visitGap ||
		(pageview && external && host != v.sHost)
	vent, row := ent, v.row
	var vd *segDay
	if !newVisit && row != noVisit {
		if vent = e.visitDayLocked(st, r, id, v); vent != nil {
			vd = vent.seg
		}
	}
	at := segTime(r.ms)
	fresh := vd == nil
	if fresh {
		// A new visit, or one whose row is unknown (state from before the
		// segments store, or a day retention dropped): a row here. A visit
		// an event starts has blank entry and exit pages.
		vent, vd = ent, ent.seg
		var attr [numVA]uint32
		e.visitAttrs(vd, r, external, &attr)
		var page, phost uint32
		if pageview {
			page, phost = e.sid(vd, catPath, r.seg.path), e.sid(vd, catHost, r.seg.host)
		}
		row = vd.addVisit(int32(r.period), id, at, &attr, r.seg.cityID, page, phost)
		if !newVisit || v.sLast == 0 || r.ms >= v.sLast {
			v.day, v.row = r.date, row
			if newVisit {
				v.sHost = host
			}
		}
		// Else an earlier visit imported after a later one: the visit
		// rule keeps the later one's time (v.sLast), so the next hit
		// continues the later visit, and v keeps the later one's row.
	}
	v.sLast = max(v.sLast, r.ms)
	// The hit's own local day, as an offset from the day its visit's rows
	// live in (weekly and monthly salts: a visit may pass midnight).
	var delta buckets.Date
	if !fresh {
		delta = r.date - v.day
	}
	h := segHit{visit: row, ms: at, scroll: -1, flags: dayFlags(delta)}
	if pageview {
		h.kind = hkPageview
	} else {
		e.segEventFields(vd, r, &h)
	}
	h.page, h.host = e.sid(vd, catPath, r.seg.path), e.sid(vd, catHost, r.seg.host)
	h.props = e.propIDs(vd, r.seg.props)
	if row >= vd.offV {
		// (A sealed visit's columns are derived from its hits.)
		vd.extendVisit(row-vd.offV, &h, fresh)
	}
	vd.addHit(&h)
	e.kickLocked(vent)
}

// extendVisit updates the columns of visit row i (an open row) for its new
// hit h, a pageview or custom event; fresh: h started the row.
func (d *segDay) extendVisit(i uint32, h *segHit, fresh bool) {
	at := h.ms
	inter := h.kind == hkPageview || h.flags&hfInteractive != 0
	switch {
	case fresh:
		if inter {
			d.vFlags[i] |= vfFirstInteractive
		}
	case at >= d.vFirst[i]:
		if inter {
			d.vFlags[i] |= vfInteractive
		}
	default:
		// An earlier hit imported later: it is the first, and the one
		// that was is after it.
		if d.vFlags[i]&vfFirstInteractive != 0 {
			d.vFlags[i] |= vfInteractive
		}
		d.vFlags[i] &^= vfFirstInteractive
		if inter {
			d.vFlags[i] |= vfFirstInteractive
		}
		d.vFirst[i] = at
	}
	d.vEnd[i] = max(d.vEnd[i], at)
	if h.kind != hkPageview {
		if d.vPageviews[i] == 0 && at < d.vStart[i] {
			// No pageview yet: start and last pageview stay the first
			// hit's time, as the hits of a closed day say (visitsFromHits).
			d.vStart[i], d.vLastPV[i] = at, at
		}
		return
	}
	if d.vPageviews[i] == 0 || at < d.vStart[i] {
		// The first pageview, or an earlier one imported later: the entry.
		d.vStart[i], d.vEntry[i], d.vEntryHost[i] = at, h.page, h.host
	}
	if d.vPageviews[i] == 0 || at >= d.vLastPV[i] {
		d.vLastPV[i], d.vExit[i], d.vExitHost[i] = at, h.page, h.host
	}
	d.vPageviews[i]++
}

// visitDayLocked returns the day holding visit v of visitor id (r's),
// writable, or nil when that day is gone (retention).
func (e *Engine) visitDayLocked(st *siteState, r *record, id uint32, v *visit) *dayEntry {
	vent, ok := st.days[v.day]
	if !ok || segMissing(vent) {
		// Not resident (or without its segments): ingest pins the day of
		// every visit a record continues, with its segments, so only
		// retention can have dropped it.
		return nil
	}
	if int(v.row) >= int(vent.seg.offV)+vent.seg.visits() {
		return nil
	}
	// A row another visitor's (or period's) is not this visit's: state
	// that outlived its day (retention keeps the visitor state of a salt
	// period that ends after the cut, and forgets its rows there:
	// forgetRowsBefore) would otherwise merge two visitors' visits in the
	// day made again. A row < offV is sealed, of a day that was today
	// then: a day made again is past, frozen before it could be sealed.
	if s := vent.seg; v.row >= s.offV {
		if i := v.row - s.offV; s.vVisitor[i] != id || s.vPeriod[i] != int32(r.period) {
			return nil
		}
	}
	vent = e.writableDayLocked(st, v.day, r.period, vent)
	vent.dirty = true
	return vent
}

// segEventLocked records engagement report r in its visitor's current
// visit of the segments if it has one (a report never starts or extends a
// visit; without one it is dropped), or custom event r as an orphan of its
// day when its visitor has no id (the ids of its salt period exhausted, or
// no visitor state). ent is r's day, writable for an event (nil for an
// engagement report).
func (e *Engine) segEventLocked(st *siteState, r *record, ent *dayEntry, p *period) {
	var vd *segDay
	vent := ent
	row := noVisit
	var delta buckets.Date
	if p != nil {
		if id, ok := p.index[r.hash]; ok {
			v := &p.visits[id-p.first]
			if v.row != noVisit && v.sLast != 0 && r.ms <= v.sLast+visitGap && r.ms >= v.sLast-visitGap {
				if x := e.visitDayLocked(st, r, id, v); x != nil {
					vent, vd, row, delta = x, x.seg, v.row, r.date-v.day
				}
			}
		}
	}
	h := segHit{visit: row, ms: segTime(r.ms), scroll: -1, flags: dayFlags(delta)}
	if r.seg.engagement {
		if vd == nil {
			return
		}
		h.kind, h.engaged, h.scroll = hkEngagement, uint32(r.seg.engagedMs), r.seg.scroll
	} else {
		vent, vd, h.visit, h.flags = ent, ent.seg, noVisit, dayFlags(0)
		e.segEventFields(vd, r, &h)
	}
	h.page, h.host = e.sid(vd, catPath, r.seg.path), e.sid(vd, catHost, r.seg.host)
	h.props = e.propIDs(vd, r.seg.props)
	vd.addHit(&h)
	e.kickLocked(vent)
}

// propIDs interns a hit's props as key, value id pairs.
func (e *Engine) propIDs(sd *segDay, props []Prop) []uint32 {
	if len(props) == 0 {
		return nil
	}
	out := make([]uint32, 0, 2*len(props))
	for _, p := range props {
		out = append(out, e.sid(sd, catPropKey, p.Key), e.sid(sd, catPropVal, p.Value))
	}
	return out
}

// visitAttrs fills the visit attributes of a visit started by pageview r.
func (e *Engine) visitAttrs(sd *segDay, r *record, external bool, attr *[numVA]uint32) {
	refHost, refURL := "", ""
	if external {
		refHost, refURL = r.refHost, r.seg.refURL
	}
	l := source.ParseLanding(r.seg.landing, refHost)
	src, channel, medium := source.Classify(l)
	country, _, _ := strings.Cut(r.country, ":")
	vals := [numVA]string{
		vaSource:      src,
		vaReferrer:    refURL,
		vaChannel:     channel,
		vaUTMMedium:   medium,
		vaUTMSource:   l.UTMSource,
		vaUTMCampaign: l.UTMCampaign,
		vaUTMContent:  l.UTMContent,
		vaUTMTerm:     l.UTMTerm,
		vaDevice:      r.device,
		vaBrowser:     r.browser,
		vaBrowserVer:  r.seg.browserVer,
		vaOS:          r.os,
		vaOSVer:       r.seg.osVer,
		vaCountry:     country,
		vaRegion:      r.seg.region,
		vaCity:        r.seg.cityName,
		vaRegionName:  r.seg.regionName,
		vaLanguage:    r.language,
		vaScreen:      r.resolution,
	}
	for i, s := range vals {
		cat := catVisit
		switch i {
		case vaSource, vaReferrer:
			cat = catReferrer
		case vaUTMMedium, vaUTMSource, vaUTMCampaign, vaUTMContent, vaUTMTerm:
			cat = catUTM
		}
		attr[i] = e.sid(sd, cat, s)
	}
}

// segEvent returns custom event r's name, value and unit for the segments:
// the name and unit as sent (records of version 3 on), else those of
// eventRow, where older records have them with ':' made a space.
func (r *record) segEvent() (name, value, unit string) {
	name, rest, _ := strings.Cut(r.eventRow, ":")
	value, unit, _ = strings.Cut(rest, ":")
	if r.seg.name != "" {
		name, unit = r.seg.name, r.seg.unit
	}
	return name, value, unit
}

// segEventFields makes h, a hit row of day vd, custom event r: its kind,
// name, value and unit, and whether it is interactive.
func (e *Engine) segEventFields(vd *segDay, r *record, h *segHit) {
	h.kind = hkEvent
	name, value, unit := r.segEvent()
	h.name, h.value, h.unit = e.sid(vd, catEvent, name), e.sid(vd, catEvent, value), e.sid(vd, catEvent, unit)
	if !r.seg.nonInteractive {
		h.flags |= hfInteractive
	}
}

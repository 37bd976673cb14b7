package engine

import (
	"strings"

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

// segPageviewLocked records pageview r of visitor id, whose visit v was
// just updated by the visit rule: newVisit when r started it. ent is r's
// day, writable. external reports a referrer from another website. v.day
// and v.row are left at the row of the visit whose time v.last keeps (the
// caller moves v.last after this call).
func (e *Engine) segPageviewLocked(st *siteState, r *record, ent *dayEntry, p *period, id uint32, v *visit, newVisit, external bool) {
	sd := ent.seg
	var vd *segDay
	vent := ent
	row := v.row
	at := segTime(r.ms)
	if !newVisit && row != noVisit {
		if vent = e.visitDayLocked(st, r, v); vent != nil {
			vd = vent.seg
		}
	}
	var page, host uint32
	if vd == nil {
		vent = ent
		// A new visit, or one whose row is unknown (state from before the
		// segments store, or a day retention dropped): a row here.
		vd = sd
		var attr [numVA]uint32
		e.visitAttrs(sd, r, external, &attr)
		page, host = e.sid(sd, catPath, r.seg.path), e.sid(sd, catHost, r.seg.host)
		row = sd.addVisit(int32(r.period), id, at, &attr, r.seg.cityID, page, host)
		if !newVisit || v.last == 0 || r.ms >= v.last {
			v.day, v.row = r.date, row
		}
		// Else an earlier visit imported after a later one: the visit
		// rule keeps the later one's time (v.last), so the next pageview
		// continues the later visit, and v keeps the later one's row.
	} else {
		page, host = e.sid(vd, catPath, r.seg.path), e.sid(vd, catHost, r.seg.host)
	}
	if row >= vd.offV {
		// (A sealed visit's columns are derived from its hits.)
		i := row - vd.offV
		vd.vPageviews[i]++
		if at < vd.vStart[i] {
			// An earlier pageview imported later: it is the entry page.
			vd.vStart[i], vd.vEntry[i], vd.vEntryHost[i] = at, page, host
		}
		if at >= vd.vLastPV[i] {
			vd.vLastPV[i], vd.vExit[i], vd.vExitHost[i] = at, page, host
		}
		vd.vEnd[i] = max(vd.vEnd[i], at)
	}
	vd.addHit(&segHit{visit: row, ms: at, kind: hkPageview, page: page, host: host, scroll: -1, props: e.propIDs(vd, r.seg.props)})
	e.kickLocked(vent)
}

// visitDayLocked returns the day holding visit v, writable, or nil when
// that day is gone (retention).
func (e *Engine) visitDayLocked(st *siteState, r *record, v *visit) *dayEntry {
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
	vent = e.writableDayLocked(st, v.day, r.period, vent)
	vent.dirty = true
	return vent
}

// segEventLocked records custom event or engagement report r: in its
// visitor's current visit if it has one (events never start or extend a
// visit), else, for an event, as an orphan of r's day; an engagement
// report without a visit is dropped. ent is r's day, writable for an event
// (nil for an engagement report).
func (e *Engine) segEventLocked(st *siteState, r *record, ent *dayEntry, p *period) {
	var vd *segDay
	vent := ent
	row := noVisit
	if p != nil {
		if id, ok := p.index[r.hash]; ok {
			v := &p.visits[id-p.first]
			if v.row != noVisit && v.last != 0 && r.ms <= v.last+visitGap && r.ms >= v.last-visitGap {
				if x := e.visitDayLocked(st, r, v); x != nil {
					vent, vd, row = x, x.seg, v.row
				}
			}
		}
	}
	h := segHit{visit: row, ms: segTime(r.ms), scroll: -1}
	if r.seg.engagement {
		if vd == nil {
			return
		}
		h.kind, h.engaged, h.scroll = hkEngagement, uint32(r.seg.engagedMs), r.seg.scroll
	} else {
		if vd == nil {
			vd = ent.seg
		}
		h.kind = hkEvent
		name, rest, _ := strings.Cut(r.eventRow, ":")
		value, unit, _ := strings.Cut(rest, ":")
		if r.seg.name != "" {
			// The name and unit as sent (records of version 3 on).
			name, unit = r.seg.name, r.seg.unit
		}
		h.name, h.value, h.unit = e.sid(vd, catEvent, name), e.sid(vd, catEvent, value), e.sid(vd, catEvent, unit)
		if !r.seg.nonInteractive {
			h.flags = hfInteractive
		}
		if row != noVisit && row >= vd.offV {
			// (A sealed visit's columns are derived from its hits.)
			i := row - vd.offV
			vd.vEnd[i] = max(vd.vEnd[i], h.ms)
			if !r.seg.nonInteractive {
				vd.vFlags[i] |= vfInteractive
			}
		}
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

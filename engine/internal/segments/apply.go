package segments

import (
	"strings"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/source"
)

// What a record (record.Hit, enriched) writes in a day's rows (SPEC
// §10.1): the attributes of the visit it starts and its own hit row, with
// its strings turned into the day's dictionary ids by an IDs function.
// Which visit it joins is the engine's (the visitor state and the day
// that holds the visit's rows).

// IDs returns the dictionary id of string s, a value of kind cat, in the
// day a record is written to (Day.ID, with the engine's bound on new
// values).
type IDs func(cat Cat, s string) uint32

// Time is a hit's time as the segments keep it: Unix milliseconds
// truncated to the second, as Plausible keeps them (a range is tested and a
// duration counted in whole seconds), so that the milliseconds column of
// the encoding is all zeros.
func Time(ms int64) int64 { return FloorDiv(ms, 1000) * 1000 }

// VisitAttrs returns the visit attributes of a visit started by r; external
// says r's referrer is another site's (else the visit has none).
func VisitAttrs(r *record.Hit, external bool, id IDs) (attr [NumAttrs]uint32) {
	refHost, refURL := "", ""
	if external {
		refHost, refURL = r.RefHost, r.Seg.RefURL
	}
	l := source.ParseLanding(r.Seg.Landing, refHost)
	src, channel, medium := source.Classify(l)
	country, _, _ := strings.Cut(r.Country, ":")
	vals := [NumAttrs]string{
		AttrSource:      src,
		AttrReferrer:    refURL,
		AttrChannel:     channel,
		AttrUTMMedium:   medium,
		AttrUTMSource:   l.UTMSource,
		AttrUTMCampaign: l.UTMCampaign,
		AttrUTMContent:  l.UTMContent,
		AttrUTMTerm:     l.UTMTerm,
		AttrDevice:      r.Device,
		AttrBrowser:     r.Browser,
		AttrBrowserVer:  r.Seg.BrowserVer,
		AttrOS:          r.OS,
		AttrOSVer:       r.Seg.OSVer,
		AttrCountry:     country,
		AttrRegion:      r.Seg.Region,
		AttrCity:        r.Seg.CityName,
		AttrRegionName:  r.Seg.RegionName,
		AttrLanguage:    r.Language,
		AttrScreen:      r.Resolution,
	}
	for i, s := range vals {
		cat := CatVisit
		switch i {
		case AttrSource, AttrReferrer:
			cat = CatReferrer
		case AttrUTMMedium, AttrUTMSource, AttrUTMCampaign, AttrUTMContent, AttrUTMTerm:
			cat = CatUTM
		}
		attr[i] = id(cat, s)
	}
	return attr
}

// HitOf returns the hit row of r (a pageview, custom event or engagement
// report) in visit row visit (NoVisit for none) of a day delta days before
// r's own: its kind, event name, value and unit, page, hostname and props.
func HitOf(r *record.Hit, visit uint32, delta buckets.Date, id IDs) Hit {
	h := Hit{Visit: visit, Ms: Time(r.Ms), Scroll: -1, Flags: DayFlags(delta)}
	switch {
	case r.Seg.Engagement:
		h.Kind, h.Engaged, h.Scroll = KindEngagement, uint32(r.Seg.EngagedMs), r.Seg.Scroll
	case r.Event:
		h.Kind = KindEvent
		name, value, unit := r.CustomEvent()
		h.Name, h.Value, h.Unit = id(CatEvent, name), id(CatEvent, value), id(CatEvent, unit)
		if !r.Seg.NonInteractive {
			h.Flags |= HitInteractive
		}
	default:
		h.Kind = KindPageview
	}
	h.Page, h.Host = id(CatPath, r.Seg.Path), id(CatHost, r.Seg.Host)
	if len(r.Seg.Props) > 0 {
		h.Props = make([]uint32, 0, 2*len(r.Seg.Props))
		for _, p := range r.Seg.Props {
			h.Props = append(h.Props, id(CatPropKey, p.Key), id(CatPropVal, p.Value))
		}
	}
	return h
}

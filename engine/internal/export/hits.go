package export

import (
	"encoding/binary"
	"net/url"
	"slices"
	"time"

	"github.com/dchest/siphash"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/segments"
)

// Hit is one stored pageview or custom event of a website, as
// Owner.Export gives it (SPEC §14): what the segments store keeps of it
// (SPEC §10.1), with the attributes of its visit. Its strings are the
// store's and immutable; the caller may keep them.
type Hit struct {
	// Time is the hit's time, to the second (as the segments keep it), UTC.
	Time time.Time
	// Visitor is an opaque id of the visitor, stable within its salt
	// period (§2.2) and across exports; never an IP address or user agent.
	Visitor string
	// Host and Path are the page's hostname and path. A pageview's Path
	// is its page as the page statistic counted it, query included, where
	// the day's bucket tells it (a path with one page that day); else the
	// path, with Query on a visit's first hit.
	Host, Path string
	// Query is the landing page's campaign parameters on the first hit of
	// a visit ("utm_campaign=x&utm_source=y") where Path has none; "" on
	// the others.
	Query string
	// Referrer is the visit's referrer URL without scheme
	// ("news.ycombinator.com/item") on its first hit; "" on the others.
	Referrer string

	// Event is true for a custom event, whose name, value and unit follow.
	Event             bool
	Name, Value, Unit string
	// NonInteractive marks an event sent with interactive: false.
	NonInteractive bool
	Props          []record.Prop

	// The visit's attributes (from its first hit).
	Browser, BrowserVersion, OS, OSVersion, Device string
	Country, Region, RegionName, City              string
	CityID                                         uint32
	Language, Screen                               string
}

// AppendHits appends the pageviews and events of sd, a whole day or a
// part of one, to dst; the first hit in time of each visit carries the visit's referrer
// and landing campaign parameters. Orphan events (written before events
// had visits) get a visitor of their own.
func AppendHits(dst []Hit, website uint32, sd *segments.Day, hints Hints) []Hit {
	firstOf := make(map[uint32]int) // visit row → index in dst of its earliest hit
	for i := range sd.HMs {
		kind := sd.HKind[i]
		if kind == segments.KindEngagement {
			continue
		}
		h := Hit{
			Time: time.UnixMilli(segments.FloorDiv(sd.HMs[i], 1000) * 1000).UTC(),
			Host: sd.Strs[sd.HHost[i]], Path: sd.Strs[sd.HPage[i]],
		}
		if kind == segments.KindEvent {
			h.Event = true
			h.Name, h.Value, h.Unit = sd.Strs[sd.HName[i]], sd.Strs[sd.HValue[i]], sd.Strs[sd.HUnit[i]]
			h.NonInteractive = sd.HFlags[i]&segments.HitInteractive == 0
		}
		for kv := sd.PropsOf(i); len(kv) >= 2; kv = kv[2:] {
			h.Props = append(h.Props, record.Prop{Key: sd.Strs[kv[0]], Value: sd.Strs[kv[1]]})
		}
		v := sd.HVisit[i]
		if v == segments.NoVisit || int(v) >= len(sd.VVisitor) {
			h.Visitor = visitorID(website, uint64(sd.HMs[i]), uint64(i)|1<<63)
			dst = append(dst, h)
			continue
		}
		h.Visitor = visitorID(website, uint64(uint32(sd.VPeriod[v])), uint64(sd.VVisitor[v]))
		a := func(col int) string { return sd.Strs[sd.VAttr[col][v]] }
		h.Browser, h.BrowserVersion, h.OS, h.OSVersion, h.Device = a(segments.AttrBrowser), a(segments.AttrBrowserVer), a(segments.AttrOS), a(segments.AttrOSVer), a(segments.AttrDevice)
		h.Country, h.Region, h.RegionName, h.City = a(segments.AttrCountry), a(segments.AttrRegion), a(segments.AttrRegionName), a(segments.AttrCity)
		h.CityID = sd.VCityID[v]
		h.Language, h.Screen = a(segments.AttrLanguage), a(segments.AttrScreen)
		if j, ok := firstOf[v]; !ok || h.Time.Before(dst[j].Time) {
			firstOf[v] = len(dst)
		}
		dst = append(dst, h)
	}
	for v, j := range firstOf {
		a := func(col int) string { return sd.Strs[sd.VAttr[col][v]] }
		dst[j].Referrer = hints.Referrer(a(segments.AttrReferrer))
		dst[j].Query = campaignQuery(a(segments.AttrUTMSource), a(segments.AttrUTMMedium), a(segments.AttrUTMCampaign), a(segments.AttrUTMContent), a(segments.AttrUTMTerm), a(segments.AttrSource), dst[j].Referrer)
	}
	return dst
}

// Assign puts hits, one day's (AppendHits), in time order and gives
// their pageviews their pages as the day's bucket counted them (Page);
// last keeps the visitors' last pageviews from one day to the next.
func (h Hints) Assign(hits []Hit, last *Pageviews) {
	slices.SortStableFunc(hits, func(a, b Hit) int { return a.Time.Compare(b.Time) })
	last.Next()
	for i := range hits {
		if x := &hits[i]; !x.Event {
			x.Path, x.Query = h.Page(last, x.Visitor, x.Time.UnixMilli(), x.Referrer != "", x.Path, x.Query), ""
		}
	}
}

// campaignQuery rebuilds a landing page's campaign parameters from its
// visit's columns, in url.Values.Encode order. A source that neither a
// utm_source nor the referrer gave came from a source or ref parameter:
// it is given back as ref.
func campaignQuery(src, medium, campaign, content, term, source, referrer string) string {
	q := make([]string, 0, 12)
	add := func(k, v string) {
		if v != "" {
			q = append(q, k, v)
		}
	}
	if src == "" && referrer == "" && source != "" {
		add("ref", source)
	}
	add("utm_campaign", campaign)
	add("utm_content", content)
	add("utm_medium", medium)
	add("utm_source", src)
	add("utm_term", term)
	b := make([]byte, 0, 64)
	for i := 0; i < len(q); i += 2 {
		if i > 0 {
			b = append(b, '&')
		}
		b = append(b, url.QueryEscape(q[i])...)
		b = append(b, '=')
		b = append(b, url.QueryEscape(q[i+1])...)
	}
	return string(b)
}

// visitorID is the opaque visitor id of an export: a keyed hash of the
// website and the visitor's number in its salt period, so that it says
// nothing of the visitor and is the same in every export.
func visitorID(website uint32, period, visitor uint64) string {
	var b [20]byte
	binary.LittleEndian.PutUint32(b[:4], website)
	binary.LittleEndian.PutUint64(b[4:12], period)
	binary.LittleEndian.PutUint64(b[12:], visitor)
	h := siphash.Hash(0x77656273746174, 0x6578706f7274, b[:])
	const hex = "0123456789abcdef"
	out := make([]byte, 16)
	for i := range out {
		out[i] = hex[h>>(60-4*uint(i))&15]
	}
	return string(out)
}

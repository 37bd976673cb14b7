package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/dchest/siphash"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/export"
	"github.com/webstats/webstats/engine/internal/segments"
)

// ExportedHit is one stored pageview or custom event of a website, as
// Owner.Export gives it (SPEC §14): what the segments store keeps of it
// (SPEC §10.1), with the attributes of its visit. Its strings are the
// store's and immutable; the caller may keep them.
type ExportedHit struct {
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
	Props          []Prop

	// The visit's attributes (from its first hit).
	Browser, BrowserVersion, OS, OSVersion, Device string
	Country, Region, RegionName, City              string
	CityID                                         uint32
	Language, Screen                               string
}

// ErrExportElsewhere reports an export asked of a cluster node that does
// not answer for the website's partition: ask the node that does. It is
// an ErrClusterUnavailable too. Use errors.Is.
var ErrExportElsewhere = fmt.Errorf("engine: export: the website is served by another node: %w", ErrClusterUnavailable)

// Export calls fn with every stored pageview and custom event of website
// counted under the local days [from, to], in time order within each day
// and day after day (a visit's hits are given with the day it started:
// under weekly or monthly salts a visit past midnight comes before the
// next day's hits). It holds one day's hits at a time, so its memory is
// bounded by the largest day, whatever the range. Engagement reports are
// not given (see the README's "Moving in and out"). An error of fn stops
// the export and is returned.
func (o Owner) Export(ctx context.Context, website uint32, from, to Date, fn func(*ExportedHit) error) error {
	s, err := o.site(website)
	if err != nil {
		return err
	}
	far, done, err := o.elsewhere(website)
	if err != nil {
		return err
	}
	if far {
		return ErrExportElsewhere
	}
	defer done()
	e := o.e
	sh := e.shardOf(website)
	sh.mu.Lock()
	var dates []buckets.Date
	for d := range s.state.dates {
		if d >= from && d <= to {
			dates = append(dates, d)
		}
	}
	sh.mu.Unlock()
	slices.Sort(dates)
	var hits []ExportedHit
	var pv export.Pageviews
	for _, date := range dates {
		if err := ctx.Err(); err != nil {
			return err
		}
		hits = hits[:0]
		var hints export.Hints
		err := e.scanDays(ctx, s, date, date, false, nil, func(_ buckets.Date, d storedDay) { hints = export.NewHints(d.day) })
		if err == nil {
			err = e.scanSegs(ctx, s, date, date, func(_ buckets.Date, sd *segments.Day, _ bool) {
				hits = appendExported(hits, website, sd, hints)
			})
		}
		if err != nil {
			return err
		}
		slices.SortStableFunc(hits, func(a, b ExportedHit) int { return a.Time.Compare(b.Time) })
		pv.Next()
		assignPages(hints, hits, &pv)
		for i := range hits {
			if err := fn(&hits[i]); err != nil {
				return err
			}
		}
		clear(hits) // what the next day does not overwrite is not kept alive
	}
	return nil
}

// appendExported appends the pageviews and events of sd, a whole day, to
// dst; the first hit in time of each visit carries the visit's referrer
// and landing campaign parameters. Orphan events (written before events
// had visits) get a visitor of their own.
func appendExported(dst []ExportedHit, website uint32, sd *segments.Day, hints export.Hints) []ExportedHit {
	firstOf := make(map[uint32]int) // visit row → index in dst of its earliest hit
	for i := range sd.HMs {
		kind := sd.HKind[i]
		if kind == segments.KindEngagement {
			continue
		}
		h := ExportedHit{
			Time: time.UnixMilli(segTime(sd.HMs[i])).UTC(),
			Host: sd.Strs[sd.HHost[i]], Path: sd.Strs[sd.HPage[i]],
		}
		if kind == segments.KindEvent {
			h.Event = true
			h.Name, h.Value, h.Unit = sd.Strs[sd.HName[i]], sd.Strs[sd.HValue[i]], sd.Strs[sd.HUnit[i]]
			h.NonInteractive = sd.HFlags[i]&segments.HitInteractive == 0
		}
		for kv := sd.PropsOf(i); len(kv) >= 2; kv = kv[2:] {
			h.Props = append(h.Props, Prop{Key: sd.Strs[kv[0]], Value: sd.Strs[kv[1]]})
		}
		v := sd.HVisit[i]
		if v == segments.NoVisit || int(v) >= len(sd.VVisitor) {
			h.Visitor = exportVisitor(website, uint64(sd.HMs[i]), uint64(i)|1<<63)
			dst = append(dst, h)
			continue
		}
		h.Visitor = exportVisitor(website, uint64(uint32(sd.VPeriod[v])), uint64(sd.VVisitor[v]))
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

// exportVisitor is the opaque visitor id of an export: a keyed hash of the
// website and the visitor's number in its salt period, so that it says
// nothing of the visitor and is the same in every export.
func exportVisitor(website uint32, period, visitor uint64) string {
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

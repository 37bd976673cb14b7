package segments

import (
	"strings"

	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/ua"
)

// dimKind says where a dimension's value comes from.
type dimKind uint8

const (
	dkHitName dimKind = iota
	dkHitPage
	dkHitHost
	dkGoal
	dkProp
	dkTime
	dkVisitAttr
	dkEntry
	dkExit
	dkEntryHost
	dkExitHost
	dkCity
	dkCountryName
)

type dimSpec struct {
	name string
	kind dimKind
	attr int    // dkVisitAttr: the vAttr column
	prop string // dkProp: the key
}

// Special values of a group key position.
const (
	keyNone = ^uint32(0) - 1 // a missing prop: "(none)"
)

// visitDims maps visit:* dimensions to visit row columns.
var visitDims = map[string]dimSpec{
	"visit:source":              {kind: dkVisitAttr, attr: AttrSource},
	"visit:referrer":            {kind: dkVisitAttr, attr: AttrReferrer},
	"visit:channel":             {kind: dkVisitAttr, attr: AttrChannel},
	"visit:utm_medium":          {kind: dkVisitAttr, attr: AttrUTMMedium},
	"visit:utm_source":          {kind: dkVisitAttr, attr: AttrUTMSource},
	"visit:utm_campaign":        {kind: dkVisitAttr, attr: AttrUTMCampaign},
	"visit:utm_content":         {kind: dkVisitAttr, attr: AttrUTMContent},
	"visit:utm_term":            {kind: dkVisitAttr, attr: AttrUTMTerm},
	"visit:screen":              {kind: dkVisitAttr, attr: AttrDevice},
	"visit:device":              {kind: dkVisitAttr, attr: AttrDevice},
	"visit:browser":             {kind: dkVisitAttr, attr: AttrBrowser},
	"visit:browser_version":     {kind: dkVisitAttr, attr: AttrBrowserVer},
	"visit:os":                  {kind: dkVisitAttr, attr: AttrOS},
	"visit:os_version":          {kind: dkVisitAttr, attr: AttrOSVer},
	"visit:country":             {kind: dkVisitAttr, attr: AttrCountry},
	"visit:region":              {kind: dkVisitAttr, attr: AttrRegion},
	"visit:city_name":           {kind: dkVisitAttr, attr: AttrCity},
	"visit:region_name":         {kind: dkVisitAttr, attr: AttrRegionName},
	"visit:country_name":        {kind: dkCountryName, attr: AttrCountry},
	"visit:city":                {kind: dkCity},
	"visit:entry_page":          {kind: dkEntry},
	"visit:exit_page":           {kind: dkExit},
	"visit:entry_page_hostname": {kind: dkEntryHost},
	"visit:exit_page_hostname":  {kind: dkExitHost},
}

func specOf(dim string) dimSpec {
	var s dimSpec
	switch {
	case dim == "event:name":
		s.kind = dkHitName
	case dim == "event:page":
		s.kind = dkHitPage
	case dim == "event:hostname":
		s.kind = dkHitHost
	case dim == "event:goal":
		s.kind = dkGoal
	case strings.HasPrefix(dim, "event:props:"):
		s.kind, s.prop = dkProp, strings.TrimPrefix(dim, "event:props:")
	case strings.HasPrefix(dim, "time"):
		s.kind = dkTime
	default:
		s = visitDims[dim]
	}
	s.name = dim
	return s
}

// isVisitKind reports whether a dimension's value is the hit's visit's.
func (s dimSpec) isVisit() bool { return s.kind >= dkVisitAttr }

// display is the value of dimension s as the API shows it, for the stored
// string v (the empty string when unknown).
func (s dimSpec) display(v string) string {
	switch s.kind {
	case dkHitName:
		if v == "" {
			return "pageview"
		}
	case dkHitHost:
		if v == "" {
			return "(none)"
		}
	case dkCountryName:
		return geo.CountryName(v)
	case dkVisitAttr:
		switch s.attr {
		case AttrSource, AttrReferrer:
			if v == "" {
				return "Direct / None"
			}
		case AttrChannel:
			if v == "" {
				return "Direct"
			}
		case AttrUTMMedium, AttrUTMSource, AttrUTMCampaign, AttrUTMContent, AttrUTMTerm,
			AttrBrowserVer, AttrOSVer:
			if v == "" {
				return "(not set)"
			}
		case AttrBrowser, AttrOS, AttrDevice:
			// Plausible's names ("Microsoft Edge", "GNU/Linux",
			// "Desktop"): ua's table (plausible.go).
			if v == "" {
				return "(not set)"
			}
			return plausibleName(s.attr, v)
		}
	}
	return v
}

// blankLabel is how the API shows a dimension's blank value when it has a
// label for it ("Direct / None", "(not set)", "(none)"); "" otherwise.
// Filters test the stored value, so contains and matches never see the
// label, while an is/is_not clause equal to it matches the blank
// (plausible-api.md §4).
func (s dimSpec) blankLabel() string {
	switch s.kind {
	case dkHitHost:
		return "(none)"
	case dkVisitAttr:
		switch s.attr {
		case AttrSource, AttrReferrer:
			return "Direct / None"
		case AttrUTMMedium, AttrUTMSource, AttrUTMCampaign, AttrUTMContent, AttrUTMTerm,
			AttrDevice, AttrBrowser, AttrBrowserVer, AttrOS, AttrOSVer:
			return "(not set)"
		}
	}
	return ""
}

// filterValue is the value a filter tests for the stored string v: the
// shown value, except that a blank with a label stays "", and a browser,
// OS or device stays webstats' name (the leaf tests both names: see
// twoNames).
func (s dimSpec) filterValue(v string) string {
	if v == "" && s.blankLabel() != "" || s.twoNames() {
		return v
	}
	return s.display(v)
}

// twoNames reports whether a dimension's values have two spellings,
// webstats' (stored, and the phpAnalytics API's) and Plausible's (shown):
// visit:browser, visit:os and visit:device. A filter matches either.
func (s dimSpec) twoNames() bool {
	return s.kind == dkVisitAttr && (s.attr == AttrBrowser || s.attr == AttrOS || s.attr == AttrDevice)
}

// plausibleName is Plausible's name of a browser, OS or device v (not
// blank).
func plausibleName(attr int, v string) string {
	switch attr {
	case AttrBrowser:
		return ua.PlausibleBrowser(v)
	case AttrOS:
		return ua.PlausibleOS(v)
	}
	return ua.PlausibleDevice(v)
}

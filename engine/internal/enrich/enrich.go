package enrich

import (
	"strings"

	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/ua"
)

// Agent returns h's agent: the one h.Given gives, else parsed (h's user
// agent parsed), whose Bot is kept either way.
func Agent(h *Hit, parsed ua.Agent) ua.Agent { return h.Given.agent(parsed) }

// Bot reports whether h, of agent ag, is a bot: by its user agent, or for
// a live request by its headless markers. An import without a user agent
// (a visitor id instead) is not a bot: like the header heuristics, that
// rule is for live requests. A missing Accept-Language alone is no bot
// (SPEC §2.4): Plausible's server-side integrations and proxies rarely
// forward it.
func Bot(h *Hit, ag ua.Agent) bool {
	uaBot := ag.Bot && (h.Live || h.UserAgent != "")
	return uaBot || (h.Live && ua.HeadlessHint(h.SecCHUA))
}

// Page parses h's page under its website's rules, keeping the fragment in
// hash mode; ok=false when the page is missing or not a URL.
func Page(h *Hit, rules norm.PageRules) (norm.Page, bool) {
	pg, ok := norm.ParsePage(h.URL, rules)
	if ok && h.HashMode {
		pg = pg.KeepFragment()
	}
	return pg, ok
}

// SiteHost is the host that names h's website when h gives no website id:
// its Plausible domain, else its page URL's host.
func SiteHost(h *Hit) string {
	if h.Domain != "" {
		return norm.PlausibleDomain(h.Domain)
	}
	return norm.Host(urlHost(h.URL))
}

// urlHost is the host[:port] of an absolute URL, or "".
func urlHost(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	u = u[i+3:]
	if j := strings.IndexAny(u, "/?#"); j >= 0 {
		u = u[:j]
	}
	if j := strings.LastIndexByte(u, '@'); j >= 0 {
		u = u[j+1:]
	}
	return u
}

// CustomEvent fills r's custom event from h's, when h is one (and not an
// engagement report); ok=false for an event without a name, which is
// dropped.
func CustomEvent(r *record.Hit, h *Hit) (ok bool) {
	if h.Event == nil || h.Engagement != nil {
		return true
	}
	// The segments keep the name and unit as sent (':' kept); only the
	// phpAnalytics event statistic makes ':' a space (SPEC §2.4).
	name, ok := norm.EventNameExact(h.Event.Name)
	if !ok {
		return false
	}
	r.Event = true
	r.Seg.Name, r.Seg.Unit = name, norm.EventUnitExact(h.Event.Unit)
	// The statistic's name is EventName's of the name as sent (cut after
	// ':' became a space and the ends were trimmed), as before names were
	// kept exactly; "" for a name of only colons.
	stat, _ := norm.EventName(h.Event.Name)
	r.EventRow = norm.EventRow(stat, norm.EventValue(h.Event.Value), norm.EventUnit(h.Event.Unit))
	return true
}

// Dims fills r's dimensions, those of the day buckets and those of the
// segments, from h, its parsed page pg and its agent ag (Agent); lookup
// gives the location of h's IP address, called only when h.Given gives
// none and h is not an engagement report.
func Dims(r *record.Hit, h *Hit, pg norm.Page, ag ua.Agent, lookup func() geo.Location) {
	if h.Engagement != nil {
		// An engagement report counts nowhere in the day buckets, and
		// joins a visit of the segments only.
		seg(h, pg, r, ag, geo.Location{})
		return
	}
	// An event counts only under event in the day buckets, but may start
	// a visit of the segments (SPEC §10.1), which takes its source,
	// device and location from it: it is enriched as a pageview.
	r.Page = pg.Page
	r.Campaign = pg.Campaign
	r.RefHost = norm.ReferrerHost(h.Referrer)
	r.Browser, r.OS, r.Device = ag.Browser, ag.OS, ag.Device
	r.Resolution = norm.Resolution(h.Resolution)
	r.Language = norm.Language(h.Language)
	loc := h.Given.location(lookup)
	r.Country, r.Continent, r.City = loc.Country, loc.Continent, loc.City
	seg(h, pg, r, ag, loc)
}

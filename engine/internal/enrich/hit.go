package enrich

import (
	"net/netip"
	"time"

	"github.com/webstats/webstats/engine/internal/record"
)

// Hit is one raw tracking request or imported event, before enrichment.
// Track copies what it keeps; the caller may reuse a Hit after Track returns.
type Hit struct {
	// Time is when the hit happened. The zero Time means the engine's clock.
	Time time.Time

	// URL is the page: a full URL, or for imports a path ("/a?b=1").
	URL string
	// Referrer is the referring URL as the browser sent it; "" for none.
	Referrer string
	// UserAgent is the User-Agent header.
	UserAgent string
	// IP is the client address.
	IP netip.Addr
	// Resolution is the screen size "WIDTHxHEIGHT"; anything else counts as "".
	Resolution string
	// Language is the Accept-Language header.
	Language string
	// Visitor, when not empty, replaces IP and user agent in the visitor hash
	// (the import API's stable visitor id).
	Visitor string
	// Given, when not nil, gives the hit's device, browser, OS and location
	// directly (imports of peers' and webstats' own exports).
	Given *Given

	// Website, when not zero, counts the hit under this website whatever the
	// URL's host (imports). Otherwise the website is found by Domain, or by the
	// URL's host when Domain is empty.
	Website uint32
	// Domain is the Plausible form's domain field (the first of a
	// comma-separated list is used).
	Domain string
	// HashMode keeps the URL's fragment in the page, for Plausible's
	// hash-based routing ("h": 1): "/app/#/settings" (SPEC §2.4). The
	// fragment is dropped otherwise.
	HashMode bool

	// Event, when not nil, makes the hit a custom event instead of a pageview.
	Event *Event
	// Props are the hit's custom properties (pageviews and events alike),
	// kept for the segments store within the bounds of SPEC §2.4.
	Props []record.Prop
	// Engagement, when not nil, makes the hit a Plausible engagement report
	// of the page URL: counted only in time_on_page and scroll_depth.
	Engagement *Engagement

	// Live marks a hit from a live tracking request: the header heuristics for
	// bots (no Accept-Language, headless markers) apply only to live hits.
	Live bool
	// SecCHUA is the Sec-CH-UA header of a live request (headless markers).
	SecCHUA string
	// Prefetch marks a browser prefetch (Sec-Purpose or Purpose: prefetch);
	// such hits are dropped.
	Prefetch bool
}

// Event is a custom event of a Hit.
type Event struct {
	Name string
	// Value is the raw JSON token of the value (a number or a string), or nil.
	Value []byte
	Unit  string
	// NonInteractive marks an event sent with interactive: false: it does
	// not stop its visit from being a bounce.
	NonInteractive bool
}

// Engagement is what a Plausible "engagement" event reports of the page it
// was sent from: time engaged and how far the page was scrolled. A hit with
// one counts nowhere but in the time_on_page and scroll_depth metrics: never
// as a pageview, an event, a visit or a visitor, and it never starts or
// extends a visit.
type Engagement struct {
	// EngagedMs is the time engaged with the page, in milliseconds.
	EngagedMs int64
	// ScrollDepth is the deepest scroll in percent (0–100), or -1 when unknown.
	ScrollDepth int
}

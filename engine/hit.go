package engine

import "github.com/webstats/webstats/engine/internal/enrich"

// Hit, Event, Engagement and Given are the raw hit Track takes (package
// enrich): a tracking request or an imported event, before enrichment.
type (
	Hit        = enrich.Hit
	Event      = enrich.Event
	Engagement = enrich.Engagement
	Given      = enrich.Given
)

// DropReason says why a hit was not counted.
type DropReason uint8

// The drop reasons. DropNone means the hit was counted.
const (
	DropNone DropReason = iota
	DropUnknownSite
	DropExcludedIP
	DropBot
	DropPrefetch
	DropInvalid // the page URL is missing or not a URL, or an event has no name
	numDropReasons
)

var dropNames = [numDropReasons]string{"", "unknown-site", "excluded-ip", "bot", "prefetch", "invalid"}

// String is the reason as the X-Webstats-Dropped header and /metrics name it.
func (r DropReason) String() string {
	if r < numDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// DropReasons lists every reason a hit can be dropped for, in order.
func DropReasons() []DropReason {
	return []DropReason{DropUnknownSite, DropExcludedIP, DropBot, DropPrefetch, DropInvalid}
}

// TrackResult reports what Track did with its hits.
type TrackResult struct {
	// Accepted counts the hits counted (pageviews and events).
	Accepted int
	// Dropped counts the hits dropped, by reason.
	Dropped [numDropReasons]int
	// Reasons holds one entry per hit, in the order given: DropNone for a
	// counted hit.
	Reasons []DropReason
	// Repeated reports a TrackOnce whose key an earlier call used: the
	// counts are that call's, this one counted nothing (Reasons nil).
	Repeated bool
}

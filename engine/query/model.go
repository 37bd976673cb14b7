package query

import (
	"slices"
	"strings"
	"time"

	"github.com/webstats/webstats/buckets"
)

// Query is one question in Plausible's Stats API v2 model: which metrics of
// which website over which range, grouped by which dimensions, filtered,
// ordered and paged. ParseQuery builds one from a request body; a library
// caller may also fill one in directly. The zero value of OrderBy,
// Pagination and Include means Plausible's defaults.
type Query struct {
	// SiteID is the website's domain, as the API names it.
	SiteID string
	// Metrics are the metric names (QueryMetricNames), unique, at least one.
	// Row values come in this order.
	Metrics []string
	// DateRange is the range of the query, resolved in the website's time
	// zone by Resolve.
	DateRange DateRange
	// Dimensions group the rows (QueryDimensionNames plus "event:props:<key>"),
	// unique. Row dimension values come in this order.
	Dimensions []string
	// Filters are ANDed.
	Filters []Filter
	// OrderBy sorts the rows; nil means the default: the time dimension
	// ascending if there is one, then the first metric descending.
	OrderBy []OrderBy
	// Include asks for extras in the response's meta.
	Include Include
	// Pagination pages the rows; a zero Limit means MaxQueryLimit.
	Pagination Pagination
}

// DateRange is a query's range: a shorthand Period, or an explicit range of
// whole local days (FromDay, ToDay), or of instants (From, To). The zero
// DateRange is "no range", which Validate rejects as missing.
type DateRange struct {
	// Period is a shorthand relative to today in the website's time zone:
	// "day" (today, up to now), "24h" (the last 24 hours), "<N>d" with
	// 1 ≤ N ≤ 5000 (the N days before today; "7d", "28d", "30d", "91d"),
	// "month" (the whole current month), "<N>mo" with 1 ≤ N ≤ 100 (the N
	// whole months before the current one; "6mo", "12mo"), "year" (the whole
	// current year) or "all" (from the website's first day with data to
	// today). Empty for an explicit range.
	Period string
	// FromDay and ToDay are an explicit inclusive range of local days
	// (["2024-01-01","2024-01-31"]), used when Period is empty and From is
	// zero.
	FromDay, ToDay buckets.Date
	// From and To are an explicit inclusive range of instants
	// (["2024-01-01T12:00:00+02:00", …]), kept to the second. Used when
	// Period is empty and From is not zero.
	From, To time.Time
}

// Filter is one node of a filter tree. A leaf (Op is, is_not, contains,
// contains_not, matches, matches_not) tests Dimension against Clauses: a row
// matches when any clause does. An operator node (and, or: one or more
// Children; not, has_done, has_not_done: exactly one) combines Children.
type Filter struct {
	// Op is the operator: "is", "is_not", "contains", "contains_not",
	// "matches", "matches_not" (RE2, unanchored), "and", "or", "not",
	// "has_done", "has_not_done".
	Op string
	// Dimension is the filtered dimension of a leaf.
	Dimension string
	// Clauses are a leaf's values. visit:city GeoNames ids sent as JSON
	// integers are kept as decimal strings with IntClauses set.
	Clauses []string
	// IntClauses reports that Clauses were JSON integers; Echo writes them
	// back as numbers.
	IntClauses bool
	// CaseInsensitive is the modifier {"case_sensitive": false}, allowed on
	// is, is_not, contains and contains_not: both sides are lower-cased.
	CaseInsensitive bool
	// Children are an operator node's operands.
	Children []Filter
}

// OrderBy is one sort key: a queried metric or dimension, ascending unless
// Desc. JSON: ["visitors", "desc"].
type OrderBy struct {
	Key  string
	Desc bool
}

// Include asks for extras in a response's meta. JSON lists only the true
// keys, as Plausible's echo does.
type Include struct {
	// Imports: meta.imports_included (webstats has no imported data).
	Imports bool `json:"imports,omitempty"`
	// TimeLabels: meta.time_labels, every bucket of the time dimension.
	TimeLabels bool `json:"time_labels,omitempty"`
	// TotalRows: meta.total_rows, the row count before pagination.
	TotalRows bool `json:"total_rows,omitempty"`
}

// Pagination pages the rows: Offset rows are skipped, then at most Limit
// (1 to MaxQueryLimit; 0 means MaxQueryLimit) are returned.
type Pagination struct {
	Offset int `json:"offset"`
	Limit  int `json:"limit,omitempty"`
}

// QuerySite is what validating and resolving a query needs to know of its
// website.
type QuerySite struct {
	// Domain is echoed as the query's site_id; empty keeps Query.SiteID.
	Domain string
	// Location is the website's time zone; nil means UTC.
	Location *time.Location
	// Now is the current instant; zero means time.Now().
	Now time.Time
	// StatsStart is the website's first local day with data, where "all"
	// starts; 0 (1970-01-01) means none yet, and "all" is today.
	StatsStart buckets.Date
	// Goals are the display names of the website's goals ("Signup",
	// "Visit /blog**"); an "is" event:goal filter must name one of them.
	Goals []string
}

// ResolvedQuery is a valid Query made concrete for one website: the range as
// instants and local days, "time" resolved to a bucket size, and Plausible's
// defaults filled in. It shares nothing with the Query it came from.
type ResolvedQuery struct {
	// Query is the normalised query: Dimensions and OrderBy with "time"
	// resolved (e.g. "time:day"), OrderBy defaulted, Pagination.Limit
	// defaulted, SiteID the website's domain.
	Query
	// Location is the website's time zone.
	Location *time.Location
	// From and To are the inclusive range, whole seconds, in Location: a
	// hit at t counts when From ≤ t ≤ To (t truncated to the second).
	From, To time.Time
	// FirstDay and LastDay are the local days of From and To.
	FirstDay, LastDay buckets.Date
}

// QueryEcho is the normalised query a response echoes under "query", in
// Plausible's key order. Posting it back as a query gives the same
// ResolvedQuery.
type QueryEcho struct {
	SiteID     string     `json:"site_id"`
	Metrics    []string   `json:"metrics"`
	DateRange  [2]string  `json:"date_range"`
	Filters    []Filter   `json:"filters"`
	Dimensions []string   `json:"dimensions"`
	OrderBy    []OrderBy  `json:"order_by"`
	Include    Include    `json:"include"`
	Pagination Pagination `json:"pagination"`
}

// Metric and dimension vocabulary (plausible-api.md §2–3; SPEC §10.2).
var (
	queryMetrics = []string{
		"visitors", "visits", "pageviews", "views_per_visit", "bounce_rate",
		"visit_duration", "events", "percentage", "conversion_rate",
		"group_conversion_rate", "time_on_page", "total_revenue",
		"average_revenue", "scroll_depth",
	}
	// simpleDimensions are the filterable, groupable, orderable dimensions
	// besides event:goal and event:props:*.
	simpleDimensions = []string{
		"event:name", "event:page", "event:hostname",
		"visit:source", "visit:channel", "visit:referrer",
		"visit:utm_medium", "visit:utm_source", "visit:utm_campaign",
		"visit:utm_content", "visit:utm_term",
		"visit:screen", "visit:device", "visit:browser", "visit:browser_version",
		"visit:os", "visit:os_version",
		"visit:country", "visit:region", "visit:city",
		"visit:country_name", "visit:region_name", "visit:city_name",
		"visit:entry_page", "visit:exit_page",
		"visit:entry_page_hostname", "visit:exit_page_hostname",
	}
	timeDimensions = []string{"time", "time:month", "time:week", "time:day", "time:hour"}
)

// QueryMetricNames lists the metrics a Query may ask for. The slice is the
// caller's.
func QueryMetricNames() []string { return slices.Clone(queryMetrics) }

// QueryDimensionNames lists the dimensions a Query may group by, besides
// "event:props:<key>" for any non-empty key. The slice is the caller's.
func QueryDimensionNames() []string {
	out := slices.Clone(simpleDimensions)
	out = append(out, "event:goal")
	return append(out, timeDimensions...)
}

func isQueryMetric(s string) bool     { return slices.Contains(queryMetrics, s) }
func isTimeDimension(s string) bool   { return slices.Contains(timeDimensions, s) }
func isSimpleDimension(s string) bool { return slices.Contains(simpleDimensions, s) }
func isPropsDimension(s string) bool {
	return len(s) > len("event:props:") && strings.HasPrefix(s, "event:props:")
}
func isFilterDimension(s string) bool  { return isSimpleDimension(s) || isPropsDimension(s) }
func isEventDimension(s string) bool   { return strings.HasPrefix(s, "event:") }
func isSessionDimension(s string) bool { return slices.Contains(sessionOnlyDimensions, s) }

// isQueryDimension reports a groupable dimension.
func isQueryDimension(s string) bool {
	return isFilterDimension(s) || s == "event:goal" || isTimeDimension(s)
}

var (
	sessionOnlyDimensions = []string{"visit:entry_page", "visit:exit_page", "visit:entry_page_hostname", "visit:exit_page_hostname"}
	sessionOnlyMetrics    = []string{"bounce_rate", "visit_duration", "views_per_visit"}
	eventOnlyMetrics      = []string{"pageviews", "events", "scroll_depth", "time_on_page", "total_revenue", "average_revenue"}
)

// IsLeafOp reports whether op is a leaf filter's operator (is, is_not,
// contains, contains_not, matches, matches_not) rather than and, or, not,
// has_done or has_not_done.
func IsLeafOp(op string) bool {
	switch op {
	case "is", "is_not", "contains", "contains_not", "matches", "matches_not":
		return true
	}
	return false
}

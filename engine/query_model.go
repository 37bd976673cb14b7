package engine

// The query model of the library's one query call: Plausible's Stats API v2
// request (SPEC §10.2, plausible-api.md §1–6), its JSON decoding with
// Plausible's error messages, its validation against a website, and its
// resolution into concrete instants, time buckets and defaults. Nothing here
// reads storage or a clock of its own: QuerySite carries "now".
//
// Plausible validates in three stages and so does ParseQuery/Validate:
//
//  1. the JSON schema (every violation, JSON-pointer prefixed, joined with
//     "\n" in the order ex_json_schema reports them: known properties in
//     alphabetical order, then unknown keys, then missing required keys);
//  2. the parser (the first error only: date range values, clause types,
//     country codes);
//  3. the query builder (the first error only: order_by, filter placement,
//     behavioural filters, goals, metric/dimension combinations, include).
//
// Messages are Plausible's words; where webstats adds a bound Plausible does
// not have (the Max* constants below) the message is ours and QueryError.Limit
// names the bound.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of the query model. Plausible has none of these; they keep the cost
// of one hostile query bounded (SPEC §13). A query beyond one gets a
// *QueryError whose Limit names the constant.
const (
	// MaxQueryBytes bounds the JSON body ParseQuery decodes: 1 MiB.
	MaxQueryBytes = 1 << 20
	// MaxQueryDimensions bounds the dimensions of one query: 16.
	MaxQueryDimensions = 16
	// MaxQueryOrderBy bounds the order_by entries of one query: 32.
	MaxQueryOrderBy = 32
	// MaxFilterDepth bounds how deep and/or/not/has_done/has_not_done nest: 16.
	MaxFilterDepth = 16
	// MaxFilterNodes bounds the filters of one query, operators and leaves
	// counted alike: 1,000.
	MaxFilterNodes = 1000
	// MaxFilterClauses bounds the clauses of all leaf filters of one query:
	// 10,000.
	MaxFilterClauses = 10000
	// MaxTimeLabels bounds the buckets include.time_labels may list: 100,000
	// (eleven years of hours).
	MaxTimeLabels = 100000
	// MaxQueryLimit is pagination.limit's maximum and its default: 10,000.
	MaxQueryLimit = 10000
	// maxSegmentIDs is Plausible's own bound on segment ids in one query.
	maxSegmentIDs = 10
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
	FromDay, ToDay Date
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

// QueryError is an invalid query, with Plausible's message (several joined
// with "\n"), which the HTTP API answers as 400 {"error": Msg}. Use
// errors.As.
type QueryError struct {
	// Msg is the message, verbatim.
	Msg string
	// Limit names the webstats bound (a Max* constant) the query exceeds;
	// empty for Plausible's own rules.
	Limit string
}

func (e *QueryError) Error() string { return "engine: invalid query: " + e.Msg }

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
	StatsStart Date
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
	FirstDay, LastDay Date
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

// isLeafOp reports the operators of leaf filters.
func isLeafOp(op string) bool {
	switch op {
	case "is", "is_not", "contains", "contains_not", "matches", "matches_not":
		return true
	}
	return false
}

// ---------------------------------------------------------------------------
// Decoding

// ParseQuery decodes a Stats API v2 request body into a Query, checking it
// as Plausible's JSON schema and parser do: it returns a *QueryError with
// Plausible's message on a schema violation (all of them, joined with "\n"),
// an unknown top-level key, a malformed date range, a non-string clause or a
// country that is not two letters. It fills in the defaults of pagination.
// It does not know the website: Validate and Resolve do the rest.
func ParseQuery(body []byte) (Query, error) {
	if len(body) > MaxQueryBytes {
		return Query{}, &QueryError{Msg: fmt.Sprintf("The query is larger than %d bytes.", MaxQueryBytes), Limit: "MaxQueryBytes"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return Query{}, &QueryError{Msg: "Invalid JSON in request body."}
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return Query{}, &QueryError{Msg: "Invalid JSON in request body."}
	}
	var s schemaCheck
	s.root(v)
	if s.limit != "" {
		return Query{}, &QueryError{Msg: s.limitMsg, Limit: s.limit}
	}
	if len(s.errs) > 0 {
		return Query{}, &QueryError{Msg: strings.Join(s.errs, "\n")}
	}
	return parseChecked(v.(map[string]any))
}

// schemaCheck collects the errors ex_json_schema reports for Plausible's
// public query schema, in its order.
type schemaCheck struct {
	errs     []string
	limit    string // a webstats bound that bit, reported instead of errs
	limitMsg string
}

func (s *schemaCheck) add(path, msg string) { s.errs = append(s.errs, path+": "+msg) }

func (s *schemaCheck) bite(limit, msg string) {
	if s.limit == "" {
		s.limit, s.limitMsg = limit, msg
	}
}

// queryKeys are the schema's properties, in the order ex_json_schema visits
// them (a small Elixir map iterates its keys sorted).
var queryKeys = []string{"date_range", "dimensions", "filters", "include", "metrics", "order_by", "pagination", "site_id"}

func (s *schemaCheck) root(v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		s.add("#", schemaTypeMismatch("Object", v))
		return
	}
	for _, k := range queryKeys {
		if x, ok := obj[k]; ok {
			s.property(k, x)
		}
	}
	s.additional("#", obj, queryKeys)
	var missing []string
	for _, k := range []string{"site_id", "metrics", "date_range"} {
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		s.add("#", "Required property "+missing[0]+" was not present.")
	default:
		s.add("#", "Required properties "+strings.Join(missing, ", ")+" were not present.")
	}
}

// additional reports the keys of obj that known does not list.
func (s *schemaCheck) additional(path string, obj map[string]any, known []string) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if !slices.Contains(known, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.add(path+"/"+k, "Schema does not allow additional properties.")
	}
}

func (s *schemaCheck) property(key string, v any) {
	path := "#/" + key
	switch key {
	case "site_id":
		if _, ok := v.(string); !ok {
			s.add(path, schemaTypeMismatch("String", v))
		}
	case "metrics":
		arr, ok := v.([]any)
		for i, m := range arr {
			if name, ok := m.(string); !ok || !isQueryMetric(name) {
				s.add(path+"/"+strconv.Itoa(i), "Invalid metric "+elixirInspect(m))
			}
		}
		if ok && len(arr) < 1 {
			s.add(path, "Expected a minimum of 1 items but got 0.")
		}
		if !ok {
			s.add(path, schemaTypeMismatch("Array", v))
		}
		if ok && !uniqueJSONValues(arr) {
			s.add(path, "Expected items to be unique but they were not.")
		}
	case "date_range":
		if !dateRangeShape(v) {
			s.add(path, "Invalid date range "+elixirInspect(v))
		}
	case "dimensions":
		arr, ok := v.([]any)
		for i, d := range arr {
			if name, ok := d.(string); !ok || !isQueryDimension(name) {
				s.add(path+"/"+strconv.Itoa(i), "Invalid dimension "+elixirInspect(d))
			}
		}
		if !ok {
			s.add(path, schemaTypeMismatch("Array", v))
		}
		if ok && !uniqueJSONValues(arr) {
			s.add(path, "Expected items to be unique but they were not.")
		}
	case "filters":
		arr, ok := v.([]any)
		if !ok {
			s.add(path, schemaTypeMismatch("Array", v))
			return
		}
		for i, f := range arr {
			if !s.filterTree(f, 0) {
				s.add(path+"/"+strconv.Itoa(i), "Invalid filter "+elixirInspect(f))
			}
		}
	case "order_by":
		arr, ok := v.([]any)
		if !ok {
			s.add(path, schemaTypeMismatch("Array", v))
			return
		}
		for i, e := range arr {
			s.orderByEntry(path+"/"+strconv.Itoa(i), e)
		}
	case "include":
		obj, ok := v.(map[string]any)
		if !ok {
			s.add(path, schemaTypeMismatch("Object", v))
			return
		}
		known := []string{"imports", "time_labels", "total_rows"}
		for _, k := range known {
			if x, ok := obj[k]; ok {
				if _, ok := x.(bool); !ok {
					s.add(path+"/"+k, schemaTypeMismatch("Boolean", x))
				}
			}
		}
		s.additional(path, obj, known)
	case "pagination":
		obj, ok := v.(map[string]any)
		if !ok {
			s.add(path, schemaTypeMismatch("Object", v))
			return
		}
		if x, ok := obj["limit"]; ok {
			s.integer(path+"/limit", x, 1, MaxQueryLimit)
		}
		if x, ok := obj["offset"]; ok {
			s.integer(path+"/offset", x, 0, -1)
		}
		s.additional(path, obj, []string{"limit", "offset"})
	}
}

// integer checks an integer property with a minimum and a maximum (max < 0:
// none), in ex_json_schema's keyword order: maximum, minimum, type.
func (s *schemaCheck) integer(path string, v any, lo, hi int) {
	n, isNum := v.(json.Number)
	if isNum {
		f, err := strconv.ParseFloat(string(n), 64)
		if err == nil || errors.Is(err, strconv.ErrRange) {
			if hi >= 0 && f > float64(hi) {
				s.add(path, "Expected the value to be <= "+strconv.Itoa(hi))
			}
			if f < float64(lo) {
				s.add(path, "Expected the value to be >= "+strconv.Itoa(lo))
			}
		}
	}
	if !isNum || !isJSONInteger(n) {
		s.add(path, schemaTypeMismatch("Integer", v))
	}
}

func (s *schemaCheck) orderByEntry(path string, v any) {
	arr, ok := v.([]any)
	if !ok {
		s.add(path, schemaTypeMismatch("Array", v))
		return
	}
	if len(arr) > 0 {
		if k, ok := arr[0].(string); !ok || !(isQueryMetric(k) || isFilterDimension(k) || isTimeDimension(k)) {
			s.add(path+"/0", "Invalid value in order_by "+elixirInspect(arr[0]))
		}
	}
	if len(arr) > 1 {
		if d, ok := arr[1].(string); !ok || (d != "asc" && d != "desc") {
			s.add(path+"/1", "Value is not allowed in enum.")
		}
	}
	if len(arr) > 2 {
		s.add(path, "Schema does not allow additional items.")
		s.add(path, fmt.Sprintf("Expected a maximum of 2 items but got %d.", len(arr)))
	}
	if len(arr) < 2 {
		s.add(path, fmt.Sprintf("Expected a minimum of 2 items but got %d.", len(arr)))
	}
}

// filterTree reports whether v is a filter tree of the public schema:
// exactly one of its alternatives matches, as they are disjoint.
func (s *schemaCheck) filterTree(v any, depth int) bool {
	if depth > MaxFilterDepth {
		s.bite("MaxFilterDepth", fmt.Sprintf("Invalid filters. Filters may nest at most %d levels deep.", MaxFilterDepth))
		return false
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return false
	}
	op, _ := arr[0].(string)
	switch op {
	case "and", "or":
		children, ok := arr[len(arr)-1].([]any)
		if len(arr) != 2 || !ok || len(children) == 0 {
			return false
		}
		for _, c := range children {
			if !s.filterTree(c, depth+1) {
				return false
			}
		}
		return true
	case "not", "has_done", "has_not_done":
		return len(arr) == 2 && s.filterTree(arr[1], depth+1)
	case "is", "contains", "is_not", "contains_not", "matches", "matches_not":
	default:
		return false
	}
	if len(arr) < 3 || len(arr) > 4 {
		return false
	}
	dim, _ := arr[1].(string)
	clauses, ok := arr[2].([]any)
	if !ok {
		return false
	}
	for _, c := range clauses {
		n, isNum := c.(json.Number)
		if _, isStr := c.(string); !isStr && !(isNum && isJSONInteger(n)) {
			return false
		}
	}
	switch {
	case op == "is" && dim == "segment": // ids; the parser wants integers
		return len(arr) == 3
	case op == "is" || op == "contains":
		if !isFilterDimension(dim) && dim != "event:goal" {
			return false
		}
	case !isFilterDimension(dim):
		return false
	}
	if len(arr) == 4 {
		if op == "matches" || op == "matches_not" {
			return false
		}
		mods, ok := arr[3].(map[string]any)
		if !ok {
			return false
		}
		for k, x := range mods {
			if _, isBool := x.(bool); k != "case_sensitive" || !isBool {
				return false
			}
		}
	}
	return true
}

// dateRangeShape reports whether v passes the schema's date_range: a
// shorthand, or two dates, or two datetimes.
func dateRangeShape(v any) bool {
	switch v := v.(type) {
	case string:
		switch v {
		case "day", "24h", "month", "year", "all":
			return true
		}
		digits, ok := strings.CutSuffix(v, "mo")
		if !ok {
			digits, ok = strings.CutSuffix(v, "d")
		}
		return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
	case []any:
		if len(v) != 2 {
			return false
		}
		a, ok1 := v[0].(string)
		b, ok2 := v[1].(string)
		return ok1 && ok2 && (isDateShape(a) && isDateShape(b) || isDatetimeShape(a) && isDatetimeShape(b))
	}
	return false
}

// isDateShape: YYYY-MM-DD (the calendar is checked by the parser).
func isDateShape(s string) bool {
	return len(s) == 10 && asciiDigitsAt(s, 0, 4) && s[4] == '-' && asciiDigitsAt(s, 5, 2) && s[7] == '-' && asciiDigitsAt(s, 8, 2)
}

// isDatetimeShape: YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM], the offset hours below
// 24. The parser then requires the offset.
func isDatetimeShape(s string) bool {
	if len(s) < 19 || !isDateShape(s[:10]) || s[10] != 'T' || !asciiDigitsAt(s, 11, 2) || s[13] != ':' ||
		!asciiDigitsAt(s, 14, 2) || s[16] != ':' || !asciiDigitsAt(s, 17, 2) {
		return false
	}
	rest := s[19:]
	if strings.HasPrefix(rest, ".") {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	switch {
	case rest == "" || rest == "Z":
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && asciiDigitsAt(rest, 1, 2) && rest[3] == ':' && asciiDigitsAt(rest, 4, 2):
		return rest[1:3] <= "23" && rest[4:6] <= "59"
	}
	return false
}

func asciiDigitsAt(s string, at, n int) bool {
	if at+n > len(s) {
		return false
	}
	for i := at; i < at+n; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isJSONInteger reports a JSON number without fraction or exponent, which is
// what Jason decodes to an Elixir integer.
func isJSONInteger(n json.Number) bool {
	s := strings.TrimPrefix(string(n), "-")
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// uniqueJSONValues reports JSON values pairwise distinct (1 and 1.0 differ, as
// Elixir's integers and floats do).
func uniqueJSONValues(arr []any) bool {
	seen := make(map[string]bool, len(arr))
	for _, v := range arr {
		k := jsonIdentity(v)
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// jsonIdentity is a JSON value's identity for uniqueness: its encoding (object
// keys sorted by encoding/json).
func jsonIdentity(v any) string {
	if n, ok := v.(json.Number); ok {
		if isJSONInteger(n) {
			return "i" + strings.TrimLeft(string(n), "0")
		}
		f, _ := strconv.ParseFloat(string(n), 64)
		return "f" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func schemaTypeMismatch(want string, v any) string {
	return "Type mismatch. Expected " + want + " but got " + jsonTypeName(v) + "."
}

// jsonTypeName names v's JSON type as ex_json_schema does.
func jsonTypeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "Null"
	case bool:
		return "Boolean"
	case string:
		return "String"
	case json.Number:
		if isJSONInteger(v) {
			return "Integer"
		}
		return "Number"
	case []any:
		return "Array"
	case map[string]any:
		return "Object"
	}
	return "Unknown"
}

// parseChecked is Plausible's parser stage over a body that passed the
// schema: the first error only, in Plausible's order (date range, metrics,
// filters, dimensions, order_by, pagination, include).
func parseChecked(obj map[string]any) (Query, error) {
	var q Query
	q.SiteID, _ = obj["site_id"].(string)
	dr, err := parseDateRange(obj["date_range"])
	if err != nil {
		return Query{}, err
	}
	q.DateRange = dr
	for _, m := range obj["metrics"].([]any) {
		q.Metrics = append(q.Metrics, m.(string))
	}
	if raw, ok := obj["filters"].([]any); ok && len(raw) > 0 {
		var p filterParser
		q.Filters = make([]Filter, 0, len(raw))
		for _, f := range raw {
			parsed, err := p.parse(f)
			if err != nil {
				return Query{}, err
			}
			q.Filters = append(q.Filters, parsed)
		}
	}
	if raw, ok := obj["dimensions"].([]any); ok && len(raw) > 0 {
		if len(raw) > MaxQueryDimensions {
			return Query{}, &QueryError{Msg: fmt.Sprintf("Invalid dimensions. A query may have at most %d dimensions.", MaxQueryDimensions), Limit: "MaxQueryDimensions"}
		}
		q.Dimensions = make([]string, 0, len(raw))
		for _, d := range raw {
			q.Dimensions = append(q.Dimensions, d.(string))
		}
	}
	if raw, ok := obj["order_by"].([]any); ok {
		if len(raw) > MaxQueryOrderBy {
			return Query{}, &QueryError{Msg: fmt.Sprintf("Invalid order_by. A query may have at most %d order_by entries.", MaxQueryOrderBy), Limit: "MaxQueryOrderBy"}
		}
		q.OrderBy = make([]OrderBy, 0, len(raw))
		for _, e := range raw {
			e := e.([]any)
			q.OrderBy = append(q.OrderBy, OrderBy{Key: e[0].(string), Desc: e[1] == "desc"})
		}
	}
	q.Pagination = Pagination{Limit: MaxQueryLimit}
	if p, ok := obj["pagination"].(map[string]any); ok {
		if n, ok := p["limit"].(json.Number); ok {
			q.Pagination.Limit = jsonIntClamped(n)
		}
		if n, ok := p["offset"].(json.Number); ok {
			q.Pagination.Offset = jsonIntClamped(n)
		}
	}
	if inc, ok := obj["include"].(map[string]any); ok {
		q.Include.Imports, _ = inc["imports"].(bool)
		q.Include.TimeLabels, _ = inc["time_labels"].(bool)
		q.Include.TotalRows, _ = inc["total_rows"].(bool)
	}
	return q, nil
}

// jsonIntClamped converts a JSON integer to an int, clamping one beyond the int
// range (an offset past every row).
func jsonIntClamped(n json.Number) int {
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		if strings.HasPrefix(string(n), "-") {
			return math.MinInt
		}
		return math.MaxInt
	}
	return int(i)
}

// parseDateRange is the parser's date_range stage.
func parseDateRange(v any) (DateRange, error) {
	switch v := v.(type) {
	case string:
		if v == "day" || v == "24h" || v == "month" || v == "year" || v == "all" {
			return DateRange{Period: v}, nil
		}
		if _, ok := periodCount(v); ok {
			return DateRange{Period: v}, nil
		}
		return DateRange{}, &QueryError{Msg: "Invalid date_range " + elixirInspect(v)}
	case []any:
		a, b := v[0].(string), v[1].(string)
		from, err1 := ParseDate(a)
		to, err2 := ParseDate(b)
		if err1 == nil && err2 == nil {
			return DateRange{FromDay: from, ToDay: to}, nil
		}
		t1, err1 := time.Parse(time.RFC3339, a)
		t2, err2 := time.Parse(time.RFC3339, b)
		if err1 == nil && err2 == nil {
			return DateRange{From: t1.Truncate(time.Second), To: t2.Truncate(time.Second)}, nil
		}
		return DateRange{}, &QueryError{Msg: "Invalid date_range '" + elixirInspect(v) + "'."}
	}
	return DateRange{}, &QueryError{Msg: "Invalid date_range " + elixirInspect(v)}
}

// periodCount parses "<N>d" (1 ≤ N ≤ 5000) and "<N>mo" (1 ≤ N ≤ 100): n is
// negative for months.
func periodCount(p string) (n int, ok bool) {
	digits, isMonths := strings.CutSuffix(p, "mo")
	max, sign := 100, -1
	if !isMonths {
		digits, max, sign = strings.TrimSuffix(p, "d"), 5000, 1
	}
	if digits == p || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	digits = strings.TrimLeft(digits, "0")
	if len(digits) > 4 {
		return 0, false
	}
	n, _ = strconv.Atoi(digits)
	if n < 1 || n > max {
		return 0, false
	}
	return sign * n, true
}

// filterParser is the parser stage of filters over schema-valid trees; it
// also counts them against MaxFilterNodes and MaxFilterClauses.
type filterParser struct {
	nodes, clauses int
}

func (p *filterParser) parse(v any) (Filter, error) {
	p.nodes++
	if p.nodes > MaxFilterNodes {
		return Filter{}, &QueryError{Msg: fmt.Sprintf("Invalid filters. A query may have at most %d filters.", MaxFilterNodes), Limit: "MaxFilterNodes"}
	}
	arr := v.([]any)
	f := Filter{Op: arr[0].(string)}
	switch f.Op {
	case "and", "or":
		for _, c := range arr[1].([]any) {
			child, err := p.parse(c)
			if err != nil {
				return Filter{}, err
			}
			f.Children = append(f.Children, child)
		}
		return f, nil
	case "not", "has_done", "has_not_done":
		child, err := p.parse(arr[1])
		if err != nil {
			return Filter{}, err
		}
		f.Children = []Filter{child}
		return f, nil
	}
	f.Dimension = arr[1].(string)
	raw := arr[2].([]any)
	p.clauses += len(raw)
	if p.clauses > MaxFilterClauses {
		return Filter{}, &QueryError{Msg: fmt.Sprintf("Invalid filters. A query may have at most %d filter clauses.", MaxFilterClauses), Limit: "MaxFilterClauses"}
	}
	allStrings, allInts := true, true
	for _, c := range raw {
		if _, ok := c.(string); !ok {
			allStrings = false
		}
		if _, ok := c.(json.Number); !ok {
			allInts = false
		}
	}
	errFilter := &QueryError{Msg: "Invalid filter '" + elixirInspect(v) + "'."}
	switch {
	case (f.Dimension == "visit:city" || f.Dimension == "segment") && allInts && !allStrings:
		f.IntClauses = true
	case f.Dimension == "segment":
		if !allInts {
			return Filter{}, errFilter
		}
		f.IntClauses = true
	case !allStrings:
		return Filter{}, errFilter
	case f.Dimension == "visit:country" && (f.Op == "is" || f.Op == "is_not"):
		for _, c := range raw {
			if utf8.RuneCountInString(c.(string)) != 2 {
				return Filter{}, &QueryError{Msg: "Invalid visit:country filter, visit:country needs to be a valid 2-letter country code."}
			}
		}
	}
	f.Clauses = make([]string, len(raw))
	for i, c := range raw {
		switch c := c.(type) {
		case string:
			f.Clauses[i] = c
		case json.Number:
			f.Clauses[i] = string(c)
		}
	}
	if len(arr) == 4 {
		if cs, ok := arr[3].(map[string]any)["case_sensitive"].(bool); ok && !cs {
			f.CaseInsensitive = true
		}
	}
	return f, nil
}

// ---------------------------------------------------------------------------
// Encoding

// MarshalJSON writes the query as a request body, the form ParseQuery reads.
// Nil Metrics and a zero DateRange are left out (and reported missing by
// ParseQuery); nil OrderBy is left out (the default order).
func (q Query) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"site_id":`)
	writeQueryJSON(&b, q.SiteID)
	if q.Metrics != nil {
		b.WriteString(`,"metrics":`)
		writeQueryJSON(&b, q.Metrics)
	}
	if q.DateRange != (DateRange{}) {
		b.WriteString(`,"date_range":`)
		writeQueryJSON(&b, q.DateRange)
	}
	if q.Filters != nil {
		b.WriteString(`,"filters":`)
		writeQueryJSON(&b, q.Filters)
	}
	if q.Dimensions != nil {
		b.WriteString(`,"dimensions":`)
		writeQueryJSON(&b, q.Dimensions)
	}
	if q.OrderBy != nil {
		b.WriteString(`,"order_by":`)
		writeQueryJSON(&b, q.OrderBy)
	}
	b.WriteString(`,"include":`)
	writeQueryJSON(&b, q.Include)
	b.WriteString(`,"pagination":`)
	writeQueryJSON(&b, q.Pagination)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeQueryJSON appends v's encoding; the model's values always encode.
func writeQueryJSON(b *bytes.Buffer, v any) {
	out, err := json.Marshal(v)
	if err != nil {
		panic("engine: query model does not encode: " + err.Error())
	}
	b.Write(out)
}

// datetimeLayout is how ranges of instants are written: seconds and a
// numeric offset, "+00:00" for UTC, as Plausible's echo shows them.
const datetimeLayout = "2006-01-02T15:04:05-07:00"

// formatQueryInstant writes t with its offset, or in UTC when the offset has
// seconds (historical local mean times), which the layout cannot carry.
func formatQueryInstant(t time.Time) string {
	if _, off := t.Zone(); off%60 != 0 {
		t = t.UTC()
	}
	return t.Format(datetimeLayout)
}

// MarshalJSON writes the range as the API takes it: the shorthand string, or
// two dates, or two datetimes.
func (d DateRange) MarshalJSON() ([]byte, error) {
	switch {
	case d.Period != "":
		return json.Marshal(d.Period)
	case !d.From.IsZero():
		return json.Marshal([2]string{formatQueryInstant(d.From), formatQueryInstant(d.To)})
	}
	return json.Marshal([2]string{d.FromDay.String(), d.ToDay.String()})
}

// MarshalJSON writes the filter in the API's array form: [op, dimension,
// clauses] (plus {"case_sensitive": false}), [op, [children…]] for and/or,
// [op, child] for not/has_done/has_not_done.
func (f Filter) MarshalJSON() ([]byte, error) {
	return json.Marshal(f.raw())
}

// raw is the filter as decoded JSON values.
func (f Filter) raw() []any {
	switch f.Op {
	case "and", "or":
		children := make([]any, len(f.Children))
		for i, c := range f.Children {
			children[i] = c.raw()
		}
		return []any{f.Op, children}
	case "not", "has_done", "has_not_done":
		out := []any{f.Op}
		for _, c := range f.Children {
			out = append(out, c.raw())
		}
		return out
	}
	clauses := make([]any, len(f.Clauses))
	for i, c := range f.Clauses {
		if n := json.Number(c); f.IntClauses && isJSONInteger(n) {
			clauses[i] = n
		} else {
			clauses[i] = c
		}
	}
	out := []any{f.Op, f.Dimension, clauses}
	if f.CaseInsensitive {
		out = append(out, map[string]any{"case_sensitive": false})
	}
	for _, c := range f.Children { // a leaf with children is invalid; keep it so
		out = append(out, c.raw())
	}
	return out
}

// MarshalJSON writes ["key", "asc"|"desc"].
func (o OrderBy) MarshalJSON() ([]byte, error) {
	dir := "asc"
	if o.Desc {
		dir = "desc"
	}
	return json.Marshal([2]string{o.Key, dir})
}

// ---------------------------------------------------------------------------
// Validation

// Validate checks q against its website as Plausible's parser and query
// builder do, returning the first violation as a *QueryError with
// Plausible's message: the structure of every field (as ParseQuery would
// report it for q's JSON), then segments (webstats has none), order_by keys
// that are not queried, event:goal/event:hostname filters below the top
// level, custom-property filters below the top level with conversion rates,
// behavioural filters nested or on visit dimensions, "is" goal filters
// naming no configured goal, each metric's requirements (conversion rates
// need a goal, scroll_depth and time_on_page a page, views_per_visit no page
// filter and no dimensions), session metrics with event dimensions and
// event metrics with session-only dimensions, and include.time_labels
// without a time dimension.
func (q *Query) Validate(site QuerySite) error {
	body, err := q.MarshalJSON()
	if err != nil {
		return err
	}
	if _, err := ParseQuery(body); err != nil {
		return err
	}
	checks := []func(*Query, *QuerySite) error{
		validateSegments,
		validateOrderBy,
		validateTopLevelOnly,
		validateConversionPropsFilters,
		validateBehavioural,
		validateGoalsExist,
		validateMetrics,
		validateInclude,
	}
	for _, check := range checks {
		if err := check(q, &site); err != nil {
			return err
		}
	}
	return nil
}

// leafVisit walks the leaves of a filter forest depth first: depth counts
// the operators above a leaf, behavioural the has_done/has_not_done ones.
func leafVisit(filters []Filter, fn func(f *Filter, depth, behavioural int) bool) {
	var walk func(fs []Filter, depth, behavioural int) bool
	walk = func(fs []Filter, depth, behavioural int) bool {
		for i := range fs {
			f := &fs[i]
			if isLeafOp(f.Op) {
				if !fn(f, depth, behavioural) {
					return false
				}
				continue
			}
			b := behavioural
			if f.Op == "has_done" || f.Op == "has_not_done" {
				b++
			}
			if !walk(f.Children, depth+1, b) {
				return false
			}
		}
		return true
	}
	walk(filters, 0, 0)
}

// firstLeaf returns the first leaf for which match holds, or nil.
func firstLeaf(filters []Filter, match func(f *Filter, depth, behavioural int) bool) *Filter {
	var found *Filter
	leafVisit(filters, func(f *Filter, depth, behavioural int) bool {
		if match(f, depth, behavioural) {
			found = f
			return false
		}
		return true
	})
	return found
}

func queryInvalid(msg string) error { return &QueryError{Msg: msg} }

// validateSegments: saved segments are Plausible's; webstats has none, so
// every segment id is unknown.
func validateSegments(q *Query, _ *QuerySite) error {
	ids := 0
	leafVisit(q.Filters, func(f *Filter, _, _ int) bool {
		if f.Dimension == "segment" {
			ids += len(f.Clauses)
		}
		return true
	})
	switch {
	case ids > maxSegmentIDs:
		return queryInvalid("Invalid filters. You can only use up to 10 segment filters in a query.")
	case firstLeaf(q.Filters, func(f *Filter, _, _ int) bool { return f.Dimension == "segment" }) != nil:
		return queryInvalid("Invalid filters. Some segments don't exist or aren't accessible.")
	}
	return nil
}

func validateOrderBy(q *Query, _ *QuerySite) error {
	for _, o := range q.OrderBy {
		if slices.Contains(q.Metrics, o.Key) || slices.Contains(q.Dimensions, o.Key) {
			continue
		}
		key := elixirInspect(o.Key)
		if isQueryMetric(o.Key) {
			key = ":" + o.Key
		}
		dir := ":asc"
		if o.Desc {
			dir = ":desc"
		}
		return queryInvalid("Invalid order_by entry '{" + key + ", " + dir + "}'. Entry is not a queried metric or dimension.")
	}
	return nil
}

func validateTopLevelOnly(q *Query, _ *QuerySite) error {
	f := firstLeaf(q.Filters, func(f *Filter, depth, behavioural int) bool {
		return depth > 0 && behavioural == 0 && (f.Dimension == "event:goal" || f.Dimension == "event:hostname")
	})
	if f != nil {
		return queryInvalid("Invalid filters. Dimension `" + f.Dimension + "` can only be filtered at the top level.")
	}
	return nil
}

func validateConversionPropsFilters(q *Query, _ *QuerySite) error {
	if !slices.Contains(q.Metrics, "conversion_rate") && !slices.Contains(q.Metrics, "group_conversion_rate") {
		return nil
	}
	if firstLeaf(q.Filters, func(f *Filter, depth, _ int) bool { return depth > 0 && isPropsDimension(f.Dimension) }) != nil {
		return queryInvalid("Invalid filters. When `conversion_rate` or `group_conversion_rate` metrics are used, custom property filters can only be used on top level.")
	}
	return nil
}

func validateBehavioural(q *Query, _ *QuerySite) error {
	var err error
	leafVisit(q.Filters, func(f *Filter, _, behavioural int) bool {
		switch {
		case behavioural > 1:
			err = queryInvalid("Invalid filters. Behavioral filters (has_done, has_not_done) cannot be nested.")
		case behavioural == 1 && !isEventDimension(f.Dimension):
			err = queryInvalid("Invalid filters. Behavioral filters (has_done, has_not_done) can only be used with event dimension filters.")
		}
		return err == nil
	})
	return err
}

// validateGoalsExist: every clause of an "is" event:goal filter, anywhere in
// the tree, names a configured goal (ignoring case under case_sensitive
// false). "contains" may match none.
func validateGoalsExist(q *Query, site *QuerySite) error {
	var err error
	leafVisit(q.Filters, func(f *Filter, _, _ int) bool {
		if f.Op != "is" || f.Dimension != "event:goal" {
			return true
		}
		for _, c := range f.Clauses {
			known := slices.ContainsFunc(site.Goals, func(g string) bool {
				return g == c || f.CaseInsensitive && strings.EqualFold(g, c)
			})
			if !known {
				err = queryInvalid("Invalid filters. The goal `" + c + "` is not configured for this site. Find out how to configure goals here: https://plausible.io/docs/stats-api#filtering-by-goals")
				return false
			}
		}
		return true
	})
	return err
}

// filtersOnDimension reports a leaf on dim outside behavioural filters.
func filtersOnDimension(filters []Filter, dim string) bool {
	return firstLeaf(filters, func(f *Filter, _, behavioural int) bool {
		return behavioural == 0 && f.Dimension == dim
	}) != nil
}

func validateMetrics(q *Query, _ *QuerySite) error {
	for _, m := range q.Metrics {
		switch m {
		case "conversion_rate", "group_conversion_rate":
			if !slices.Contains(q.Dimensions, "event:goal") && !filtersOnDimension(q.Filters, "event:goal") {
				return queryInvalid("Metric `" + m + "` can only be queried with event:goal filters or dimensions.")
			}
		case "scroll_depth":
			topLevelPage := slices.ContainsFunc(q.Filters, func(f Filter) bool { return isLeafOp(f.Op) && f.Dimension == "event:page" })
			if !slices.Contains(q.Dimensions, "event:page") && !topLevelPage {
				return queryInvalid("Metric `scroll_depth` can only be queried with event:page filters or dimensions.")
			}
		case "views_per_visit":
			if filtersOnDimension(q.Filters, "event:page") {
				return queryInvalid("Metric `views_per_visit` cannot be queried with a filter on `event:page`.")
			}
			if len(q.Dimensions) > 0 {
				return queryInvalid("Metric `views_per_visit` cannot be queried with `dimensions`.")
			}
		case "time_on_page":
			if !slices.Contains(q.Dimensions, "event:page") && !filtersOnDimension(q.Filters, "event:page") {
				return queryInvalid("Metric `time_on_page` can only be queried with event:page filters or dimensions.")
			}
		}
	}
	return validateMetricDimensionConflict(q)
}

// validateMetricDimensionConflict: session metrics cannot be grouped by
// event dimensions, nor event metrics by session-only dimensions, except
// that event:page alone (or with event:hostname) groups session metrics by
// the entry page.
func validateMetricDimensionConflict(q *Query) error {
	var sessionMetrics, eventMetrics, eventDims, sessionDims []string
	for _, m := range q.Metrics {
		switch {
		case slices.Contains(sessionOnlyMetrics, m):
			sessionMetrics = append(sessionMetrics, m)
		case slices.Contains(eventOnlyMetrics, m):
			eventMetrics = append(eventMetrics, m)
		}
	}
	for _, d := range q.Dimensions {
		switch {
		case isEventDimension(d):
			eventDims = append(eventDims, d)
		case isSessionDimension(d):
			sessionDims = append(sessionDims, d)
		}
	}
	pageOnly := slices.Contains(eventDims, "event:page") &&
		!slices.ContainsFunc(eventDims, func(d string) bool { return d != "event:page" && d != "event:hostname" })
	switch {
	case pageOnly:
		return nil
	case len(sessionMetrics) > 0 && len(eventDims) > 0:
		return queryInvalid("Session metric(s) " + backticks(sessionMetrics) + " cannot be queried along with event dimension(s) " + backticks(eventDims))
	case len(eventMetrics) > 0 && len(sessionDims) > 0:
		return queryInvalid("Event metric(s) " + backticks(eventMetrics) + " cannot be queried along with session dimension(s) " + backticks(sessionDims))
	}
	return nil
}

func backticks(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	return strings.Join(quoted, ", ")
}

func validateInclude(q *Query, _ *QuerySite) error {
	if q.Include.TimeLabels && !slices.ContainsFunc(q.Dimensions, isTimeDimension) {
		return queryInvalid("Invalid include.time_labels: requires a time dimension.")
	}
	return nil
}

// ---------------------------------------------------------------------------
// Resolution

// Resolve validates q (see Validate) and makes it concrete for site: the
// range as instants in the website's time zone (the shorthands relative to
// site.Now, "all" from site.StatsStart), "time" resolved by the range's
// length (≤ 48 hours: time:hour; ≤ 40 days: time:day; ≤ 52 weeks:
// time:week; else time:month), the default order_by and pagination filled
// in. A range longer than MaxRangeDays days, or include.time_labels beyond
// MaxTimeLabels buckets, is a *QueryError.
func (q *Query) Resolve(site QuerySite) (ResolvedQuery, error) {
	if err := q.Validate(site); err != nil {
		return ResolvedQuery{}, err
	}
	loc := site.Location
	if loc == nil {
		loc = time.UTC
	}
	now := site.Now
	if now.IsZero() {
		now = time.Now()
	}
	from, to := q.DateRange.instants(loc, now.Truncate(time.Second), site.StatsStart)
	r := ResolvedQuery{Query: q.clone(), Location: loc, From: from.In(loc), To: to.In(loc)}
	r.FirstDay, r.LastDay = DateFromTime(r.From), DateFromTime(r.To)
	if int64(r.LastDay)-int64(r.FirstDay) >= MaxRangeDays {
		return ResolvedQuery{}, &QueryError{Msg: fmt.Sprintf("Invalid date_range. A query may span at most %d days.", MaxRangeDays), Limit: "MaxRangeDays"}
	}
	if site.Domain != "" {
		r.SiteID = site.Domain
	}
	resolved := r.resolveTime()
	for i, d := range r.Dimensions {
		if d == "time" {
			r.Dimensions[i] = resolved
		}
	}
	if r.OrderBy == nil {
		if td := r.TimeDimension(); td != "" {
			r.OrderBy = append(r.OrderBy, OrderBy{Key: td})
		}
		r.OrderBy = append(r.OrderBy, OrderBy{Key: r.Metrics[0], Desc: true})
	}
	for i, o := range r.OrderBy {
		if o.Key == "time" {
			r.OrderBy[i].Key = resolved
		}
	}
	if r.Pagination.Limit == 0 {
		r.Pagination.Limit = MaxQueryLimit
	}
	if r.Include.TimeLabels && r.timeLabelCount() > MaxTimeLabels {
		return ResolvedQuery{}, &QueryError{Msg: fmt.Sprintf("Invalid include.time_labels: more than %d time buckets.", MaxTimeLabels), Limit: "MaxTimeLabels"}
	}
	return r, nil
}

// clone copies q's slices, so that a ResolvedQuery shares nothing with q.
func (q *Query) clone() Query {
	c := *q
	c.Metrics = slices.Clone(q.Metrics)
	c.Dimensions = slices.Clone(q.Dimensions)
	c.OrderBy = slices.Clone(q.OrderBy)
	c.Filters = cloneFilters(q.Filters)
	return c
}

func cloneFilters(fs []Filter) []Filter {
	if fs == nil {
		return nil
	}
	out := make([]Filter, len(fs))
	for i, f := range fs {
		f.Clauses = slices.Clone(f.Clauses)
		f.Children = cloneFilters(f.Children)
		out[i] = f
	}
	return out
}

// instants resolves the range to inclusive instants: whole local days run
// from the day's first instant to its last second.
func (d DateRange) instants(loc *time.Location, now time.Time, statsStart Date) (from, to time.Time) {
	today := DateFromTime(now.In(loc))
	days := func(a, b Date) (time.Time, time.Time) { return localDayStart(a, loc), localDayEnd(b, loc) }
	y, m, _ := today.Civil()
	switch p := d.Period; p {
	case "":
		if !d.From.IsZero() {
			return d.From, d.To
		}
		return days(d.FromDay, d.ToDay)
	case "day":
		return localDayStart(today, loc), now
	case "24h":
		return now.Add(-24 * time.Hour), now
	case "month":
		return days(DateOf(y, m, 1), DateOf(y, m+1, 0))
	case "year":
		return days(DateOf(y, 1, 1), DateOf(y, 12, 31))
	case "all":
		start := statsStart
		if start == 0 {
			start = today
		}
		return days(start, today)
	default:
		n, _ := periodCount(p)
		if n > 0 {
			return days(today-Date(n), today-1)
		}
		return days(DateOf(y, m+time.Month(n), 1), DateOf(y, m, 0))
	}
}

// localDayStart is the first instant of local day d: the later one when midnight
// happens twice, the end of the gap when midnight is skipped (as Plausible
// resolves them).
func localDayStart(d Date, loc *time.Location) time.Time {
	y, m, dd := d.Civil()
	return wallInstant(loc, y, m, dd, 0, 0, 0, true)
}

// localDayEnd is the last second of local day d: the earlier 23:59:59 when it
// happens twice, the instant before the gap when it is skipped.
func localDayEnd(d Date, loc *time.Location) time.Time {
	y, m, dd := d.Civil()
	return wallInstant(loc, y, m, dd, 23, 59, 59, false)
}

// wallInstant returns the instant whose wall clock in loc reads the given
// time: of two, the latest or the earliest; of none (a gap), the end of the
// gap, or its last second before when !latest.
func wallInstant(loc *time.Location, y int, m time.Month, d, hh, mm, ss int, latest bool) time.Time {
	naive := time.Date(y, m, d, hh, mm, ss, 0, time.UTC)
	var found []time.Time
	var offsets []int
	for _, probe := range []time.Duration{-36 * time.Hour, 0, 36 * time.Hour} {
		_, off := naive.Add(probe).In(loc).Zone()
		if !slices.Contains(offsets, off) {
			offsets = append(offsets, off)
		}
	}
	for _, off := range offsets {
		c := naive.Add(-time.Duration(off) * time.Second)
		if c.In(loc).Format(time.DateTime) == naive.Format(time.DateTime) {
			found = append(found, c)
		}
	}
	if len(found) > 0 {
		slices.SortFunc(found, time.Time.Compare)
		if latest {
			return found[len(found)-1]
		}
		return found[0]
	}
	// A gap: read the wall clock with the offset before it, which lands past
	// the transition; the zone that instant is in starts at the gap's end.
	_, before := naive.Add(-36 * time.Hour).In(loc).Zone()
	start, _ := naive.Add(-time.Duration(before) * time.Second).In(loc).ZoneBounds()
	if latest || start.IsZero() {
		return start
	}
	return start.Add(-time.Second)
}

// resolveTime is the size "time" stands for over this range, by Plausible's
// rule on the range's length (truncated to whole hours, days, weeks).
func (r *ResolvedQuery) resolveTime() string {
	span := r.To.Sub(r.From)
	switch {
	case span/time.Hour <= 48:
		return "time:hour"
	case span/(24*time.Hour) <= 40:
		return "time:day"
	case span/(7*24*time.Hour) <= 52:
		return "time:week"
	}
	return "time:month"
}

// TimeDimension returns the query's time dimension ("time:hour", "time:day",
// "time:week" or "time:month"), or "" if it has none.
func (r *ResolvedQuery) TimeDimension() string {
	for _, d := range r.Dimensions {
		if isTimeDimension(d) {
			return d
		}
	}
	return ""
}

// Contains reports whether an event at t falls in the range.
func (r *ResolvedQuery) Contains(t time.Time) bool {
	t = t.Truncate(time.Second)
	return !t.Before(r.From) && !t.After(r.To)
}

// TimeBucket returns the label of the time dimension's bucket holding t, in
// the website's time zone: "2021-01-01 13:00:00" for hours, "2021-01-01"
// for days, the week's Monday clamped to the range's first day for weeks
// ("2020-12-20" for a range starting on Sunday 2020-12-20), the first of the
// month for months. "" when the query has no time dimension.
func (r *ResolvedQuery) TimeBucket(t time.Time) string {
	lt := t.In(r.Location)
	switch r.TimeDimension() {
	case "time:hour":
		return lt.Format("2006-01-02 15:00:00")
	case "time:day":
		return lt.Format(time.DateOnly)
	case "time:week":
		return max(weekMonday(DateFromTime(lt)), r.FirstDay).String()
	case "time:month":
		y, m, _ := lt.Date()
		return DateOf(y, m, 1).String()
	}
	return ""
}

// DayBucket is the time:day, time:week or time:month bucket of a hit
// counted under local day d (SPEC §10.1: over whole days a hit is in the
// bucket of its stored day, whatever the time zone is now), as TimeBucket
// reads it of a time; "" for another dimension.
func (r *ResolvedQuery) DayBucket(d Date) string {
	switch r.TimeDimension() {
	case "time:day":
		return d.String()
	case "time:week":
		return max(weekMonday(d), r.FirstDay).String()
	case "time:month":
		y, m, _ := d.Civil()
		return DateOf(y, m, 1).String()
	}
	return ""
}

// weekMonday returns the Monday starting d's week.
func weekMonday(d Date) Date {
	return d - Date((int(d.Weekday())+6)%7)
}

// TimeLabels lists every bucket of the time dimension over the range, as
// include.time_labels returns them: each day; the first day and then each
// Monday for weeks; the first of each month from the month of the first
// day; each local hour from the hour of From to To. Nil without a time
// dimension. The slice is the caller's.
func (r *ResolvedQuery) TimeLabels() []string {
	var out []string
	r.eachLabel(func(label string) bool {
		out = append(out, label)
		return true
	})
	return out
}

// timeLabelCount counts TimeLabels without building them.
func (r *ResolvedQuery) timeLabelCount() int {
	n := 0
	r.eachLabel(func(string) bool {
		n++
		return n <= MaxTimeLabels
	})
	return n
}

func (r *ResolvedQuery) eachLabel(yield func(string) bool) {
	switch r.TimeDimension() {
	case "time:day":
		for d := r.FirstDay; d <= r.LastDay; d++ {
			if !yield(d.String()) {
				return
			}
		}
	case "time:week":
		for d := r.FirstDay; d <= r.LastDay; d = weekMonday(d) + 7 {
			if !yield(d.String()) {
				return
			}
		}
	case "time:month":
		y, m, _ := r.FirstDay.Civil()
		for d := DateOf(y, m, 1); d <= r.LastDay; {
			if !yield(d.String()) {
				return
			}
			y, m, _ := d.Civil()
			d = DateOf(y, m+1, 1)
		}
	case "time:hour":
		lt := r.From.In(r.Location)
		t := wallInstant(r.Location, lt.Year(), lt.Month(), lt.Day(), lt.Hour(), 0, 0, false)
		if t.After(r.From) { // the hour began in a gap
			t = r.From
		}
		last := ""
		for ; !t.After(r.To); t = t.Add(time.Hour) {
			label := t.In(r.Location).Format("2006-01-02 15:00:00")
			if label == last { // a repeated hour when clocks go back
				continue
			}
			last = label
			if !yield(label) {
				return
			}
		}
	}
}

// Echo returns the normalised query a response echoes: the range as two
// datetimes in the website's offset, "time" resolved, the default order_by
// and pagination filled in, include with its true keys only. Posting it
// back as a query resolves to the same ResolvedQuery.
func (r *ResolvedQuery) Echo() QueryEcho {
	e := QueryEcho{
		SiteID:     r.SiteID,
		Metrics:    slices.Clone(r.Metrics),
		DateRange:  [2]string{formatQueryInstant(r.From), formatQueryInstant(r.To)},
		Filters:    cloneFilters(r.Filters),
		Dimensions: slices.Clone(r.Dimensions),
		OrderBy:    slices.Clone(r.OrderBy),
		Include:    r.Include,
		Pagination: r.Pagination,
	}
	if e.Filters == nil {
		e.Filters = []Filter{}
	}
	if e.Dimensions == nil {
		e.Dimensions = []string{}
	}
	return e
}

// hostnameDimensions maps the dimensions an event:hostname filter also
// applies to, to the session hostname it applies as (plausible-api.md §4).
var hostnameDimensions = map[string]string{
	"visit:source": "visit:entry_page_hostname", "visit:referrer": "visit:entry_page_hostname",
	"visit:entry_page": "visit:entry_page_hostname", "visit:utm_medium": "visit:entry_page_hostname",
	"visit:utm_source": "visit:entry_page_hostname", "visit:utm_campaign": "visit:entry_page_hostname",
	"visit:utm_content": "visit:entry_page_hostname", "visit:utm_term": "visit:entry_page_hostname",
	"visit:exit_page": "visit:exit_page_hostname",
}

// EffectiveFilters returns the filters to evaluate: Filters plus, for each
// top-level event:hostname filter and each dimension among source,
// referrer, the UTM fields and the entry page, the same filter on
// visit:entry_page_hostname (visit:exit_page_hostname for the exit page),
// so that one host does not show sources that arrived on another. The echo
// keeps Filters as asked. The slice is the caller's.
func (r *ResolvedQuery) EffectiveFilters() []Filter {
	out := cloneFilters(r.Filters)
	for _, d := range r.Dimensions {
		target, ok := hostnameDimensions[d]
		if !ok {
			continue
		}
		for _, f := range r.Filters {
			if isLeafOp(f.Op) && f.Dimension == "event:hostname" {
				f.Dimension = target
				f.Clauses = slices.Clone(f.Clauses)
				out = append(out, f)
			}
		}
	}
	return out
}

// MarshalJSON writes the echo (Echo), not the embedded Query's request form.
func (r ResolvedQuery) MarshalJSON() ([]byte, error) { return json.Marshal(r.Echo()) }

// ---------------------------------------------------------------------------
// Elixir's inspect, for the values Plausible's messages quote

// elixirInspectBudget bounds one quoted value in a message (ours: Elixir bounds
// each collection to 50 items and each string to 4,096 bytes, which nested
// hostile input multiplies).
const elixirInspectBudget = 8192

// elixirInspect writes a decoded JSON value as Elixir's inspect/2 does with
// charlists: :as_lists.
func elixirInspect(v any) string {
	var b strings.Builder
	elixirInspectTo(&b, v)
	return b.String()
}

func elixirInspectTo(b *strings.Builder, v any) {
	if b.Len() > elixirInspectBudget {
		b.WriteString("...")
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("nil")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		elixirInspectString(b, v)
	case json.Number:
		if isJSONInteger(v) {
			s := strings.TrimPrefix(string(v), "-")
			if s = strings.TrimLeft(s, "0"); s == "" {
				s = "0"
			} else if strings.HasPrefix(string(v), "-") {
				s = "-" + s
			}
			b.WriteString(s)
			return
		}
		f, _ := strconv.ParseFloat(string(v), 64)
		b.WriteString(elixirFloat(f))
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == 50 {
				b.WriteString("...")
				break
			}
			elixirInspectTo(b, x)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("%{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == 50 {
				b.WriteString("...")
				break
			}
			elixirInspectString(b, k)
			b.WriteString(" => ")
			elixirInspectTo(b, v[k])
		}
		b.WriteByte('}')
	}
}

// elixirInspectString quotes s as Elixir does: escapes in a printable string,
// else the bytes as a bitstring <<…>>.
func elixirInspectString(b *strings.Builder, s string) {
	printable := utf8.ValidString(s)
	for _, r := range s {
		if r < 0x20 && !strings.ContainsRune("\n\r\t\v\b\f\x1b\a", r) || r >= 0x7f && r < 0xa0 {
			printable = false
			break
		}
	}
	if !printable {
		b.WriteString("<<")
		for i := 0; i < len(s); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == 50 {
				b.WriteString("...")
				break
			}
			b.WriteString(strconv.Itoa(int(s[i])))
		}
		b.WriteString(">>")
		return
	}
	tail := ""
	if len(s) > 4096 {
		cut := 4096
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, tail = s[:cut], " <> ..."
	}
	b.WriteByte('"')
	for i, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\x1b':
			b.WriteString(`\e`)
		case '\a':
			b.WriteString(`\a`)
		case '#':
			if strings.HasPrefix(s[i:], "#{") {
				b.WriteString(`\#`)
			} else {
				b.WriteByte('#')
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	b.WriteString(tail)
}

// elixirFloat formats f as Erlang's shortest round-trip form: the shorter
// of plain ("100.0") and scientific ("1.0e3") notation, plain on a tie.
func elixirFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // -1.2345e+06
	mant, exp, _ := strings.Cut(sci, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	sciForm := mant + "e" + strconv.Itoa(e)
	plain := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(plain, ".") {
		plain += ".0"
	}
	if len(sciForm) < len(plain) {
		return sciForm
	}
	return plain
}

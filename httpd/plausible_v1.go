package httpd

// Plausible's Stats API v1 (plausible-api.md §8), answered by translating
// each request into an engine.Query: the v1 period and anchor date become
// an explicit range of local days, the v1 filter string becomes v2 filters,
// and the v2 rows are reshaped into v1's per-endpoint bodies.

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
)

// statsByName serves GET /stats/{id}: the v1 endpoints aggregate,
// timeseries and breakdown by name, and the phpAnalytics statistics of
// website {id} (a number) otherwise, unchanged.
func (s *Server) statsByName(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	switch p.ByName("id") {
	case "aggregate":
		s.plausible(s.v1Aggregate)(w, r, p)
	case "timeseries":
		s.plausible(s.v1Timeseries)(w, r, p)
	case "breakdown":
		s.plausible(s.v1Breakdown)(w, r, p)
	default:
		s.apiServe(s.stats)(w, r, p)
	}
}

// statsVisitors serves /stats/{id}/visitors: GET /stats/realtime/visitors,
// and for any other path or method the phpAnalytics 404 as before.
func (s *Server) statsVisitors(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	if p.ByName("id") == "realtime" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		s.plausible(s.v1Realtime)(w, r, p)
		return
	}
	s.notFound(w, r)
}

// v1Realtime serves GET /api/v1/stats/realtime/visitors: a bare integer, the
// visitors of the last 5 minutes.
func (s *Server) v1Realtime(w http.ResponseWriter, r *http.Request, c *call) error {
	q := parseQuery(r.URL.RawQuery)
	web, err := s.statsSite(r, c, q.get("site_id"))
	if err != nil {
		return err
	}
	rt, err := s.e.Owner(c.account.ID).Realtime(r.Context(), web.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rt.Visitors)
	return nil
}

// v1Request is a v1 stats request, checked in Plausible's order: site,
// period, date, (property or interval), filters, metrics.
type v1Request struct {
	web      engine.Website
	q        *queryParams
	from, to engine.Date
	period   string
	filters  []engine.Filter
	metrics  []string
	dims     []string // the breakdown's property
}

// v1Periods are the periods v1 accepts.
var v1Periods = []string{"day", "7d", "30d", "month", "6mo", "12mo", "custom"}

// v1Begin reads the site, the period and the date of a v1 request.
func (s *Server) v1Begin(r *http.Request, c *call) (*v1Request, error) {
	q := parseQuery(r.URL.RawQuery)
	web, err := s.statsSite(r, c, q.get("site_id"))
	if err != nil {
		return nil, err
	}
	v := &v1Request{web: web, q: q, period: q.get("period")}
	if q.has("period") && !slices.Contains(v1Periods, v.period) {
		return nil, badRequest("Error parsing `period` parameter: invalid period `" + v.period + "`. Please find accepted values in our docs: https://plausible.io/docs/stats-api#time-periods")
	}
	if v.period == "" {
		v.period = "30d"
	}
	today, err := s.e.Owner(c.account.ID).Today(r.Context(), web.ID)
	if err != nil {
		return nil, err
	}
	v.from, v.to, err = v1Range(v.period, q, today)
	return v, err
}

// v1Range resolves a v1 period and its anchor date (the date parameter,
// default today) into inclusive local days, as Plausible's v1 does: 7d is
// the anchor and the 6 days before it, 30d the anchor and the 30 days
// before it (31 days, as Plausible counts), 6mo and 12mo end with the
// anchor's month (included, unlike v2).
func v1Range(period string, q *queryParams, today engine.Date) (from, to engine.Date, err error) {
	if period == "custom" {
		if !q.has("date") {
			return 0, 0, badRequest("The `date` parameter is required when using a custom period. See https://plausible.io/docs/stats-api#time-periods")
		}
		a, b, ok := strings.Cut(q.get("date"), ",")
		from, errA := engine.ParseDate(strings.TrimSpace(a))
		to, errB := engine.ParseDate(strings.TrimSpace(b))
		if !ok || errA != nil || errB != nil || strings.Contains(b, ",") {
			return 0, 0, badRequest("Invalid format for `date` parameter. When using a custom period, please include two ISO-8601 formatted dates joined by a comma. See https://plausible.io/docs/stats-api#time-periods")
		}
		return from, to, nil
	}
	d := today
	if q.has("date") {
		raw := q.get("date")
		if d, err = engine.ParseDate(raw); err != nil {
			why := "invalid_date"
			if !isISODateShape(raw) {
				why = "invalid_format"
			}
			return 0, 0, badRequest("Error parsing `date` parameter: " + why + ". Please specify a valid date in ISO-8601 format.")
		}
	}
	y, m, _ := d.Civil()
	monthEnd := engine.DateOf(y, m+1, 1) - 1
	switch period {
	case "day":
		return d, d, nil
	case "7d":
		return d - 6, d, nil
	case "30d":
		return d - 30, d, nil
	case "month":
		return engine.DateOf(y, m, 1), monthEnd, nil
	case "6mo":
		return engine.DateOf(y, m-5, 1), monthEnd, nil
	default: // 12mo
		return engine.DateOf(y, m-11, 1), monthEnd, nil
	}
}

// isISODateShape reports whether s looks like YYYY-MM-DD.
func isISODateShape(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i := range len(s) {
		if i != 4 && i != 7 && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

// v1Filters parses and checks the filters parameter.
func (s *Server) v1Filters(r *http.Request, c *call, v *v1Request) error {
	var err error
	if v.filters, err = parseV1Filters(v.q.get("filters")); err != nil {
		return err
	}
	var goals []engine.Goal
	for _, f := range v.filters {
		if !v1Property(f.Dimension) {
			return badRequest("Invalid filter property '" + f.Dimension + "'. Please provide a valid filter property: https://plausible.io/docs/stats-api#properties")
		}
		if f.Dimension != "event:goal" || f.Op != "is" {
			continue
		}
		if goals == nil {
			var err error
			if goals, err = s.e.Owner(c.account.ID).Goals(r.Context(), v.web.ID); err != nil {
				return err
			}
		}
		for _, name := range f.Clauses {
			if !slices.ContainsFunc(goals, func(g engine.Goal) bool { return g.DisplayName == name }) {
				msg := "The goal `" + name + "` is not configured for this site. "
				if path, ok := strings.CutPrefix(name, "Visit "); ok {
					msg = "The pageview goal for the pathname `" + path + "` is not configured for this site. "
				}
				return badRequest(msg + "Find out how to configure goals here: https://plausible.io/docs/stats-api#filtering-by-goals")
			}
		}
	}
	return nil
}

// v1Property reports whether p is a property v1 filters and breaks down by:
// an event or visit dimension, a goal or a custom property.
func v1Property(p string) bool {
	if strings.HasPrefix(p, "event:props:") {
		return len(p) > len("event:props:")
	}
	return (strings.HasPrefix(p, "event:") || strings.HasPrefix(p, "visit:")) &&
		slices.Contains(engine.QueryDimensionNames(), p)
}

// maxV1Filters bounds the filters of one v1 filter string (each becomes a
// filter of the engine's query, whose own bounds apply too).
const maxV1Filters = 100

// parseV1Filters translates a v1 filter string into v2 filters, as
// Plausible's v1 parser reads it: ";" separates filters (ANDed), "==" or
// "!=" splits each into property and value, "|" separates values (any
// matches; "\|" is a literal pipe), "!=" negates, a "*" makes the value an
// anchored glob ("*" and "**" both match any run of characters: a matches
// or matches_not filter) except in an event:goal value (a goal's display
// name, "Visit /blog*", is matched exactly), and a visit:country value that is not two
// letters drops its filter, as v1 does.
//
// A malformed part (no "==" or "!=", an empty property or value, two
// operators) is a 400 naming it. Plausible's v1 drops such a part silently
// (plausible/analytics lib/plausible/stats/filters/stats_api_filter_parser.ex,
// parse_single_filter's :error, rejected), answering as if it had not been
// sent: a client that misspelled its filter would read unfiltered numbers
// as filtered ones. Empty parts ("a==b;") are no filter and no error.
func parseV1Filters(s string) ([]engine.Filter, error) {
	var out []engine.Filter
	for part := range strings.SplitSeq(s, ";") {
		if len(out) == maxV1Filters {
			break
		}
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kv := splitNonEmpty(part)
		if len(kv) != 2 {
			return nil, badRequest("Invalid filter '" + part + "'. Please provide filters as property==value or property!=value, separated by ;: https://plausible.io/docs/stats-api#filtering")
		}
		key, raw := kv[0], kv[1]
		negated := strings.Contains(part, "!=") && key != "event:goal"
		values := splitPipes(raw)
		f := engine.Filter{Op: "is", Dimension: key, Clauses: values}
		// A goal is named by its display name, in which "*" is the
		// pageview goal's own wildcard ("Visit /blog*"): never a glob here.
		if strings.Contains(raw, "*") && key != "event:goal" {
			f.Op, f.Clauses = "matches", []string{globRegexp(values)}
			if negated {
				f.Op = "matches_not"
			}
		} else if negated {
			f.Op = "is_not"
		}
		if key == "visit:country" && slices.ContainsFunc(values, func(v string) bool { return len(v) != 2 }) {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

// splitNonEmpty splits a filter on "==" and "!=", trimming the parts and
// dropping empty ones, as Plausible's String.split(…, trim: true).
func splitNonEmpty(s string) []string {
	var parts []string
	for s != "" {
		i, j := strings.Index(s, "=="), strings.Index(s, "!=")
		if i < 0 || (j >= 0 && j < i) {
			i = j
		}
		seg := s
		if i >= 0 {
			seg, s = s[:i], s[i+2:]
		} else {
			s = ""
		}
		if seg = strings.TrimSpace(seg); seg != "" {
			parts = append(parts, seg)
		}
	}
	return parts
}

// splitPipes splits a v1 value on "|" not preceded by "\", and turns "\|"
// into "|".
func splitPipes(s string) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '|':
			b.WriteByte('|')
			i++
		case s[i] == '|':
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(s[i])
		}
	}
	return append(out, b.String())
}

// globRegexp is the anchored RE2 expression matching any of the globs.
func globRegexp(globs []string) string {
	alts := make([]string, len(globs))
	for i, g := range globs {
		parts := strings.Split(strings.ReplaceAll(g, "**", "*"), "*")
		for j, p := range parts {
			parts[j] = regexp.QuoteMeta(p)
		}
		alts[i] = strings.Join(parts, ".*")
	}
	if len(alts) == 1 {
		return "^" + alts[0] + "$"
	}
	return "^(?:" + strings.Join(alts, "|") + ")$"
}

// v1Metrics parses and checks the metrics parameter (default visitors),
// with Plausible's v1 rules and messages.
func (v *v1Request) v1Metrics() error {
	raw := "visitors"
	if v.q.has("metrics") {
		raw = v.q.get("metrics")
	}
	metrics := strings.Split(raw, ",")
	if len(metrics) > len(engine.QueryMetricNames()) {
		return badRequest("Metrics cannot be queried multiple times.")
	}
	for i, m := range metrics {
		if slices.Contains(metrics[:i], m) {
			return badRequest("Metrics cannot be queried multiple times.")
		}
	}
	for _, m := range metrics {
		if err := v.checkMetric(m); err != nil {
			return err
		}
	}
	v.metrics = metrics
	return nil
}

// filtering reports whether a filter is on dimension dim.
func (v *v1Request) filtering(dim string) bool {
	return slices.ContainsFunc(v.filters, func(f engine.Filter) bool { return f.Dimension == dim })
}

// checkMetric is Plausible's v1 validate_metric.
func (v *v1Request) checkMetric(m string) error {
	switch m {
	case "visitors", "pageviews", "events":
		return nil
	case "time_on_page":
		switch {
		case v.filtering("event:goal"):
			return badRequest("Metric `" + m + "` cannot be queried when filtering by `event:goal`")
		case v.filtering("event:name"):
			return badRequest("Metric `" + m + "` cannot be queried when filtering by `event:name`")
		case slices.Equal(v.dims, []string{"event:page"}):
			return nil
		case len(v.dims) > 0:
			return badRequest("Metric `" + m + "` is not supported in breakdown queries (except `event:page` breakdown)")
		case v.filtering("event:page"):
			return nil
		}
		return badRequest("Metric `" + m + "` can only be queried in a page breakdown or with a page filter.")
	case "conversion_rate":
		if slices.Equal(v.dims, []string{"event:goal"}) || v.filtering("event:goal") {
			return nil
		}
		return badRequest("Metric `" + m + "` can only be queried in a goal breakdown or with a goal filter")
	case "views_per_visit":
		switch {
		case v.filtering("event:page"):
			return badRequest("Metric `" + m + "` cannot be queried with a filter on `event:page`.")
		case len(v.dims) > 0:
			return badRequest("Metric `" + m + "` is not supported in breakdown queries.")
		}
		return v.checkSessionMetric(m)
	case "visits", "bounce_rate", "visit_duration":
		return v.checkSessionMetric(m)
	}
	return badRequest("The metric `" + m + "` is not recognized. Find valid metrics from the documentation: https://plausible.io/docs/stats-api#metrics")
}

func eventOnly(dim string) bool {
	return dim == "event:name" || dim == "event:goal" || strings.HasPrefix(dim, "event:props:")
}

func (v *v1Request) checkSessionMetric(m string) error {
	if len(v.dims) == 1 && eventOnly(v.dims[0]) {
		return badRequest("Session metric `" + m + "` cannot be queried for breakdown by `" + v.dims[0] + "`.")
	}
	for _, f := range v.filters {
		if eventOnly(f.Dimension) {
			return badRequest("Session metric `" + m + "` cannot be queried when using a filter on `" + f.Dimension + "`.")
		}
	}
	return nil
}

// query is the engine query of the request over [from, to].
func (v *v1Request) query(from, to engine.Date, metrics, dims []string) engine.Query {
	return engine.Query{
		SiteID: v.web.Domain, Metrics: metrics, Dimensions: dims, Filters: v.filters,
		DateRange: engine.DateRange{FromDay: from, ToDay: to},
		// with_imported=true merges the imported layer (imports_v1.go).
		Include: engine.Include{Imports: v.q.get("with_imported") == "true"},
	}
}

// v1Aggregate serves GET /api/v1/stats/aggregate: {"results": {metric:
// {"value": v}}}, with "change" beside each value for
// compare=previous_period.
func (s *Server) v1Aggregate(w http.ResponseWriter, r *http.Request, c *call) error {
	v, err := s.v1Begin(r, c)
	if err != nil {
		return err
	}
	if err := s.v1Filters(r, c, v); err != nil {
		return err
	}
	if err := v.v1Metrics(); err != nil {
		return err
	}
	owner := s.e.Owner(c.account.ID)
	cur, err := owner.Query(r.Context(), v.web.ID, v.query(v.from, v.to, v.metrics, nil))
	if err != nil {
		return err
	}
	var prev *engine.QueryResult
	if v.q.get("compare") == "previous_period" {
		n := v.to - v.from + 1
		p, err := owner.Query(r.Context(), v.web.ID, v.query(v.from-n, v.from-1, v.metrics, nil))
		if err != nil {
			return err
		}
		prev = &p
	}
	results := make(jsonObject, len(v.metrics))
	for i, m := range v.metrics {
		val := cur.Results[0].Metrics[i]
		o := jsonObject{{"value", v1Value(m, val)}}
		if prev != nil {
			o = append(o, jsonField{"change", v1Change(m, prev.Results[0].Metrics[i], val)})
		}
		o.sort()
		results[i] = jsonField{m, o}
	}
	results.sort()
	writeJSON(w, http.StatusOK, v1WithWarning(jsonObject{{"results", results}}, &cur, false))
	return nil
}

// v1Change is a metric's change against the previous period: percentage
// points for bounce_rate (null when it was 0), the difference to one
// decimal for conversion_rate, else the percent change rounded (100 from 0
// to more, 0 from 0 to 0).
func v1Change(metric string, old, cur any) any {
	o, n := asFloat(old), asFloat(cur)
	switch metric {
	case "bounce_rate":
		if o == 0 {
			return nil
		}
		return int64(math.Round(n - o))
	case "conversion_rate":
		return oneDecimal(math.Round((n-o)*10) / 10)
	}
	if o == 0 {
		if n > 0 {
			return 100
		}
		return 0
	}
	return int64(math.Round((n - o) / o * 100))
}

// asFloat is a metric value as a number (null is 0).
func asFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case int:
		return float64(x)
	case float64:
		return x
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return 0
}

// v1Value is a metric's value as v1 writes it: the float metrics always
// with a decimal point.
func v1Value(metric string, v any) any {
	if f, ok := v.(float64); ok {
		switch metric {
		case "views_per_visit", "conversion_rate", "group_conversion_rate", "percentage":
			return oneDecimal(f)
		}
	}
	return v
}

// oneDecimal writes a float as Plausible does: always with a decimal point
// (2.0, not 2).
type oneDecimal float64

func (f oneDecimal) MarshalJSON() ([]byte, error) {
	b := strconv.AppendFloat(nil, float64(f), 'f', -1, 64)
	if !bytes.ContainsAny(b, ".e") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// v1Intervals map v1 intervals to time dimensions.
var v1Intervals = map[string]string{"day": "time:day", "month": "time:month"}

// v1Timeseries serves GET /api/v1/stats/timeseries: one entry per bucket of
// the range, zero-filled (visit_duration, time_on_page and scroll_depth
// null; views_per_visit and conversion_rate 0.0).
func (s *Server) v1Timeseries(w http.ResponseWriter, r *http.Request, c *call) error {
	v, err := s.v1Begin(r, c)
	if err != nil {
		return err
	}
	interval := v.q.get("interval")
	if interval == "date" {
		interval = "day"
	}
	if v.q.has("interval") {
		if _, ok := v1Intervals[interval]; !ok {
			return badRequest("Error parsing `interval` parameter: invalid interval `" + interval + "`. Valid intervals are `day`, `month`")
		}
	}
	if err := s.v1Filters(r, c, v); err != nil {
		return err
	}
	if err := v.v1Metrics(); err != nil {
		return err
	}
	dim := v1Intervals[interval]
	if dim == "" {
		switch v.period {
		case "day":
			dim = "time:hour"
		case "6mo", "12mo":
			dim = "time:month"
		default:
			dim = "time:day"
		}
	}
	// The per-bucket conversion rate is v2's group rate. v2 has no
	// views_per_visit by dimension: it is answered by one aggregate query per
	// bucket (vpvBuckets), and visits stand in for it in the grouped query.
	// col maps each asked metric to its column of the grouped query.
	var metrics []string
	col := make([]int, len(v.metrics))
	for i, m := range v.metrics {
		switch m {
		case "conversion_rate":
			m = "group_conversion_rate"
		case "views_per_visit":
			m = "visits"
		}
		j := slices.Index(metrics, m)
		if j < 0 {
			metrics, j = append(metrics, m), len(metrics)
		}
		col[i] = j
	}
	vpv := slices.Contains(v.metrics, "views_per_visit")
	q := v.query(v.from, v.to, metrics, []string{dim})
	q.Include.TimeLabels = true
	byLabel := make(map[string][]any)
	var labels []string
	var meta engine.QueryResult // the first page's, for its imports warning
	// Every bucket has at most one row: page until all are read (at most
	// MaxTimeLabels/MaxQueryLimit pages).
	for {
		res, err := s.e.Owner(c.account.ID).Query(r.Context(), v.web.ID, q)
		if err != nil {
			return err
		}
		if labels == nil {
			labels = res.Meta.TimeLabels
			meta = res
		}
		for _, row := range res.Results {
			if l, ok := row.Dimensions[0].(string); ok {
				byLabel[l] = row.Metrics
			}
		}
		if len(res.Results) < engine.MaxQueryLimit {
			break
		}
		q.Pagination.Offset += engine.MaxQueryLimit
	}
	var perBucket map[string]any
	if vpv {
		if perBucket, err = s.vpvBuckets(r, c, v, dim, labels, byLabel); err != nil {
			return err
		}
	}
	results := make([]jsonObject, len(labels))
	for i, l := range labels {
		o := jsonObject{{"date", l}}
		vals, ok := byLabel[l]
		for i, m := range v.metrics {
			var val any
			switch {
			case m == "views_per_visit" && ok:
				val = v1Value(m, perBucket[l])
			case ok:
				val = v1Value(m, vals[col[i]])
			default:
				val = zeroOf(m)
			}
			o = append(o, jsonField{m, val})
		}
		o.sort()
		results[i] = o
	}
	writeJSON(w, http.StatusOK, v1WithWarning(jsonObject{{"results", results}}, &meta, true))
	return nil
}

// maxVPVBuckets bounds the buckets of a v1 timeseries with views_per_visit,
// each of which costs a query: 400 (a year of days, or 16 days of hours).
const maxVPVBuckets = 400

// vpvBuckets answers views_per_visit for each bucket that has data (those
// in byLabel), by an aggregate query over the bucket's range.
func (s *Server) vpvBuckets(r *http.Request, c *call, v *v1Request, dim string, labels []string, byLabel map[string][]any) (map[string]any, error) {
	if len(byLabel) > maxVPVBuckets {
		return nil, badRequest("Metric `views_per_visit` can be queried in a timeseries of at most " + strconv.Itoa(maxVPVBuckets) + " buckets with data on this server.")
	}
	loc, err := time.LoadLocation(v.web.Timezone)
	if err != nil {
		loc = time.UTC
	}
	out := make(map[string]any, len(byLabel))
	for _, l := range labels {
		if _, ok := byLabel[l]; !ok {
			continue
		}
		q := v.query(0, 0, []string{"views_per_visit"}, nil)
		switch dim {
		case "time:hour":
			t, err := time.ParseInLocation("2006-01-02 15:04:05", l, loc)
			if err != nil {
				return nil, err
			}
			q.DateRange = engine.DateRange{From: t, To: t.Add(time.Hour - time.Second)}
		case "time:month":
			d, err := engine.ParseDate(l)
			if err != nil {
				return nil, err
			}
			y, m, _ := d.Civil()
			q.DateRange = engine.DateRange{FromDay: max(d, v.from), ToDay: min(engine.DateOf(y, m+1, 1)-1, v.to)}
		default:
			d, err := engine.ParseDate(l)
			if err != nil {
				return nil, err
			}
			q.DateRange = engine.DateRange{FromDay: d, ToDay: d}
		}
		res, err := s.e.Owner(c.account.ID).Query(r.Context(), v.web.ID, q)
		if err != nil {
			return nil, err
		}
		out[l] = res.Results[0].Metrics[0]
	}
	return out, nil
}

// zeroOf is the value of a metric in an empty v1 timeseries bucket.
func zeroOf(metric string) any {
	switch metric {
	case "visit_duration", "time_on_page", "scroll_depth":
		return nil
	case "views_per_visit", "conversion_rate":
		return oneDecimal(0)
	}
	return 0
}

// v1DropsBlank lists the breakdown properties whose blank value v1 leaves
// out (v2 does not).
var v1DropsBlank = []string{
	"visit:city", "visit:country", "visit:region",
	"visit:utm_medium", "visit:utm_source", "visit:utm_campaign", "visit:utm_content", "visit:utm_term",
	"visit:entry_page", "visit:exit_page",
}

// v1NotBlank is the filter leaving out prop's blank value. visit:country
// cannot say is_not "" (v2 takes only 2-letter codes there, and a
// breakdown by country answered that 400 for every period): a value of at
// least one character is not blank. An unknown city is 0, not "".
func v1NotBlank(prop string) engine.Filter {
	switch prop {
	case "visit:country":
		return engine.Filter{Op: "matches", Dimension: prop, Clauses: []string{"."}}
	case "visit:city":
		return engine.Filter{Op: "is_not", Dimension: prop, Clauses: []string{"0"}}
	}
	return engine.Filter{Op: "is_not", Dimension: prop, Clauses: []string{""}}
}

// Bounds of a v1 breakdown (Plausible's).
const (
	maxV1BreakdownLimit     = 1000
	defaultV1BreakdownLimit = 100
)

// v1Breakdown serves GET /api/v1/stats/breakdown: one object per value of
// the property, keyed by the property's name without its prefix, ordered
// by the first metric descending, then by value.
func (s *Server) v1Breakdown(w http.ResponseWriter, r *http.Request, c *call) error {
	v, err := s.v1Begin(r, c)
	if err != nil {
		return err
	}
	prop := v.q.get("property")
	switch {
	case !v.q.has("property"):
		return badRequest("The `property` parameter is required. Please provide at least one property to show a breakdown by.")
	case prop == "event:hostname":
		return badRequest("Property 'event:hostname' is currently not supported for breakdowns.  Please provide a valid property for the breakdown endpoint: https://plausible.io/docs/stats-api#properties")
	case !v1Property(prop):
		return badRequest("Invalid property '" + prop + "'. Please provide a valid property for the breakdown endpoint: https://plausible.io/docs/stats-api#properties")
	}
	v.dims = []string{prop}
	if err := s.v1Filters(r, c, v); err != nil {
		return err
	}
	if err := v.v1Metrics(); err != nil {
		return err
	}
	limit, page := defaultV1BreakdownLimit, 1
	if v.q.has("limit") {
		n, err := strconv.Atoi(v.q.get("limit"))
		if err != nil || n < 1 || n > maxV1BreakdownLimit {
			return badRequest("Please provide limit as a number between 1 and 1000.")
		}
		limit = n
	}
	if v.q.has("page") {
		n, err := strconv.Atoi(v.q.get("page"))
		if err != nil || n < 1 {
			return badRequest("Please provide page as a positive number.")
		}
		page = n
	}
	// A non-goal breakdown's conversion rate is v2's group rate.
	metrics := slices.Clone(v.metrics)
	if i := slices.Index(metrics, "conversion_rate"); i >= 0 && prop != "event:goal" {
		metrics[i] = "group_conversion_rate"
	}
	dims := []string{prop}
	switch prop {
	case "visit:browser_version":
		dims = []string{"visit:browser", prop}
	case "visit:os_version":
		dims = []string{"visit:os", prop}
	}
	if slices.Contains(v1DropsBlank, prop) {
		v.filters = append(slices.Clone(v.filters), v1NotBlank(prop))
	}
	q := v.query(v.from, v.to, metrics, dims)
	off := int64(page-1) * int64(limit)
	if off > math.MaxInt32 {
		off = math.MaxInt32
	}
	q.Pagination = engine.Pagination{Offset: int(off), Limit: limit}
	res, err := s.e.Owner(c.account.ID).Query(r.Context(), v.web.ID, q)
	if err != nil {
		return err
	}
	results := make([]jsonObject, len(res.Results))
	for i, row := range res.Results {
		o := make(jsonObject, 0, len(dims)+len(v.metrics))
		for j, d := range dims {
			o = append(o, jsonField{v1Key(d), row.Dimensions[j]})
		}
		for j, m := range v.metrics {
			o = append(o, jsonField{m, v1Value(m, row.Metrics[j])})
		}
		o.sort()
		results[i] = o
	}
	writeJSON(w, http.StatusOK, v1WithWarning(jsonObject{{"results", results}}, &res, false))
	return nil
}

// v1Key is the key of a property in a v1 breakdown row: its name without
// the "event:", "visit:" or "event:props:" prefix.
func v1Key(prop string) string {
	for _, p := range []string{"event:props:", "event:", "visit:"} {
		if k, ok := strings.CutPrefix(prop, p); ok {
			return k
		}
	}
	return prop
}

// jsonObject is a JSON object written with its keys in order (Plausible's
// v1 bodies are Elixir maps, whose keys come sorted).
type jsonObject []jsonField

type jsonField struct {
	k string
	v any
}

// sort orders the fields by key.
func (o jsonObject) sort() {
	slices.SortStableFunc(o, func(a, b jsonField) int { return strings.Compare(a.k, b.k) })
}

func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, f.k)
		b.WriteByte(':')
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(f.v); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

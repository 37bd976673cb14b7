package imported

// Queries with include.imports (SPEC §14, plausible-api.md §2): the native
// answer merged with the imported layer's daily aggregates, the way
// Plausible merges its imported tables (lib/plausible/stats/imported/
// imported.ex, merge_imported: a cross join for an aggregate, a full join on
// the dimension for a breakdown or a time series), which table answers
// which dimension (lib/plausible/stats/imported/base.ex,
// property_to_table_mappings), and when it leaves them out
// (lib/plausible/stats/query.ex, get_skip_imported_reason; the warnings of
// lib/plausible/stats/query_result.ex).

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/query"
)

// The skip reasons Plausible answers in meta (lib/plausible/stats/
// query_result.ex, @imports_warnings).
const (
	UnsupportedQuery    = "unsupported_query"
	UnsupportedInterval = "unsupported_interval"
	NoData              = "no_imported_data"
	OutOfRange          = "out_of_range"
)

// Warning returns the warning Plausible answers with a skip reason; ""
// for none.
func Warning(reason string) string {
	switch reason {
	case UnsupportedQuery:
		return "Imported stats are not included in the results because query parameters are not supported. " +
			"For more information, see: https://plausible.io/docs/stats-api#filtering-imported-stats"
	case UnsupportedInterval:
		return "Imported stats are not included because the time dimension (i.e. the interval) is too short."
	}
	return ""
}

// dimension is where a dimension's imported values are: a table, the
// index of the value in its rows' Dims, and the label of a blank value
// (the native one, so that both merge into one row; "" drops blank rows).
type dimension struct {
	table string
	dim   int
	blank string
	city  bool // a GeoNames id: an int64 in rows, 0 is blank
	// country: a country code shown by its name (visit:country_name).
	country bool
}

// dimensions are the dimensions the imported layer can group by
// (base.ex's property_to_table_mappings, less what webstats does not
// keep: channels, names of places, hostnames).
var dimensions = map[string]dimension{
	"visit:source":          {"imported_sources", 0, "Direct / None", false, false},
	"visit:referrer":        {"imported_sources", 1, "Direct / None", false, false},
	"visit:utm_source":      {"imported_sources", 2, "(not set)", false, false},
	"visit:utm_medium":      {"imported_sources", 3, "(not set)", false, false},
	"visit:utm_campaign":    {"imported_sources", 4, "(not set)", false, false},
	"visit:utm_content":     {"imported_sources", 5, "(not set)", false, false},
	"visit:utm_term":        {"imported_sources", 6, "(not set)", false, false},
	"visit:entry_page":      {"imported_entry_pages", 0, "", false, false},
	"visit:exit_page":       {"imported_exit_pages", 0, "", false, false},
	"visit:country":         {"imported_locations", 0, "", false, false},
	"visit:country_name":    {"imported_locations", 0, "", false, true},
	"visit:region":          {"imported_locations", 1, "", false, false},
	"visit:city":            {"imported_locations", 2, "", true, false},
	"visit:device":          {"imported_devices", 0, "(not set)", false, false},
	"visit:browser":         {"imported_browsers", 0, "(not set)", false, false},
	"visit:browser_version": {"imported_browsers", 1, "(not set)", false, false},
	"visit:os":              {"imported_operating_systems", 0, "(not set)", false, false},
	"visit:os_version":      {"imported_operating_systems", 1, "(not set)", false, false},
	"event:page":            {"imported_pages", 1, "", false, false},
	"event:name":            {"imported_custom_events", 0, "", false, false},
}

// metrics are the metrics the merge computes.
var metrics = []string{"visitors", "visits", "pageviews", "events", "bounce_rate", "visit_duration", "views_per_visit"}

// Days returns the local days of q's echoed date range.
func Days(q *query.QueryEcho) (first, last buckets.Date, ok bool) {
	a, err1 := time.Parse(time.RFC3339, q.DateRange[0])
	b, err2 := time.Parse(time.RFC3339, q.DateRange[1])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return buckets.DateFromTime(a), buckets.DateFromTime(b), true
}

// Row is one row of a merged answer: dimension values in the order of the
// query's dimensions, metric values in the order of its metrics (the
// engine's QueryRow).
type Row struct {
	Dimensions []any
	Metrics    []any
}

// Merge merges a query's native rows and its imported aggregates by their
// dimension values.
type Merge struct {
	q           *query.QueryEcho
	wide        []string // the native rows' metrics
	first, last buckets.Date
	plan
	byKey map[string]*mergedRow
	rows  []*mergedRow // native rows first, in their order
}

// plan is how the imported layer answers a query: by which table, time
// dimension and other dimension, and which rows of it.
type plan struct {
	table  string
	tdim   string
	dim    *dimension
	filter *filter
}

// mergedRow is one row of the merge: its dimension values and the sums
// its metrics are computed from.
type mergedRow struct {
	dims   []any
	native []any // the native row's metrics (wide order), nil if none
	// The imported sums: visitors, visits, pageviews, events, and the
	// bounces, seconds and visits that bounce rate and visit duration
	// are computed from.
	visitors, visits, pageviews, events uint64
	bounces, seconds, rateVisits        uint64
}

// Decide returns the merge of q (the native answer's echo, include.imports
// set) with the imports of list over the days first to last (ok false if
// q's range has none), or why the imports do not answer q, Plausible's
// skip reason, in its order (query.ex's get_skip_imported_reason). The
// merge keeps q.
func Decide(q *query.QueryEcho, list []*Data, first, last buckets.Date, ok bool) (*Merge, string) {
	if len(list) == 0 {
		return nil, NoData
	}
	if !ok || !slices.ContainsFunc(list, func(d *Data) bool { return d.From <= last && d.To >= first }) {
		return nil, OutOfRange
	}
	for _, d := range q.Dimensions {
		if d == "time:hour" || d == "time:minute" {
			return nil, UnsupportedInterval
		}
	}
	for _, m := range q.Metrics {
		if !slices.Contains(metrics, m) {
			return nil, UnsupportedQuery
		}
	}
	p, ok := decidePlan(q)
	if !ok {
		return nil, UnsupportedQuery
	}
	return &Merge{q: q, first: first, last: last, plan: p, byKey: map[string]*mergedRow{}}, ""
}

// decidePlan returns the table, time dimension and the one other
// dimension (nil for none) the imports answer q by; false if they cannot.
func decidePlan(q *query.QueryEcho) (plan, bool) {
	var p plan
	f, tables, ok := compileFilter(q.Filters)
	if !ok {
		return p, false
	}
	p.filter = f
	for _, d := range q.Dimensions {
		if strings.HasPrefix(d, "time:") {
			p.tdim = d
			continue
		}
		spec, found := dimensions[d]
		if !found || p.dim != nil {
			return p, false
		}
		p.dim = &spec
		tables[spec.table] = true
	}
	// One table answers it all (base.ex, do_decide_tables).
	switch len(tables) {
	case 0:
		p.table = "imported_visitors"
	case 1:
		for t := range tables {
			p.table = t
		}
	default:
		return p, false
	}
	return p, true
}

// Wide returns metrics (the query's) with those the merge needs besides:
// rates are weighted by visits, views per visit is pageviews over visits.
// The native rows given to AddNative have these metrics, in this order.
func (m *Merge) Wide(metrics []string) []string {
	wide := slices.Clone(metrics)
	rates := slices.ContainsFunc(metrics, func(m string) bool {
		return m == "bounce_rate" || m == "visit_duration" || m == "views_per_visit"
	})
	for _, name := range []string{"visits", "pageviews"} {
		need := rates && (name == "visits" || slices.Contains(metrics, "views_per_visit"))
		if need && !slices.Contains(wide, name) {
			wide = append(wide, name)
		}
	}
	m.wide = wide
	return wide
}

// rowKey is the merge key of dimension values.
func rowKey(dims []any) string {
	var b strings.Builder
	for _, d := range dims {
		switch v := d.(type) {
		case string:
			b.WriteString(v)
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		}
		b.WriteByte(0)
	}
	return b.String()
}

func (m *Merge) get(dims []any) *mergedRow {
	k := rowKey(dims)
	r := m.byKey[k]
	if r == nil {
		r = &mergedRow{dims: dims}
		m.byKey[k] = r
		m.rows = append(m.rows, r)
	}
	return r
}

// AddNative adds a native row: its dimension values and its metrics, in
// Wide's order. The merge keeps both.
func (m *Merge) AddNative(dims, metrics []any) {
	m.get(dims).native = metrics
}

// AddImport adds the rows of d's table that answer the query.
func (m *Merge) AddImport(d *Data) {
	table := m.table
	for _, row := range d.tables[table] {
		if row.Date < m.first || row.Date > m.last || row.M[plausiblezip.Visitors] == 0 && table != "imported_visitors" {
			continue // base.ex: where visitors > 0 in breakdowns
		}
		if !m.filter.match(&row) {
			continue
		}
		dims, ok := m.dimsOf(&row)
		if !ok {
			continue
		}
		r := m.get(dims)
		r.visitors += row.M[plausiblezip.Visitors]
		r.visits += row.M[plausiblezip.Visits]
		r.pageviews += row.M[plausiblezip.Pageviews]
		// imported.ex: events are the pageviews of every table but
		// imported_custom_events; imported_pages adds nothing to bounces
		// and durations.
		if table == "imported_custom_events" {
			r.events += row.M[plausiblezip.Events]
		} else {
			r.events += row.M[plausiblezip.Pageviews]
		}
		if table != "imported_pages" {
			r.bounces += row.M[plausiblezip.Bounces]
			r.seconds += row.M[plausiblezip.Duration]
			r.rateVisits += row.M[plausiblezip.Visits]
		}
	}
}

// dimsOf returns the dimension values of an imported row, in the query's
// order; false for a row left out (a blank value without a label).
func (m *Merge) dimsOf(row *plausiblezip.Row) ([]any, bool) {
	dims := make([]any, 0, len(m.q.Dimensions))
	for _, name := range m.q.Dimensions {
		if name == m.tdim {
			dims = append(dims, m.bucket(row.Date))
			continue
		}
		v := row.Dims[m.dim.dim]
		if m.dim.country && v != "" {
			v = geo.CountryName(v)
		}
		if m.dim.city {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n == 0 {
				return nil, false
			}
			dims = append(dims, n)
			continue
		}
		if v == "" {
			if m.dim.blank == "" {
				return nil, false
			}
			v = m.dim.blank
		}
		dims = append(dims, v)
	}
	return dims, true
}

// bucket is the time bucket of day d (ResolvedQuery.DayBucket's rule).
func (m *Merge) bucket(d buckets.Date) string {
	switch m.tdim {
	case "time:week":
		return max(query.WeekMonday(d), m.first).String()
	case "time:month":
		y, mo, _ := d.Civil()
		return buckets.DateOf(y, mo, 1).String()
	}
	return d.String()
}

// nativeNum returns native metric name of r as a float (0 if absent).
func (m *Merge) nativeNum(r *mergedRow, name string) float64 {
	i := slices.Index(m.wide, name)
	if r.native == nil || i < 0 || i >= len(r.native) {
		return 0
	}
	switch v := r.native[i].(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	}
	return 0
}

// metrics computes the query's metrics of r. Bounce rate and visit
// duration are weighted by visits: the native part is its rounded rate
// times its visits (the segments keep no other sum).
func (m *Merge) metrics(r *mergedRow) []any {
	nv := m.nativeNum(r, "visits")
	out := make([]any, 0, len(m.q.Metrics))
	for _, name := range m.q.Metrics {
		var v any
		switch name {
		case "visitors":
			v = int64(m.nativeNum(r, name)) + int64(r.visitors)
		case "visits":
			v = int64(nv) + int64(r.visits)
		case "pageviews":
			v = int64(m.nativeNum(r, name)) + int64(r.pageviews)
		case "events":
			v = int64(m.nativeNum(r, name)) + int64(r.events)
		case "bounce_rate":
			v = weighted(m.nativeNum(r, name)*nv, 100*float64(r.bounces), nv+float64(r.rateVisits))
		case "visit_duration":
			v = weighted(m.nativeNum(r, name)*nv, float64(r.seconds), nv+float64(r.rateVisits))
		case "views_per_visit":
			visits := nv + float64(r.visits)
			f := 0.0
			if visits > 0 {
				f = math.Round(100*(m.nativeNum(r, "pageviews")+float64(r.pageviews))/visits) / 100
			}
			v = f
		}
		out = append(out, v)
	}
	return out
}

// weighted is round((a+b)/n), 0 when n is 0.
func weighted(a, b, n float64) int64 {
	if n <= 0 {
		return 0
	}
	return int64(math.Round((a + b) / n))
}

// Len returns the number of rows of the merge: every page's, 1 for an
// aggregate.
func (m *Merge) Len() int {
	if len(m.q.Dimensions) == 0 {
		return 1 // an aggregate is always one row
	}
	return len(m.rows)
}

// Page sorts the merged rows by the query's order and returns its page.
func (m *Merge) Page() []Row {
	rows := make([]Row, len(m.rows))
	for i, r := range m.rows {
		rows[i] = Row{Dimensions: r.dims, Metrics: m.metrics(r)}
	}
	if len(m.q.Dimensions) == 0 {
		if len(rows) == 0 {
			rows = append(rows, Row{Dimensions: []any{}, Metrics: m.metrics(&mergedRow{})})
		}
		return rows[:1]
	}
	slices.SortStableFunc(rows, func(a, b Row) int {
		for _, o := range m.q.OrderBy {
			c := 0
			if i := slices.Index(m.q.Metrics, o.Key); i >= 0 {
				c = compareAny(a.Metrics[i], b.Metrics[i])
			} else if i := slices.Index(m.q.Dimensions, o.Key); i >= 0 {
				c = compareAny(a.Dimensions[i], b.Dimensions[i])
			}
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	p := m.q.Pagination
	if p.Limit <= 0 {
		p.Limit = query.MaxQueryLimit
	}
	off := min(p.Offset, len(rows))
	end := min(off+p.Limit, len(rows))
	return rows[off:end]
}

// compareAny orders two metric or dimension values of one column.
func compareAny(a, b any) int {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmp.Compare(x, y)
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	}
	return 0
}

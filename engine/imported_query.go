package engine

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
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/query"
)

// The skip reasons and warnings Plausible answers in meta
// (lib/plausible/stats/query_result.ex, @imports_warnings).
const (
	importsUnsupportedQuery    = "unsupported_query"
	importsUnsupportedInterval = "unsupported_interval"
	importsNoData              = "no_imported_data"
	importsOutOfRange          = "out_of_range"

	warnUnsupportedQuery = "Imported stats are not included in the results because query parameters are not supported. " +
		"For more information, see: https://plausible.io/docs/stats-api#filtering-imported-stats"
	warnUnsupportedInterval = "Imported stats are not included because the time dimension (i.e. the interval) is too short."
)

// importedDim is where a dimension's imported values are: a table, the
// index of the value in its rows' Dims, and the label of a blank value
// (the native one, so that both merge into one row; "" drops blank rows).
type importedDim struct {
	table string
	dim   int
	blank string
	city  bool // a GeoNames id: an int64 in rows, 0 is blank
	// country: a country code shown by its name (visit:country_name).
	country bool
}

// importedDims are the dimensions the imported layer can group by
// (base.ex's property_to_table_mappings, less what webstats does not
// keep: channels, names of places, hostnames).
var importedDims = map[string]importedDim{
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

// importedMetrics are the metrics the merge computes.
var importedMetrics = []string{"visitors", "visits", "pageviews", "events", "bounce_rate", "visit_duration", "views_per_visit"}

// queryWithImports answers q (include.imports set) for website.
func (o Owner) queryWithImports(ctx context.Context, website uint32, q Query) (QueryResult, error) {
	plain := q.Clone()
	plain.Include.Imports = false
	res, err := o.query(ctx, website, plain)
	if err != nil {
		return QueryResult{}, err
	}
	res.Query.Include.Imports = true
	list, err := o.importsOf(website)
	if err != nil {
		return QueryResult{}, err
	}
	first, last, ok := echoDays(res.Query.DateRange)
	if earliest, found := earliestImport(list); ok && found && q.DateRange.Period == "all" && earliest < first {
		// "all" starts at the site's first day, imported days included
		// (Plausible's Sites.stats_start_date takes the earliest import).
		plain.DateRange = DateRange{FromDay: earliest, ToDay: last}
		q.DateRange = plain.DateRange
		if res, err = o.query(ctx, website, plain); err != nil {
			return QueryResult{}, err
		}
		res.Query.Include.Imports = true
		first = earliest
	}
	reason, plan := importSkip(&res.Query, list, first, last, ok)
	if reason != "" {
		f := false
		res.Meta.ImportsIncluded, res.Meta.ImportsSkipReason = &f, reason
		switch reason {
		case importsUnsupportedQuery:
			res.Meta.ImportsWarning = warnUnsupportedQuery
		case importsUnsupportedInterval:
			res.Meta.ImportsWarning = warnUnsupportedInterval
		}
		return res, nil
	}
	m := &importMerge{q: &res.Query, first: first, last: last, importPlan: plan, byKey: map[string]*mergedRow{}}
	if err := o.nativeRows(ctx, website, q, m); err != nil {
		return QueryResult{}, err
	}
	for _, d := range list {
		m.addImport(d)
	}
	t := true
	res.Meta.ImportsIncluded, res.Meta.ImportsSkipReason = &t, ""
	res.Results = m.page()
	n := len(m.rows)
	if len(res.Query.Dimensions) == 0 {
		n = 1 // an aggregate is always one row
	}
	if res.Meta.TotalRows != nil {
		res.Meta.TotalRows = &n
	}
	return res, nil
}

// nativeRows adds to m every native row of q (all pages), with the
// metrics the merge needs besides q's.
func (o Owner) nativeRows(ctx context.Context, website uint32, q Query, m *importMerge) error {
	wide := q.Clone()
	wide.Include = Include{}
	// Every row in one query (MaxQueryGroups bounds them): a query per
	// page would group every row again for each page.
	wide.Pagination = Pagination{}
	// Rates are weighted by visits; views per visit is pageviews over visits.
	rates := slices.ContainsFunc(q.Metrics, func(m string) bool {
		return m == "bounce_rate" || m == "visit_duration" || m == "views_per_visit"
	})
	for _, name := range []string{"visits", "pageviews"} {
		need := rates && (name == "visits" || slices.Contains(q.Metrics, "views_per_visit"))
		if need && !slices.Contains(wide.Metrics, name) {
			wide.Metrics = append(wide.Metrics, name)
		}
	}
	m.wide = wide.Metrics
	native, err := o.query(context.WithValue(ctx, allRowsKey{}, true), website, wide)
	if err != nil {
		return err
	}
	for _, row := range native.Results {
		m.addNative(row)
	}
	return nil
}

// allRowsKey marks the context of a query answering every row, whatever
// its pagination (Owner.query; set only by nativeRows).
type allRowsKey struct{}

// earliestImport returns the first day of the imports of list.
func earliestImport(list []*importData) (Date, bool) {
	if len(list) == 0 {
		return 0, false
	}
	d := list[0].From
	for _, x := range list[1:] {
		d = min(d, x.From)
	}
	return d, true
}

// echoDays returns the local days of an echoed date range.
func echoDays(r [2]string) (first, last Date, ok bool) {
	a, err1 := time.Parse(time.RFC3339, r[0])
	b, err2 := time.Parse(time.RFC3339, r[1])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return DateFromTime(a), DateFromTime(b), true
}

// importSkip returns why the imports of list do not answer q (Plausible's
// order of reasons, query.ex's get_skip_imported_reason), or the time
// dimension and the one other dimension (nil for none) they answer by.
func importSkip(q *QueryEcho, list []*importData, first, last Date, ok bool) (reason string, p importPlan) {
	if len(list) == 0 {
		return importsNoData, p
	}
	if !ok || !slices.ContainsFunc(list, func(d *importData) bool { return d.From <= last && d.To >= first }) {
		return importsOutOfRange, p
	}
	for _, d := range q.Dimensions {
		if d == "time:hour" || d == "time:minute" {
			return importsUnsupportedInterval, p
		}
	}
	for _, m := range q.Metrics {
		if !slices.Contains(importedMetrics, m) {
			return importsUnsupportedQuery, p
		}
	}
	filter, tables, fok := compileImportFilter(q.Filters)
	if !fok {
		return importsUnsupportedQuery, p
	}
	p.filter = filter
	for _, d := range q.Dimensions {
		if strings.HasPrefix(d, "time:") {
			p.tdim = d
			continue
		}
		spec, found := importedDims[d]
		if !found || p.dim != nil {
			return importsUnsupportedQuery, p
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
		return importsUnsupportedQuery, p
	}
	return "", p
}

// importPlan is how the imported layer answers a query: by which table,
// time dimension and other dimension, and which rows of it.
type importPlan struct {
	table  string
	tdim   string
	dim    *importedDim
	filter *importFilter
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

// importMerge merges native rows and imported aggregates by their
// dimension values.
type importMerge struct {
	q           *QueryEcho
	wide        []string // the native query's metrics
	first, last Date
	importPlan
	byKey map[string]*mergedRow
	rows  []*mergedRow // native rows first, in their order
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

func (m *importMerge) get(dims []any) *mergedRow {
	k := rowKey(dims)
	r := m.byKey[k]
	if r == nil {
		r = &mergedRow{dims: dims}
		m.byKey[k] = r
		m.rows = append(m.rows, r)
	}
	return r
}

func (m *importMerge) addNative(row QueryRow) {
	m.get(row.Dimensions).native = row.Metrics
}

// addImport adds the rows of d's table that answer m's query.
func (m *importMerge) addImport(d *importData) {
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
func (m *importMerge) dimsOf(row *plausiblezip.Row) ([]any, bool) {
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
func (m *importMerge) bucket(d Date) string {
	switch m.tdim {
	case "time:week":
		return max(query.WeekMonday(d), m.first).String()
	case "time:month":
		y, mo, _ := d.Civil()
		return DateOf(y, mo, 1).String()
	}
	return d.String()
}

// nativeNum returns native metric name of r as a float (0 if absent).
func (m *importMerge) nativeNum(r *mergedRow, name string) float64 {
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
func (m *importMerge) metrics(r *mergedRow) []any {
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

// page sorts the merged rows by the query's order and returns its page.
func (m *importMerge) page() []QueryRow {
	rows := make([]QueryRow, len(m.rows))
	for i, r := range m.rows {
		rows[i] = QueryRow{Dimensions: r.dims, Metrics: m.metrics(r)}
	}
	if len(m.q.Dimensions) == 0 {
		if len(rows) == 0 {
			rows = append(rows, QueryRow{Dimensions: []any{}, Metrics: m.metrics(&mergedRow{})})
		}
		return rows[:1]
	}
	slices.SortStableFunc(rows, func(a, b QueryRow) int {
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
		p.Limit = MaxQueryLimit
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

package pages

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/webstats/webstats/engine"
)

// The overview as a segment explorer (SPEC §10.4): filters in the address,
// shown as chips; a click on a row adds one. See "Filters" in the package
// documentation.

// maxFilters bounds the filters of one view.
const maxFilters = 10

// dim is a dimension the dashboard filters by.
type dim struct {
	Key    string // in the address: f=is,<Key>,<value>
	Label  string // on a chip
	Engine string // the engine's dimension ("" for referrer_host)
}

// dims are the dimensions of the filters, besides props:<key>.
var dims = []dim{
	{"page", "Page", "event:page"},
	{"entry_page", "Entry page", "visit:entry_page"},
	{"exit_page", "Exit page", "visit:exit_page"},
	{"hostname", "Hostname", "event:hostname"},
	{"source", "Source", "visit:source"},
	{"channel", "Channel", "visit:channel"},
	{"referrer", "Referrer", "visit:referrer"},
	{"referrer_host", "Referrer host", ""},
	{"utm_source", "UTM source", "visit:utm_source"},
	{"utm_medium", "UTM medium", "visit:utm_medium"},
	{"utm_campaign", "UTM campaign", "visit:utm_campaign"},
	{"utm_content", "UTM content", "visit:utm_content"},
	{"utm_term", "UTM term", "visit:utm_term"},
	{"country", "Country", "visit:country"},
	{"region", "Region", "visit:region"},
	{"city", "City", "visit:city_name"},
	{"browser", "Browser", "visit:browser"},
	{"browser_version", "Browser version", "visit:browser_version"},
	{"os", "Operating system", "visit:os"},
	{"os_version", "OS version", "visit:os_version"},
	{"device", "Device", "visit:device"},
	{"screen", "Screen", "visit:screen"},
	{"event", "Event", "event:name"},
	{"goal", "Goal", "event:goal"},
}

// dimOf returns the dimension of key: one of dims or props:<key>.
func dimOf(key string) (dim, bool) {
	for _, d := range dims {
		if d.Key == key {
			return d, true
		}
	}
	if prop, ok := strings.CutPrefix(key, "props:"); ok && prop != "" && utf8.RuneCountInString(prop) <= engine.MaxPropKey {
		return dim{Key: key, Label: "Property " + prop, Engine: "event:props:" + prop}, true
	}
	return dim{}, false
}

// filter is one filter of a view: f=<Op>,<Dim.Key>,<Value>.
type filter struct {
	Op    string // "is" or "is_not"
	Dim   dim
	Value string
}

func (f filter) param() string { return f.Op + "," + f.Dim.Key + "," + f.Value }

// engineFilter returns f as the engine's filter. A referrer host matches
// the referrers of that host (visit:referrer is the host without "www."
// and the path).
func (f filter) engineFilter() engine.Filter {
	if f.Dim.Key == "referrer_host" {
		op := "matches"
		if f.Op == "is_not" {
			op = "matches_not"
		}
		host := strings.TrimPrefix(strings.ToLower(f.Value), "www.")
		return engine.Filter{Op: op, Dimension: "visit:referrer", Clauses: []string{"^" + regexp.QuoteMeta(host) + "(/|$)"}}
	}
	return engine.Filter{Op: f.Op, Dimension: f.Dim.Engine, Clauses: []string{f.Value}}
}

// parseFilters reads the f parameters of q: at most maxFilters, each
// "is" or "is_not", a known dimension and a value of at most maxParam
// bytes. A repeated filter counts once.
func parseFilters(q url.Values) ([]filter, error) {
	var out []filter
	for _, s := range q["f"] {
		parts := strings.SplitN(s, ",", 3)
		if len(parts) != 3 {
			return nil, badRequest("The filter %q is not valid: it needs an operator, a dimension and a value.", cutParam(s))
		}
		op, key, value := parts[0], parts[1], parts[2]
		if op != "is" && op != "is_not" {
			return nil, badRequest("The filter operator %q is not valid: use is or is_not.", cutParam(op))
		}
		d, ok := dimOf(key)
		if !ok {
			return nil, badRequest("The filter dimension %q is not known.", cutParam(key))
		}
		if len(value) > maxParam || !utf8.ValidString(value) {
			return nil, badRequest("A filter value is longer than %d bytes or not UTF-8.", maxParam)
		}
		f := filter{Op: op, Dim: d, Value: value}
		if slices.Contains(out, f) {
			continue
		}
		if len(out) == maxFilters {
			return nil, badRequest("A view has at most %d filters.", maxFilters)
		}
		out = append(out, f)
	}
	return out, nil
}

// cutParam shortens s for an error message.
func cutParam(s string) string {
	if len(s) <= 40 {
		return s
	}
	i := 40
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// engineFilters returns fs as the engine's filters.
func engineFilters(fs []filter) []engine.Filter {
	out := make([]engine.Filter, len(fs))
	for i, f := range fs {
		out[i] = f.engineFilter()
	}
	return out
}

// viewState is what a view's address holds besides the range: filters,
// the cardTab of each tabbed table, the chart's interval and comparison.
type viewState struct {
	Filters  []filter
	Tabs     map[string]string // card → tab; absent: the card's first tab
	Prop     string            // the property of the props card, "" for none
	Interval string            // "hour", "day", "week", "month"; "" for the default
	Compare  string            // "", "previous" or "year"
}

// parseView reads a view's state from q.
func parseView(q url.Values) (viewState, error) {
	fs, err := parseFilters(q)
	if err != nil {
		return viewState{}, err
	}
	vs := viewState{Filters: fs, Tabs: map[string]string{}}
	for _, c := range cards {
		t := q.Get(c.Key)
		if t == "" {
			continue
		}
		// An unknown tab shows the first: card keys were other parameters
		// before (page=2 on a statistic's page).
		if t != c.Tabs[0].Key && slices.ContainsFunc(c.Tabs, func(tb cardTab) bool { return tb.Key == t }) {
			vs.Tabs[c.Key] = t
		}
	}
	if p := q.Get("prop"); p != "" {
		if _, ok := dimOf("props:" + p); !ok {
			return vs, badRequest("The property name is longer than %d characters.", engine.MaxPropKey)
		}
		vs.Prop = p
	}
	switch i := q.Get("interval"); i {
	case "", "hour", "day", "week", "month":
		vs.Interval = i
	default:
		return vs, badRequest("The interval %q is not valid: use hour, day, week or month.", cutParam(i))
	}
	switch c := q.Get("compare"); c {
	case "", "previous", "year":
		vs.Compare = c
	default:
		return vs, badRequest("The comparison %q is not valid: use previous or year.", cutParam(c))
	}
	return vs, nil
}

// values returns the view's parameters with dr's, in a stable order.
func (vs viewState) values(dr dateRange) url.Values {
	q := dr.Query()
	for _, f := range vs.Filters {
		q.Add("f", f.param())
	}
	for k, t := range vs.Tabs {
		q.Set(k, t)
	}
	if vs.Prop != "" {
		q.Set("prop", vs.Prop)
	}
	if vs.Interval != "" {
		q.Set("interval", vs.Interval)
	}
	if vs.Compare != "" {
		q.Set("compare", vs.Compare)
	}
	return q
}

// tab returns the tab of card shown.
func (vs viewState) tab(c card) cardTab {
	if k, ok := vs.Tabs[c.Key]; ok {
		for _, t := range c.Tabs {
			if t.Key == k {
				return t
			}
		}
	}
	return c.Tabs[0]
}

// with returns a copy of vs with fs as its filters.
func (vs viewState) with(fs []filter) viewState {
	c := vs
	c.Filters = fs
	return c
}

// href returns the overview's address of vs over dr.
func (vs viewState) href(base string, dr dateRange) string {
	if e := vs.values(dr).Encode(); e != "" {
		return base + "?" + e
	}
	return base
}

// chip is a filter as the page shows it, with the addresses that remove
// and negate it.
type chip struct {
	Label, Op, Value string
	Remove, Negate   string
}

func chipsOf(vs viewState, base string, dr dateRange) []chip {
	out := make([]chip, len(vs.Filters))
	for i, f := range vs.Filters {
		rest := slices.Delete(slices.Clone(vs.Filters), i, i+1)
		neg := slices.Clone(vs.Filters)
		neg[i].Op = map[string]string{"is": "is_not", "is_not": "is"}[f.Op]
		if slices.Contains(rest, neg[i]) { // the negation is already there
			neg = rest
		}
		out[i] = chip{Label: f.Dim.Label, Op: strings.ReplaceAll(f.Op, "_", " "), Value: f.Value,
			Remove: vs.with(rest).href(base, dr), Negate: vs.with(neg).href(base, dr)}
		if out[i].Value == "" {
			out[i].Value = "(empty)"
		}
	}
	return out
}

// addLink returns the address of vs with the filters key=value added
// (pairs of key and value), or "" when the view already has them or has no
// room for them.
func addLink(vs viewState, base string, dr dateRange, kv ...string) string {
	fs := slices.Clone(vs.Filters)
	for i := 0; i+1 < len(kv); i += 2 {
		d, ok := dimOf(kv[i])
		if !ok {
			return ""
		}
		f := filter{Op: "is", Dim: d, Value: kv[i+1]}
		if !slices.Contains(fs, f) {
			fs = append(fs, f)
		}
	}
	if len(fs) == len(vs.Filters) || len(fs) > maxFilters {
		return ""
	}
	return vs.with(fs).href(base, dr)
}

// cardTab is one tab of a card: a table of the overview.
type cardTab struct {
	Key   string
	Label string
	// Stat names the statistic whose full table (/stats/:domain/<Stat>)
	// the tab heads ("": none). A tab without a query (segOnly) is that
	// statistic of the day buckets, shown unfiltered only.
	Stat string
	seg  segTable
}

// segTable is how a query answers a table: the metric counted, the
// dimensions grouped by (the first is the row's value), which dimension is
// shown (and which as a note), and which filters a click adds.
type segTable struct {
	Column, Counts string
	Metric         string
	Dims           []string
	Show, Note     int    // indexes into Dims; Note < 0: none
	Click          []dimV // filters a click on a row adds
	Goals          bool   // add conversion rates
	// Only restricts the hits the table counts, as the day buckets do:
	// pageviews for pages, custom events for events.
	Only *engine.Filter
}

// dimV says that a click adds the filter Key = the row's Dims[I].
type dimV struct {
	Key string
	I   int
}

// card is a box of the overview with tabs; the address says which cardTab
// (card key = cardTab key), the first by default.
type card struct {
	Key  string
	Tabs []cardTab
}

func seg(column, counts, metric string, click string, dims ...string) segTable {
	return segTable{Column: column, Counts: counts, Metric: metric, Dims: dims, Note: -1, Click: []dimV{{click, 0}}}
}

// only restricts st to the pageviews (op "is") or to the custom events
// (op "is_not").
func only(st segTable, op string) segTable {
	st.Only = &engine.Filter{Op: op, Dimension: "event:name", Clauses: []string{"pageview"}}
	return st
}

// cards are the overview's boxes, in page order. Their keys are the
// statistics' names, as before there were tabs, so #referrer still finds
// the referrers; a card's key is also its parameter in the address
// (referrer=channels).
var cards = []card{
	{"page", []cardTab{{"top", "Pages", "page", only(seg("Page", "Pageviews", "pageviews", "page", "event:page"), "is")}}},
	{"landing_page", []cardTab{
		{"entry", "Landing pages", "landing_page", seg("Page", "Visits", "visits", "entry_page", "visit:entry_page")},
		{"exit", "Exit pages", "", seg("Page", "Visits", "visits", "exit_page", "visit:exit_page")},
	}},
	{"referrer", []cardTab{
		{"referrers", "Referrers", "referrer", seg("Source", "Visits", "visits", "source", "visit:source")},
		{"channels", "Channels", "", seg("Channel", "Visits", "visits", "channel", "visit:channel")},
		{"utm_source", "UTM source", "", seg("UTM source", "Visits", "visits", "utm_source", "visit:utm_source")},
		{"utm_medium", "UTM medium", "", seg("UTM medium", "Visits", "visits", "utm_medium", "visit:utm_medium")},
		{"utm_content", "UTM content", "", seg("UTM content", "Visits", "visits", "utm_content", "visit:utm_content")},
		{"utm_term", "UTM term", "", seg("UTM term", "Visits", "visits", "utm_term", "visit:utm_term")},
	}},
	{"campaign", []cardTab{{"campaigns", "Campaigns", "campaign", seg("Campaign", "Visits", "visits", "utm_campaign", "visit:utm_campaign")}}},
	{"country", []cardTab{
		{"countries", "Countries", "country", segTable{Column: "Country", Counts: "Visitors", Metric: "visitors",
			Dims: []string{"visit:country", "visit:country_name"}, Show: 1, Note: 0, Click: []dimV{{"country", 0}}}},
		{"regions", "Regions", "", segTable{Column: "Region", Counts: "Visitors", Metric: "visitors",
			Dims: []string{"visit:region", "visit:region_name"}, Show: 1, Note: 0, Click: []dimV{{"region", 0}}}},
	}},
	{"city", []cardTab{{"cities", "Cities", "city", segTable{Column: "City", Counts: "Visitors", Metric: "visitors",
		Dims: []string{"visit:country", "visit:city_name"}, Show: 1, Note: 0, Click: []dimV{{"country", 0}, {"city", 1}}}}}},
	{"continent", []cardTab{{"continents", "Continents", "continent", segTable{}}}},
	{"language", []cardTab{{"languages", "Languages", "language", segTable{}}}},
	{"browser", []cardTab{
		{"browsers", "Browsers", "browser", seg("Browser", "Visitors", "visitors", "browser", "visit:browser")},
		{"versions", "Browser versions", "", segTable{Column: "Version", Counts: "Visitors", Metric: "visitors",
			Dims: []string{"visit:browser", "visit:browser_version"}, Show: 1, Note: 0, Click: []dimV{{"browser", 0}, {"browser_version", 1}}}},
	}},
	{"os", []cardTab{
		{"os", "Operating systems", "os", seg("Operating system", "Visitors", "visitors", "os", "visit:os")},
		{"versions", "OS versions", "", segTable{Column: "Version", Counts: "Visitors", Metric: "visitors",
			Dims: []string{"visit:os", "visit:os_version"}, Show: 1, Note: 0, Click: []dimV{{"os", 0}, {"os_version", 1}}}},
	}},
	{"device", []cardTab{{"devices", "Devices", "device", seg("Device", "Visitors", "visitors", "device", "visit:device")}}},
	{"resolution", []cardTab{{"resolutions", "Screen resolutions", "resolution", segTable{}}}},
	{"event", []cardTab{{"events", "Events", "event", only(seg("Event", "Events", "events", "event", "event:name"), "is_not")}}},
}

// segOnly reports a cardTab without a query: a statistic that only the day
// buckets keep (continents, languages, resolutions), or the properties
// card without a property.
func (t cardTab) segOnly() bool { return t.seg.Metric == "" }

// statSeg returns the query of the full-table page of statistic name: the
// first tab of the card it heads; ok=false for a statistic that Query
// cannot answer (continents, languages, resolutions, the hourly and daily
// series), whose page the day buckets answer.
func statSeg(name string) (segTable, bool) {
	for _, c := range cards {
		if t := c.Tabs[0]; t.Stat == name && !t.segOnly() {
			return t.seg, true
		}
	}
	return segTable{}, false
}

// sessionTotals are the totals only the segments answer.
type sessionTotals struct {
	BounceRate    float64 // percent
	VisitDuration float64 // seconds
	ViewsPerVisit float64 // -1: not answerable with these filters
}

// metricFloat reads a metric of a result row as a float.
func metricFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func metricUint(v any) uint64 { return uint64(max(metricFloat(v), 0)) }

// pageFiltered reports whether fs filter by event:page, which
// views_per_visit cannot be queried with.
func pageFiltered(fs []filter) bool {
	return slices.ContainsFunc(fs, func(f filter) bool { return f.Dim.Key == "page" })
}

// batch collects queries of one view for one QueryBatch: the engine
// reads each day of their ranges once for all of them (a dozen cards of
// the overview, each a query of the same range).
type batch struct {
	qs  []engine.Query
	res []engine.QueryResult
	err error
	ran bool
}

// add adds q to b; the function it returns gives q's answer once b ran.
func (b *batch) add(q engine.Query) func() (engine.QueryResult, error) {
	i := len(b.qs)
	b.qs = append(b.qs, q)
	return func() (engine.QueryResult, error) {
		switch {
		case b.err != nil:
			return engine.QueryResult{}, b.err
		case !b.ran:
			return engine.QueryResult{}, errors.New("pages: a batch's answer read before it ran")
		}
		return b.res[i], nil
	}
}

// run answers the batches of website id, each with one QueryBatch, at
// once; the engine's query errors are bad requests.
func (p *Pages) run(ctx context.Context, id uint32, bs ...*batch) error {
	var fns []func() error
	for i, b := range bs {
		if slices.Contains(bs[:i], b) {
			// The same batch twice (the overview's comparison next to
			// its range): one query, not two goroutines writing it.
			continue
		}
		if len(b.qs) == 0 {
			b.ran = true
			continue
		}
		fns = append(fns, func() error {
			res, err := p.e.Unscoped().QueryBatch(ctx, id, b.qs)
			b.res, b.err, b.ran = res, queryError(err), true
			return b.err
		})
	}
	return parallel(fns...)
}

// viewTotals adds the totals of a range with fs to b: visitors, visits,
// pageviews, custom events, and the session metrics, one query.
func viewTotals(b *batch, r dateRange, fs []filter) func() (engine.Totals, sessionTotals, error) {
	q := engine.Query{
		Metrics:   []string{"visitors", "visits", "pageviews", "events", "bounce_rate", "visit_duration"},
		DateRange: engine.DateRange{FromDay: r.From, ToDay: r.To},
		Filters:   engineFilters(fs),
	}
	vpv := !pageFiltered(fs)
	if vpv {
		q.Metrics = append(q.Metrics, "views_per_visit")
	}
	answer := b.add(q)
	return func() (engine.Totals, sessionTotals, error) {
		res, err := answer()
		if err != nil {
			return engine.Totals{}, sessionTotals{}, err
		}
		m := res.Results[0].Metrics
		t := totalsOf(m)
		st := sessionTotals{BounceRate: metricFloat(m[4]), VisitDuration: metricFloat(m[5]), ViewsPerVisit: -1}
		if vpv {
			st.ViewsPerVisit = metricFloat(m[6])
		}
		return t, st, nil
	}
}

// totalsOf reads the metrics visitors, visits, pageviews and events (in
// that order) of a query's row as the overview's totals: Events are the
// custom events, the query's events less its pageviews.
func totalsOf(m []any) engine.Totals {
	t := engine.Totals{Visitors: metricUint(m[0]), Visits: metricUint(m[1]), Pageviews: metricUint(m[2])}
	t.Events = metricUint(m[3]) - min(metricUint(m[3]), t.Pageviews)
	return t
}

// query runs q, with the engine's query errors as a bad request.
func (p *Pages) query(ctx context.Context, id uint32, q engine.Query) (engine.QueryResult, error) {
	res, err := p.e.Unscoped().Query(ctx, id, q)
	return res, queryError(err)
}

// queryError returns the engine's query errors as a bad request, others
// as they are.
func queryError(err error) error {
	if qe := (*engine.QueryError)(nil); errors.As(err, &qe) {
		return badRequest("%s", qe.Msg)
	}
	return err
}

// segTop adds a table to b: its first n rows over dr with fs; the
// function it returns gives them and the number of rows.
func segTop(b *batch, dr dateRange, fs []filter, st segTable, n int, goals bool) func() ([]engine.QueryRow, int, error) {
	q := st.query(dr, fs)
	q.Pagination = engine.Pagination{Limit: n}
	if goals {
		q.Metrics = append(q.Metrics, "conversion_rate")
	}
	answer := b.add(q)
	return func() ([]engine.QueryRow, int, error) {
		res, err := answer()
		if err != nil {
			return nil, 0, err
		}
		return rowsAndTotal(res)
	}
}

// query returns the Query of st over dr with fs: its metric by its
// dimensions, with the total of rows.
func (st segTable) query(dr dateRange, fs []filter) engine.Query {
	q := engine.Query{
		Metrics:    []string{st.Metric},
		DateRange:  engine.DateRange{FromDay: dr.From, ToDay: dr.To},
		Dimensions: st.Dims,
		Filters:    engineFilters(fs),
		Include:    engine.Include{TotalRows: true},
	}
	if st.Only != nil {
		q.Filters = append(q.Filters, *st.Only)
	}
	return q
}

// segRowsOf runs q and returns its rows and meta.total_rows.
func (p *Pages) segRowsOf(ctx context.Context, id uint32, q engine.Query) ([]engine.QueryRow, int, error) {
	res, err := p.query(ctx, id, q)
	if err != nil {
		return nil, 0, err
	}
	return rowsAndTotal(res)
}

// rowsAndTotal returns the rows of res and its meta.total_rows.
func rowsAndTotal(res engine.QueryResult) ([]engine.QueryRow, int, error) {
	total := 0
	if res.Meta.TotalRows != nil {
		total = *res.Meta.TotalRows
	}
	return res.Results, total, nil
}

// dimString returns a row's dimension value as text.
func dimString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// formatDuration writes a visit duration: "45s", "2m 5s", "1h 3m".
func formatDuration(sec float64) string {
	s := int64(sec + 0.5)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m " + strconv.FormatInt(s%60, 10) + "s"
	}
	return strconv.FormatInt(s/3600, 10) + "h " + strconv.FormatInt(s%3600/60, 10) + "m"
}

// formatRate writes a float with at most one decimal: "41.5", "2".
func formatRate(f float64) string { return trimZero(f) }

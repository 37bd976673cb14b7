package report

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"fmt"
	htmltemplate "html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	texttemplate "text/template"
	"unicode"
	"unicode/utf8"

	"github.com/webstats/webstats/engine"
)

//go:embed templates
var templateFS embed.FS

var funcs = map[string]any{"lpad": lpad, "rpad": rpad}

var (
	textTmpl = texttemplate.Must(texttemplate.New("report.txt").Funcs(funcs).ParseFS(templateFS, "templates/report.txt"))
	htmlTmpl = htmltemplate.Must(htmltemplate.New("report.html").ParseFS(templateFS, "templates/report.html"))
)

// topN is how many rows each table of a report shows.
const topN = 5

// maxValueLen bounds, in characters, the values (pages) a report shows.
const maxValueLen = 80

// reportData is what the templates render.
type reportData struct {
	Title     string // "Weekly statistics for example.com"
	Domain    string
	WebsiteID uint32
	Period    string // "2–8 November 2026"
	Timezone  string
	Noun      string // "week" or "month"
	Totals    []metric
	Tables    []table
	StatsURL  string // absolute link to the statistics of the period; "" without a public URL
	StatsPath string // "/stats/example.com"
	APIURL    string // the website's API URL, or a placeholder

	NameWidth, ValueWidth, ChangeWidth int // text column widths
}

// metric is one total of a report.
type metric struct {
	Name     string // "Visitors"
	Value    string // "1,234"
	Change   string // "+12%", "−3%", "±0%" or "new"
	Previous string // "1,100"
	Color    string // the HTML colour of Change
}

// table is one top-5 table of a report.
type table struct {
	Title      string // "Top pages"
	Header     string // "Page"
	Unit       string // "pageviews"
	Empty      string // shown without rows
	Rows       []row
	CountWidth int
}

type row struct {
	Value string
	Count string
}

// Compose builds the report of website w for the period p starting on first
// (a Monday for Weekly, the 1st for Monthly, in the website's time zone),
// addressed to to. publicURL is the base URL of the statistics pages
// ("https://stats.example.org"); "" leaves the mail without absolute links.
// From and Date are left for the sender to set. The statistics are read
// through e's query API.
func Compose(ctx context.Context, e *engine.Engine, w engine.Website, to string, p Period, first engine.Date, publicURL string) (*Message, error) {
	if !p.valid() {
		return nil, fmt.Errorf("report: compose: %w %d", ErrInvalidPeriod, p)
	}
	if p.start(first) != first {
		return nil, fmt.Errorf("report: compose: %s does not start a %s period", first, p)
	}
	last, prevFirst := p.last(first), p.prev(first)
	// One batch: the engine reads each day of both periods once.
	qs := []engine.Query{totalsQuery(first, last), totalsQuery(prevFirst, first-1)}
	for _, spec := range tableSpecs {
		qs = append(qs, spec.query(first, last))
	}
	res, err := e.Unscoped().QueryBatch(ctx, w.ID, qs)
	if err != nil {
		return nil, fmt.Errorf("report: statistics of website %d: %w", w.ID, err)
	}
	cur, prev := totalsOf(res[0]), totalsOf(res[1])
	d := &reportData{
		Title:     p.title() + " statistics for " + w.Domain,
		Domain:    w.Domain,
		WebsiteID: w.ID,
		Period:    p.label(first),
		Timezone:  cmp.Or(w.Timezone, "UTC"),
		Noun:      p.noun(),
		Totals: []metric{
			newMetric("Visitors", cur.Visitors, prev.Visitors),
			newMetric("Pageviews", cur.Pageviews, prev.Pageviews),
			newMetric("Visits", cur.Visits, prev.Visits),
		},
		StatsPath: "/stats/" + url.PathEscape(w.Domain),
	}
	base := strings.TrimRight(publicURL, "/")
	if base != "" {
		d.StatsURL = base + d.StatsPath + "?from=" + first.String() + "&to=" + last.String()
		d.APIURL = base + "/api/v1/websites/" + strconv.FormatUint(uint64(w.ID), 10)
	} else {
		d.APIURL = "https://YOUR-WEBSTATS-SERVER/api/v1/websites/" + strconv.FormatUint(uint64(w.ID), 10)
	}
	for i, spec := range tableSpecs {
		d.Tables = append(d.Tables, spec.table(res[2+i]))
	}
	for _, m := range d.Totals {
		d.NameWidth = max(d.NameWidth, utf8.RuneCountInString(m.Name))
		d.ValueWidth = max(d.ValueWidth, utf8.RuneCountInString(m.Value))
		d.ChangeWidth = max(d.ChangeWidth, utf8.RuneCountInString(m.Change))
	}

	var text, html bytes.Buffer
	if err := textTmpl.Execute(&text, d); err != nil {
		return nil, fmt.Errorf("report: render text: %w", err)
	}
	if err := htmlTmpl.Execute(&html, d); err != nil {
		return nil, fmt.Errorf("report: render html: %w", err)
	}
	visitors := d.Totals[0]
	noun := "visitors"
	if cur.Visitors == 1 {
		noun = "visitor"
	}
	return &Message{
		To:        to,
		Subject:   fmt.Sprintf("%s (%s): %s %s (%s)", d.Title, d.Period, visitors.Value, noun, visitors.Change),
		MessageID: messageID(w.ID, p, first, base),
		Text:      text.String(),
		HTML:      html.String(),
	}, nil
}

// The figures of a report are the Stats API's answers to the same
// questions (SPEC §10.2 "one truth"): the statistics pages show the same
// numbers for the same range.

// totalsQuery asks the visitors, pageviews and visits of a range.
func totalsQuery(from, to engine.Date) engine.Query {
	return engine.Query{
		Metrics:   []string{"visitors", "pageviews", "visits"},
		DateRange: engine.DateRange{FromDay: from, ToDay: to},
	}
}

// totalsOf reads totalsQuery's answer.
func totalsOf(res engine.QueryResult) engine.Totals {
	m := res.Results[0].Metrics
	return engine.Totals{Visitors: count(m[0]), Pageviews: count(m[1]), Visits: count(m[2])}
}

// tableSpec is a top table of a report: the metric of a Query by a
// dimension, as the statistics pages' card of the same title asks it.
type tableSpec struct {
	dim, metric, title, header, empty string
	only                              *engine.Filter // restricts the hits counted
	show                              func(string) string
}

var tableSpecs = []tableSpec{
	{"event:page", "pageviews", "Top pages", "Page", "No pageviews.",
		&engine.Filter{Op: "is", Dimension: "event:name", Clauses: []string{"pageview"}}, showPage},
	{"visit:source", "visits", "Top sources", "Source", "No visits.", nil, showValue},
	{"visit:country_name", "visitors", "Top countries", "Country", "No visitors.", nil, showValue},
}

// query asks the first topN rows of spec over a range.
func (spec tableSpec) query(from, to engine.Date) engine.Query {
	q := engine.Query{
		Metrics:    []string{spec.metric},
		DateRange:  engine.DateRange{FromDay: from, ToDay: to},
		Dimensions: []string{spec.dim},
		Pagination: engine.Pagination{Limit: topN},
	}
	if spec.only != nil {
		q.Filters = []engine.Filter{*spec.only}
	}
	return q
}

// table reads the answer of spec's query.
func (spec tableSpec) table(res engine.QueryResult) table {
	t := table{Title: spec.title, Header: spec.header, Unit: spec.metric, Empty: spec.empty}
	for _, r := range res.Results {
		v, _ := r.Dimensions[0].(string)
		c := formatCount(count(r.Metrics[0]))
		t.Rows = append(t.Rows, row{Value: spec.show(v), Count: c})
		t.CountWidth = max(t.CountWidth, utf8.RuneCountInString(c))
	}
	return t
}

// count reads a count metric of a query row.
func count(v any) uint64 {
	n, _ := v.(int64)
	return uint64(max(n, 0))
}

// messageID returns the stable Message-ID of a website's report of a period:
// "<report-{id}-{weekly|monthly}-{YYYY-MM-DD}@{host}>", the host being that
// of publicURL, or "webstats".
func messageID(website uint32, p Period, first engine.Date, publicURL string) string {
	host := "webstats"
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return fmt.Sprintf("<report-%d-%s-%s@%s>", website, p, first, host)
}

// newMetric returns the total name with its change against prev.
func newMetric(name string, cur, prev uint64) metric {
	m := metric{Name: name, Value: formatCount(cur), Previous: formatCount(prev), Change: change(cur, prev), Color: "#59636e"}
	switch {
	case m.Change == "new" || strings.HasPrefix(m.Change, "+"):
		m.Color = "#1a7f37"
	case strings.HasPrefix(m.Change, "−"):
		m.Color = "#cf222e"
	}
	return m
}

// change formats the change from prev to cur in percent, rounded: "+12%",
// "−3%" (with a minus sign), "±0%", or "new" when prev is 0 and cur is not.
func change(cur, prev uint64) string {
	if prev == 0 {
		if cur == 0 {
			return "±0%"
		}
		return "new"
	}
	pct := math.Round((float64(cur) - float64(prev)) / float64(prev) * 100)
	switch {
	case pct > 0:
		return "+" + strconv.FormatFloat(pct, 'f', 0, 64) + "%"
	case pct < 0:
		return "−" + strconv.FormatFloat(-pct, 'f', 0, 64) + "%"
	}
	return "±0%"
}

// formatCount writes n with thousands separators: 1234567 is "1,234,567".
func formatCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func showPage(v string) string {
	v = clean(v)
	if utf8.RuneCountInString(v) > maxValueLen {
		r := []rune(v)
		v = string(r[:maxValueLen-1]) + "…"
	}
	return v
}

// showValue shows a value as the statistics pages do: "(none)" for the
// blank one the query has no label for (an unknown country).
func showValue(v string) string {
	if v == "" {
		return "(none)"
	}
	return clean(v)
}

// clean replaces the control characters and the invisible bidirectional
// formatting characters of a tracked value, which could garble or disguise
// the text of a mail, with U+FFFD. HTML escaping is html/template's job.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return '\uFFFD'
		}
		return r
	}, s)
}

// lpad pads s on the left with spaces to n characters.
func lpad(n int, s string) string {
	return strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) + s
}

// rpad pads s on the right with spaces to n characters.
func rpad(n int, s string) string {
	return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s)))
}

package pages

import (
	"archive/zip"
	"context"
	"encoding/csv"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

// overviewData is the data of overview.html.
type overviewData struct {
	Domain   string
	Base     string
	Range    rangeBar
	Period   string // the comparison range's label
	CmpName  string // "previous period" or "same period last year"
	Chips    []chip
	ClearAll string // the address without filters; "" when there are none
	Totals   []total
	Session  []sessionTotal
	// ImportsNote says that imported history in the range is left out
	// (imports_note.go); "" when there is none.
	ImportsNote string
	Chart       *chart
	Intervals   []link
	Compares    []link
	Cards       []cardView
	Realtime    string
	Export      string
	Owner       bool
}

// link is a link of a choice (cardTab, interval, comparison): Current marks
// the chosen one.
type link struct {
	Label, Href string
	Current     bool
}

// sessionTotal is a total of the session metrics: bounce rate, visit
// duration, views per visit.
type sessionTotal struct {
	Label, Value, Prev string
	Change             change
}

// cardView is a card as shown: its tabs and the current cardTab's table.
type cardView struct {
	Key   string
	Tabs  []link
	Table topTable
	Note  string // why the table is empty ("" when it is not)
	Prop  *propForm
}

// propForm chooses the property of the props card.
type propForm struct {
	Action string
	Value  string
	Hidden []hidden
}

type hidden struct{ Name, Value string }

// hiddenOf returns q as hidden form fields, without the keys in drop.
func hiddenOf(q map[string][]string, drop ...string) []hidden {
	var out []hidden
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if slices.Contains(drop, k) {
			continue
		}
		for _, v := range q[k] {
			out = append(out, hidden{k, v})
		}
	}
	return out
}

// cardsFor returns the cards of a website: the fixed ones, then goals when
// it has some, then properties.
func cardsFor(goals []engine.Goal, vs viewState) []card {
	out := append([]card(nil), cards...)
	if len(goals) > 0 {
		out = append(out, card{"goals", []cardTab{{"goals", "Goals", "", segTable{Column: "Goal", Counts: "Visitors",
			Metric: "visitors", Dims: []string{"event:goal"}, Note: -1, Click: []dimV{{"goal", 0}}, Goals: true}}}})
	}
	pt := cardTab{Key: "props", Label: "Properties"}
	if vs.Prop != "" {
		key := "props:" + vs.Prop
		pt.seg = segTable{Column: vs.Prop, Counts: "Visitors", Metric: "visitors", Dims: []string{"event:" + key}, Note: -1, Click: []dimV{{key, 0}}}
	}
	return append(out, card{"props", []cardTab{pt}})
}

// firstQueryDay is the first day the query API takes (year 0): the range
// compared with one that starts near it may begin before.
var firstQueryDay = engine.DateOf(0, 1, 1)

// chartUnit returns the chart's interval: the one asked for when it fits
// the range, else hours for one day, months beyond 92 days, days between.
func chartUnit(dr dateRange, asked string) string {
	switch {
	case asked == "hour" && dr.Days() <= 7, asked == "week", asked == "month", asked == "day" && dr.Days() <= 732:
		return asked
	case dr.Days() == 1:
		return "hour"
	case dr.Days() > 92:
		return "month"
	}
	return "day"
}

// overviewData runs the overview's queries: the totals of the range and
// of the one compared with, the chart's series, and each card's table,
// in one QueryBatch (two when the range compared with is not next to the
// range), so that the engine reads each day once for all of them. Every
// number is Query's answer to the same question, filtered or not (SPEC
// §10.2 "one truth"): Query answers from the day buckets what they answer
// identically. Only continents, languages and resolutions, which Query has
// no dimension for, come from the day buckets' statistics, and only
// unfiltered.
func (p *Pages) overviewData(ctx context.Context, v *visit, dr dateRange, vs viewState) (*overviewData, error) {
	id := v.web.ID
	filtered := len(vs.Filters) > 0
	cmp, cmpName := dr.Previous(), "previous period"
	if vs.Compare == "year" {
		cmp, cmpName = dr.lastYear(), "same period last year"
	}
	goals, err := p.e.Unscoped().Goals(ctx, id)
	if err != nil {
		return nil, err
	}
	unit := chartUnit(dr, vs.Interval)
	cur, prev := new(batch), new(batch)
	if cmp.To+1 == dr.From {
		prev = cur // next to each other: one read of the days
	}
	curTotals := viewTotals(cur, dr, vs.Filters)
	prevTotals := func() (engine.Totals, sessionTotals, error) { return engine.Totals{}, sessionTotals{}, nil }
	if cmp.From >= firstQueryDay { // else a comparison before year 0: no data
		prevTotals = viewTotals(prev, cmp, vs.Filters)
	}
	series := seriesOf(cur, dr, unit, vs.Filters)
	cmpSeries := func() ([]bucket, error) { return nil, nil }
	if vs.Compare != "" && cmp.From >= firstQueryDay {
		cmpSeries = seriesOf(prev, cmp, unit, vs.Filters)
	}
	cs := cardsFor(goals, vs)
	answers := make([]func() (cardAnswer, error), len(cs))
	for i, c := range cs {
		answers[i] = p.answerCard(ctx, cur, v, dr, vs, c, 10)
	}
	if err := p.run(ctx, id, cur, prev); err != nil {
		return nil, err
	}
	views := make([]cardView, len(cs))
	for i, c := range cs {
		a, err := answers[i]()
		if err != nil {
			return nil, err
		}
		views[i] = p.cardOf(v, dr, vs, c, a)
	}
	curT, sess, err := curTotals()
	if err != nil {
		return nil, err
	}
	prevT, sessPrev, err := prevTotals()
	if err != nil {
		return nil, err
	}
	curS, err := series()
	if err != nil {
		return nil, err
	}
	cmpS, err := cmpSeries()
	if err != nil {
		return nil, err
	}
	return p.overviewOf(v, dr, vs, views, curS, cmpS, unit, cmp, cmpName, filtered, curT, prevT, sess, sessPrev), nil
}

// overviewOf puts the overview's answers together.
func (p *Pages) overviewOf(v *visit, dr dateRange, vs viewState, views []cardView, series, cmpSeries []bucket, unit string,
	cmp dateRange, cmpName string, filtered bool, cur, prev engine.Totals, sess, sessPrev sessionTotals) *overviewData {
	d := &overviewData{
		Domain: v.web.Domain, Base: v.base(), Cards: views, Chart: newChart(series, cmpSeries, unit),
		Realtime: v.base() + "/realtime", Owner: v.owner, Period: cmp.Label(), CmpName: cmpName,
		Chips: chipsOf(vs, v.base(), dr),
	}
	q := vs.values(dr)
	keep := cloneValues(q)
	for _, k := range []string{"from", "to", "range"} {
		keep.Del(k)
	}
	d.Range = newRangeBar(v.base(), dr, keep)
	d.Export = v.base() + "/export.zip"
	if e := q.Encode(); e != "" {
		d.Export += "?" + e
	}
	if filtered {
		d.ClearAll = vs.with(nil).href(v.base(), dr)
	}
	for _, u := range []string{"hour", "day", "week", "month"} {
		if chartUnit(dr, u) == u {
			c := vs
			c.Interval = u
			d.Intervals = append(d.Intervals, link{Label: capital(u), Href: c.href(v.base(), dr), Current: u == unit})
		}
	}
	for _, c := range []struct{ key, label string }{{"", "No comparison"}, {"previous", "Previous period"}, {"year", "Year before"}} {
		x := vs
		x.Compare = c.key
		d.Compares = append(d.Compares, link{Label: c.label, Href: x.href(v.base(), dr), Current: c.key == vs.Compare})
	}
	d.Totals = []total{
		{Label: "Unique visitors", Value: cur.Visitors, Prev: prev.Visitors, Change: changeOf(cur.Visitors, prev.Visitors)},
		{Label: "Pageviews", Value: cur.Pageviews, Prev: prev.Pageviews, Change: changeOf(cur.Pageviews, prev.Pageviews)},
		{Label: "Visits", Value: cur.Visits, Prev: prev.Visits, Change: changeOf(cur.Visits, prev.Visits)},
		{Label: "Events", Value: cur.Events, Prev: prev.Events, Change: changeOf(cur.Events, prev.Events)},
	}
	d.Session = []sessionTotal{
		{Label: "Bounce rate", Value: formatRate(sess.BounceRate) + "%", Prev: formatRate(sessPrev.BounceRate) + "%",
			Change: pointsChange(sess.BounceRate, sessPrev.BounceRate, cur.Visits, prev.Visits)},
		{Label: "Visit duration", Value: formatDuration(sess.VisitDuration), Prev: formatDuration(sessPrev.VisitDuration),
			Change: floatChange(sess.VisitDuration, sessPrev.VisitDuration, cur.Visits, prev.Visits)},
	}
	if sess.ViewsPerVisit >= 0 {
		d.Session = append(d.Session, sessionTotal{Label: "Views per visit", Value: formatRate(sess.ViewsPerVisit), Prev: formatRate(sessPrev.ViewsPerVisit),
			Change: floatChange(sess.ViewsPerVisit, sessPrev.ViewsPerVisit, cur.Visits, prev.Visits)})
	}
	return d
}

// pointsChange is the change of a percentage, in percentage points; no
// data when either range had no visits.
func pointsChange(cur, prev float64, curVisits, prevVisits uint64) change {
	if curVisits == 0 || prevVisits == 0 {
		return change{Class: "flat"}
	}
	return signedChange(cur-prev, " pt")
}

// floatChange is the change of an average in percent; no data when either
// range had no visits.
func floatChange(cur, prev float64, curVisits, prevVisits uint64) change {
	if curVisits == 0 || prevVisits == 0 {
		return change{Class: "flat"}
	}
	const scale = 1000 // changeOf works on integers
	return changeOf(uint64(cur*scale+0.5), uint64(prev*scale+0.5))
}

// cardAnswer is a card's current tab answered: by Query (seg), or by the
// day buckets (stat) for a statistic Query has no dimension for, with the
// rows in all; or a note saying why there is no table.
type cardAnswer struct {
	tab   cardTab
	stat  *engine.Page
	seg   []engine.QueryRow
	total int
	note  string
}

// Notes of cards without a table.
const (
	noteNotKept   = "Not kept per visit, so not available with filters."
	noteChooseKey = "Choose a property to see its values."
	noteNoCities  = "Cities and regions need a City database: start webstatsd with -geoip path/to/GeoLite2-City.mmdb (MaxMind or DB-IP, City edition)."
)

// answerCard adds the current tab of c with its first n rows to b (a
// Query); a statistic Query has no dimension for (continents, languages,
// resolutions) is answered from the day buckets when the view has no
// filters, else a note. The function it returns gives the answer once b
// ran.
func (p *Pages) answerCard(ctx context.Context, b *batch, v *visit, dr dateRange, vs viewState, c card, n int) func() (cardAnswer, error) {
	a := cardAnswer{tab: vs.tab(c)}
	switch {
	case c.Key == "props" && a.tab.segOnly():
		a.note = noteChooseKey
	case a.tab.segOnly() && len(vs.Filters) > 0:
		a.note = noteNotKept
	case a.tab.segOnly():
		return func() (cardAnswer, error) {
			pg, err := p.e.Unscoped().Stat(ctx, engine.StatQuery{Website: v.web.ID, Name: a.tab.Stat, From: dr.From, To: dr.To, SortBy: "count", PerPage: n})
			if err != nil {
				return a, err
			}
			a.stat, a.total = &pg, pg.Total
			return a, nil
		}
	case (c.Key == "city" || a.tab.Key == "regions") && !p.e.Cities():
		a.note = noteNoCities
	default:
		top := segTop(b, dr, vs.Filters, a.tab.seg, n, a.tab.seg.Goals)
		return func() (cardAnswer, error) {
			var err error
			a.seg, a.total, err = top()
			return a, err
		}
	}
	return func() (cardAnswer, error) { return a, nil }
}

// cardOf shows one card's answer as the overview shows it: the current
// tab's top 10, the tabs, and the links that filter by a row.
func (p *Pages) cardOf(v *visit, dr dateRange, vs viewState, c card, a cardAnswer) cardView {
	cur := a.tab
	cv := cardView{Key: c.Key, Note: a.note}
	if len(c.Tabs) > 1 {
		for _, t := range c.Tabs {
			x := vs
			x.Tabs = cloneMap(vs.Tabs)
			if t.Key == c.Tabs[0].Key {
				delete(x.Tabs, c.Key)
			} else {
				x.Tabs[c.Key] = t.Key
			}
			cv.Tabs = append(cv.Tabs, link{Label: t.Label, Href: x.href(v.base(), dr) + "#" + c.Key, Current: t.Key == cur.Key})
		}
	}
	if c.Key == "props" {
		cv.Prop = &propForm{Action: v.base(), Value: vs.Prop, Hidden: hiddenOf(vs.values(dr), "prop")}
	}
	tt := topTable{table: table{Name: c.Key, Title: cur.Label, Column: cur.seg.Column, Counts: cur.seg.Counts}, Total: a.total}
	if t, ok := tableOf(cur.Stat); ok && len(vs.Filters) == 0 {
		// The statistic's full table (unfiltered: its page has no filters).
		tt.Column, tt.Counts = t.Column, t.Counts
		tt.Href = v.base() + "/" + t.Name
		if rq := dr.Query().Encode(); rq != "" {
			tt.Href += "?" + rq
		}
	}
	switch {
	case a.stat != nil:
		rows := a.stat.Rows[:min(10, len(a.stat.Rows))]
		tt.Rows = rowsOf(cur.Stat, rows)
	case a.note == "":
		tt.Rows = segRows(a.seg, cur.seg, vs, v.base(), dr)
		tt.Rate = cur.seg.Goals
	}
	cv.Table = tt
	return cv
}

// segRows turns query rows into table rows with bars relative to the
// largest, and the links that filter by them.
func segRows(rows []engine.QueryRow, st segTable, vs viewState, base string, dr dateRange) []row {
	var most uint64
	for _, r := range rows {
		most = max64(most, metricUint(r.Metrics[0]))
	}
	out := make([]row, len(rows))
	for i, r := range rows {
		n := metricUint(r.Metrics[0])
		c := cell{Text: dimString(r.Dimensions[st.Show])}
		if st.Note >= 0 {
			c.Note = dimString(r.Dimensions[st.Note])
		}
		if c.Text == "" {
			c.Text, c.Empty = "(none)", true
		}
		var kv []string
		for _, cl := range st.Click {
			kv = append(kv, cl.Key, dimString(r.Dimensions[cl.I]))
		}
		out[i] = row{cell: c, Count: n, Bar: barClass(n, most), Href: addLink(vs, base, dr, kv...)}
		if st.Goals && len(r.Metrics) > 1 {
			out[i].Rate = formatRate(metricFloat(r.Metrics[1])) + "%"
		}
	}
	return out
}

// seriesOf adds the chart's buckets over dr in unit to b (a Query); the
// function it returns gives them once b ran.
func seriesOf(b *batch, dr dateRange, unit string, fs []filter) func() ([]bucket, error) {
	answer := b.add(engine.Query{
		Metrics:    []string{"visitors", "pageviews"},
		DateRange:  engine.DateRange{FromDay: dr.From, ToDay: dr.To},
		Dimensions: []string{"time:" + unit},
		Filters:    engineFilters(fs),
		Include:    engine.Include{TimeLabels: true},
	})
	return func() ([]bucket, error) {
		res, err := answer()
		if err != nil {
			return nil, err
		}
		return seriesBuckets(res, unit), nil
	}
}

// seriesBuckets returns the buckets of a series' answer, one per time
// label.
func seriesBuckets(res engine.QueryResult, unit string) []bucket {
	byLabel := make(map[string]engine.QueryRow, len(res.Results))
	for _, r := range res.Results {
		byLabel[dimString(r.Dimensions[0])] = r
	}
	bs := make([]bucket, 0, len(res.Meta.TimeLabels))
	for _, l := range res.Meta.TimeLabels {
		b := bucketOf(unit, l)
		if r, ok := byLabel[l]; ok {
			b.Visitors, b.Pageviews = metricUint(r.Metrics[0]), metricUint(r.Metrics[1])
		}
		bs = append(bs, b)
	}
	return bs
}

// bucketOf names the bucket of a time label ("2026-11-02",
// "2026-11-02 14:00:00").
func bucketOf(unit, label string) bucket {
	t, err := time.Parse("2006-01-02 15:04:05", label)
	if err != nil {
		t, _ = time.Parse("2006-01-02", label)
	}
	switch unit {
	case "hour":
		// Not Format("15:59"): its "5" is the seconds.
		h := t.Format("15")
		return bucket{Label: h + ":00", Title: t.Format("Mon 2 Jan 2006 ") + h + ":00–" + h + ":59"}
	case "week":
		return bucket{Label: t.Format("2 Jan"), Title: "Week of " + t.Format("Mon 2 Jan 2006")}
	case "month":
		return bucket{Label: t.Format("Jan 2006"), Title: t.Format("January 2006")}
	}
	return bucket{Label: t.Format("2 Jan"), Title: t.Format("Mon 2 Jan 2006")}
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func cloneMap(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// zipRows bounds the rows of each table of the view's zip: MaxQueryLimit
// for the owner, publicRows for anyone else.
func zipRows(v *visit) int {
	if v.owner {
		return engine.MaxQueryLimit
	}
	return publicRows
}

// exportZip serves GET /stats/:domain/export.zip: the view of the overview
// with the same address as CSV files in a zip: totals.csv, chart.csv and
// one file per card (its current tab), each with at most zipRows rows.
func (p *Pages) exportZip(w http.ResponseWriter, r *http.Request, v *visit) error {
	ctx := r.Context()
	dr, vs, err := p.viewRequest(r, v)
	if err != nil {
		return err
	}
	release, err := p.viewSlot(ctx)
	if err != nil {
		return err
	}
	defer release() // on the paths that fail before the answers are in
	d, err := p.overviewData(ctx, v, dr, vs)
	if err != nil {
		return err
	}
	goals, err := p.e.Unscoped().Goals(ctx, v.web.ID)
	if err != nil {
		return err
	}
	cs := cardsFor(goals, vs)
	b := new(batch)
	answerOf := make([]func() (cardAnswer, error), len(cs))
	for i, c := range cs {
		answerOf[i] = p.answerCard(ctx, b, v, dr, vs, c, zipRows(v))
	}
	if err := p.run(ctx, v.web.ID, b); err != nil {
		return err
	}
	answers := make([]cardAnswer, len(cs))
	for i, answer := range answerOf {
		if answers[i], err = answer(); err != nil {
			return err
		}
	}
	// Everything is answered: a slow reader of the zip must not hold the
	// slot.
	release()
	capped := false
	for _, a := range answers {
		n := len(a.seg)
		if a.stat != nil {
			n = min(len(a.stat.Rows), zipRows(v))
		}
		capped = capped || a.total > n
	}
	h := w.Header()
	if capped {
		h.Set("X-Webstats-Row-Cap", strconv.Itoa(zipRows(v)))
	}
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Disposition", `attachment; filename="`+strings.TrimSuffix(csvFilename(v.web.Domain, "view", dr), ".csv")+`.zip"`)
	h.Del("Content-Security-Policy")
	// Everything is answered: stream the files. An error from here on
	// (the client went away) cuts the zip short.
	zw := zip.NewWriter(w)
	defer func() {
		if err := zw.Close(); err != nil {
			p.log.Debug("pages: zip export", "err", err)
		}
	}()
	file := func(name string, header []string, rows [][]string) error {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: p.now()})
		if err != nil {
			return err
		}
		cw := csv.NewWriter(f)
		cw.Write(header)
		for _, r := range rows {
			for i := range r {
				r[i] = csvCell(r[i])
			}
			cw.Write(r)
		}
		cw.Flush()
		return cw.Error()
	}
	var rows [][]string
	for _, f := range vs.Filters {
		rows = append(rows, []string{"filter", f.Dim.Key + " " + f.Op + " " + f.Value})
	}
	rows = append(rows, []string{"from", dr.From.String()}, []string{"to", dr.To.String()})
	for _, t := range d.Totals {
		rows = append(rows, []string{t.Label, strconv.FormatUint(t.Value, 10)})
	}
	for _, t := range d.Session {
		rows = append(rows, []string{t.Label, t.Value})
	}
	if err := file("totals.csv", []string{"name", "value"}, rows); err != nil {
		return nil // the header is sent: the zip is cut short
	}
	rows = rows[:0]
	for _, b := range d.Chart.Buckets {
		rows = append(rows, []string{b.Title, strconv.FormatUint(b.Visitors, 10), strconv.FormatUint(b.Pageviews, 10)})
	}
	if err := file("chart.csv", []string{d.Chart.Unit, "visitors", "pageviews"}, rows); err != nil {
		return nil // the header is sent: the zip is cut short
	}
	for i, a := range answers {
		if a.note != "" {
			continue // no table: props without a key, no cities, ...
		}
		name := cs[i].Key + "-" + a.tab.Key + ".csv"
		rows = rows[:0]
		var header []string
		if a.stat != nil {
			t, _ := tableOf(a.tab.Stat)
			header = []string{"value", strings.ToLower(t.Counts)}
			for _, r := range a.stat.Rows[:min(len(a.stat.Rows), zipRows(v))] {
				rows = append(rows, []string{r.Value, strconv.FormatUint(r.Count, 10)})
			}
		} else {
			st := a.tab.seg
			header = append(slices.Clone(st.Dims), st.Metric)
			if st.Goals {
				header = append(header, "conversion_rate")
			}
			for _, r := range a.seg {
				var rec []string
				for _, x := range r.Dimensions {
					rec = append(rec, dimString(x))
				}
				for _, m := range r.Metrics {
					rec = append(rec, strconv.FormatFloat(metricFloat(m), 'f', -1, 64))
				}
				rows = append(rows, rec)
			}
		}
		if err := file(name, header, rows); err != nil {
			return nil // the header is sent: the zip is cut short
		}
	}
	return nil
}

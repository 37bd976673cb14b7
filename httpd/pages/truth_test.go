package pages

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
)

// The one-truth test (SPEC §10.2 last bullet, §10.4; issue #37): every
// number of the overview, of the full tables, of their CSV and of the zip
// export is the Stats API v2's answer (engine.Owner.Query) to the same
// question, filtered or not. The questions are written out here, from
// the SPEC and Plausible's dashboard, not taken from the pages' code.

// truthTab is a table of the overview as a question to the Stats API.
type truthTab struct {
	card, tab  string // the card's id and its tab ("" for the first)
	metric     string
	dims       []string
	show, note int    // the dimensions shown as the row's text and note (-1: none)
	only       string // "pageview": only pageviews; "event": only custom events
	goals      bool   // a conversion-rate column
}

var truthTabs = []truthTab{
	{card: "page", metric: "pageviews", dims: []string{"event:page"}, note: -1, only: "pageview"},
	{card: "landing_page", metric: "visits", dims: []string{"visit:entry_page"}, note: -1},
	{card: "landing_page", tab: "exit", metric: "visits", dims: []string{"visit:exit_page"}, note: -1},
	{card: "referrer", metric: "visits", dims: []string{"visit:source"}, note: -1},
	{card: "referrer", tab: "channels", metric: "visits", dims: []string{"visit:channel"}, note: -1},
	{card: "referrer", tab: "utm_source", metric: "visits", dims: []string{"visit:utm_source"}, note: -1},
	{card: "referrer", tab: "utm_medium", metric: "visits", dims: []string{"visit:utm_medium"}, note: -1},
	{card: "referrer", tab: "utm_content", metric: "visits", dims: []string{"visit:utm_content"}, note: -1},
	{card: "referrer", tab: "utm_term", metric: "visits", dims: []string{"visit:utm_term"}, note: -1},
	{card: "campaign", metric: "visits", dims: []string{"visit:utm_campaign"}, note: -1},
	{card: "country", metric: "visitors", dims: []string{"visit:country", "visit:country_name"}, show: 1, note: 0},
	{card: "browser", metric: "visitors", dims: []string{"visit:browser"}, note: -1},
	{card: "browser", tab: "versions", metric: "visitors", dims: []string{"visit:browser", "visit:browser_version"}, show: 1, note: 0},
	{card: "os", metric: "visitors", dims: []string{"visit:os"}, note: -1},
	{card: "os", tab: "versions", metric: "visitors", dims: []string{"visit:os", "visit:os_version"}, show: 1, note: 0},
	{card: "device", metric: "visitors", dims: []string{"visit:device"}, note: -1},
	{card: "event", metric: "events", dims: []string{"event:name"}, note: -1, only: "event"},
	{card: "goals", metric: "visitors", dims: []string{"event:goal"}, note: -1, goals: true},
	{card: "props", tab: "plan", metric: "visitors", dims: []string{"event:props:plan"}, note: -1},
}

// truthViews are the views walked: their f parameters and the Stats API
// filters they mean.
var truthViews = []struct {
	params  []string
	filters []engine.Filter
}{
	{nil, nil},
	{[]string{"is,page,/about"}, []engine.Filter{{Op: "is", Dimension: "event:page", Clauses: []string{"/about"}}}},
	{[]string{"is,source,Google"}, []engine.Filter{{Op: "is", Dimension: "visit:source", Clauses: []string{"Google"}}}},
	{[]string{"is_not,country,US", "is,goal,Signup"}, []engine.Filter{
		{Op: "is_not", Dimension: "visit:country", Clauses: []string{"US"}}, {Op: "is", Dimension: "event:goal", Clauses: []string{"Signup"}}}},
}

// trackVaried tracks varied traffic on public.example over three days:
// pages with and without query strings, referrers and UTM tags, several
// browsers, located and unlocatable (private) addresses, custom events
// with a property, and goals.
func (f *fixture) trackVaried() {
	f.t.Helper()
	ctx := context.Background()
	for _, g := range []engine.Goal{{EventName: "Signup"}, {PagePath: "/about"}} {
		if _, err := f.e.Owner(f.owner.ID).AddGoal(ctx, f.public.ID, g); err != nil {
			f.t.Fatal(err)
		}
	}
	uas := []string{chromeUA,
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
		"Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0"}
	ips := []string{"8.8.8.8", "81.2.69.160", "46.4.0.1", "192.168.1.7", "10.0.0.9", "133.242.0.1"}
	refs := []string{"", "https://www.google.com/", "https://news.ycombinator.com/item?id=1", "https://t.co/x"}
	pages := []string{"/", "/about", "/about?utm_source=news&utm_medium=email&utm_campaign=fall", "/pricing?ref=hn",
		"/docs/a?utm_content=c1&utm_term=t1", "/about?x=1"}
	var hs []engine.Hit
	for i := range 60 {
		v := i % 17 // the visitor
		at := day("2026-11-18 08:00").Add(time.Duration(i%3)*24*time.Hour + time.Duration(i)*7*time.Minute)
		ip := netip.MustParseAddr(ips[v%len(ips)]).As4()
		ip[3] += byte(v) // one address a visitor
		h := engine.Hit{
			URL: "https://public.example" + pages[(i*5+v)%len(pages)], Referrer: refs[(i+v)%len(refs)],
			UserAgent: uas[v%len(uas)], Language: "en-US", Resolution: "1920x1080",
			IP: netip.AddrFrom4(ip), Time: at,
		}
		if i%4 == 3 {
			h.Event = &engine.Event{Name: []string{"Signup", "Download"}[i%8/4]}
			h.Props = []engine.Prop{{Key: "plan", Value: []string{"free", "pro", "team"}[i%3]}}
			h.Referrer = ""
		}
		hs = append(hs, h)
	}
	res, err := f.e.Track(ctx, hs...)
	if err != nil || res.Accepted != len(hs) {
		f.t.Fatalf("Track: %v, accepted %d of %d: %v", err, res.Accepted, len(hs), res.Reasons)
	}
}

// truthRange is the overview's default range on testNow (30 days).
var truthRange = engine.DateRange{FromDay: engine.DateOf(2026, 10, 23), ToDay: engine.DateOf(2026, 11, 21)}

// api answers q over truthRange with fs and tab's restriction.
func (f *fixture) api(q engine.Query, fs []engine.Filter, only string) engine.QueryResult {
	f.t.Helper()
	if q.DateRange == (engine.DateRange{}) {
		q.DateRange = truthRange
	}
	q.Filters = append(slices.Clone(fs), q.Filters...)
	switch only {
	case "pageview":
		q.Filters = append(q.Filters, engine.Filter{Op: "is", Dimension: "event:name", Clauses: []string{"pageview"}})
	case "event":
		q.Filters = append(q.Filters, engine.Filter{Op: "is_not", Dimension: "event:name", Clauses: []string{"pageview"}})
	}
	res, err := f.e.Owner(f.owner.ID).Query(context.Background(), f.public.ID, q)
	if err != nil {
		f.t.Fatalf("Query %+v: %v", q, err)
	}
	return res
}

// wantRows returns tab's rows as a table shows them: "text|note|count"
// (and "|rate%" with goals), from the Stats API's answer.
func (tt truthTab) wantRows(res engine.QueryResult) []string {
	var out []string
	for _, r := range res.Results {
		text, _ := r.Dimensions[tt.show].(string)
		if text == "" {
			text = "(none)"
		}
		note := ""
		if tt.note >= 0 {
			note, _ = r.Dimensions[tt.note].(string)
		}
		s := text + "|" + note + "|" + strconv.FormatInt(r.Metrics[0].(int64), 10)
		if tt.goals {
			s += "|" + strconv.FormatFloat(math.Round(num(r.Metrics[1])*10)/10, 'f', -1, 64) + "%"
		}
		out = append(out, s)
	}
	return out
}

// num reads a metric: Query answers whole values as int64, others as
// float64.
func num(x any) float64 {
	if n, ok := x.(int64); ok {
		return float64(n)
	}
	f, _ := x.(float64)
	return f
}

var (
	rowRE  = regexp.MustCompile(`(?s)<th scope="row">(.*?)</th>\s*<td class="num">([^<]*)</td>(?:<td class="num">([^<]*)</td>)?`)
	noteRE = regexp.MustCompile(`(?s) <span class="note">(.*?)</span>`)
)

// shownRows returns the rows of the table in html as "text|note|count"
// (and "|rate" when there is a rate column).
func shownRows(html string) []string {
	var out []string
	for _, m := range rowRE.FindAllStringSubmatch(html, -1) {
		note := ""
		if n := noteRE.FindStringSubmatch(m[1]); n != nil {
			note = text(n[1])
		}
		s := text(noteRE.ReplaceAllString(m[1], "")) + "|" + note + "|" + strings.ReplaceAll(m[2], ",", "")
		if m[3] != "" {
			s += "|" + m[3]
		}
		out = append(out, s)
	}
	return out
}

// section returns the card with id key of an overview.
func section(body, key string) string {
	i := strings.Index(body, `<section class="card top" id="`+key+`"`)
	if i < 0 {
		return ""
	}
	sec := body[i:]
	return sec[:strings.Index(sec, "</section>")]
}

func TestOverviewEqualsQuery(t *testing.T) {
	f := newFixture(t)
	f.trackVaried()
	c := f.client()
	get := func(path string) string {
		t.Helper()
		res := c.get(path)
		if res.status != http.StatusOK {
			t.Fatalf("GET %s: status %d\n%s", path, res.status, mainText(res.body))
		}
		return res.body
	}
	for _, vw := range truthViews {
		t.Run(strings.Join(vw.params, "&"), func(t *testing.T) {
			base := url.Values{"f": vw.params}
			body := get("/stats/public.example?" + base.Encode())
			checkTotals(t, f, mainText(body), vw.filters, slices.ContainsFunc(vw.filters, func(x engine.Filter) bool { return x.Dimension == "event:page" }))
			checkChart(t, f, body, vw.filters)
			for _, tt := range truthTabs {
				q := url.Values{"f": vw.params}
				switch {
				case tt.card == "props":
					q.Set("prop", tt.tab)
				case tt.tab != "":
					q.Set(tt.card, tt.tab)
				}
				sec := section(get("/stats/public.example?"+q.Encode()), tt.card)
				if sec == "" {
					t.Errorf("%s/%s: no card", tt.card, tt.tab)
					continue
				}
				ms := []string{tt.metric}
				if tt.goals {
					ms = append(ms, "conversion_rate")
				}
				want := tt.wantRows(f.api(engine.Query{Metrics: ms, Dimensions: tt.dims, Pagination: engine.Pagination{Limit: 10}}, vw.filters, tt.only))
				if got := shownRows(sec); !slices.Equal(got, want) {
					t.Errorf("%s/%s: shown\n%q\nStats API\n%q", tt.card, tt.tab, got, want)
				}
			}
			// No City database: the cards say how to add one.
			mustContain(t, "cities", text(section(body, "city")), "-geoip")
			mustContain(t, "regions", text(section(get("/stats/public.example?country=regions&"+base.Encode()), "country")), "-geoip")
			if len(vw.params) > 0 {
				mustContain(t, "continents", text(section(body, "continent")), "Not kept per visit")
			}
			checkZip(t, f, get("/stats/public.example/export.zip?"+base.Encode()), vw.filters)
		})
	}
	// The list of websites: the last 30 days.
	home := f.client()
	home.signIn(f.ownerKey)
	m := f.api(engine.Query{Metrics: []string{"visitors", "pageviews"}}, nil, "").Results[0].Metrics
	mustContain(t, "websites", text(home.get("/").body), fmt.Sprintf("public.example Public %d %d", m[0], m[1]))
	// Written out by hand: the unfiltered Pages card lists paths, so the
	// 26 pageviews of /about, with or without a query, are one row.
	pages := text(section(get("/stats/public.example"), "page"))
	mustContain(t, "pages", pages, " /about 26 ")
	if strings.Contains(pages, "?") {
		t.Errorf("the Pages card lists a page with its query: %s", pages)
	}
}

// checkTotals compares the totals shown in txt with the Stats API's.
func checkTotals(t *testing.T, f *fixture, txt string, fs []engine.Filter, pageFilter bool) {
	t.Helper()
	ms := []string{"visitors", "visits", "pageviews", "events", "bounce_rate", "visit_duration"}
	if !pageFilter {
		ms = append(ms, "views_per_visit")
	}
	m := f.api(engine.Query{Metrics: ms}, fs, "").Results[0].Metrics
	n := func(i int) int64 { return m[i].(int64) }
	one := func(x any) string { return strconv.FormatFloat(math.Round(num(x)*10)/10, 'f', -1, 64) }
	d := int64(num(m[5]) + 0.5)
	dur := fmt.Sprintf("%ds", d)
	if d >= 60 {
		dur = fmt.Sprintf("%dm %ds", d/60, d%60)
	}
	want := []string{
		fmt.Sprintf("Unique visitors %d ", n(0)), fmt.Sprintf("Visits %d ", n(1)), fmt.Sprintf("Pageviews %d ", n(2)),
		fmt.Sprintf("Events %d ", n(3)-n(2)), "Bounce rate " + one(m[4]) + "% ", "Visit duration " + dur + " ",
	}
	if !pageFilter {
		want = append(want, "Views per visit "+one(m[6])+" ")
	}
	mustContain(t, "totals", txt, want...)
}

// checkChart compares the chart's data table (days) with the Stats API's
// visitors and pageviews per day.
func checkChart(t *testing.T, f *fixture, body string, fs []engine.Filter) {
	t.Helper()
	res := f.api(engine.Query{Metrics: []string{"visitors", "pageviews"}, Dimensions: []string{"time:day"}, Include: engine.Include{TimeLabels: true}}, fs, "")
	byDay := map[string][2]int64{}
	for _, r := range res.Results {
		byDay[r.Dimensions[0].(string)] = [2]int64{r.Metrics[0].(int64), r.Metrics[1].(int64)}
	}
	var want []string
	for _, l := range res.Meta.TimeLabels {
		d, _ := time.Parse("2006-01-02", l)
		want = append(want, fmt.Sprintf("%s|%d|%d", d.Format("Mon 2 Jan 2006"), byDay[l][0], byDay[l][1]))
	}
	var got []string
	for _, m := range regexp.MustCompile(`<tr><th scope="row">([^<]*)</th><td class="num">([^<]*)</td><td class="num">([^<]*)</td></tr>`).FindAllStringSubmatch(body, -1) {
		got = append(got, m[1]+"|"+m[2]+"|"+m[3])
	}
	if !slices.Equal(got, want) {
		t.Errorf("chart: shown\n%q\nStats API\n%q", got, want)
	}
}

// checkZip compares the zip's totals and tables with the Stats API's.
func checkZip(t *testing.T, f *fixture, body string, fs []engine.Filter) {
	t.Helper()
	files := readZip(t, body)
	m := f.api(engine.Query{Metrics: []string{"visitors", "visits", "pageviews", "events"}}, fs, "").Results[0].Metrics
	for i, label := range []string{"Unique visitors", "Visits", "Pageviews", "Events"} {
		v := m[i].(int64)
		if label == "Events" {
			v -= m[2].(int64)
		}
		if !slices.ContainsFunc(files["totals.csv"], func(r []string) bool { return slices.Equal(r, []string{label, strconv.FormatInt(v, 10)}) }) {
			t.Errorf("totals.csv: no %s %d: %q", label, v, files["totals.csv"])
		}
	}
	for _, tt := range truthTabs {
		if tt.tab != "" {
			continue // the zip has each card's current tab: the first
		}
		ms := []string{tt.metric}
		if tt.goals {
			ms = append(ms, "conversion_rate")
		}
		res := f.api(engine.Query{Metrics: ms, Dimensions: tt.dims}, fs, tt.only)
		want := [][]string{append(slices.Clone(tt.dims), ms...)}
		for _, r := range res.Results {
			var rec []string
			for _, d := range r.Dimensions {
				rec = append(rec, d.(string))
			}
			for _, x := range r.Metrics {
				rec = append(rec, fmt.Sprint(x))
			}
			want = append(want, rec)
		}
		name := tt.card + "-" + map[string]string{"page": "top", "landing_page": "entry", "referrer": "referrers", "campaign": "campaigns",
			"country": "countries", "browser": "browsers", "os": "os", "device": "devices", "event": "events", "goals": "goals"}[tt.card] + ".csv"
		if got := files[name]; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s: %q\nStats API %q", name, got, want)
		}
	}
}

// TestFullTablesEqualQuery checks the full tables and their CSV: the rows
// of the Stats API's answer over the range, largest first (ties by
// value), a page of 100.
func TestFullTablesEqualQuery(t *testing.T) {
	f := newFixture(t)
	f.trackVaried()
	c := f.client()
	for _, tt := range truthTabs {
		if tt.tab != "" || tt.card == "goals" {
			continue // a full table is a card's first tab, goals have none
		}
		tc := struct {
			name string
			tt   truthTab
		}{tt.card, tt}
		q := engine.Query{Metrics: []string{tc.tt.metric}, Dimensions: tc.tt.dims, Pagination: engine.Pagination{Limit: 100},
			OrderBy: []engine.OrderBy{{Key: tc.tt.metric, Desc: true}, {Key: tc.tt.dims[tc.tt.show]}}}
		res := f.api(q, nil, tc.tt.only)
		page := c.get("/stats/public.example/" + tc.name)
		if got, want := shownRows(page.body), tc.tt.wantRows(res); !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("%s page: shown\n%q\nStats API\n%q", tc.name, got, want)
		}
		recs, err := csv.NewReader(strings.NewReader(c.get("/stats/public.example/" + tc.name + ".csv").body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{append(slices.Clone(tc.tt.dims), tc.tt.metric)}
		for _, r := range res.Results {
			var rec []string
			for _, d := range r.Dimensions {
				rec = append(rec, d.(string))
			}
			want = append(want, append(rec, fmt.Sprint(r.Metrics[0])))
		}
		if !slices.EqualFunc(recs, want, slices.Equal) {
			t.Errorf("%s.csv: %q\nStats API %q", tc.name, recs, want)
		}
	}
}

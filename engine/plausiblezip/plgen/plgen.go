// Package plgen makes Plausible export zips for tests and benchmarks: the
// files and columns of Plausible's "Export data" (lib/plausible/exports.ex:
// the export_*_q queries' columns and order), random numbers, and the sums
// of what it wrote, computed as it writes them, for tests to check the
// import against.
package plgen

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/webstats/webstats/buckets"
)

// Options shape an export.
type Options struct {
	From buckets.Date
	Days int
	// DailyVisitors is the mean visitors of a day.
	DailyVisitors int
	// Pages, Cities: how many distinct pages and cities a day has.
	Pages, Cities int
	Seed          uint64
}

// Sums are what an export holds, summed as it was written.
type Sums struct {
	// Total sums imported_visitors: visitors, visits, pageviews, bounces,
	// visit_duration.
	Total [5]uint64
	// Daily is imported_visitors by day.
	Daily map[buckets.Date][5]uint64
	// Visitors sums the visitors of a dimension value: Visitors["source"]["Google"].
	// A blank source is "".
	Visitors map[string]map[string]uint64
	// Pageviews sums imported_pages' pageviews by page.
	Pageviews map[string]uint64
	// Events sums imported_custom_events' events by name.
	Events map[string]uint64
	Rows   int
}

// Header lines of each file, as exports.ex writes them.
var Header = map[string][]string{
	"imported_visitors":          {"date", "visitors", "pageviews", "bounces", "visits", "visit_duration"},
	"imported_sources":           {"date", "source", "referrer", "utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term", "pageviews", "visitors", "visits", "visit_duration", "bounces"},
	"imported_pages":             {"date", "hostname", "page", "visits", "visitors", "pageviews", "total_scroll_depth", "total_scroll_depth_visits"},
	"imported_entry_pages":       {"date", "entry_page", "visitors", "entrances", "visit_duration", "bounces", "pageviews"},
	"imported_exit_pages":        {"date", "exit_page", "visitors", "visit_duration", "exits", "bounces", "pageviews"},
	"imported_custom_events":     {"date", "name", "link_url", "path", "visitors", "events"},
	"imported_locations":         {"date", "country", "region", "city", "visitors", "visits", "visit_duration", "bounces", "pageviews"},
	"imported_devices":           {"date", "device", "visitors", "visits", "visit_duration", "bounces", "pageviews"},
	"imported_browsers":          {"date", "browser", "browser_version", "visitors", "visits", "visit_duration", "bounces", "pageviews"},
	"imported_operating_systems": {"date", "operating_system", "operating_system_version", "visitors", "visits", "visit_duration", "bounces", "pageviews"},
}

// Tables lists the files in the order they are written.
var Tables = []string{"imported_visitors", "imported_sources", "imported_pages", "imported_entry_pages",
	"imported_exit_pages", "imported_custom_events", "imported_locations", "imported_devices",
	"imported_browsers", "imported_operating_systems"}

var (
	sources  = []string{"", "Google", "DuckDuckGo", "Hacker News", "Twitter", "Bing"}
	devices  = []string{"Desktop", "Mobile", "Tablet"}
	browsers = [][2]string{{"Chrome", "120.0"}, {"Firefox", "121.0"}, {"Safari", "17.1"}, {"", ""}}
	systems  = [][2]string{{"Mac", "14.1"}, {"Windows", "10"}, {"Android", "14"}, {"iOS", "17.1"}}
	places   = [][3]string{{"EE", "EE-37", "588409"}, {"US", "US-CA", "5391959"}, {"DE", "DE-BE", "2950159"}, {"FR", "", "0"}}
	events   = []string{"Signup", "Outbound Link: Click", "Purchase"}
)

// Zip writes an export zip and returns it with its sums.
func Zip(o Options) ([]byte, *Sums) {
	g := &gen{o: o, r: rand.New(rand.NewPCG(o.Seed, 7)), s: &Sums{Daily: map[buckets.Date][5]uint64{},
		Visitors: map[string]map[string]uint64{}, Pageviews: map[string]uint64{}, Events: map[string]uint64{}}}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	last := o.From + buckets.Date(o.Days-1)
	suffix := "_" + compact(o.From) + "_" + compact(last) + ".csv"
	for _, t := range Tables {
		w, err := zw.Create(t + suffix)
		if err != nil {
			panic(err)
		}
		cw := csv.NewWriter(w)
		_ = cw.Write(Header[t])
		for d := o.From; d <= last; d++ {
			g.day(cw, t, d)
		}
		cw.Flush()
		if cw.Error() != nil {
			panic(cw.Error())
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes(), g.s
}

func compact(d buckets.Date) string {
	y, m, dd := d.Civil()
	return fmt.Sprintf("%04d%02d%02d", y, m, dd)
}

type gen struct {
	o Options
	r *rand.Rand
	s *Sums
}

// n is a random count around mean.
func (g *gen) n(mean int) uint64 { return uint64(g.r.IntN(2*mean + 1)) }

func u(v uint64) string { return strconv.FormatUint(v, 10) }

// session writes a session table's row: visitors, visits, duration,
// bounces, pageviews in the order cols names them, and sums visitors
// under key/value.
func (g *gen) session(cw *csv.Writer, lead []string, mean int, key, value string) {
	v := g.n(mean)
	visits := v + v/4
	rec := append(lead, u(v), u(visits), u(visits*37), u(visits/3), u(visits*2))
	_ = cw.Write(rec)
	g.sum(key, value, v)
}

func (g *gen) sum(key, value string, v uint64) {
	if g.s.Visitors[key] == nil {
		g.s.Visitors[key] = map[string]uint64{}
	}
	g.s.Visitors[key][value] += v
	g.s.Rows++
}

// day writes table t's rows of day d.
func (g *gen) day(cw *csv.Writer, t string, d buckets.Date) {
	ds := d.String()
	dv := g.o.DailyVisitors
	switch t {
	case "imported_visitors":
		v := g.n(dv)
		m := [5]uint64{v, v + v/5, 3 * v, v / 2, 55 * v}
		_ = cw.Write([]string{ds, u(m[0]), u(m[2]), u(m[3]), u(m[1]), u(m[4])})
		for i := range m {
			g.s.Total[i] += m[i]
		}
		g.s.Daily[d] = m
		g.s.Rows++
	case "imported_sources":
		for _, src := range sources {
			v := g.n(dv / len(sources))
			ref, utm := "", ""
			if src == "Google" {
				ref, utm = "google.com", "newsletter"
			}
			_ = cw.Write([]string{ds, src, ref, utm, "", "", "", "", u(2 * v), u(v), u(v), u(40 * v), u(v / 2)})
			g.sum("source", src, v)
		}
	case "imported_pages":
		for p := range g.o.Pages {
			page := "/blog/post-" + strconv.Itoa(p)
			v := g.n(dv / g.o.Pages)
			_ = cw.Write([]string{ds, "example.com", page, u(v), u(v), u(2 * v), u(v * 50), u(v)})
			g.sum("page", page, v)
			g.s.Pageviews[page] += 2 * v
		}
	case "imported_entry_pages", "imported_exit_pages":
		for p := range max(1, g.o.Pages/3) {
			page := "/blog/post-" + strconv.Itoa(p)
			v := g.n(dv / max(1, g.o.Pages/3))
			if t == "imported_entry_pages" { // visitors, entrances, visit_duration, bounces, pageviews
				_ = cw.Write([]string{ds, page, u(v), u(v), u(v * 30), u(v / 3), u(v * 2)})
			} else { // visitors, visit_duration, exits, bounces, pageviews
				_ = cw.Write([]string{ds, page, u(v), u(v * 30), u(v), u(v / 3), u(v * 2)})
			}
			g.sum(t, page, v)
		}
	case "imported_custom_events":
		for _, name := range events {
			v := g.n(dv / 20)
			link := ""
			if name == "Outbound Link: Click" {
				link = "https://github.com/"
			}
			_ = cw.Write([]string{ds, name, link, "", u(v), u(v + v/2)})
			g.sum("name", name, v)
			g.s.Events[name] += v + v/2
		}
	case "imported_locations":
		for i := range g.o.Cities {
			pl := places[i%len(places)]
			city := pl[2]
			if i >= len(places) {
				city = strconv.Itoa(1000000 + i)
			}
			g.session(cw, []string{ds, pl[0], pl[1], city}, dv/g.o.Cities, "country", pl[0])
		}
	case "imported_devices":
		for _, dev := range devices {
			g.session(cw, []string{ds, dev}, dv/len(devices), "device", dev)
		}
	case "imported_browsers":
		for _, b := range browsers {
			g.session(cw, []string{ds, b[0], b[1]}, dv/len(browsers), "browser", b[0])
		}
	case "imported_operating_systems":
		for _, s := range systems {
			g.session(cw, []string{ds, s[0], s[1]}, dv/len(systems), "os", s[0])
		}
	}
}

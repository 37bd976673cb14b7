package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
)

// clientScript calls every method of the npm client plausible@2.2.1
// (Schotsl/Plausible: getRealtime, getAggregate, getTimeseries,
// getBreakdown; getAbstract is the request they share) with the server's
// base URL, its only setting, and prints {call: result} as JSON.
const clientScript = `
import Plausible from "plausible";
const { WEBSTATS_URL: base, WEBSTATS_KEY: key } = process.env;
const c = new Plausible(key, "c.example", base);
const out = {};
const run = async (name, f) => {
  try { out[name] = await f(); } catch (e) { out[name] = "error: " + e.message; }
};
await run("realtime", () => c.getRealtime());
await run("aggregate", () => c.getAggregate("30d", "visitors,pageviews,bounce_rate,visit_duration"));
await run("aggregate_compare", () => c.getAggregate("30d", "visitors", true));
await run("aggregate_pageviews", () => c.getAggregate("30d", "pageviews"));
await run("aggregate_bounce_rate", () => c.getAggregate("30d", "bounce_rate"));
await run("aggregate_visit_duration", () => c.getAggregate("30d", "visit_duration"));
await run("aggregate_goal", () => c.getAggregate("30d", "visitors,events", false, "event:goal==Purchase"));
await run("aggregate_today", () => c.getAggregate("day", "visitors,pageviews"));
await run("timeseries", () => c.getTimeseries("30d", "visitors,pageviews", null, "date"));
await run("timeseries_goal", () => c.getTimeseries("30d", "visitors", "event:goal==Signup", "date"));
await run("countries", () => c.getBreakdown("30d", "visitors", "visit:country"));
await run("pages", () => c.getBreakdown("30d", "visitors,pageviews", "event:page", "event:name==pageview", 2, 1));
await run("pages_2", () => c.getBreakdown("30d", "visitors,pageviews", "event:page", "event:name==pageview", 2, 2));
await run("goals", () => c.getBreakdown("30d", "visitors,events", "event:goal"));
await run("names", () => c.getBreakdown("30d", "visitors", "event:name"));
await run("plans", () => c.getBreakdown("30d", "visitors", "event:props:plan", "event:goal==Purchase|Signup"));
await run("browsers", () => c.getBreakdown("30d", "visitors", "visit:browser"));
await run("systems", () => c.getBreakdown("30d", "visitors", "visit:os"));
await run("edge", () => c.getBreakdown("30d", "visitors", "visit:os", "visit:browser==Microsoft Edge"));
console.log(JSON.stringify(out));
`

// TestPlausibleClient imports a month of history into the webstatsd binary
// (the import API with Plausible's fields: props, revenue, interactive),
// sends two live hits through the Events API as a server-side integration
// does, then calls every method of the npm client plausible@2.2.1 and
// compares each result with the reference computed from those hits.
func TestPlausibleClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds webstatsd and runs node")
	}
	nodeModules(t)
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: no node: apt-get install -y nodejs npm")
		}
		t.Skip("no node: apt-get install -y nodejs npm")
	}
	srv := startServer(t)
	now := time.Now().UTC()
	today := now.Truncate(24 * time.Hour)
	id := srv.website(t, "c.example", []string{"Purchase", "Signup", "Video Autoplay", "Outbound Link: Click"}, "Purchase", "EUR")

	hist, lines := clientHistory(today)
	var imported struct {
		Data struct{ Accepted int } `json:"data"`
	}
	srv.call(t, "POST", fmt.Sprintf("/api/v1/websites/%d/events", id), "application/x-ndjson", strings.Join(lines, "\n"), http.StatusOK, &imported)
	if imported.Data.Accepted != len(lines) {
		t.Fatalf("import accepted %d of %d", imported.Data.Accepted, len(lines))
	}
	live := clientLive(t, srv)

	out := runNode(t, node, clientScript, "WEBSTATS_URL="+srv.base, "WEBSTATS_KEY="+srv.key)
	if time.Now().UTC().Truncate(24*time.Hour) != today {
		t.Skip("the UTC day changed during the run: the questions are about the 30 days before today")
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := clientWant(today, hist, live)
	for _, name := range sortedKeys(want) {
		if diff := gocmp.Diff(want[name], got[name]); diff != "" {
			t.Errorf("plausible@2.2.1 %s (-want +got):\n%s", name, diff)
		}
	}

	// The same history through Stats API v2: the 30 days before today.
	from, to := today.AddDate(0, 0, -30).Format(time.DateOnly), today.AddDate(0, 0, -1).Format(time.DateOnly)
	checkSite(t, srv, "c.example", from, to, hist, true)
	checkRevenue(t, srv, "c.example", from, to, hist)
}

// runNode runs an ES module script with node in the npm directory (so that
// it imports the installed packages) and returns its stdout.
func runNode(t *testing.T, node, script string, env ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-")
	cmd.Dir, _ = filepath.Abs(npmDir)
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr.String())
	}
	return out
}

// clientHistory is the imported month: five visitors from four countries,
// one of them with only a server-side event (counted as a visitor and a
// visit, as in Plausible), one bounce followed by a non-interactive event
// 40 s later (a bounce of 40 s), one visitor with two visits.
func clientHistory(today time.Time) (model, []string) {
	d1, d3 := today.AddDate(0, 0, -1), today.AddDate(0, 0, -3)
	at := func(d time.Time, hms string) time.Time {
		c, _ := time.Parse(time.TimeOnly, hms)
		return d.Add(time.Duration(c.Hour())*time.Hour + time.Duration(c.Minute())*time.Minute + time.Duration(c.Second())*time.Second)
	}
	type line struct {
		hit
		ip, url string
		ua      agent
	}
	chromeWin := agent{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Chrome", "Windows"}
	var ls []line
	add := func(visitor, ip, country string, ua agent, when time.Time, name, url string, props ...string) *line {
		h := hit{visitor: visitor, name: name, at: when, country: country, browser: ua.browser, os: ua.os}
		h.page, _, _ = strings.Cut(strings.TrimPrefix(url, "https://c.example"), "?")
		if len(props) > 0 {
			h.props = map[string]string{props[0]: props[1]}
		}
		ls = append(ls, line{hit: h, ip: ip, url: url, ua: ua})
		return &ls[len(ls)-1]
	}
	add("V1", "8.8.8.8", "US", chromeWin, at(d1, "10:00:00"), "pageview", "https://c.example/")
	add("V1", "8.8.8.8", "US", chromeWin, at(d1, "10:05:00"), "pageview", "https://c.example/pricing?utm_source=news")
	add("V1", "8.8.8.8", "US", chromeWin, at(d1, "10:06:00"), "Purchase", "https://c.example/pricing", "plan", "pro").revenue = 50
	add("V2", "46.4.0.1", "DE", firefoxLin, at(d1, "11:00:00"), "pageview", "https://c.example/blog/a")
	add("V2", "46.4.0.1", "DE", firefoxLin, at(d1, "11:00:40"), "Video Autoplay", "https://c.example/blog/a").nonInt = true
	add("V3", "133.242.0.1", "JP", safariMac, at(d1, "12:00:00"), "Signup", "https://c.example/signup", "plan", "free")
	add("V4", "200.147.0.1", "BR", edgeWindows, at(d3, "09:00:00"), "pageview", "https://c.example/")
	add("V4", "200.147.0.1", "BR", edgeWindows, at(d3, "09:02:00"), "Outbound Link: Click", "https://c.example/", "url", "https://partner.example/")
	add("V5", "9.9.9.9", "US", chromeLinux, at(d1, "13:00:00"), "pageview", "https://c.example/blog/a")
	add("V5", "9.9.9.9", "US", chromeLinux, at(d1, "14:00:00"), "pageview", "https://c.example/blog/a")
	add("V5", "9.9.9.9", "US", chromeLinux, at(d1, "14:02:00"), "pageview", "https://c.example/pricing")

	var m model
	var lines []string
	for _, l := range ls {
		m = append(m, l.hit)
		rec := map[string]any{"time": l.at.Format(time.RFC3339), "page": l.url, "ip": l.ip, "user_agent": l.ua.ua}
		if l.name != "pageview" {
			rec["event"] = map[string]any{"name": l.name}
		}
		if l.props != nil {
			rec["props"] = l.props
		}
		if l.revenue != 0 {
			rec["revenue"] = map[string]any{"amount": l.revenue, "currency": "EUR"}
		}
		if l.nonInt {
			rec["interactive"] = false
		}
		b, _ := json.Marshal(rec)
		lines = append(lines, string(b))
	}
	// The model keeps time order, which visits() relies on per visitor.
	return m, lines
}

// clientLive sends today's hits through the Events API, as a server-side
// integration does: two visitors, one with a custom event.
func clientLive(t *testing.T, srv *server) model {
	t.Helper()
	send := func(ua agent, body string) {
		req, _ := http.NewRequest("POST", srv.base+"/api/event", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", ua.ua)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Webstats-Dropped") != "" {
			t.Fatalf("POST /api/event %s: %s, dropped %q", body, resp.Status, resp.Header.Get("X-Webstats-Dropped"))
		}
	}
	send(chromeLinux, `{"name":"pageview","url":"https://c.example/live","domain":"c.example"}`)
	send(firefoxLin, `{"name":"pageview","url":"https://c.example/live","domain":"c.example"}`)
	send(firefoxLin, `{"name":"Signup","url":"https://c.example/live","domain":"c.example","props":{"plan":"free"}}`)
	now := time.Now()
	return model{
		{visitor: "L1", name: "pageview", page: "/live", at: now, browser: chromeLinux.browser, os: chromeLinux.os},
		{visitor: "L2", name: "pageview", page: "/live", at: now, browser: firefoxLin.browser, os: firefoxLin.os},
		{visitor: "L2", name: "Signup", page: "/live", at: now, browser: firefoxLin.browser, os: firefoxLin.os, props: map[string]string{"plan": "free"}},
	}
}

// clientWant is what each call of clientScript must return: Plausible v1's
// answer for the hits, reshaped as the client reshapes it. Plausible's v1
// "30d" is the 30 days before the date and the date itself, today by
// default (lib/plausible/stats/legacy/legacy_query_builder.ex, put_period),
// unlike v2's "30d", which ends yesterday.
func clientWant(today time.Time, hist, live model) map[string]any {
	hist = append(slices.Clone(hist), live...)
	agg := hist.aggregate() // visitors, visits, pageviews, events, bounce_rate, visit_duration
	value := func(v any) map[string]any { return map[string]any{"value": v} }
	purchases := hist.filter(func(h hit) bool { return h.name == "Purchase" })
	series := func(m model, metrics ...string) []any {
		var rows []any
		for d := today.AddDate(0, 0, -30); !d.After(today); d = d.AddDate(0, 0, 1) {
			day := m.filter(func(h hit) bool { return h.at.Truncate(24 * time.Hour).Equal(d) })
			row := map[string]any{"date": d.Format(time.DateOnly)}
			for _, metric := range metrics {
				row[metric] = map[string]float64{"visitors": float64(day.visitors()), "pageviews": float64(day.count("pageview"))}[metric]
			}
			rows = append(rows, row)
		}
		return rows
	}
	by := func(f func(hit) string) func(hit) (string, bool) {
		return func(h hit) (string, bool) { return f(h), true }
	}
	pageviews := hist.filter(func(h hit) bool { return h.name == "pageview" })
	pages := v1Rows("page", pageviews.groupBy(by(func(h hit) string { return h.page })))
	for _, r := range pages {
		r := r.(map[string]any)
		r["pageviews"] = float64(pageviews.filter(func(h hit) bool { return h.page == r["page"] }).count("pageview"))
	}
	custom := hist.filter(func(h hit) bool { return h.name != "pageview" })
	goals := v1Rows("goal", custom.groupBy(by(func(h hit) string { return h.name })))
	for _, r := range goals {
		r := r.(map[string]any)
		r["events"] = float64(len(custom.filter(func(h hit) bool { return h.name == r["goal"] })))
	}
	plans := hist.filter(func(h hit) bool { return h.name == "Purchase" || h.name == "Signup" })
	edge := hist.filter(func(h hit) bool { return h.browser == "Microsoft Edge" })
	return map[string]any{
		"realtime":                 float64(live.visitors()),
		"aggregate":                value(agg[0]),
		"aggregate_compare":        map[string]any{"value": agg[0], "change": 100.0}, // nothing in the 31 days before
		"aggregate_pageviews":      value(agg[2]),
		"aggregate_bounce_rate":    value(agg[4]),
		"aggregate_visit_duration": value(agg[5]),
		"aggregate_goal":           value(float64(purchases.visitors())),
		"aggregate_today":          value(float64(live.visitors())),
		"timeseries":               series(hist, "visitors", "pageviews"),
		"timeseries_goal":          series(hist.filter(func(h hit) bool { return h.name == "Signup" }), "visitors"),
		"countries":                v1Rows("country", hist.groupBy(func(h hit) (string, bool) { return h.country, h.country != "" })),
		"pages":                    pages[:2],
		"pages_2":                  pages[2:],
		"goals":                    goals,
		"names":                    v1Rows("name", hist.groupBy(by(func(h hit) string { return h.name }))),
		"plans":                    v1Rows("plan", plans.groupBy(by(func(h hit) string { return h.props["plan"] }))),
		"browsers":                 v1Rows("browser", hist.groupBy(by(func(h hit) string { return h.browser }))),
		"systems":                  v1Rows("os", hist.groupBy(by(func(h hit) string { return h.os }))),
		"edge":                     v1Rows("os", edge.groupBy(by(func(h hit) string { return h.os }))),
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

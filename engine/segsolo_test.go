package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine"
)

// soloUA is the user agent of the hits of this file's tests.
const soloUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"

// soloSite opens an in-memory engine with salt periods salt (and mod),
// and makes an account with the website example.com in UTC.
func soloSite(t *testing.T, c *clock, salt engine.SaltPeriod, mod ...func(*engine.Options)) (*engine.Engine, *engine.Options, engine.TestAccount, engine.Website) {
	t.Helper()
	e, o := openMem(t, c, append([]func(*engine.Options){func(o *engine.Options) { o.SaltPeriod = salt }}, mod...)...)
	ctx := context.Background()
	a, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	domain, tz := "example.com", "UTC"
	w, err := e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain, Timezone: &tz})
	if err != nil {
		t.Fatal(err)
	}
	return e, o, a, w
}

// TestQueryVisitorsAfterSaltChange checks that a query counts a visitor
// once per salt period when the days of one period are scanned apart: a
// week of weekly salts read by an engine now on daily ones. The scan
// counts a day's visitors without a bitmap only when no other day holds
// its period (segments.SoloDays): here every day shares the week's.
func TestQueryVisitorsAfterSaltChange(t *testing.T) {
	c := newClock("2024-01-08T10:00:00Z") // a Monday
	e, o, a, w := soloSite(t, c, engine.SaltWeek)
	ctx := context.Background()
	track := func(when, visitor, page string) {
		t.Helper()
		c.Set(when)
		if _, err := e.Track(ctx, engine.Hit{URL: "https://example.com" + page, UserAgent: soloUA, Visitor: visitor, Website: w.ID}); err != nil {
			t.Fatal(err)
		}
	}
	for _, day := range []string{"08", "09", "10"} {
		track("2024-01-"+day+"T10:00:00Z", "one", "/a")
		track("2024-01-"+day+"T10:01:00Z", "one", "/b")
	}
	track("2024-01-09T12:00:00Z", "two", "/a")
	// One visit that comes back to a page: its group counts it once.
	track("2024-01-08T15:00:00Z", "three", "/a")
	track("2024-01-08T15:01:00Z", "three", "/b")
	track("2024-01-08T15:02:00Z", "three", "/a")
	c.Set("2024-01-20T10:00:00Z") // the week is closed
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o.SaltPeriod = engine.SaltDay
	e, err := engine.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := &sut{e: e, account: a.ID}
	for _, q := range []struct{ body, want string }{
		{`"dimensions":["event:page"],"filters":[["is_not","visit:country",["ZZ"]]]`, `[{"dimensions":["/a"],"metrics":[3,5]},{"dimensions":["/b"],"metrics":[2,4]}]`},
		{`"dimensions":["event:page"]`, `[{"dimensions":["/a"],"metrics":[3,5]},{"dimensions":["/b"],"metrics":[2,4]}]`},
		{`"filters":[["is_not","visit:country",["ZZ"]]]`, `[{"dimensions":[],"metrics":[3,5]}]`},
	} {
		body := `{"site_id":"example.com","date_range":["2024-01-08","2024-01-10"],"metrics":["visitors","visits"],` + q.body + `}`
		if got := s.queryJSON(t, w.ID, body); got != q.want {
			t.Errorf("%s:\n got %s\nwant %s", body, got, q.want)
		}
	}
}

// TestQueryMemoConcurrent runs queries of every shape at once over closed
// days and an open day, with daily and weekly salts, so that days' memos
// (filters, totals) are written and read by queries scanning the same
// days; every answer must equal the one with the memo off. The cache of
// answers is off: it would answer the repeated queries without a scan.
func TestQueryMemoConcurrent(t *testing.T) {
	for _, salt := range []engine.SaltPeriod{engine.SaltDay, engine.SaltWeek} {
		c := newClock("2024-01-08T00:00:00Z")
		e, _, a, w := soloSite(t, c, salt, noAnswerCache)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(1, 2))
		for day := 8; day <= 17; day++ {
			for range 60 {
				c.Set(fmt.Sprintf("2024-01-%02dT%02d:%02d:00Z", day, rng.IntN(24), rng.IntN(60)))
				h := engine.Hit{URL: fmt.Sprintf("https://example.com/p%d", rng.IntN(4)), UserAgent: soloUA, Visitor: fmt.Sprint("v", rng.IntN(15)), Website: w.ID}
				if rng.IntN(5) == 0 {
					h.Event = &engine.Event{Name: "signup"}
				}
				if _, err := e.Track(ctx, h); err != nil {
					t.Fatal(err)
				}
			}
			if day == 14 {
				if err := e.Snapshot(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		query := resultsOf(e, a, w)
		var bodies []string
		for _, dr := range []string{`["2024-01-08","2024-01-17"]`, `["2024-01-09","2024-01-16"]`, `["2024-01-15","2024-01-17"]`, `["2024-01-10","2024-01-10"]`} {
			for _, rest := range []string{
				`"metrics":["visitors","visits","pageviews","events"]`,
				`"metrics":["visitors","visits","pageviews","bounce_rate","visit_duration","views_per_visit"]`,
				`"metrics":["visitors","visits"],"dimensions":["event:page"],"filters":[["is_not","visit:country",["ZZ"]]]`,
				`"metrics":["visitors","visits","events"],"dimensions":["event:name"],"filters":[["is_not","visit:country",["ZZ"]]]`,
				`"metrics":["visitors","visits"],"dimensions":["time:day"]`,
				`"metrics":["visitors","percentage"],"dimensions":["event:page"]`,
			} {
				bodies = append(bodies, `{"site_id":"example.com","date_range":`+dr+`,`+rest+`}`)
			}
		}
		want := map[string]string{}
		prev := engine.SetDayMemo(false)
		for _, b := range bodies {
			var err error
			if want[b], err = query(b); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
		}
		engine.SetDayMemo(prev)
		memoHits := engine.DayMemoHits()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 5 {
					for _, b := range bodies {
						if got, err := query(b); err != nil || got != want[b] {
							t.Errorf("salt %v %s:\n got %s (%v)\nwant %s", salt, b, got, err, want[b])
						}
					}
				}
			})
		}
		wg.Wait()
		if n := engine.DayMemoHits(); n == memoHits {
			t.Errorf("salt %v: no query found its filters in a day's memo", salt)
		}
	}
}

// resultsOf returns a function that answers a query body (JSON) on
// website w with its results in JSON.
func resultsOf(e *engine.Engine, a engine.TestAccount, w engine.Website) func(body string) (string, error) {
	return func(body string) (string, error) {
		q, err := engine.ParseQuery([]byte(body))
		if err != nil {
			return "", err
		}
		res, err := e.Owner(a.ID).Query(context.Background(), w.ID, q)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(res.Results)
		return string(b), err
	}
}

// noAnswerCache turns off the engine's cache of answers (Options.QueryCache),
// for tests whose queries must scan.
func noAnswerCache(o *engine.Options) { o.QueryCache = -1 }

// TestTrackSeveralWebsitesOneCall tracks calls that each mix the hits of two
// websites, in batches of changing sizes (the second website's longer, then
// shorter than the first's; 64 hits, the most Track's pool keeps, and 65),
// so that Track's reused scratch (records, log entries, pending hits) serves
// batches of both websites in one call and calls of other shapes after it.
// The calls hold custom events (pending hits without a period of their
// own) and a visit that crosses midnight under a weekly salt (a pending hit
// whose visit is on another day). Every hit counts once, on its own
// website, with its own page and referrer, also once replayed from the log,
// and every pin a call takes is released once.
func TestTrackSeveralWebsitesOneCall(t *testing.T) {
	c := newClock("2024-03-05T02:00:00Z")
	e, o, a, w1 := soloSite(t, c, engine.SaltWeek, func(o *engine.Options) { o.FS = vfs.NewCrashableMem() })
	ctx := context.Background()
	domain := "other.example"
	w2, err := e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
	if err != nil {
		t.Fatal(err)
	}
	sites := []engine.Website{w1, w2}
	type total struct{ visits, pageviews, events int }
	pages := map[uint32]map[string]int{w1.ID: {}, w2.ID: {}}   // pageviews by page
	sources := map[uint32]map[string]int{w1.ID: {}, w2.ID: {}} // visits by source
	totals := map[uint32]*total{w1.ID: {}, w2.ID: {}}
	start := time.Date(2024, 3, 4, 23, 40, 0, 0, time.UTC)
	n := 0
	// Pageviews of each website per call; w2's last visitor of a call also
	// sends an event.
	for call, shape := range [][2]int{{3, 9}, {9, 2}, {1, 1}, {0, 5}, {7, 0}, {32, 31}, {64, 0}, {63, 1}} {
		at := start.Add(time.Duration(call) * 5 * time.Minute) // calls 4 and after on March 5
		var hs []engine.Hit
		last := "" // w2's last visitor of the call
		pageview := func(w engine.Website, visitor, page string, ref int) {
			hs = append(hs, engine.Hit{Time: at, URL: "https://" + w.Domain + page, Referrer: fmt.Sprintf("https://ref%d.example/x", ref),
				UserAgent: soloUA, Visitor: visitor, Website: w.ID})
			pages[w.ID][page]++
			totals[w.ID].pageviews++
			totals[w.ID].events++
		}
		// The walker's pageview comes first: its pending hit, the one with a
		// visit on another day, is the first the next website's batch reuses.
		switch call {
		case 2: // 23:50: the walker's visit starts
			pageview(w1, "walker", "/walk", 9)
			sources[w1.ID]["ref9.example"]++
			totals[w1.ID].visits++
		case 5: // 00:05 the next day: the same visit goes on
			pageview(w1, "walker", "/walk", 9)
		}
		for i := range max(shape[0], shape[1]) {
			for s, w := range sites {
				if i >= shape[s] {
					continue
				}
				n++
				pageview(w, fmt.Sprint("v", n), fmt.Sprintf("/c%d/%d", call, i%3), n%4)
				if w.ID == w2.ID {
					last = fmt.Sprint("v", n)
				}
				sources[w.ID][fmt.Sprintf("ref%d.example", n%4)]++
				totals[w.ID].visits++
			}
		}
		if shape[1] > 0 {
			hs = append(hs, engine.Hit{Time: at, URL: "https://" + w2.Domain + "/signup", UserAgent: soloUA, Visitor: last, Website: w2.ID,
				Event: &engine.Event{Name: "Signup"}})
			totals[w2.ID].events++
			pages[w2.ID]["/signup"] += 0 // a row of its own, without pageviews
		}
		res, err := e.Track(ctx, hs...)
		if err != nil {
			t.Fatal(err)
		}
		if res.Accepted != len(hs) {
			t.Fatalf("call %d accepted %d of %d hits", call, res.Accepted, len(hs))
		}
		if p := engine.Pins(e); p != 0 {
			t.Fatalf("after call %d: %d pins left", call, p)
		}
	}
	// rows is the expected results of a query by one dimension, ascending.
	rows := func(m map[string]int) string {
		var out []string
		for k, v := range m {
			out = append(out, fmt.Sprintf(`{"dimensions":[%q],"metrics":[%d]}`, k, v))
		}
		slices.Sort(out)
		return "[" + strings.Join(out, ",") + "]"
	}
	check := func(e *engine.Engine) {
		t.Helper()
		for _, w := range sites {
			q := resultsOf(e, a, w)
			body := `{"site_id":"` + w.Domain + `","date_range":["2024-03-04","2024-03-05"],`
			tot := totals[w.ID]
			for _, c := range []struct{ query, want string }{
				{`"metrics":["pageviews"],"dimensions":["event:page"],"order_by":[["event:page","asc"]],"pagination":{"limit":1000}}`, rows(pages[w.ID])},
				{`"metrics":["visits"],"dimensions":["visit:source"],"order_by":[["visit:source","asc"]]}`, rows(sources[w.ID])},
				{`"metrics":["visits","pageviews","events"]}`, fmt.Sprintf(`[{"dimensions":[],"metrics":[%d,%d,%d]}]`, tot.visits, tot.pageviews, tot.events)},
			} {
				got, err := q(body + c.query)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("%s, %s: mismatch (-want +got):\n%s", w.Domain, c.query, diff)
				}
			}
		}
	}
	check(e)
	// A crash: the next Open replays the log (Close would snapshot).
	o2 := *o
	o2.FS = o.FS.(*vfs.MemFS).CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 2))})
	e2, err := engine.Open(&o2)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	check(e2)
}

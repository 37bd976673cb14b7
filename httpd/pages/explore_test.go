package pages

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
)

// filterLink returns the address of the row link with text v in the card
// with id card of an overview, or "" when there is none.
func filterLink(body, card, v string) string {
	i := strings.Index(body, `id="`+card+`"`)
	if i < 0 {
		return ""
	}
	sec := body[i:]
	if j := strings.Index(sec, "</section>"); j >= 0 {
		sec = sec[:j]
	}
	re := regexp.MustCompile(`<a class="filter" href="([^"]*)"[^>]*>` + regexp.QuoteMeta(html.EscapeString(v)) + `</a>`)
	m := re.FindStringSubmatch(sec)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// chipLinks returns the remove and negate addresses of the chips, in order.
func chipLinks(body string) (remove, negate []string) {
	for _, m := range regexp.MustCompile(`<a class="(remove|negate)" href="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		if m[1] == "remove" {
			remove = append(remove, html.UnescapeString(m[2]))
		} else {
			negate = append(negate, html.UnescapeString(m[2]))
		}
	}
	return remove, negate
}

// TestOverviewFilters walks the scenario's overview as a reader clicking:
// a referrer, then a page, removing and negating filters. The expected
// numbers are counted by hand from trackScenario.
func TestOverviewFilters(t *testing.T) {
	f := newFixture(t)
	f.trackScenario()
	c := f.client()
	get := func(path string) string {
		t.Helper()
		res := c.get(path)
		if res.status != http.StatusOK {
			t.Fatalf("GET %s: status %d\n%s", path, res.status, mainText(res.body))
		}
		return res.body
	}
	home := get("/stats/public.example")
	// Unfiltered: the session totals over the three visits (one of two
	// pageviews and an event four minutes later, two of one pageview).
	mustContain(t, "unfiltered", mainText(home), "Bounce rate 67%", "Visit duration 1m 20s", "Views per visit 1.3")
	if l := filterLink(home, "continent", "Unknown"); l != "" {
		t.Errorf("continents have no dimension in the segments, yet link to %s", l)
	}

	google := filterLink(home, "referrer", "Google")
	if google == "" {
		t.Fatal("no filter link on the source Google")
	}
	body := get(google)
	txt := mainText(body)
	mustContain(t, "filtered by google", txt,
		"Source is Google negate × Clear all filters",
		"Unique visitors 1 new", "Pageviews 2 new", "Visits 1 new", "Events 1 new",
		"Bounce rate 0%", "Visit duration 4m 0s", "Views per visit 2",
		"Pages Page Pageviews / 1 /pricing 1 ",
		"Source Visits Google 1 ",
		"Events Event Events Signup 1 ",
		"Continents Not kept per visit, so not available with filters.",
	)
	if strings.Contains(txt, xssPage) {
		t.Error("the filtered view shows the page of another visitor")
	}
	pricing := filterLink(body, "page", "/pricing")
	if pricing == "" {
		t.Fatal("no filter link on the page /pricing")
	}
	body = get(pricing)
	txt = mainText(body)
	mustContain(t, "two filters", txt, "Source is Google", "Page is /pricing",
		"Unique visitors 1 ", "Pageviews 1 ")
	if strings.Contains(txt, "Views per visit") {
		t.Error("views per visit shown with a page filter (Plausible cannot query it so)")
	}
	remove, negate := chipLinks(body)
	if len(remove) != 2 || len(negate) != 2 {
		t.Fatalf("%d remove and %d negate links, want 2 each", len(remove), len(negate))
	}
	// Remove the referrer: the visitors of /pricing.
	txt = mainText(get(remove[0]))
	mustContain(t, "page only", txt, "Page is /pricing", "Unique visitors 1 ", "Pageviews 1 ")
	if strings.Contains(txt, "Source is") {
		t.Error("the removed filter is still shown")
	}
	// Negate the referrer: the other two visitors, who never saw /pricing.
	txt = mainText(get(negate[0]))
	mustContain(t, "negated", txt, "Source is not Google", "Page is /pricing", "Unique visitors 0 ")
	_, neg := chipLinks(get(google))
	txt = mainText(get(neg[0]))
	mustContain(t, "not google", txt, "Source is not Google", "Unique visitors 2 ", "Pageviews 2 ", "Bounce rate 100%")

	// Tabs, intervals and comparisons keep the filters.
	body = get(google + "&referrer=channels&interval=week&compare=year")
	txt = mainText(body)
	mustContain(t, "tabs", txt, "Source is Google", "Channel Visits Organic Search 1 ",
		"Visitors and pageviews per week", "vs same period last year")
	if !strings.Contains(body, `<polyline class="cmp"`) {
		t.Error("no comparison line")
	}
	mustContain(t, "unfiltered channels", mainText(get("/stats/public.example?referrer=channels")),
		"Channel Visits Direct 1 Organic Search 1 Organic Social 1")
}

// TestOverviewFiltersEqualQuery checks that the filtered overview shows
// what the query API answers for the same filters, for views a reader can
// reach by clicking.
func TestOverviewFiltersEqualQuery(t *testing.T) {
	f := newFixture(t)
	f.trackScenario()
	ctx := context.Background()
	c := f.client()
	// Each view: its f parameters and, written out by hand, the filters
	// of the query API they mean.
	type view struct {
		params []string
		want   []engine.Filter
	}
	is := func(op, d string, v ...string) engine.Filter { return engine.Filter{Op: op, Dimension: d, Clauses: v} }
	views := []view{
		{[]string{"is,source,Google"}, []engine.Filter{is("is", "visit:source", "Google")}},
		{[]string{"is_not,source,Google"}, []engine.Filter{is("is_not", "visit:source", "Google")}},
		{[]string{"is,page,/"}, []engine.Filter{is("is", "event:page", "/")}},
		{[]string{"is,page,/", "is_not,referrer_host,news.ycombinator.com"},
			[]engine.Filter{is("is", "event:page", "/"), is("matches_not", "visit:referrer", `^news\.ycombinator\.com(/|$)`)}},
		{[]string{"is,event,Signup"}, []engine.Filter{is("is", "event:name", "Signup")}},
		{[]string{"is,browser,Chrome", "is,entry_page," + xssPage}, []engine.Filter{is("is", "visit:browser", "Chrome"), is("is", "visit:entry_page", xssPage)}},
		{[]string{"is_not,page,/pricing"}, []engine.Filter{is("is_not", "event:page", "/pricing")}},
		{[]string{"is,city,Chicago"}, []engine.Filter{is("is", "visit:city_name", "Chicago")}},
	}
	for _, vw := range views {
		q := url.Values{"f": vw.params}
		res := c.get("/stats/public.example?" + q.Encode())
		if res.status != http.StatusOK {
			t.Fatalf("%v: status %d", q, res.status)
		}
		ef := vw.want
		want, err := f.e.Owner(f.owner.ID).Query(ctx, f.public.ID, engine.Query{
			Metrics:   []string{"visitors", "pageviews", "visits"},
			DateRange: engine.DateRange{FromDay: engine.DateOf(2026, 10, 23), ToDay: engine.DateOf(2026, 11, 21)},
			Filters:   ef,
		})
		if err != nil {
			t.Fatal(err)
		}
		m := want.Results[0].Metrics
		mustContain(t, q.Encode(), mainText(res.body),
			"Unique visitors "+formatInt(uint64(m[0].(int64)))+" ",
			"Pageviews "+formatInt(uint64(m[1].(int64)))+" ",
			"Visits "+formatInt(uint64(m[2].(int64)))+" ")
	}
}

func mustDim(t *testing.T, key string) dim {
	d, ok := dimOf(key)
	if !ok {
		t.Fatalf("no dimension %q", key)
	}
	return d
}

func TestOverviewFilterErrors(t *testing.T) {
	f := newFixture(t)
	f.trackScenario()
	c := f.client()
	many := url.Values{}
	for i := range maxFilters + 1 {
		many.Add("f", "is,page,/"+strings.Repeat("x", i))
	}
	for _, q := range []string{
		"f=equals,page,/", "f=is,nope,x", "f=is,page", "f=is,props:" + strings.Repeat("k", 301) + ",v",
		many.Encode(), "f=is,goal,Nope", "interval=fortnight", "compare=tomorrow",
		"f=is,page," + strings.Repeat("p", maxParam+1), "prop=" + strings.Repeat("k", 301),
	} {
		res := c.get("/stats/public.example?" + q)
		if res.status != http.StatusBadRequest {
			t.Errorf("%.80s: status %d, want 400", q, res.status)
		}
		if res := c.get("/stats/public.example/export.zip?" + q); res.status != http.StatusBadRequest {
			t.Errorf("export %.80s: status %d, want 400", q, res.status)
		}
	}
	// Unknown tabs show the first; ranges whose comparison starts before
	// year 0 render.
	for _, q := range []string{"referrer=nope&page=2", "from=0000-01-01&to=0000-01-01", "from=0000-01-01&to=0000-01-02&compare=year&f=is,source,Google"} {
		if res := c.get("/stats/public.example?" + q); res.status != http.StatusOK {
			t.Errorf("%s: status %d: %.200s", q, res.status, mainText(res.body))
		}
	}
	// A private website's filtered view and export are as unknown as the
	// unfiltered ones to anyone but its owner.
	for _, p := range []string{"/stats/private.example?f=is,source,Google", "/stats/private.example/export.zip?f=is,source,Google"} {
		if res := c.get(p); res.status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, res.status)
		}
	}
	c.signIn(f.ownerKey)
	if res := c.get("/stats/private.example?f=is,source,Google"); res.status != http.StatusOK {
		t.Errorf("the owner's private filtered view: status %d", res.status)
	}
}

// readZip returns the files of a zip answer by name.
func readZip(t *testing.T, body string) map[string][][]string {
	t.Helper()
	zr, err := zip.NewReader(strings.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]string{}
	for _, zf := range zr.File {
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", zf.Name, err)
		}
		out[zf.Name] = recs
	}
	return out
}

func TestExportZip(t *testing.T) {
	f := newFixture(t)
	f.trackScenario()
	// An event a spreadsheet would take for a formula.
	f.track(hit{url: "https://public.example/", ref: "https://www.google.com/", ip: "198.51.100.1", at: day("2026-11-20 10:05"), event: "=SUM(1)"})
	c := f.client()
	res := c.get("/stats/public.example/export.zip?f=is,source,Google&referrer=channels")
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/zip" {
		t.Fatalf("status %d, type %q", res.status, res.header.Get("Content-Type"))
	}
	mustContain(t, "disposition", res.header.Get("Content-Disposition"), `attachment; filename="public.example-view-2026-10-23-2026-11-21.zip"`)
	files := readZip(t, res.body)
	has := func(name string, rec ...string) {
		t.Helper()
		for _, r := range files[name] {
			if strings.Join(r, "\x00") == strings.Join(rec, "\x00") {
				return
			}
		}
		t.Errorf("%s has no row %q: %q", name, rec, files[name])
	}
	has("totals.csv", "filter", "source is Google")
	has("totals.csv", "Unique visitors", "1")
	has("totals.csv", "Pageviews", "2")
	has("totals.csv", "Bounce rate", "0%")
	has("referrer-channels.csv", "visit:channel", "visits")
	has("referrer-channels.csv", "Organic Search", "1")
	has("page-top.csv", "/", "1")
	has("chart.csv", "Fri 20 Nov 2026", "1", "2")
	has("event-events.csv", "'=SUM(1)", "1")
	if _, ok := files["continent-continents.csv"]; ok {
		t.Error("a filtered export has continents, which the segments do not keep")
	}
	// Unfiltered, the tables are the Stats API's too, with the formula
	// guard of the CSV export; continents only the day buckets keep.
	files = readZip(t, c.get("/stats/public.example/export.zip").body)
	has("page-top.csv", "event:page", "pageviews")
	has("page-top.csv", "/", "2")
	has("continent-continents.csv", "value", "visitors")
	has("continent-continents.csv", "", "3")
	has("referrer-referrers.csv", "Google", "1")
	has("event-events.csv", "'=SUM(1)", "1")
}

// TestViewSlots checks that overviews and exports beyond the slots wait,
// then get 503 with Retry-After, and that a freed slot serves again.
func TestViewSlots(t *testing.T) {
	f := newFixture(t)
	f.trackScenario()
	f.p.viewWait = 20 * time.Millisecond
	for range cap(f.p.views) {
		f.p.views <- struct{}{}
	}
	c := f.client()
	for _, p := range []string{"/stats/public.example", "/stats/public.example/export.zip", "/stats/public.example?f=is,source,Google"} {
		res := c.get(p)
		if res.status != http.StatusServiceUnavailable || res.header.Get("Retry-After") == "" {
			t.Errorf("%s with every slot taken: status %d, Retry-After %q", p, res.status, res.header.Get("Retry-After"))
		}
	}
	// The statistic pages do not take a slot.
	if res := c.get("/stats/public.example/page"); res.status != http.StatusOK {
		t.Errorf("a statistic's page: status %d", res.status)
	}
	<-f.p.views
	if res := c.get("/stats/public.example?f=is,source,Google"); res.status != http.StatusOK {
		t.Errorf("with a slot free: status %d", res.status)
	}
	if len(f.p.views) != cap(f.p.views)-1 {
		t.Errorf("%d slots taken after the request, want %d: a slot leaked", len(f.p.views), cap(f.p.views)-1)
	}
}

// blockedWriter is a client that does not read: its first Write waits
// until unblock is closed.
type blockedWriter struct {
	*httptest.ResponseRecorder
	writing, unblock chan struct{}
	once             sync.Once
}

func (w *blockedWriter) Write(b []byte) (int, error) {
	w.once.Do(func() { close(w.writing); <-w.unblock })
	return w.ResponseRecorder.Write(b)
}

// TestViewSlotNotHeldWhileWriting: the overview and the export give their
// slot back before they write, so clients that do not read cannot take
// every slot.
func TestViewSlotNotHeldWhileWriting(t *testing.T) {
	f := newFixture(t)
	f.trackScenario()
	r := httprouter.New()
	f.p.Register(r)
	for _, path := range []string{"/stats/public.example?f=is,source,Google", "/stats/public.example/export.zip"} {
		w := &blockedWriter{ResponseRecorder: httptest.NewRecorder(), writing: make(chan struct{}), unblock: make(chan struct{})}
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		}()
		<-w.writing
		if n := len(f.p.views); n != 0 {
			t.Errorf("%s: %d slots taken while the answer is written, want 0", path, n)
		}
		close(w.unblock)
		<-done
		if w.Code != http.StatusOK {
			t.Errorf("%s: status %d", path, w.Code)
		}
	}
}

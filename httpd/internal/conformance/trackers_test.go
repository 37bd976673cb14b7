package conformance

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/webstats/webstats/httpd/internal/browsertest"
)

// TestTrackers drives Plausible's two npm trackers, unchanged, in headless
// Chromium against the webstatsd binary, through every feature they have,
// and checks Stats API v2's answers against the hits the test caused:
//
//   - a.example: @plausible-analytics/tracker 0.4.6 (init's endpoint option
//     is the server): pageviews, SPA navigation (pushState, popstate), hash
//     routing (hashBasedRouting), outbound links, file downloads, tagged
//     events, form submissions, custom events with props and revenue,
//     props on every event (customProperties), a non-interactive event, a
//     404 page;
//   - b.example: plausible-tracker 0.3.9 (its apiHost option): automatic
//     pageviews with hashMode (hash changes and pushState), a manual
//     pageview with its own URL, a custom event with props, outbound
//     links, a 404 page.
func TestTrackers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds webstatsd and runs Chromium")
	}
	modules := nodeModules(t)
	browsertest.Path(t)
	srv := startServer(t)
	today := time.Now().UTC().Format(time.DateOnly)
	srv.website(t, "a.example", []string{"Outbound Link: Click", "File Download", "Newsletter Signup", "Purchase", "Form: Submission", "404", "Video Autoplay", "Signup"}, "Purchase", "USD")
	srv.website(t, "b.example", []string{"Outbound Link: Click", "Signup", "404"}, "", "")

	log := &netLog{endpoint: srv.base + "/api/event", reqs: map[network.RequestID]*sent{}}
	ps := httptest.NewServer(&pages{modules: modules, endpoint: srv.base + "/api/event", base: srv.base})
	defer ps.Close()
	r := &run{t: t, br: newBrowser(t, ps.Listener.Addr().String(), log), log: log}
	r.siteA()
	r.siteB()

	time.Sleep(200 * time.Millisecond) // room for a request that should not come
	all := log.wait(t, r.sent, "the end")
	for _, s := range all {
		if s.status != 202 || s.failed != "" {
			t.Errorf("tracking request %v: status %d %s, want 202", s.body, s.status, s.failed)
		}
	}
	if len(all) != r.sent {
		var bodies []map[string]any
		for _, s := range all {
			bodies = append(bodies, s.body)
		}
		t.Errorf("%d tracking requests, want %d: %v", len(all), r.sent, bodies)
	}
	r.br.mu.Lock()
	if len(r.br.thrown) > 0 {
		t.Errorf("uncaught exceptions in the pages: %q", r.br.thrown)
	}
	r.br.mu.Unlock()
	if time.Now().UTC().Format(time.DateOnly) != today {
		t.Skip("the UTC day changed during the run: the questions below are about one day")
	}

	checkSite(t, srv, "a.example", today, today, r.a, false)
	checkSite(t, srv, "b.example", today, today, r.b, false)
	checkRevenue(t, srv, "a.example", today, today, r.a)
}

// run is the browser part of TestTrackers: each step adds the hits it
// causes to the website's model and waits until the browser has sent them
// and heard the answers, so that the server sees them in order.
type run struct {
	t    *testing.T
	br   *browser
	log  *netLog
	sent int
	a, b model
}

func (r *run) expect(m *model, visitor string, ag agent, what string, hs ...hit) {
	r.t.Helper()
	for _, h := range hs {
		h.visitor, h.browser, h.os, h.at = visitor, ag.browser, ag.os, time.Now()
		*m = append(*m, h)
	}
	r.sent += len(hs)
	r.log.wait(r.t, r.sent, what)
}

func pv(page string) hit { return hit{name: "pageview", page: page} }

// ev is a custom event with props (key, value, key, value, …).
func ev(name, page string, props ...string) hit {
	h := hit{name: name, page: page, props: map[string]string{}}
	for i := 0; i+1 < len(props); i += 2 {
		h.props[props[i]] = props[i+1]
	}
	return h
}

// siteA drives @plausible-analytics/tracker on a.example.
func (r *run) siteA() {
	// a.example, visitor A1: a single-page app with every automatic
	// feature on.
	tab := r.br.tab(chromeLinux)
	r.br.do(tab, "A1 load", chromedp.Navigate(r.br.url("a.example", "/shop/")), ready)
	r.expect(&r.a, "A1", chromeLinux, "A1 load", pv("/shop/"))
	r.br.do(tab, "A1 pushState", js(`history.pushState({}, '', '/shop/pricing')`))
	r.expect(&r.a, "A1", chromeLinux, "A1 pushState", pv("/shop/pricing"))
	r.br.do(tab, "A1 back", js(`history.back()`), until(`location.pathname === '/shop/'`))
	r.expect(&r.a, "A1", chromeLinux, "A1 popstate", pv("/shop/"))
	r.br.do(tab, "A1 outbound", chromedp.Click(chromedp.CSS("#out")))
	r.expect(&r.a, "A1", chromeLinux, "A1 outbound link", ev("Outbound Link: Click", "/shop/", "url", r.br.url("other.example", "/landing")))
	r.br.do(tab, "A1 download", chromedp.Click(chromedp.CSS("#dl")))
	r.expect(&r.a, "A1", chromeLinux, "A1 file download", ev("File Download", "/shop/", "url", r.br.url("a.example", "/files/report.pdf")))
	r.br.do(tab, "A1 tagged", chromedp.Click(chromedp.CSS("#tagged")))
	r.expect(&r.a, "A1", chromeLinux, "A1 tagged event", ev("Newsletter Signup", "/shop/", "position", "footer"))
	r.br.do(tab, "A1 tagged revenue", chromedp.Click(chromedp.CSS("#gift")))
	gift := ev("Purchase", "/shop/", "plan", "gift")
	gift.revenue = 5.5
	r.expect(&r.a, "A1", chromeLinux, "A1 tagged event with revenue", gift)
	r.br.do(tab, "A1 purchases",
		js(`track("Purchase", {props: {plan: "pro"}, revenue: {amount: 29.99, currency: "USD"}})`),
		js(`track("Purchase", {props: {plan: "team"}, revenue: {amount: "10.01", currency: "USD"}})`))
	p1, p2 := ev("Purchase", "/shop/", "plan", "pro"), ev("Purchase", "/shop/", "plan", "team")
	p1.revenue, p2.revenue = 29.99, 10.01
	r.expect(&r.a, "A1", chromeLinux, "A1 purchases", p1, p2)
	r.br.do(tab, "A1 form", chromedp.Click(chromedp.CSS("#send")))
	r.expect(&r.a, "A1", chromeLinux, "A1 form submission", ev("Form: Submission", "/shop/"))

	// A2 bounces: a pageview, then a non-interactive event.
	tab = r.br.tab(edgeWindows)
	r.br.do(tab, "A2 load", chromedp.Navigate(r.br.url("a.example", "/shop/")), ready)
	r.expect(&r.a, "A2", edgeWindows, "A2 load", pv("/shop/"))
	r.br.do(tab, "A2 autoplay", js(`track("Video Autoplay", {interactive: false})`))
	na := ev("Video Autoplay", "/shop/")
	na.nonInt = true
	r.expect(&r.a, "A2", edgeWindows, "A2 non-interactive event", na)

	// A3: hash-based routing with a custom property on every event, then
	// a page that does not exist.
	tab = r.br.tab(safariMac)
	app := func(page string) hit { return ev("pageview", page, "section", "app") }
	r.br.do(tab, "A3 load", chromedp.Navigate(r.br.url("a.example", "/app/#/home")), ready)
	r.expect(&r.a, "A3", safariMac, "A3 load", app("/app/#/home"))
	r.br.do(tab, "A3 #/a", js(`location.hash = '#/a'`))
	r.expect(&r.a, "A3", safariMac, "A3 hash #/a", app("/app/#/a"))
	r.br.do(tab, "A3 #/b", js(`location.hash = '#/b'`))
	r.expect(&r.a, "A3", safariMac, "A3 hash #/b", app("/app/#/b"))
	r.br.do(tab, "A3 event", js(`track("Signup", {props: {plan: "free"}})`))
	r.expect(&r.a, "A3", safariMac, "A3 event with custom properties", ev("Signup", "/app/#/b", "section", "app", "plan", "free"))
	r.br.do(tab, "A3 404", chromedp.Navigate(r.br.url("a.example", "/nope")), ready)
	r.expect(&r.a, "A3", safariMac, "A3 404 page", pv("/nope"), ev("404", "/nope", "path", "/nope"))
}

// siteB drives plausible-tracker on b.example.
func (r *run) siteB() {
	// b.example, visitor B1: plausible-tracker with hashMode.
	tab := r.br.tab(firefoxLin)
	r.br.do(tab, "B1 load", chromedp.Navigate(r.br.url("b.example", "/app/#/home")), ready)
	r.expect(&r.b, "B1", firefoxLin, "B1 load", pv("/app/#/home"))
	// plausible-tracker listens to popstate and, with hashMode, to
	// hashchange; a fragment navigation fires both, so it sends each of
	// these pageviews twice, and Plausible counts both.
	r.br.do(tab, "B1 #/a", js(`location.hash = '#/a'`))
	r.expect(&r.b, "B1", firefoxLin, "B1 hash #/a", pv("/app/#/a"), pv("/app/#/a"))
	r.br.do(tab, "B1 #/b", js(`location.hash = '#/b'`))
	r.expect(&r.b, "B1", firefoxLin, "B1 hash #/b", pv("/app/#/b"), pv("/app/#/b"))
	r.br.do(tab, "B1 pushState", js(`history.pushState({}, '', '/app/settings')`))
	r.expect(&r.b, "B1", firefoxLin, "B1 pushState", pv("/app/settings"))
	r.br.do(tab, "B1 signup", js(`p.trackEvent("Signup", {props: {plan: "free"}})`))
	r.expect(&r.b, "B1", firefoxLin, "B1 custom event", ev("Signup", "/app/settings", "plan", "free"))
	r.br.do(tab, "B1 manual pageview", js(`p.trackPageview({url: location.origin + "/virtual/thanks"})`))
	r.expect(&r.b, "B1", firefoxLin, "B1 manual pageview", pv("/virtual/thanks"))
	// The tracker follows the link itself, 150 ms after sending.
	r.br.do(tab, "B1 outbound", chromedp.Click(chromedp.CSS("#out")))
	r.expect(&r.b, "B1", firefoxLin, "B1 outbound link", ev("Outbound Link: Click", "/app/settings", "url", r.br.url("other.example", "/landing")))
	r.br.waitLocation(tab, r.br.url("other.example", "/landing"))

	// B2: a 404 page.
	tab = r.br.tab(edgeWindows)
	r.br.do(tab, "B2 404", chromedp.Navigate(r.br.url("b.example", "/missing")), ready)
	r.expect(&r.b, "B2", edgeWindows, "B2 404 page", pv("/missing"), ev("404", "/missing", "path", "/missing"))
}

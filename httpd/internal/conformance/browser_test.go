package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/webstats/webstats/httpd/internal/browsertest"
)

// The user agents of the browser visitors (one visitor per tab: same IP,
// another user agent, and Plausible's visitor id hashes both) and the labels
// Plausible gives them: it names browsers and systems as UAInspector
// (Matomo's device detector) does, folding mobile browsers into their
// desktop names (lib/plausible/ingestion/event.ex: browser_name, os_name),
// so Edge is "Microsoft Edge", Linux "GNU/Linux" and macOS "Mac".
var (
	chromeLinux = agent{"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Chrome", "GNU/Linux"}
	edgeWindows = agent{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "Microsoft Edge", "Windows"}
	safariMac   = agent{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", "Safari", "Mac"}
	firefoxLin  = agent{"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox", "GNU/Linux"}
)

type agent struct{ ua, browser, os string }

// sent is one tracking request the browser sent, with the answer.
type sent struct {
	body   map[string]any
	status int64
	failed string
}

// netLog records the tracking requests of every tab (from Chromium's
// network events): the test waits for them to be answered before the next
// step, so that the server sees the hits in order.
type netLog struct {
	endpoint string
	mu       sync.Mutex
	reqs     map[network.RequestID]*sent
	order    []*sent
}

func (l *netLog) listen(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if e.Request.Method != "POST" || e.Request.URL != l.endpoint {
			return
		}
		s := &sent{}
		var raw []byte
		for _, p := range e.Request.PostDataEntries {
			raw = append(raw, p.Bytes...)
		}
		if err := json.Unmarshal(raw, &s.body); err != nil {
			s.failed = fmt.Sprintf("body %q: %v", raw, err)
		}
		l.reqs[e.RequestID] = s
		l.order = append(l.order, s)
	case *network.EventResponseReceived:
		if s := l.reqs[e.RequestID]; s != nil {
			s.status = e.Response.Status
		}
	case *network.EventLoadingFailed:
		if s := l.reqs[e.RequestID]; s != nil {
			s.failed = e.ErrorText
		}
	}
}

// wait waits until n requests were answered (or failed) and returns them.
func (l *netLog) wait(t *testing.T, n int, what string) []sent {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		l.mu.Lock()
		var out []sent
		done := 0
		for _, s := range l.order {
			if s.body["n"] == "engagement" {
				continue // Plausible's engagement time: not a hit
			}
			out = append(out, *s)
			if s.status != 0 || s.failed != "" {
				done++
			}
		}
		l.mu.Unlock()
		if done >= n && len(out) >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d tracking requests answered after 15s, want %d: %v", what, done, n, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pages serves the test websites a.example and b.example (Chromium resolves
// every *.example name to 127.0.0.1) and the installed npm packages.
type pages struct {
	modules  string // node_modules directory
	endpoint string // webstatsd's /api/event
	base     string // webstatsd's base URL
}

// Import maps let the pages import the packages' own files, unbundled.
// plausible-tracker's ES build imports "./lib/tracker" without an
// extension, which a bundler resolves; the map does that here.
const (
	mapNew    = `{"imports":{"@plausible-analytics/tracker":"/node_modules/@plausible-analytics/tracker/plausible.js"}}`
	legacyDir = "/node_modules/plausible-tracker/build/module/"
	mapLegacy = `{"imports":{"plausible-tracker":"` + legacyDir + `index.js","` + legacyDir + `lib/tracker":"` + legacyDir + `lib/tracker.js","` + legacyDir + `lib/request":"` + legacyDir + `lib/request.js"}}`
)

// body is every page's content: an outbound link, a file link, two tagged
// buttons (one with revenue) and a form. The page's own router keeps links
// and forms from leaving it, as a single-page app does (Plausible's
// listeners still see the clicks).
const body = `<a id="out" href="http://other.example:PORT/landing">partner</a>
<a id="dl" href="/files/report.pdf?v=2">report</a>
<button id="tagged" class="plausible-event-name=Newsletter+Signup plausible-event-position=footer">subscribe</button>
<button id="gift" class="plausible-event-name=Purchase plausible-event-plan=gift plausible-revenue-amount=5.5 plausible-revenue-currency=USD">buy a gift</button>
<form id="form"><input name="email" value="ann@example.com"><button id="send" type="submit">send</button></form>
<script>
document.addEventListener('click', e => { if (e.target.closest('#dl, #out')) e.preventDefault() })
document.getElementById('form').addEventListener('submit', e => e.preventDefault())
</script>`

func (p *pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, port, _ := net.SplitHostPort(r.Host)
	if strings.HasPrefix(r.URL.Path, "/node_modules/") {
		http.StripPrefix("/node_modules/", http.FileServer(http.Dir(p.modules))).ServeHTTP(w, r)
		return
	}
	status, script, imports := http.StatusOK, "", ""
	switch {
	case host == "a.example":
		// @plausible-analytics/tracker 0.4.6: init's options as its
		// README documents them, the endpoint being the only server
		// setting.
		cfg := map[string]any{"domain": "a.example", "endpoint": p.endpoint, "outboundLinks": true,
			"fileDownloads": true, "formSubmissions": true}
		if strings.HasPrefix(r.URL.Path, "/app/") {
			// Hash-based routing, and a property on every event.
			cfg["hashBasedRouting"] = true
			cfg["customProperties"] = map[string]string{"section": "app"}
		}
		c, _ := json.Marshal(cfg)
		imports = mapNew
		script = `import { init, track } from "@plausible-analytics/tracker"
init(` + string(c) + `)
window.track = track
`
		if r.URL.Path == "/nope" {
			// Plausible's 404 snippet (docs: error-pages-tracking-404).
			status = http.StatusNotFound
			script += `track("404", {props: {path: document.location.pathname}})
`
		}
	case host == "b.example":
		// plausible-tracker 0.3.9: the apiHost option is the server.
		imports = mapLegacy
		script = `import Plausible from "plausible-tracker"
const p = Plausible({domain: "b.example", apiHost: "` + p.base + `", hashMode: true})
window.p = p
`
		if r.URL.Path == "/missing" {
			// The event once the pageview is answered: sent at once, they
			// reach the server in either order (which Plausible's visit
			// rule makes irrelevant, but the order of the model is this).
			status = http.StatusNotFound
			script += `p.trackPageview({}, {callback: () => p.trackEvent("404", {props: {path: document.location.pathname}})})
`
		} else {
			script += `p.enableAutoPageviews()
p.enableAutoOutboundTracking()
`
		}
	case host == "other.example":
		// plausible-tracker follows an outbound link 150 ms after sending
		// its event; the old page (and its request) lives until this
		// answer comes, so a slow server does not lose the event here.
		time.Sleep(time.Second)
		io.WriteString(w, `<!doctype html><title>other</title><p>Another website.`)
		return
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>%s</title>
<script type="importmap">%s</script>
<script type="module">%swindow.ready = true
</script></head><body>%s</body></html>`, host, imports, script, strings.ReplaceAll(body, "PORT", port))
}

// browser is headless Chromium with *.example on the pages' server.
type browser struct {
	t      *testing.T
	ctx    context.Context
	log    *netLog
	port   string
	mu     sync.Mutex
	thrown []string
}

func newBrowser(t *testing.T, pagesAddr string, log *netLog) *browser {
	_, port, _ := net.SplitHostPort(pagesAddr)
	ctx := browsertest.New(t,
		chromedp.Flag("host-resolver-rules", "MAP *.example 127.0.0.1"),
		// Plain http, as the pages' server speaks.
		chromedp.Flag("disable-features", "HttpsUpgrades,HttpsFirstBalancedModeAutoEnable"),
		// navigator.webdriver false, as in a visitor's browser: Plausible's
		// tracker ignores automated browsers.
		chromedp.Flag("disable-blink-features", "AutomationControlled"),
	)
	return &browser{t: t, ctx: ctx, log: log, port: port}
}

// tab opens a tab whose requests carry ua.
func (b *browser) tab(ua agent) context.Context {
	b.t.Helper()
	tab, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	if _, err := chromedp.Call(tab, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: ua.ua}); err != nil {
		b.t.Fatal(err)
	}
	err := chromedp.Listen(tab, func(ev any) {
		b.log.listen(ev)
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			b.mu.Lock()
			b.thrown = append(b.thrown, fmt.Sprintf("%s %+v", e.ExceptionDetails.Text, e.ExceptionDetails.Exception))
			b.mu.Unlock()
		}
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return tab
}

// url is a page of a test website.
func (b *browser) url(host, path string) string { return "http://" + host + ":" + b.port + path }

func (b *browser) do(tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(tab, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func js(expr string) chromedp.Action[chromedp.Void] { return chromedp.Evaluate[chromedp.Void](expr) }

func until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second))
}

var ready = until(`window.ready === true`)

// waitLocation waits until the tab shows url (after a navigation that the
// page started itself).
func (b *browser) waitLocation(tab context.Context, url string) {
	b.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		loc, err := chromedp.Run(tab, chromedp.Location())
		if err == nil && loc == url {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the tab shows %s (%v) after 5s, want %s", loc, err, url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package httpd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd/internal/browsertest"
)

// posted is one POST /api/event the browser sent.
type posted struct {
	ctype string
	code  int
	body  map[string]any
	raw   string
}

// postLog records the tracking requests that reached the server, after they
// were answered (so a recorded hit is already tracked).
type postLog struct {
	mu    sync.Mutex
	posts []posted
}

func (l *postLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/event" {
			h.ServeHTTP(w, r)
			return
		}
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(raw))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		p := posted{ctype: r.Header.Get("Content-Type"), code: rec.Code, raw: string(raw)}
		_ = json.Unmarshal(raw, &p.body)
		l.mu.Lock()
		l.posts = append(l.posts, p)
		l.mu.Unlock()
	})
}

func (l *postLog) all() []posted {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]posted(nil), l.posts...)
}

// wait waits until n requests were recorded.
func (l *postLog) wait(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := len(l.all())
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d tracking requests after 5s, want %d: %+v", what, got, n, l.all())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testPage is a page of a website with the tracker snippet.
func testPage(base string, dnt bool) string {
	attr := ""
	if dnt {
		attr = ` data-dnt="true"`
	}
	b := html.EscapeString(base)
	return `<!doctype html><html><head><meta charset="utf-8"><title>test</title>` +
		`<script data-host="` + b + `"` + attr + ` src="` + b + `/js/script.js" async defer></script>` +
		`</head><body><p>A page.</p></body></html>`
}

// TestBrowserTracker runs the tracker in headless Chromium against the
// server: a pageview on load, after each history.pushState and on popstate,
// never twice for one URL, the event of pa.track, and nothing at all with
// data-dnt="true" and Do Not Track on.
func TestBrowserTracker(t *testing.T) {
	browsertest.Path(t) // skip early without a browser
	f := newFixture(t, nil)
	ctx := context.Background()
	// Headless Chromium says so in its user agent: count bots.
	web, err := f.e.Owner(f.aliceID).CreateWebsite(ctx, engine.WebsiteInput{Domain: ptr("127.0.0.1"), ExcludeBots: ptr("0")})
	if err != nil {
		t.Fatal(err)
	}

	var log postLog
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base := srv.URL // http://127.0.0.1:port
	pageHandler := func(dnt bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, testPage(base, dnt))
		}
	}
	mux.Handle("/site/", pageHandler(false))
	mux.Handle("/dnt/", pageHandler(true))
	mux.Handle("/", log.wrap(f.s))

	bctx := browsertest.New(t)

	// Any exception the page did not catch fails the test: the tracker must
	// never throw into the host page.
	var exMu sync.Mutex
	var exceptions []string
	onEvent := func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			exMu.Lock()
			exceptions = append(exceptions, fmt.Sprintf("%s %+v", e.ExceptionDetails.Text, e.ExceptionDetails.Exception))
			exMu.Unlock()
		}
	}
	if err := chromedp.Listen(bctx, onEvent); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	defer func() {
		exMu.Lock()
		defer exMu.Unlock()
		if len(exceptions) > 0 {
			t.Errorf("uncaught exceptions in the page: %q", exceptions)
		}
	}()

	do := func(ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	js := func(expr string) chromedp.Action[chromedp.Void] { return chromedp.Evaluate[chromedp.Void](expr) }
	until := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(10*time.Millisecond), chromedp.WithPollingTimeout(5*time.Second))
	}
	tracker := until(`window.pa && typeof window.pa.track === 'function'`)

	// The visit: load, two pushState navigations (the second one twice, with
	// another #fragment), back twice (the first back changes only the
	// fragment), then an event. Each step waits for its request, so that the
	// engine sees them in order.
	do(bctx, "load", chromedp.Navigate(base+"/site/a#top"), tracker)
	log.wait(t, 1, "load")
	res, err := chromedp.Run(bctx, chromedp.Evaluate[string](`screen.width + 'x' + screen.height`))
	if err != nil {
		t.Fatal(err)
	}
	do(bctx, "pushState b", js(`history.pushState({}, '', '/site/b')`))
	log.wait(t, 2, "pushState b")
	do(bctx, "pushState c", js(`history.pushState({}, '', '/site/c#x')`), js(`history.pushState({}, '', '/site/c#y')`))
	log.wait(t, 3, "pushState c")
	do(bctx, "back to c#x", js(`history.back()`), until(`location.hash === '#x'`))
	do(bctx, "back to b", js(`history.back()`), until(`location.pathname === '/site/b'`))
	log.wait(t, 4, "popstate b")
	// Bad calls send nothing and throw nothing.
	do(bctx, "bad events", js(`pa.track(); pa.track(null); pa.track({}); pa.track({value: 5})`))
	do(bctx, "event", js(`pa.track({name: 'Signup', value: 5, unit: 'USD'})`))
	log.wait(t, 5, "event")
	time.Sleep(200 * time.Millisecond) // room for a request that should not come

	pv := func(path, ref string) map[string]any {
		return map[string]any{"page": base + path, "referrer": ref, "screen_resolution": res}
	}
	wantPosts := []map[string]any{
		pv("/site/a", ""),
		pv("/site/b", base+"/site/a"),
		pv("/site/c", base+"/site/b"),
		pv("/site/b", base+"/site/c"),
		{"page": base + "/site/b", "event": map[string]any{"name": "Signup", "value": 5.0, "unit": "USD"}},
	}
	posts := log.all()
	var gotPosts []map[string]any
	for _, p := range posts {
		gotPosts = append(gotPosts, p.body)
		if p.code != http.StatusAccepted || !strings.HasPrefix(p.ctype, "text/plain") {
			t.Errorf("request %s: status %d, Content-Type %q; want 202 and text/plain", p.raw, p.code, p.ctype)
		}
	}
	if diff := cmp.Diff(wantPosts, gotPosts); diff != "" {
		t.Errorf("tracking requests mismatch (-want +got):\n%s", diff)
	}

	wantStats := map[string][]engine.Row{
		"pageviews":    {{Value: "2026-11-21", Count: 4}},
		"page":         {{Value: "/site/b", Count: 2}, {Value: "/site/a", Count: 1}, {Value: "/site/c", Count: 1}},
		"landing_page": {{Value: "/site/a", Count: 1}},
		"referrer":     {{Value: "", Count: 1}},
		"resolution":   {{Value: res, Count: 1}},
		"event":        {{Value: "Signup:5:USD", Count: 1}},
	}
	gotStats := map[string][]engine.Row{}
	for name := range wantStats {
		gotStats[name] = statRows(t, f.e, web.ID, name)
	}
	if diff := cmp.Diff(wantStats, gotStats); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}

	t.Run("DoNotTrack", func(t *testing.T) {
		tab, closeTab := chromedp.NewContext(bctx)
		defer closeTab()
		if err := chromedp.Listen(tab, onEvent); err != nil {
			t.Fatal(err)
		}
		do(tab, "inject DNT", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
				Source: `Object.defineProperty(Navigator.prototype, 'doNotTrack', {get: () => '1', configurable: true});`,
			})
			return err
		}))
		before := len(log.all())
		do(tab, "load with DNT", chromedp.Navigate(base+"/dnt/a"), tracker, until(`navigator.doNotTrack === '1'`),
			js(`history.pushState({}, '', '/dnt/b')`),
			js(`pa.track({name: 'Signup', value: 5, unit: 'USD'})`))
		// A page without data-dnt sends its pageview although DNT is on;
		// when it has arrived, anything the DNT page sent would have too.
		do(tab, "control page", chromedp.Navigate(base+"/site/control"), tracker)
		log.wait(t, before+1, "control page")
		time.Sleep(200 * time.Millisecond)
		posts := log.all()[before:]
		if len(posts) != 1 || posts[0].body["page"] != base+"/site/control" {
			var raw []string
			for _, p := range posts {
				raw = append(raw, p.raw)
			}
			t.Errorf("with Do Not Track: requests %q, want only the control page's pageview", raw)
		}
	})
}

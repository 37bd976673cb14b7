package httpd

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// chromeUA is a desktop Chrome user agent (not a bot).
const chromeUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"

// trackRequest is a POST /api/event as a browser sends it: Chrome's user
// agent, Accept-Language, and the given Content-Type and extra headers.
func trackRequest(ctype, body string, header map[string]string) request {
	h := map[string]string{"User-Agent": chromeUA, "Accept-Language": "en-US,en;q=0.9"}
	for k, v := range header {
		h[k] = v
	}
	return request{method: http.MethodPost, path: "/api/event", ctype: ctype, body: body, header: h}
}

// statRows returns every row of one statistic of a website on the fixture's
// day (2026-11-21), by count descending (ties by value); nil when there is
// none.
func statRows(t testing.TB, e *engine.Engine, website uint32, name string) []engine.Row {
	t.Helper()
	day, err := engine.ParseDate("2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Unscoped().Stat(context.Background(), engine.StatQuery{Website: website, Name: name, From: day, To: day, SortBy: "count", PerPage: 100})
	if err != nil {
		t.Fatalf("stat %s: %v", name, err)
	}
	if len(p.Rows) == 0 {
		return nil
	}
	return p.Rows
}

// trackStats are the statistics the tracking tests look at.
var trackStats = []string{"pageviews", "page", "landing_page", "referrer", "resolution", "language", "event"}

// rowsOf reads trackStats of a website, leaving out the empty ones.
func rowsOf(t testing.TB, e *engine.Engine, website uint32) map[string][]engine.Row {
	got := make(map[string][]engine.Row)
	for _, name := range trackStats {
		if rows := statRows(t, e, website, name); rows != nil {
			got[name] = rows
		}
	}
	return got
}

type rows = []engine.Row

// pageview is what a single counted pageview of page on the fixture's day
// gives, with the referrer host ref and the resolution res.
func pageview(page, ref, res string) map[string][]engine.Row {
	return map[string][]engine.Row{
		"pageviews":    {{Value: "2026-11-21", Count: 1}},
		"page":         {{Value: page, Count: 1}},
		"landing_page": {{Value: page, Count: 1}},
		"referrer":     {{Value: ref, Count: 1}},
		"resolution":   {{Value: res, Count: 1}},
		"language":     {{Value: "en", Count: 1}},
	}
}

func event(row string) map[string][]engine.Row {
	return map[string][]engine.Row{"event": {{Value: row, Count: 1}}}
}

func TestTrackEvent(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", maxTrackURL-len("https://example.com/"))
	tests := []struct {
		name    string
		opts    *Options
		exclude string // exclude_ips of example.com
		req     request
		code    int
		dropped string // X-Webstats-Dropped
		body    string // the body when not JSON; "" checks nothing
		golden  string // testdata/<golden>.json for a JSON body
		website uint32 // whose stats to check; default 1
		want    map[string][]engine.Row
	}{
		// phpAnalytics form.
		{
			name: "php/pageview json",
			req: trackRequest("application/json",
				`{"page":"https://example.com/a?x=1#frag","referrer":"https://www.google.com/search?q=a","screen_resolution":"1920x1080"}`, nil),
			code: 202, body: "ok",
			want: pageview("/a?x=1", "www.google.com", "1920x1080"),
		},
		{
			name: "php/pageview text/plain",
			req: trackRequest("text/plain;charset=UTF-8",
				`{"page":"https://www.example.com/a","referrer":"","screen_resolution":"390x844"}`, nil),
			code: 202, body: "ok",
			want: pageview("/a", "", "390x844"),
		},
		{
			name: "php/pageview without Content-Type",
			req:  trackRequest("", `{"page":"https://EXAMPLE.com:8443/a"}`, nil),
			code: 202, body: "ok",
			want: pageview("/a", "", ""),
		},
		{
			name: "php/event",
			req: trackRequest("application/json",
				`{"page":"https://example.com/a","referrer":"https://x.org/","event":{"name":"Signup","value":5,"unit":"USD"}}`, nil),
			code: 202, body: "ok",
			want: event("Signup:5:USD"),
		},
		{
			name: "php/event value as string, no unit",
			req:  trackRequest("text/plain", `{"page":"https://example.com/a","event":{"name":"Pay:ment","value":"2.50"}}`, nil),
			code: 202, body: "ok",
			want: event("Pay ment:2.50:"),
		},
		{
			name: "php/event null is a pageview",
			req:  trackRequest("text/plain", `{"page":"https://example.com/a","event":null}`, nil),
			code: 202, body: "ok",
			want: pageview("/a", "", ""),
		},
		{
			name: "php/website by the page's host",
			req:  trackRequest("text/plain", `{"page":"https://blog.example.org/post?fbclid=1&a=2"}`, nil),
			code: 202, body: "ok", website: 2,
			want: pageview("/post?a=2", "", ""),
		},

		// Plausible form.
		{
			name: "plausible/long keys",
			req: trackRequest("application/json",
				`{"name":"pageview","url":"https://example.com/b","domain":"example.com","referrer":"https://news.ycombinator.com/","screen_width":1280,"props":{"a":"b"}}`, nil),
			code: 202, body: "ok",
			want: pageview("/b", "news.ycombinator.com", ""),
		},
		{
			name: "plausible/short keys",
			req: trackRequest("text/plain",
				`{"n":"pageview","u":"https://www.example.com/c","d":"example.com","r":null,"w":1280,"h":0,"v":21,"p":"{\"x\":1}"}`, nil),
			code: 202, body: "ok",
			want: pageview("/c", "", ""),
		},
		{
			name: "plausible/short key wins",
			req: trackRequest("text/plain",
				`{"n":"pageview","name":"Other","u":"https://example.com/short","url":"https://example.com/long","d":"example.com","domain":"nowhere.test","r":"https://a.test/","referrer":"https://b.test/"}`, nil),
			code: 202, body: "ok",
			want: pageview("/short", "a.test", ""),
		},
		{
			name: "plausible/domain wins over the url's host",
			req:  trackRequest("text/plain", `{"n":"pageview","u":"https://mirror.test/x","d":"www.Example.com, other.net"}`, nil),
			code: 202, body: "ok",
			want: pageview("/x", "", ""),
		},
		{
			name: "plausible/no domain: the url's host",
			req:  trackRequest("text/plain", `{"n":"pageview","u":"https://other.net/y"}`, nil),
			code: 202, body: "ok", website: 3,
			want: pageview("/y", "", ""),
		},
		{
			name: "plausible/custom event",
			req:  trackRequest("text/plain", `{"n":"Download","u":"https://example.com/d","d":"example.com","p":{"file":"a.pdf"}}`, nil),
			code: 202, body: "ok",
			want: event("Download::"),
		},
		{
			name: "plausible/revenue short key, string amount",
			req: trackRequest("text/plain",
				`{"n":"Purchase","u":"https://example.com/checkout","d":"example.com","$":{"amount":"12.5","currency":"EUR"}}`, nil),
			code: 202, body: "ok",
			want: event("Purchase:12.5:EUR"),
		},
		{
			name: "plausible/revenue long key, number amount",
			req: trackRequest("application/json",
				`{"name":"Purchase","url":"https://example.com/checkout","domain":"example.com","revenue":{"currency":"USD","amount":5.0}}`, nil),
			code: 202, body: "ok",
			want: event("Purchase:5:USD"),
		},
		{
			name: "plausible/revenue JSON-encoded in a string",
			req: trackRequest("text/plain",
				`{"n":"Purchase","u":"https://example.com/checkout","d":"example.com","$":"{\"amount\":3,\"currency\":\"USD\"}"}`, nil),
			code: 202, body: "ok",
			want: event("Purchase:3:USD"),
		},
		{
			name: "plausible/bad revenue is ignored",
			req:  trackRequest("text/plain", `{"n":"Purchase","u":"https://example.com/checkout","d":"example.com","$":[1,2]}`, nil),
			code: 202, body: "ok",
			want: event("Purchase::"),
		},
		{
			name: "plausible/revenue of a pageview is ignored",
			req:  trackRequest("text/plain", `{"n":"pageview","u":"https://example.com/p","d":"example.com","$":{"amount":1,"currency":"USD"}}`, nil),
			code: 202, body: "ok",
			want: pageview("/p", "", ""),
		},
		{
			name: "plausible/engagement is not counted",
			req:  trackRequest("text/plain", `{"n":"engagement","u":"https://example.com/p","d":"example.com","sd":50,"e":1200}`, nil),
			code: 202, body: "ok",
			want: map[string][]engine.Row{},
		},

		// Drops: 202 with the reason.
		{
			name: "drop/unknown site",
			req:  trackRequest("text/plain", `{"page":"https://unknown.example/"}`, nil),
			code: 202, dropped: "unknown-site", body: "ok",
			want: map[string][]engine.Row{},
		},
		{
			name: "drop/unknown plausible domain",
			req:  trackRequest("text/plain", `{"n":"pageview","u":"https://example.com/","d":"unknown.example"}`, nil),
			code: 202, dropped: "unknown-site", body: "ok",
			want: map[string][]engine.Row{},
		},
		{
			name: "drop/bot user agent",
			req: trackRequest("text/plain", `{"page":"https://example.com/"}`,
				map[string]string{"User-Agent": "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"}),
			code: 202, dropped: "bot", body: "ok",
			want: map[string][]engine.Row{},
		},
		{
			// SPEC §2.4: server-side integrations rarely forward it.
			name: "counted without Accept-Language",
			req:  trackRequest("text/plain", `{"page":"https://example.com/"}`, map[string]string{"Accept-Language": ""}),
			code: 202, body: "ok",
			want: map[string][]engine.Row{
				"landing_page": {{Value: "/", Count: 1}}, "language": {{Count: 1}}, "page": {{Value: "/", Count: 1}},
				"pageviews": {{Value: "2026-11-21", Count: 1}}, "referrer": {{Count: 1}}, "resolution": {{Count: 1}},
			},
		},
		{
			name: "drop/bot headless Sec-CH-UA",
			req: trackRequest("text/plain", `{"page":"https://example.com/"}`,
				map[string]string{"Sec-CH-UA": `"Chromium";v="130", "HeadlessChrome";v="130"`}),
			code: 202, dropped: "bot", body: "ok",
			want: map[string][]engine.Row{},
		},
		{
			name:    "drop/excluded ip",
			exclude: "192.0.2.0/24", // httptest's client address is 192.0.2.1
			req:     trackRequest("text/plain", `{"page":"https://example.com/"}`, nil),
			code:    202, dropped: "excluded-ip", body: "ok",
			want: map[string][]engine.Row{},
		},
		{
			name:    "drop/excluded ip behind a trusted proxy",
			opts:    &Options{RateLimit: -1, TrustProxy: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.0/8")}},
			exclude: "198.51.100.7",
			req: trackRequest("text/plain", `{"page":"https://example.com/"}`,
				map[string]string{"X-Forwarded-For": "203.0.113.1, 198.51.100.7, 10.0.0.1, 127.0.0.1"}),
			code: 202, dropped: "excluded-ip", body: "ok",
			want: map[string][]engine.Row{},
		},
		{
			name:    "forwarded for ignored without TrustProxy",
			exclude: "198.51.100.7",
			req: trackRequest("text/plain", `{"page":"https://example.com/"}`,
				map[string]string{"X-Forwarded-For": "198.51.100.7"}),
			code: 202, body: "ok",
			want: pageview("/", "", ""),
		},
		{
			name: "drop/prefetch Sec-Purpose",
			req:  trackRequest("text/plain", `{"page":"https://example.com/"}`, map[string]string{"Sec-Purpose": "prefetch;prerender"}),
			code: 202, dropped: "prefetch", body: "ok",
			want: map[string][]engine.Row{},
		},
		{
			name: "drop/prefetch Purpose",
			req:  trackRequest("text/plain", `{"page":"https://example.com/"}`, map[string]string{"Purpose": "prefetch"}),
			code: 202, dropped: "prefetch", body: "ok",
			want: map[string][]engine.Row{},
		},
		{
			name: "drop/prefetch X-Moz",
			req:  trackRequest("text/plain", `{"page":"https://example.com/"}`, map[string]string{"X-Moz": "prefetch"}),
			code: 202, dropped: "prefetch", body: "ok",
			want: map[string][]engine.Row{},
		},

		// Bounds and bad input.
		{
			name: "bound/page of 2 KiB is counted",
			req:  trackRequest("text/plain", `{"page":"`+long+`"}`, nil),
			code: 202, body: "ok",
			want: pageview("/"+strings.Repeat("a", 254), "", ""),
		},
		{
			name: "bound/page over 2 KiB",
			req:  trackRequest("text/plain", `{"page":"`+long+`b"}`, nil),
			code: 400, golden: "track_400_long",
			want: map[string][]engine.Row{},
		},
		{
			name: "bound/url over 2 KiB",
			req:  trackRequest("text/plain", `{"n":"pageview","u":"`+long+`b","d":"example.com"}`, nil),
			code: 400, golden: "track_400_long",
			want: map[string][]engine.Row{},
		},
		{
			name: "bound/body over 16 KiB",
			req:  trackRequest("text/plain", `{"page":"https://example.com/","pad":"`+strings.Repeat("x", maxTrackBody)+`"}`, nil),
			code: 413, golden: "track_413",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/malformed JSON",
			req:  trackRequest("application/json", `{"page":"https://example.com/"`, nil),
			code: 400, golden: "track_400_json",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/empty body",
			req:  trackRequest("text/plain", ``, nil),
			code: 400, golden: "track_400_json",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/not an object",
			req:  trackRequest("text/plain", `["https://example.com/"]`, nil),
			code: 400, golden: "track_400_json",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/page of the wrong type",
			req:  trackRequest("text/plain", `{"page":5}`, nil),
			code: 400, golden: "track_400_json",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/form-encoded",
			req:  trackRequest("application/x-www-form-urlencoded", `page=https%3A%2F%2Fexample.com%2F`, nil),
			code: 400, golden: "track_400_json",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/no page",
			req:  trackRequest("text/plain", `{"referrer":"https://example.com/"}`, nil),
			code: 400, golden: "track_400_no_page",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/page is a path",
			req:  trackRequest("text/plain", `{"page":"/a"}`, nil),
			code: 400, golden: "track_400_invalid",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/page without scheme",
			req:  trackRequest("text/plain", `{"page":"example.com/a"}`, nil),
			code: 400, golden: "track_400_invalid",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/page of another scheme",
			req:  trackRequest("text/plain", `{"n":"pageview","u":"app://localhost/login","d":"example.com"}`, nil),
			code: 400, golden: "track_400_invalid",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/event without a name",
			req:  trackRequest("text/plain", `{"page":"https://example.com/","event":{"value":5}}`, nil),
			code: 400, golden: "track_400_invalid",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/engine drops the page as invalid",
			req:  trackRequest("text/plain", `{"page":"https://example.com/a\u0001b"}`, nil),
			code: 400, dropped: "invalid", golden: "track_400_invalid",
			want: map[string][]engine.Row{},
		},
		{
			name: "bad/engine drops the event name as invalid",
			req:  trackRequest("text/plain", `{"page":"https://example.com/","event":{"name":"\u0001 "}}`, nil),
			code: 400, dropped: "invalid", golden: "track_400_invalid",
			want: map[string][]engine.Row{},
		},
		{
			name: "method/GET",
			req:  request{method: http.MethodGet, path: "/api/event"},
			code: 405,
			want: map[string][]engine.Row{},
		},
		{
			name: "method/PUT",
			req:  trackRequest("text/plain", `{"page":"https://example.com/"}`, nil),
			code: 405,
			want: map[string][]engine.Row{},
		},
	}
	tests[len(tests)-1].req.method = http.MethodPut
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.opts)
			if tt.exclude != "" {
				_, err := f.e.Owner(f.aliceID).UpdateWebsite(context.Background(), 1, engine.WebsiteInput{ExcludeIPs: ptr(tt.exclude)})
				if err != nil {
					t.Fatal(err)
				}
			}
			w := f.do(tt.req)
			if w.Code != tt.code {
				t.Fatalf("status %d, want %d; body %s", w.Code, tt.code, w.Body)
			}
			if got := w.Header().Get("X-Webstats-Dropped"); got != tt.dropped {
				t.Errorf("X-Webstats-Dropped %q, want %q", got, tt.dropped)
			}
			if tt.code == 202 {
				wantPlausible := ""
				if tt.dropped != "" {
					wantPlausible = "1"
				}
				if got := w.Header().Get("X-Plausible-Dropped"); got != wantPlausible {
					t.Errorf("X-Plausible-Dropped %q, want %q", got, wantPlausible)
				}
			}
			if tt.req.method == http.MethodPost {
				if got := w.Header().Get("Access-Control-Allow-Origin"); got != "*" {
					t.Errorf("Access-Control-Allow-Origin %q, want *", got)
				}
			}
			if tt.body != "" && w.Body.String() != tt.body {
				t.Errorf("body %q, want %q", w.Body, tt.body)
			}
			if tt.golden != "" {
				golden(t, tt.golden, w.Body.Bytes())
			}
			website := tt.website
			if website == 0 {
				website = 1
			}
			if diff := cmp.Diff(tt.want, rowsOf(t, f.e, website)); diff != "" {
				t.Errorf("stats mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTrackEventIgnored checks that Plausible's engagement and legacy
// pageleave events answer 202 with X-Webstats-Ignored and count nothing
// (SPEC §2.4).
func TestTrackEventIgnored(t *testing.T) {
	for _, name := range []string{"engagement", "pageleave"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			w := f.do(trackRequest("text/plain", `{"n":"`+name+`","u":"https://example.com/","d":"example.com","e":100}`, nil))
			if w.Code != 202 || w.Header().Get("X-Webstats-Ignored") != name {
				t.Fatalf("status %d, X-Webstats-Ignored %q, want 202, %q", w.Code, w.Header().Get("X-Webstats-Ignored"), name)
			}
			if diff := cmp.Diff(map[string][]engine.Row{}, rowsOf(t, f.e, 1)); diff != "" {
				t.Errorf("stats mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTrackPlausibleTracker posts exactly what Plausible's trackers send:
// fetch(endpoint, {method: "POST", headers: {"Content-Type": "text/plain"},
// keepalive: true, body: JSON.stringify(payload)}) with payload.n, .v, .u,
// .d, .r (document.referrer || null), .p (props), .$ (revenue), and for the
// legacy script .w (window.innerWidth) and .h (hash mode).
func TestTrackPlausibleTracker(t *testing.T) {
	f := newFixture(t, nil)
	for _, body := range []string{
		// tracker/src/track.js (v2), a pageview.
		`{"n":"pageview","v":21,"u":"https://example.com/a","d":"example.com","r":null}`,
		// The legacy plausible.js, a pageview with a referrer.
		`{"n":"pageview","u":"https://example.com/b","d":"example.com","r":"https://duckduckgo.com/","w":1280}`,
		// plausible('Signup', {props: {plan: 'pro'}, revenue: {currency: 'USD', amount: 10.29}})
		`{"n":"Signup","v":21,"u":"https://example.com/b","d":"example.com","r":"https://duckduckgo.com/","p":{"plan":"pro"},"$":{"currency":"USD","amount":10.29}}`,
		// The engagement event sent when the page is left.
		`{"n":"engagement","v":21,"u":"https://example.com/b","d":"example.com","r":null,"sd":100,"e":5123,"p":{"plan":"pro"}}`,
	} {
		w := f.do(trackRequest("text/plain", body, map[string]string{"Origin": "https://example.com"}))
		if w.Code != http.StatusAccepted || w.Body.String() != "ok" {
			t.Fatalf("%s: status %d body %q, want 202 ok", body, w.Code, w.Body)
		}
		if d := w.Header().Get("X-Webstats-Dropped"); d != "" {
			t.Fatalf("%s: dropped %q", body, d)
		}
	}
	want := map[string][]engine.Row{
		"pageviews":    {{Value: "2026-11-21", Count: 2}},
		"page":         {{Value: "/a", Count: 1}, {Value: "/b", Count: 1}},
		"landing_page": {{Value: "/a", Count: 1}, {Value: "/b", Count: 1}},
		"referrer":     {{Value: "", Count: 1}, {Value: "duckduckgo.com", Count: 1}},
		"resolution":   {{Value: "", Count: 1}},
		"language":     {{Value: "en", Count: 1}},
		"event":        {{Value: "Signup:10.29:USD", Count: 1}},
	}
	if diff := cmp.Diff(want, rowsOf(t, f.e, 1)); diff != "" {
		t.Errorf("stats mismatch (-want +got):\n%s", diff)
	}
}

func TestTrackEventPreflight(t *testing.T) {
	f := newFixture(t, nil)
	w := f.do(request{method: http.MethodOptions, path: "/api/event", header: map[string]string{
		"Origin":                         "https://example.com",
		"Access-Control-Request-Method":  "POST",
		"Access-Control-Request-Headers": "content-type",
	}})
	if w.Code != http.StatusNoContent {
		t.Fatalf("status %d, want 204", w.Code)
	}
	for k, want := range map[string]string{
		"Access-Control-Allow-Origin":  "*",
		"Access-Control-Allow-Methods": "POST, OPTIONS",
		"Access-Control-Allow-Headers": "Content-Type",
	} {
		if got := w.Header().Get(k); got != want {
			t.Errorf("%s %q, want %q", k, got, want)
		}
	}
	if w.Body.Len() != 0 {
		t.Errorf("body %q, want none", w.Body)
	}
}

// TestTrackEventMetrics checks that drops are counted by reason in /metrics
// and requests under the /api/event route.
func TestTrackEventMetrics(t *testing.T) {
	f := newFixture(t, nil)
	f.do(trackRequest("text/plain", `{"page":"https://example.com/"}`, map[string]string{"User-Agent": "curl/8.0"}))
	f.do(trackRequest("text/plain", `{"page":"https://unknown.example/"}`, nil))
	f.do(trackRequest("text/plain", `{"page":"https://example.com/"}`, nil))
	w := f.do(request{method: http.MethodGet, path: "/metrics"})
	for _, want := range []string{
		`webstats_hits_dropped_total{reason="bot"} 1`,
		`webstats_hits_dropped_total{reason="unknown-site"} 1`,
		`webstats_hits_dropped_total{reason="prefetch"} 0`,
		`webstats_hits_tracked_total 1`,
		`webstats_http_requests_total{code="202",method="POST",route="/api/event"} 3`,
	} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// FuzzTrackBody: no body panics or answers 5xx, and every answer is one of
// the endpoint's.
func FuzzTrackBody(f *testing.F) {
	for _, seed := range []string{
		`{"page":"https://example.com/a?x=1#f","referrer":"https://www.google.com/","screen_resolution":"1920x1080"}`,
		`{"page":"https://example.com/","event":{"name":"Signup","value":5,"unit":"USD"}}`,
		`{"page":"https://example.com/","event":{"name":"a:b","value":"1e3","unit":null}}`,
		`{"n":"pageview","u":"https://example.com/a","d":"example.com","r":null,"w":1280}`,
		`{"name":"Purchase","url":"https://example.com/","domain":"example.com","revenue":{"amount":"x","currency":5}}`,
		`{"n":"Purchase","u":"https://example.com/","$":"{\"amount\":1}"}`,
		`{"n":"engagement","u":"https://example.com/","d":"example.com"}`,
		`{"page":"https://[::1]:80/"}`,
		`{"page":"http://example.com` + "\xff" + `"}`,
		`null`, `[]`, `"x"`, `{}`, `{"page":null}`, ``,
	} {
		f.Add(seed)
	}
	fx := newFixture(f, nil)
	f.Fuzz(func(t *testing.T, body string) {
		w := fx.do(trackRequest("text/plain", body, nil))
		switch w.Code {
		case http.StatusAccepted, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
	})
}

// TestTrackEventBodyLimitUnknownLength: a body of unknown length (chunked)
// over 16 KiB is cut by the limited reader and answers 413 too.
func TestTrackEventBodyLimitUnknownLength(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"page":"https://example.com/","pad":"` + strings.Repeat("x", maxTrackBody) + `"}`
	r := httptest.NewRequest(http.MethodPost, "/api/event", io.NopCloser(strings.NewReader(body)))
	r.ContentLength = -1
	r.Header.Set("User-Agent", chromeUA)
	r.Header.Set("Accept-Language", "en")
	w := httptest.NewRecorder()
	f.s.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413: %s", w.Code, w.Body)
	}
	golden(t, "track_413", w.Body.Bytes())
	if rows := statRows(t, f.e, 1, "pageviews"); rows != nil {
		t.Errorf("counted %v", rows)
	}
}

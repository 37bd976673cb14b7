package pages

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd/internal/browsertest"
)

// newBrowser starts a headless Chromium for t, or skips t when there is
// none (fails it when CI=true).
func newBrowser(t *testing.T) context.Context {
	return browsertest.New(t, chromedp.WindowSize(1280, 900))
}

// artifactDir is where screenshots go: $WEBSTATS_ARTIFACTS, else a
// temporary directory of t.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("WEBSTATS_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// tab drives one browser tab for a test.
type tab struct{ browsertest.Tab }

func TestBrowser(t *testing.T) {
	ctx := newBrowser(t)
	f := newFixture(t)
	f.trackScenario()
	base := f.srv.URL

	// Any JavaScript dialog would be an injected script running: record
	// and dismiss it.
	var mu sync.Mutex
	var dialogs []string
	go func() {
		for ev, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			mu.Lock()
			dialogs = append(dialogs, ev.Message)
			mu.Unlock()
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()

	t.Run("sign in", func(t *testing.T) {
		b := tab{browsertest.Tab{T: t, Ctx: ctx}}
		b.Do(chromedp.Navigate(base+"/login"), chromedp.SendKeys(chromedp.ID("key"), "ws_not-a-key"))
		b.Submit(chromedp.Submit(chromedp.ID("key")))
		mustContain(t, "wrong key", b.Text(".error"), "This API key is not valid")
		b.Do(chromedp.SendKeys(chromedp.ID("key"), f.ownerKey))
		b.Submit(chromedp.Submit(chromedp.ID("key")))
		mustContain(t, "websites", b.Text("table.sites"), "public.example Public 3 4", "private.example", "secret.example")
	})

	t.Run("overview", func(t *testing.T) {
		b := tab{browsertest.Tab{T: t, Ctx: ctx}}
		b.Do(chromedp.Navigate(base+"/stats/public.example"), chromedp.WaitVisible(chromedp.CSS(".totals")))
		mustContain(t, "totals", b.Text(".totals"), "UNIQUE VISITORS 3 +200%", "PAGEVIEWS 4 +300%", "VISITS 3 +200%", "EVENTS 1 new")
		mustContain(t, "pages", b.Text("#page table"), "/ 2", xssPage+" 1", "/pricing 1")
		mustContain(t, "referrers", b.Text("#referrer table"), "Direct / None 1", "Google 1", "Hacker News 1")
		// The style sheet passed the Content-Security-Policy.
		mustContain(t, "font", browsertest.Eval[string](b.Tab, `getComputedStyle(document.body).fontFamily`), "system-ui")
		// The tracked script is visible text.
		if !browsertest.Eval[bool](b.Tab, `Array.from(document.querySelectorAll("#page .v")).some(e => e.textContent === "/<script>alert(1)</script>" && e.offsetHeight > 0)`) {
			t.Errorf("the tracked page %q is not shown as visible text", xssPage)
		}
		if n := browsertest.Eval[int](b.Tab, `document.querySelectorAll("#page script, #landing_page script").length`); n != 0 {
			t.Errorf("%d script elements in the tables", n)
		}
	})

	t.Run("screenshots", func(t *testing.T) {
		b := tab{browsertest.Tab{T: t, Ctx: ctx}}
		dir := artifactDir(t)
		for _, s := range []struct {
			name   string
			width  int64
			mobile bool
		}{{"overview-desktop.png", 1280, false}, {"overview-phone.png", 390, true}} {
			opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
			if s.mobile {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulatePortrait)
			}
			b.Do(chromedp.EmulateViewport(s.width, 844, opts...),
				chromedp.Navigate(base+"/stats/public.example"),
				chromedp.WaitVisible(chromedp.CSS(".tables")))
			// Only the table wrappers may scroll sideways, never the page.
			if browsertest.Eval[bool](b.Tab, `document.documentElement.scrollWidth > document.documentElement.clientWidth + 1`) {
				t.Errorf("%s: the page scrolls sideways", s.name)
			}
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, s.name)
			if err := os.WriteFile(path, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", path)
		}
		b.Do(chromedp.EmulateViewport(1280, 900))
	})

	t.Run("dark mode", func(t *testing.T) {
		b := tab{browsertest.Tab{T: t, Ctx: ctx}}
		scheme := func(v string) chromedp.Action[chromedp.Void] {
			return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
				})
				return err
			})
		}
		b.Do(scheme("dark"), chromedp.Navigate(base+"/stats/public.example"), chromedp.WaitVisible(chromedp.CSS(".tables")))
		defer b.Do(scheme("light"))
		if got := browsertest.Eval[string](b.Tab, `getComputedStyle(document.body).backgroundColor`); got != "rgb(13, 17, 23)" {
			t.Errorf("dark mode: body background %s, want rgb(13, 17, 23)", got)
		}
		// Every text and link stays readable: WCAG AA, 4.5:1 against the
		// background, for the body, muted text, links and table values.
		ratio := browsertest.Eval[float64](b.Tab, `(() => {
			const lum = c => { const [r, g, b] = c.match(/\d+/g).map(Number).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
			const bg = lum(getComputedStyle(document.body).backgroundColor);
			let worst = 21;
			for (const sel of ["body", ".muted", "a", "#page .v", ".total .value", "h3"]) {
				const el = document.querySelector(sel);
				if (!el) continue;
				const l = lum(getComputedStyle(el).color);
				worst = Math.min(worst, (Math.max(l, bg) + 0.05) / (Math.min(l, bg) + 0.05));
			}
			return worst;
		})()`)
		if ratio < 4.5 {
			t.Errorf("dark mode: the lowest text contrast is %.2f:1, want at least 4.5:1", ratio)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(artifactDir(t), "overview-dark.png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	})

	t.Run("filters", func(t *testing.T) {
		b := tab{browsertest.Tab{T: t, Ctx: ctx}}
		ctx := context.Background()
		domain, privacy := "explore.example", "0"
		web, err := f.e.Owner(f.owner.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain, Privacy: &privacy})
		if err != nil {
			t.Fatal(err)
		}
		at := day("2026-11-19 09:00")
		f.track(
			hit{url: "https://explore.example/", ref: "https://www.google.com/", ip: "8.8.8.8", at: at},                          // US
			hit{url: "https://explore.example/pricing", ip: "8.8.8.8", at: at.Add(time.Minute)},                                  // US
			hit{url: "https://explore.example/", ref: "https://www.google.com/", ip: "81.2.69.160", at: at},                      // GB
			hit{url: "https://explore.example/docs", ref: "https://news.ycombinator.com/", ip: "8.8.4.4", at: at.Add(time.Hour)}, // US
			hit{url: "https://explore.example/docs", ip: "81.2.69.161", at: at.Add(2 * time.Hour)},                               // GB
		)
		// api answers the query API's totals for filters.
		api := func(fs ...engine.Filter) string {
			res, err := f.e.Owner(f.owner.ID).Query(ctx, web.ID, engine.Query{
				Metrics:   []string{"visitors", "pageviews"},
				DateRange: engine.DateRange{FromDay: engine.DateOf(2026, 10, 23), ToDay: engine.DateOf(2026, 11, 21)},
				Filters:   fs,
			})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Results[0].Metrics
			return "UNIQUE VISITORS " + formatInt(uint64(m[0].(int64))) + " "
		}
		google := engine.Filter{Op: "is", Dimension: "visit:source", Clauses: []string{"Google"}}
		us := engine.Filter{Op: "is", Dimension: "visit:country", Clauses: []string{"US"}}
		notUS := engine.Filter{Op: "is_not", Dimension: "visit:country", Clauses: []string{"US"}}
		b.Do(chromedp.Navigate(base+"/stats/explore.example"), chromedp.WaitVisible(chromedp.CSS(".tables")))
		mustContain(t, "unfiltered", b.Text(".totals"), "UNIQUE VISITORS 4 ", api())

		// Click a referrer, then a country.
		b.Submit(chromedp.Click(chromedp.CSS(`#referrer a.filter[href*="source%2CGoogle"]`)))
		mustContain(t, "chips", b.Text(".chips"), "Source is Google")
		mustContain(t, "google", b.Text(".totals"), "UNIQUE VISITORS 2 ", api(google))
		mustContain(t, "google's sources", b.Text("#referrer table"), "Google 2")
		mustContain(t, "google's countries", b.Text("#country table"), "United Kingdom GB 1", "United States US 1")
		b.Submit(chromedp.Click(chromedp.CSS(`#country a.filter[href*="country%2CUS"]`)))
		mustContain(t, "chips", b.Text(".chips"), "Source is Google", "Country is US")
		mustContain(t, "google and US", b.Text(".totals"), "UNIQUE VISITORS 1 ", "PAGEVIEWS 2 ", api(google, us))
		mustContain(t, "google and US pages", b.Text("#page table"), "/ 1", "/pricing 1")
		loc, err := chromedp.Run(b.Ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, "bookmarkable address", loc, "f=is%2Csource%2CGoogle", "f=is%2Ccountry%2CUS")

		// Remove the referrer, then negate the country.
		b.Submit(chromedp.Click(chromedp.CSS(`.chip:first-child a.remove`)))
		mustContain(t, "US", b.Text(".totals"), "UNIQUE VISITORS 2 ", api(us))
		if strings.Contains(b.Text(".chips"), "Source") {
			t.Error("the removed filter is still shown")
		}
		b.Submit(chromedp.Click(chromedp.CSS(`.chip a.negate`)))
		mustContain(t, "chips", b.Text(".chips"), "Country is not US")
		mustContain(t, "not US", b.Text(".totals"), "UNIQUE VISITORS 2 ", api(notUS))
		mustContain(t, "not US countries", b.Text("#country table"), "United Kingdom GB 2")

		// The comparison chart.
		b.Submit(chromedp.Click(chromedp.CSS(`nav[aria-label="Comparison"] a[href*="compare=previous"]`)))
		if n := browsertest.Eval[int](b.Tab, `document.querySelectorAll("polyline.cmp").length`); n != 1 {
			t.Errorf("%d comparison lines, want 1", n)
		}
		mustContain(t, "legend", b.Text(".legend"), "Visitors, previous period")
		for _, s := range []struct {
			name  string
			width int64
		}{{"filtered-desktop.png", 1280}, {"filtered-phone.png", 390}} {
			opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
			if s.width < 500 {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulatePortrait)
			}
			b.Do(chromedp.EmulateViewport(s.width, 844, opts...), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".chips")))
			if browsertest.Eval[bool](b.Tab, `document.documentElement.scrollWidth > document.documentElement.clientWidth + 1`) {
				t.Errorf("%s: the page scrolls sideways", s.name)
			}
			png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(artifactDir(t), s.name)
			if err := os.WriteFile(path, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", path)
		}
		b.Do(chromedp.EmulateViewport(1280, 900))
	})

	t.Run("date range", func(t *testing.T) {
		b := tab{browsertest.Tab{T: t, Ctx: ctx}}
		b.Do(chromedp.Navigate(base+"/stats/public.example"),
			chromedp.SetValue(chromedp.ID("from"), "2026-11-20"),
			chromedp.SetValue(chromedp.ID("to"), "2026-11-20"))
		b.Submit(chromedp.Click(chromedp.CSS(".custom button")))
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, "url", loc, "from=2026-11-20", "to=2026-11-20")
		mustContain(t, "chart", b.Text("#chart-title"), "per hour")
		mustContain(t, "totals", b.Text(".totals"), "UNIQUE VISITORS 3 new")
		b.Submit(chromedp.Click(chromedp.CSS(`.presets a[href$="range=7d"]`)))
		mustContain(t, "preset", b.Text(".presets a.current"), "Last 7 days")
		mustContain(t, "chart", b.Text("#chart-title"), "per day")
	})

	t.Run("password", func(t *testing.T) {
		b := tab{browsertest.Tab{T: t, Ctx: ctx}}
		// Sign out first: the owner would not need the password.
		b.Do(chromedp.Navigate(base + "/"))
		b.Submit(chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)))
		b.Do(chromedp.Navigate(base+"/stats/secret.example"), chromedp.SendKeys(chromedp.ID("password"), "not it"))
		b.Submit(chromedp.Submit(chromedp.ID("password")))
		mustContain(t, "wrong password", b.Text(".error"), "Wrong password")
		b.Do(chromedp.SendKeys(chromedp.ID("password"), secretPassword))
		b.Submit(chromedp.Submit(chromedp.ID("password")))
		mustContain(t, "overview", b.Text("h1"), "secret.example")
		mustContain(t, "overview", b.Text(".totals"), "UNIQUE VISITORS")
	})

	t.Run("realtime", func(t *testing.T) {
		b := tab{browsertest.Tab{T: t, Ctx: ctx}}
		f.track(hit{url: "https://public.example/now", ip: "198.51.100.50", at: testNow.Add(-30 * time.Second)})
		b.Do(chromedp.Navigate(base+"/stats/public.example/realtime"), chromedp.WaitVisible(chromedp.ID("rt-visitors")))
		if v := b.Text("#rt-visitors"); v != "1" {
			t.Errorf("visitors %q, want 1", v)
		}
		// The script's fetch works under the CSP and updates in place.
		f.track(hit{url: "https://public.example/now", ip: "198.51.100.51", at: testNow.Add(-20 * time.Second)})
		b.Do(chromedp.Evaluate[chromedp.Void](`document.dispatchEvent(new Event("visibilitychange"))`))
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("rt-visitors").textContent === "2"`,
			chromedp.WithPollingTimeout(5*time.Second))); err != nil {
			t.Errorf("the script did not refresh the visitors to 2: %v (shows %q)", err, b.Text("#rt-visitors"))
		}
	})

	mu.Lock()
	defer mu.Unlock()
	if len(dialogs) > 0 {
		t.Errorf("JavaScript dialogs opened: %q", dialogs)
	}
}

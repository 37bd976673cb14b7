package httpd

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd/internal/browsertest"
)

// screenshotDir is where screenshots go: $WEBSTATS_ARTIFACTS, else a
// temporary directory of t.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("WEBSTATS_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestBrowserSites runs the website pages in headless Chromium against the
// whole server: add a website through the form (the browser's time zone is
// preselected), copy its snippet, put it on a page of another local server,
// load that page, and verify the installation: first refused by the bot
// filter (headless Chromium says so in its user agent), then, with the
// filter off, installed. Screenshots of the list, the add form and the
// snippet page at 1280 and 390 px, and the contrast of the new elements in
// light and dark mode.
func TestBrowserSites(t *testing.T) {
	browsertest.Path(t) // skip early without a browser
	f := newFixture(t, nil)
	var log postLog
	stats := httptest.NewServer(log.wrap(f.s))
	defer stats.Close()

	// The website's page, on another origin (another port of 127.0.0.1),
	// with the snippet the page gave.
	var snippet string
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html><head><meta charset="utf-8"><title>My site</title>`+snippet+`</head><body><p>Hello.</p></body></html>`)
	}))
	defer site.Close()

	ctx := browsertest.New(t)
	b := tab{browsertest.Tab{T: t, Ctx: ctx}}
	shots := screenshotDir(t)
	shoot := func(name, path, ready string) {
		t.Helper()
		for _, s := range []struct {
			suffix string
			width  int64
		}{{"desktop", 1280}, {"phone", 390}} {
			opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
			if s.width < 500 {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulatePortrait)
			}
			b.Do(chromedp.EmulateViewport(s.width, 844, opts...), chromedp.Navigate(stats.URL+path), chromedp.WaitVisible(chromedp.CSS(ready)))
			if browsertest.Eval[bool](b.Tab, `document.documentElement.scrollWidth > document.documentElement.clientWidth + 1`) {
				t.Errorf("%s at %d px: the page scrolls sideways", name, s.width)
			}
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(shots, name+"-"+s.suffix+".png")
			if err := os.WriteFile(file, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", file)
		}
		b.Do(chromedp.EmulateViewport(1280, 900))
	}

	// Sign in, in Berlin.
	b.Do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Europe/Berlin"})
		return err
	}))
	b.Do(chromedp.Navigate(stats.URL+"/websites/new"), chromedp.SendKeys(chromedp.ID("key"), f.alice))
	b.Submit(chromedp.Submit(chromedp.ID("key")))

	// Add 127.0.0.1, the host of the test page.
	if got := b.Value("#timezone"); got != "Europe/Berlin" {
		t.Errorf("time zone %q, want the browser's Europe/Berlin", got)
	}
	shoot("sites-add", "/websites/new", "#domain")
	b.Do(chromedp.SendKeys(chromedp.ID("domain"), "127.0.0.1"))
	b.Submit(chromedp.Submit(chromedp.ID("domain")))
	mustContainText(t, "after add", b.Text(".notice"), "127.0.0.1 was added.")
	web, err := f.e.Owner(f.aliceID).WebsiteByDomain(context.Background(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if web.Timezone != "Europe/Berlin" || web.ExcludeBots != 1 || web.Privacy != 1 {
		t.Errorf("new website %+v, want Europe/Berlin, bots excluded, private", web)
	}
	snippetPage, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}

	// The snippet, and its copy button (shown by the script).
	snippet = b.Value("#snippet")
	want := `<script data-host="` + stats.URL + `" src="` + stats.URL + `/js/script.js" async defer></script>`
	if snippet != want {
		t.Errorf("snippet %q, want %q", snippet, want)
	}
	b.Do(chromedp.Click(chromedp.CSS(`button[data-copy="snippet"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector(".copied").textContent !== ""`, chromedp.WithPollingTimeout(5*time.Second)))

	// The page with the snippet sends a pageview, which the bot filter
	// drops: not installed, and the page says why it may be.
	b.Do(chromedp.Navigate(site.URL + "/"))
	log.wait(t, 1, "first pageview")
	if got := log.all()[0]; got.code != http.StatusAccepted {
		t.Errorf("pageview: status %d, want 202", got.code)
	}
	b.Do(chromedp.Navigate(snippetPage))
	b.Submit(chromedp.Click(chromedp.CSS(`form[action*="/verify"] button`)))
	mustContainText(t, "verify with bots excluded", b.Text("#verify-result"), "Not yet", "The bot filter is on for this website")

	// The bot filter off, the page again: installed.
	b.Do(chromedp.Navigate(strings.Replace(snippetPage, "/snippet", "/settings", 1)), chromedp.Click(chromedp.ID("exclude_bots")))
	b.Submit(chromedp.Submit(chromedp.ID("timezone")))
	mustContainText(t, "settings", b.Text(".notice"), "The settings were saved.")
	b.Do(chromedp.Navigate(site.URL + "/"))
	log.wait(t, 2, "second pageview")
	b.Do(chromedp.Navigate(snippetPage))
	b.Submit(chromedp.Click(chromedp.CSS(`form[action*="/verify"] button`)))
	mustContainText(t, "verify", b.Text("#verify-result"), "Installed. The last pageview arrived this minute (1 in the last 10 minutes).")
	if browsertest.Eval[string](b.Tab, `getComputedStyle(document.querySelector("#verify-result")).backgroundColor`) == browsertest.Eval[string](b.Tab, `getComputedStyle(document.body).backgroundColor`) {
		t.Error("the result has no colour of its own")
	}

	verify := strings.Replace(snippetPage, "/snippet", "/verify", 1)
	shoot("sites-snippet", strings.TrimPrefix(verify, stats.URL), "#verify-result")
	shoot("sites-list", "/", "table.sites")
	if _, err := f.e.Owner(f.aliceID).AddGoal(context.Background(), web.ID, engine.Goal{EventName: "Signup", Currency: "EUR"}); err != nil {
		t.Fatal(err)
	}
	shoot("sites-goals", strings.TrimPrefix(strings.Replace(snippetPage, "/snippet", "/goals", 1), stats.URL), "table.goals")
	shoot("sites-delete", strings.TrimPrefix(strings.Replace(snippetPage, "/snippet", "/delete", 1), stats.URL), "#confirm")

	// Contrast (WCAG AA, 4.5:1) of the new elements' text against their own
	// background, in light and dark mode.
	contrast := `(sels) => {
		const rgb = c => c.match(/[\d.]+/g).map(Number);
		const lum = c => { const [r, g, b] = rgb(c).slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
		const bg = el => { for (; el; el = el.parentElement) { const c = getComputedStyle(el).backgroundColor; if (rgb(c)[3] !== 0) return c; } return getComputedStyle(document.documentElement).backgroundColor || "rgb(255, 255, 255)"; };
		const out = {};
		for (const sel of sels) {
			const el = document.querySelector(sel);
			if (!el) { out[sel] = -1; continue; }
			const a = lum(getComputedStyle(el).color), b = lum(bg(el));
			out[sel] = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
		}
		return out;
	}`
	scheme := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
			})
			return err
		})
	}
	check := func(mode, page string, sels ...string) {
		t.Helper()
		got := browsertest.Eval[map[string]float64](b.Tab, `(`+contrast+`)(`+jsonStrings(sels)+`)`)
		for _, sel := range sels {
			if r := got[sel]; r < 4.5 {
				t.Errorf("%s mode, %s: the contrast of %s is %.2f:1, want at least 4.5:1", mode, page, sel, r)
			}
		}
	}
	for _, mode := range []string{"light", "dark"} {
		b.Do(scheme(mode), chromedp.Navigate(verify), chromedp.WaitVisible(chromedp.ID("verify-result")))
		check(mode, "snippet", ".result.ok strong", ".result.ok p", ".hint", ".sitenav a[aria-current]", ".sitenav a:not([aria-current])", "textarea.code", "button")
		b.Do(chromedp.Navigate(stats.URL+"/websites/new"), chromedp.SetValue(chromedp.ID("domain"), "a/b/c"))
		b.Submit(chromedp.Submit(chromedp.ID("domain")))
		check(mode, "refused form", ".field-error", ".summary a", ".summary p", "label", ".req", ".hint")
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(shots, "sites-add-refused-"+mode+".png")
		if err := os.WriteFile(file, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", file)
	}
	b.Do(scheme("light"))
}

// tab drives one browser tab for a test.
type tab struct{ browsertest.Tab }

// jsonStrings writes ss as a JavaScript array of strings.
func jsonStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
	}
	return "[" + strings.Join(q, ",") + "]"
}

func mustContainText(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s: %q does not contain %q", what, s, sub)
		}
	}
}

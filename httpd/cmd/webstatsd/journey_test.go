package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/httpd/internal/browsertest"
)

// TestWebAppJourney drives the web app (SPEC §11, issue #14) in headless
// Chromium against the real binary on a fresh data directory, as its first
// users would: the admin signs in with the printed key, sets a password,
// adds a website and verifies its snippet on a page of another origin,
// edits it, creates an API key and uses it, turns on two-factor
// authentication, ends another session, and invites a user, who registers
// and sees only their own (no) websites. Screenshots of the main pages at
// 1280 and 390 px, light and dark, go to $WEBSTATS_ARTIFACTS (else a
// temporary directory), each path logged as "screenshot: …".
//
// Each phase has browsers of its own: a browsertest browser lives at most a
// minute, which a loaded machine must not reach. A phase signs in again
// through the form. Nothing sleeps: the test waits for elements, for the
// tracker's answer, and uses the next TOTP step's code instead of waiting
// for it.
func TestWebAppJourney(t *testing.T) {
	browsertest.Path(t) // skip early without a browser (fail under CI=true)
	bin := buildBinary(t)
	srv := startServer(t, bin, filepath.Join(t.TempDir(), "data"), "-registration", "invite")
	base := srv.base()
	adminKey := srv.adminKey(t)
	shots := journeyArtifacts(t)

	// The website's page, on another origin (another port of 127.0.0.1),
	// with the snippet the snippet page gives.
	var mu sync.Mutex
	var snippet string
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		s := snippet
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html><head><meta charset="utf-8"><title>My site</title>`+s+`</head><body><p>Hello.</p></body></html>`)
	}))
	defer site.Close()

	const (
		email    = "admin@localhost"
		password = "journey horse battery"
		domain   = "127.0.0.1" // the host of the site's page
	)
	var (
		apiKey   string   // the key made on the keys page
		secret   string   // the TOTP key
		recovery []string // the recovery codes, used one per later sign-in
	)
	// nextRecovery returns an unused recovery code.
	nextRecovery := func(t *testing.T) string {
		t.Helper()
		if len(recovery) == 0 {
			t.Fatal("no recovery code left")
		}
		c := recovery[0]
		recovery = recovery[1:]
		return c
	}
	// phase runs a step of the journey. A step that stopped (t.Fatal) stops
	// the journey; one that only reported errors lets it go on.
	phase := func(name string, f func(t *testing.T)) {
		t.Helper()
		done := false
		t.Run(name, func(t *testing.T) {
			f(t)
			done = true
		})
		if !done {
			t.FailNow()
		}
	}

	phase("sign in with the key, set a password", func(t *testing.T) {
		b := newJourneyTab(t, base)
		b.open("/login")
		b.shoot(shots, "journey-signin")
		// The email field looks like the password field below it.
		look := func(sel string) string {
			return eval[string](b, `(s => [s.fontSize, s.padding, s.borderRadius, s.borderColor].join(" / "))(getComputedStyle(document.querySelector("`+sel+`")))`)
		}
		if e, p := look("#email"), look("#password"); e != p {
			t.Errorf("sign-in page: the email field's font size / padding / radius / border are %s, the password field's %s", e, p)
		}
		b.typeIn("#key", adminKey)
		b.submit("form:has(#key) button[type=submit]")
		b.mustBeAt("/")
		mustContainText(t, "home after the key", b.Text("main"), "Your websites", "You have no websites yet.")
		mustContainText(t, "header", b.Text(".who"), "admin")

		// The first time, an API key of the account proves it is the
		// owner (SPEC §13), not a current password.
		b.open("/account")
		mustContainText(t, "password section", b.Text("#password-h ~ p"), "No password is set")
		mustContainText(t, "first password's proof", b.Text(`label[for="current_password"]`), "An API key of your account")
		b.typeIn("#current_password", adminKey)
		b.typeIn("#new-password", password)
		b.typeIn("#password_confirmation", password)
		b.submit(`form[action="/account/password"] button[type=submit]`)
		b.mustBeAt("/account")
		mustContainText(t, "after setting the password", b.Text(".notice"), "Your password was changed.")

		b.signOut()
		b.signIn(email, password, "")
		mustContainText(t, "header after the password", b.Text(".who"), "admin")
		b.signOut() // each phase ends its session: the sessions phase counts them
	})

	phase("add a website, verify its snippet, edit it", func(t *testing.T) {
		b := newJourneyTab(t, base)
		b.signIn(email, password, "")
		b.open("/websites/new")
		b.typeIn("#domain", domain)
		// Headless Chromium says so in its user agent: the bot filter,
		// on by default, would drop its pageview.
		if !eval[bool](b, `document.getElementById("exclude_bots").checked`) {
			t.Error("the bot filter is off by default, want on")
		}
		b.Do(chromedp.Click(chromedp.ID("exclude_bots")))
		b.submit(`form.form button[type=submit]`)
		mustContainText(t, "after adding", b.Text(".notice"), domain+" was added.")
		snippetPage := b.location()
		if !strings.HasSuffix(snippetPage, "/snippet") {
			t.Fatalf("after adding: at %s, want the snippet page", snippetPage)
		}

		got := b.Value("#snippet")
		want := `<script data-host="` + base + `" src="` + base + `/js/script.js" async defer></script>`
		if got != want {
			t.Errorf("snippet %q, want %q", got, want)
		}
		mu.Lock()
		snippet = got
		mu.Unlock()

		// The page with the snippet sends a pageview: wait for its answer.
		ev, err := chromedp.Run(b.Ctx, chromedp.WaitEvent(network.ResponseReceived, func(e network.EventResponseReceived) bool {
			return e.Response.URL == base+"/api/event" && e.Type != network.ResourceTypePreflight
		}, chromedp.Navigate(site.URL+"/")))
		if err != nil {
			t.Fatalf("the site's page sent no pageview: %v", err)
		}
		if ev.Response.Status != http.StatusAccepted {
			t.Errorf("pageview: status %d, want 202", ev.Response.Status)
		}

		b.open(strings.TrimPrefix(snippetPage, base))
		b.submit(`form[action*="/verify"] button`)
		mustContainText(t, "verify", b.Text("#verify-result"), "Installed.")
		if !eval[bool](b, `document.getElementById("verify-result").classList.contains("ok")`) {
			t.Error("the result is not marked ok")
		}
		if c := eval[string](b, `getComputedStyle(document.querySelector("#verify-result strong")).color`); !greenish(c) {
			t.Errorf("the result's heading is %s, want green", c)
		}

		// Settings: another time zone, and public statistics.
		b.open(strings.TrimSuffix(strings.TrimPrefix(snippetPage, base), "/snippet") + "/settings")
		if !eval[bool](b, `document.getElementById("privacy-1").checked`) {
			t.Error("a new website is not private")
		}
		b.Do(chromedp.Clear(chromedp.ID("timezone")))
		b.typeIn("#timezone", "Asia/Tokyo")
		b.Do(chromedp.Click(chromedp.ID("privacy-0")))
		b.submit(`form.form button[type=submit]`)
		mustContainText(t, "after saving", b.Text(".notice"), "The settings were saved.")
		if tz := b.Value("#timezone"); tz != "Asia/Tokyo" {
			t.Errorf("saved time zone %q, want Asia/Tokyo", tz)
		}
		if !eval[bool](b, `document.getElementById("privacy-0").checked`) {
			t.Error("the saved privacy is not public")
		}
		if eval[bool](b, `document.getElementById("exclude_bots").checked`) {
			t.Error("the bot filter is on again")
		}

		b.open("/")
		mustContainText(t, "websites", b.Text("table.sites tbody"), domain+" Public 1 1")
		b.shoot(shots, "journey-websites")
		b.signOut()
	})

	phase("create an API key and use it", func(t *testing.T) {
		b := newJourneyTab(t, base)
		b.signIn(email, password, "")
		b.open("/account/keys")
		b.typeIn("#key-name", "CI")
		if status := b.submit(`form[action="/account/keys"] button[type=submit]`); status != http.StatusCreated {
			t.Errorf("create a key: status %d, want 201", status)
		}
		mustContainText(t, "keys", b.Text(".notice"), "The new key is shown only now.")
		mustContainText(t, "keys", b.Text("table.data tbody"), "CI")
		apiKey = b.Value("#new-key")
		if apiKey == "" || apiKey == adminKey {
			t.Fatalf("new key %q", apiKey)
		}
		b.shoot(shots, "journey-keys")
		b.open("/account/keys")
		if b.exists("#new-key") {
			t.Error("the keys page shows the new key again")
		}
		mustContainText(t, "keys again", b.Text("table.data tbody"), "CI")

		var list struct {
			Data []struct {
				Domain      string `json:"domain"`
				Privacy     int    `json:"privacy"`
				ExcludeBots int    `json:"exclude_bots"`
				Timezone    string `json:"timezone"`
			} `json:"data"`
		}
		apiCall(t, apiKey, "GET", base+"/api/v1/websites", "", &list)
		type listed struct {
			Domain      string
			Privacy     int
			ExcludeBots int
			Timezone    string
		}
		var sites []listed
		for _, w := range list.Data {
			sites = append(sites, listed(w))
		}
		if diff := cmp.Diff([]listed{{domain, 0, 0, "Asia/Tokyo"}}, sites); diff != "" {
			t.Errorf("GET /api/v1/websites mismatch (-want +got):\n%s", diff)
		}

		var res struct {
			Results []struct {
				Metrics []float64 `json:"metrics"`
			} `json:"results"`
		}
		// The pageview was dated while the website was on UTC; "day"
		// in Asia/Tokyo is another date from 15:00 to 24:00 UTC. The
		// range around today holds it at any hour.
		now := time.Now().UTC()
		span := fmt.Sprintf(`[%q,%q]`, now.AddDate(0, 0, -1).Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly))
		apiCall(t, apiKey, "POST", base+"/api/v2/query", `{"site_id":"`+domain+`","metrics":["visitors","pageviews"],"date_range":`+span+`}`, &res)
		if len(res.Results) != 1 || !cmp.Equal(res.Results[0].Metrics, []float64{1, 1}) {
			t.Errorf("POST /api/v2/query: %+v, want one row of 1 visitor and 1 pageview", res.Results)
		}
		b.signOut()
	})

	phase("turn on two-factor authentication", func(t *testing.T) {
		b := newJourneyTab(t, base)
		b.signIn(email, password, "")
		b.open("/account/2fa")
		b.shoot(shots, "journey-2fa")
		secret = b.Text("#totp-secret")
		if secret == "" {
			t.Fatal("no TOTP key shown")
		}
		b.typeIn("#code", rfcTOTP(secret, time.Now()))
		// Turning it on may ask for the password too.
		if b.exists(`form[action="/account/2fa"] input[name="current_password"]`) {
			b.typeIn(`form[action="/account/2fa"] input[name="current_password"]`, password)
		}
		b.submit(`form[action="/account/2fa"] button[type=submit]`)
		mustContainText(t, "after turning it on", b.Text(".notice"), "Two-factor authentication is on.")
		recovery = eval[[]string](b, `Array.from(document.querySelectorAll("#recovery-codes code"), c => c.textContent)`)
		if len(recovery) != 10 {
			t.Fatalf("%d recovery codes shown, want 10", len(recovery))
		}

		// The password alone no longer signs in. The code of the enabling
		// step cannot be used again, so it is the next step's (the server
		// accepts one step of skew).
		b.signOut()
		b.signIn(email, password, rfcTOTP(secret, time.Now().Add(30*time.Second)))
		b.open("/account")
		mustContainText(t, "account", b.Text("#tfa-h + p"), "On:")
		b.signOut()
	})

	phase("end another session", func(t *testing.T) {
		first := newJourneyTab(t, base)
		first.signIn(email, password, nextRecovery(t))
		second := newJourneyTab(t, base)
		second.signIn(email, password, nextRecovery(t))

		first.open("/account")
		if n := eval[int](first, `document.querySelectorAll("#sessions-h ~ .scroll tbody tr").length`); n != 2 {
			t.Fatalf("%d sessions listed, want 2", n)
		}
		mustContainText(t, "sessions", first.Text("#sessions-h ~ .scroll tbody"), "(this one)")
		first.shoot(shots, "journey-account")
		first.submit(`form[action="/account/sessions/end"] button`)
		mustContainText(t, "after ending it", first.Text(".notice"), "The session was signed out.")
		if n := eval[int](first, `document.querySelectorAll("#sessions-h ~ .scroll tbody tr").length`); n != 1 {
			t.Errorf("%d sessions listed after ending one, want 1", n)
		}

		second.open("/")
		second.mustBeAt("/login")
		first.open("/")
		first.mustBeAt("/")
	})

	phase("invite a user", func(t *testing.T) {
		b := newJourneyTab(t, base)
		b.signIn(email, password, nextRecovery(t))
		b.open("/admin")
		mustContainText(t, "admin", b.Text("main"), "Registration is invite")
		if status := b.submit(`form[action="/admin/invites"] button[type=submit]`); status != http.StatusCreated {
			t.Errorf("create an invitation: status %d, want 201", status)
		}
		link := b.Value("#new-invite")
		if !strings.HasPrefix(link, base+"/register?invite=") {
			t.Fatalf("invitation link %q, want %s/register?invite=…", link, base)
		}
		link = strings.TrimPrefix(link, base)
		b.shoot(shots, "journey-admin")

		u := newJourneyTab(t, base)
		u.open(link)
		u.typeIn("#name", "Invitee")
		u.typeIn("#email", "invitee@example.com")
		u.typeIn("#password", "invitee password")
		u.typeIn("#password_confirmation", "invitee password")
		u.submit(`form[action="/register"] button[type=submit]`)
		u.mustBeAt("/")
		mustContainText(t, "invitee's home", u.Text("main"), "Your websites", "You have no websites yet.")
		mustContainText(t, "invitee's header", u.Text(".who"), "Invitee")
		if u.exists("table.sites") || u.exists(`header a[href="/admin"]`) {
			t.Error("the invitee sees a website list or an Admin link")
		}
		if status := u.open("/admin"); status != http.StatusNotFound {
			t.Errorf("/admin for the invitee: status %d, want 404", status)
		}
		// The link created one account.
		if status := u.open(link); status != http.StatusGone {
			t.Errorf("the used invitation: status %d, want 410", status)
		}
	})
}

// journeyTab drives one tab of its own browser for a phase of the journey.
type journeyTab struct {
	browsertest.Tab
	base string
}

// newJourneyTab starts a browser for t (closed when t ends).
func newJourneyTab(t *testing.T, base string) journeyTab {
	return journeyTab{browsertest.Tab{T: t, Ctx: browsertest.New(t, chromedp.WindowSize(1280, 900))}, base}
}

// open loads path (of the server) and returns the HTTP status of the page.
func (b journeyTab) open(path string) int64 {
	b.T.Helper()
	resp, err := chromedp.Run(b.Ctx, chromedp.NavigateResponse(b.base+path))
	if err != nil {
		b.T.Fatalf("open %s: %v", path, err)
	}
	return resp.Status
}

// submit clicks the button sel, waits for the page it leads to and returns
// its HTTP status.
func (b journeyTab) submit(sel string) int64 {
	b.T.Helper()
	resp, err := chromedp.RunResponse(b.Ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		b.T.Fatalf("click %s: %v", sel, err)
	}
	return resp.Status
}

// typeIn types s into the field sel.
func (b journeyTab) typeIn(sel, s string) {
	b.T.Helper()
	b.Do(chromedp.SendKeys(chromedp.CSS(sel), s))
}

// exists reports whether the page has an element matching sel (at once,
// without waiting for one).
func (b journeyTab) exists(sel string) bool {
	b.T.Helper()
	q, _ := json.Marshal(sel)
	return eval[bool](b, `document.querySelector(`+string(q)+`) !== null`)
}

// location returns the address of the page.
func (b journeyTab) location() string {
	b.T.Helper()
	loc, err := chromedp.Run(b.Ctx, chromedp.Location())
	if err != nil {
		b.T.Fatal(err)
	}
	return loc
}

// mustBeAt fails the test unless the page is path of the server.
func (b journeyTab) mustBeAt(path string) {
	b.T.Helper()
	loc := b.location()
	u, err := url.Parse(loc)
	if err != nil || u.Scheme+"://"+u.Host != b.base || u.Path != path {
		b.T.Fatalf("at %s, want %s%s", loc, b.base, path)
	}
}

// signIn signs in with the email and password form and, when code is not
// empty, the second-factor form, and expects the websites page.
func (b journeyTab) signIn(email, password, code string) {
	b.T.Helper()
	b.open("/login")
	b.typeIn("#email", email)
	b.typeIn("#password", password)
	b.submit("form:has(#password) button[type=submit]")
	if code != "" {
		b.mustBeAt("/login/code")
		b.typeIn("#code", code)
		b.submit(`form[action="/login/code"] button[type=submit]`)
	}
	b.mustBeAt("/")
	mustContainText(b.T, "signed in", b.Text("h1"), "Your websites")
}

// signOut clicks the header's Sign out button and expects the sign-in
// page.
func (b journeyTab) signOut() {
	b.T.Helper()
	b.submit(`header form[action="/logout"] button`)
	b.mustBeAt("/login")
}

// shoot takes screenshots of the page as it is (it may be the answer to a
// form, which is not loaded again), light and dark, at 1280 and 390 px,
// into dir as name-<scheme>-<desktop|phone>.png, and checks that the page
// never scrolls sideways and that dark mode changes the background.
func (b journeyTab) shoot(dir, name string) {
	b.T.Helper()
	bg := map[string]string{}
	for _, scheme := range []string{"light", "dark"} {
		b.Do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
			})
			return err
		}))
		bg[scheme] = eval[string](b, `getComputedStyle(document.body).backgroundColor`)
		for _, s := range []struct {
			suffix string
			width  int64
		}{{"desktop", 1280}, {"phone", 390}} {
			opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
			if s.width < 500 {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulatePortrait)
			}
			// The page takes the new width a moment later: wait for it.
			b.Do(chromedp.EmulateViewport(s.width, 844, opts...),
				chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.documentElement.clientWidth === %d`, s.width), chromedp.WithPollingTimeout(10*time.Second)))
			if wide := eval[[]string](b, overflowJS); len(wide) > 0 {
				b.T.Errorf("%s, %s, %d px: the page scrolls sideways, past its right edge: %s", name, scheme, s.width, strings.Join(wide, ", "))
			}
			png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
			if err != nil {
				b.T.Fatal(err)
			}
			file := filepath.Join(dir, name+"-"+scheme+"-"+s.suffix+".png")
			if err := os.WriteFile(file, png, 0o644); err != nil {
				b.T.Fatal(err)
			}
			b.T.Logf("screenshot: %s", file)
		}
	}
	if bg["light"] == bg["dark"] {
		b.T.Errorf("%s: the same background %s in light and dark mode", name, bg["light"])
	}
	b.Do(chromedp.EmulateViewport(1280, 900), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
		return err
	}))
}

// overflowJS lists the innermost elements that reach past the right edge
// of the page and are not inside an element that scrolls or clips them:
// the ones that make it scroll sideways (none when it does not).
const overflowJS = `(() => {
	const w = document.documentElement.clientWidth;
	if (document.documentElement.scrollWidth <= w + 1) return [];
	// An ancestor that scrolls or clips holds an element in, unless the
	// element is positioned absolutely and the ancestor lies between it
	// and its containing block (its nearest positioned ancestor).
	const clipped = el => {
		let abs = getComputedStyle(el).position === "absolute";
		for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
			const cs = getComputedStyle(p);
			if (abs && cs.position === "static") continue;
			if (cs.overflowX !== "visible") return true;
			abs = cs.position === "absolute";
		}
		return false;
	};
	const over = Array.from(document.querySelectorAll("body *")).filter(el => el.getBoundingClientRect().right > w + 1 && !clipped(el));
	const inner = over.filter(el => !over.some(o => o !== el && el.contains(o)));
	const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "");
	const out = inner.slice(0, 5).map(el => name(el) + " in " + name(el.parentElement) + " (right edge at " + Math.round(el.getBoundingClientRect().right) + " px)");
	return out.length ? out : ["no single element found (scrollWidth " + document.documentElement.scrollWidth + " px)"];
})()`

func eval[T any](b journeyTab, js string) T {
	b.T.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.T.Fatalf("%s: %v", js, err)
	}
	return v
}

// journeyArtifacts is where screenshots go: $WEBSTATS_ARTIFACTS, else a
// temporary directory of t.
func journeyArtifacts(t *testing.T) string {
	if d := os.Getenv("WEBSTATS_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// apiCall sends an API request with key and decodes the answer into v,
// failing the test on a status other than 200.
func apiCall(t *testing.T, key, method, url, body string, v any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b := drain(resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s, want 200\n%s", method, url, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s %s: %v\n%s", method, url, err, b)
	}
}

// greenish reports whether a CSS rgb() colour is mostly green.
func greenish(c string) bool {
	var r, g, b int
	if _, err := fmt.Sscanf(c, "rgb(%d, %d, %d)", &r, &g, &b); err != nil {
		return false
	}
	return g > r+40 && g > b+20
}

// mustContainText fails t unless s contains each of subs.
func mustContainText(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s: %q does not contain %q", what, s, sub)
		}
	}
}

// rfcTOTP computes an RFC 6238 code (SHA-1, 6 digits, 30 s steps); the
// same as in httpd/pages/account_test.go.
func rfcTOTP(secret string, at time.Time) string {
	key, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(at.Unix()/30))
	m := hmac.New(sha1.New, key)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	return fmt.Sprintf("%06d", (binary.BigEndian.Uint32(sum[off:])&0x7fffffff)%1_000_000)
}

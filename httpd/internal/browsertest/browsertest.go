// Package browsertest starts headless Chromium for the browser tests of
// httpd and its pages, with one rule for a missing browser: the test is
// skipped with the install command, except under CI=true, where it fails.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Install is the command that installs the browser (Debian's package).
const Install = "apt-get install -y chromium"

// Path returns the path of Chromium, or skips t (fails it under CI=true)
// when there is none.
func Path(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium (CI=true): install Chromium: " + Install)
	}
	t.Skip("install Chromium: " + Install)
	return ""
}

// New starts a headless Chromium with a fresh profile and returns a chromedp
// context for it, valid for at most a minute; it stops with the test. The
// flags keep Chromium off the network (this machine has none but loopback).
// extra options come after the defaults.
func New(t testing.TB, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	// The profile is not a t.TempDir: Chromium's helper processes may still
	// write to it for a moment after the browser quit, which made
	// TempDir's cleanup fail ("directory not empty") about once in twenty
	// runs. It is removed below, once they are gone.
	profile, err := os.MkdirTemp("", "webstats-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path(t)),
		chromedp.UserDataDir(profile),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	root, stop := context.WithTimeout(context.Background(), time.Minute)
	alloc, cancelAlloc := chromedp.NewExecAllocator(root, append(opts, extra...)...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		_ = chromedp.Cancel(ctx) // close the browser and wait for it
		cancelCtx()
		cancelAlloc()
		stop()
		removeProfile(t, profile)
	})
	if err = chromedp.Do(ctx); err != nil { // start the browser
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// removeProfile removes a Chromium profile, retrying for up to two seconds
// while helper processes that outlived the browser finish writing to it.
func removeProfile(t testing.TB, dir string) {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("remove Chromium profile %s: %v", dir, err)
}

// Tab drives one browser tab for a test: its methods fail the test on an
// error. Ctx is a context of New.
type Tab struct {
	T   testing.TB
	Ctx context.Context
}

// Do runs steps.
func (b Tab) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.T.Helper()
	if err := chromedp.Do(b.Ctx, steps...); err != nil {
		b.T.Fatal(err)
	}
}

// Submit runs an action that navigates (a click, a form submission) and
// waits for the new page.
func (b Tab) Submit(a chromedp.Action[chromedp.Void]) {
	b.T.Helper()
	if _, err := chromedp.RunResponse(b.Ctx, a); err != nil {
		b.T.Fatal(err)
	}
}

// Text returns the visible text of the first element matching a CSS
// selector, with whitespace collapsed.
func (b Tab) Text(sel string) string {
	b.T.Helper()
	s, err := chromedp.Run(b.Ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.T.Fatalf("text of %s: %v", sel, err)
	}
	return strings.Join(strings.Fields(s), " ")
}

// Value returns the value of the form element matching a CSS selector.
func (b Tab) Value(sel string) string {
	b.T.Helper()
	s, err := chromedp.Run(b.Ctx, chromedp.Value(chromedp.CSS(sel)))
	if err != nil {
		b.T.Fatalf("value of %s: %v", sel, err)
	}
	return s
}

// Eval evaluates js in the tab's page.
func Eval[T any](b Tab, js string) T {
	b.T.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.T.Fatalf("%s: %v", js, err)
	}
	return v
}

package engine_test

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// clock is a settable clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(s string) *clock {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &clock{t: t}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(s string) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// openMem opens an engine on a fresh in-memory file system with no
// background snapshots.
func openMem(t testing.TB, c *clock, mod ...func(*engine.Options)) (*engine.Engine, *engine.Options) {
	t.Helper()
	o := &engine.Options{FS: snapshot.NewMemFS(), Dir: "data", Now: c.Now, SnapshotEvery: -1}
	for _, m := range mod {
		m(o)
	}
	e, err := engine.Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e, o
}

// newSite creates a website of account 1 with the given settings.
func newSite(t testing.TB, e *engine.Engine, domain string, set ...func(*engine.WebsiteInput)) engine.Website {
	t.Helper()
	ctx := context.Background()
	acc := struct{ ID uint32 }{1} // (the engine knows the owners' ids, not their accounts)
	in := engine.WebsiteInput{Domain: &domain}
	for _, s := range set {
		s(&in)
	}
	w, err := e.Owner(acc.ID).CreateWebsite(ctx, in)
	if err != nil {
		t.Fatalf("CreateWebsite(%s): %v", domain, err)
	}
	return w
}

func str(s string) *string { return &s }

func date(s string) buckets.Date {
	d, err := buckets.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

const (
	chromeWin  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	safariIOS  = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
	firefoxLin = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	googlebot  = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)

// track counts hits and fails the test on error.
func track(t testing.TB, e *engine.Engine, hits ...engine.Hit) engine.TrackResult {
	t.Helper()
	res, err := e.Track(context.Background(), hits...)
	if err != nil {
		t.Fatalf("Track: %v", err)
	}
	return res
}

// rows returns every row of a statistic, sorted by value.
func rows(t testing.TB, e *engine.Engine, site uint32, name, from, to string) map[string]uint64 {
	t.Helper()
	p, err := e.Unscoped().Stat(context.Background(), engine.StatQuery{Website: site, Name: name, From: date(from), To: date(to), PerPage: 1 << 30})
	if err != nil {
		t.Fatalf("Stat(%s): %v", name, err)
	}
	m := make(map[string]uint64, len(p.Rows))
	for _, r := range p.Rows {
		m[r.Value] = r.Count
	}
	return m
}

// pv is a live pageview from a Chrome desktop visitor.
func pv(when, url string, mod ...func(*engine.Hit)) engine.Hit {
	h := engine.Hit{Time: at(when), URL: url, UserAgent: chromeWin, IP: ip("8.8.8.8"), Language: "en-US,en;q=0.9", Resolution: "1920x1080", Live: true}
	for _, m := range mod {
		m(&h)
	}
	return h
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
func errorsIs(err, target error) bool     { return errors.Is(err, target) }

package report

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/snapshot"
)

// clock is a settable clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(rfc3339 string) *clock { return &clock{t: at(rfc3339)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(rfc3339 string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = at(rfc3339)
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func at(rfc3339 string) time.Time {
	t, err := time.Parse(time.RFC3339, rfc3339)
	if err != nil {
		panic(err)
	}
	return t
}

func date(s string) engine.Date {
	d, err := engine.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

// syncBuffer is a bytes.Buffer for a logger used by several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func testLogger() (*slog.Logger, *syncBuffer) {
	var buf syncBuffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// openEngine opens an engine on fs (a new in-memory one when nil), under
// directory "d", with clk as its clock.
func openEngine(t *testing.T, clk *clock, fs snapshot.FS) *engine.Engine {
	t.Helper()
	if fs == nil {
		fs = snapshot.NewMemFS()
	}
	e, err := engine.Open(&engine.Options{FS: fs, Dir: "d", Now: clk.Now, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// newEngine opens an in-memory engine closed at the end of the test.
func newEngine(t *testing.T, clk *clock) *engine.Engine {
	e := openEngine(t, clk, nil)
	t.Cleanup(func() { e.Close() })
	return e
}

// owner is the address of the account that owns the test websites.
const owner = "owner@example.com"

// addWebsite creates domain with email reports on, in time zone tz, owned
// by the owner account (created on first use).
func addWebsite(t *testing.T, e *engine.Engine, domain, tz string, email bool) engine.Website {
	t.Helper()
	ctx := context.Background()
	a, err := identity.Must(e).AccountByEmail(ctx, owner)
	if err != nil {
		if a, _, err = identity.Must(e).CreateAccount(ctx, "Owner", owner); err != nil {
			t.Fatal(err)
		}
	}
	on := "0"
	if email {
		on = "1"
	}
	w, err := e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain, Email: &on, Timezone: &tz})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

const chromeUA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// pageview is one tracked pageview of the dataset.
type pageview struct {
	at       string // RFC 3339
	ip       string // one visitor per address
	path     string
	referrer string
}

// dataset is the known traffic of example.com. Each visitor comes on one
// day only, so the unique visitors of a range (daily salts) are simply the
// distinct visitors.
//
//	week of 2–8 Nov 2026:   2 visitors, 3 pageviews, 2 visits
//	week of 9–15 Nov 2026:  5 visitors, 7 pageviews, 5 visits
//	  pages:     / 3, /a 2, /<script>x</script> 1, /b 1
//	  referrers: direct 2, www.google.com 2, news.ycombinator.com 1
//	  countries: US 2, AU 1, DE 1, JP 1
//	16 Nov 2026:            1 visitor, 1 pageview, 1 visit
//	November 2026:          8 visitors, 11 pageviews, 8 visits; October: none
var dataset = []pageview{
	{"2026-11-03T10:00:00Z", "8.8.8.8", "/", ""},
	{"2026-11-03T10:05:00Z", "8.8.8.8", "/a", ""},
	{"2026-11-04T12:00:00Z", "1.1.1.1", "/", ""},

	{"2026-11-10T09:00:00Z", "8.8.8.8", "/", "https://www.google.com/"},
	{"2026-11-10T09:01:00Z", "8.8.8.8", "/a", "https://www.google.com/"},
	{"2026-11-10T09:02:00Z", "8.8.8.8", "/b", "https://www.google.com/"},
	{"2026-11-11T14:00:00Z", "1.1.1.1", "/", "https://news.ycombinator.com/item?id=1"},
	{"2026-11-12T08:00:00Z", "46.4.0.1", "/a", ""},
	{"2026-11-13T11:00:00Z", "9.9.9.9", "/", "https://www.google.com/search?q=x"},
	{"2026-11-14T16:00:00Z", "133.242.0.1", "/<script>x</script>", ""},

	{"2026-11-16T01:00:00Z", "8.8.8.8", "/c", ""},
}

// track counts pageviews on the website with domain.
func track(t *testing.T, e *engine.Engine, domain string, pvs []pageview) {
	t.Helper()
	hits := make([]engine.Hit, len(pvs))
	for i, pv := range pvs {
		hits[i] = engine.Hit{
			Time:      at(pv.at),
			URL:       "https://" + domain + pv.path,
			Referrer:  pv.referrer,
			UserAgent: chromeUA,
			IP:        netip.MustParseAddr(pv.ip),
			Language:  "en",
		}
	}
	res, err := e.Track(context.Background(), hits...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != len(hits) {
		t.Fatalf("tracked %d of %d hits: %v", res.Accepted, len(hits), res.Reasons)
	}
}

// exampleSite creates example.com (UTC, email on) with the dataset, on a
// clock set to 1 October 2026 while it is created.
func exampleSite(t *testing.T, e *engine.Engine, clk *clock, tz string) engine.Website {
	t.Helper()
	now := clk.Now()
	clk.Set("2026-10-01T00:00:00Z")
	w := addWebsite(t, e, "example.com", tz, true)
	clk.mu.Lock()
	clk.t = now
	clk.mu.Unlock()
	track(t, e, "example.com", dataset)
	return w
}

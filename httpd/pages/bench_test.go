package pages

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// benchPerDay is the pageviews per day of the benchmark's website. The
// target is a site of 10M pageviews a month (about 330,000 a day); tracking
// that for a year takes minutes, so the site is scaled down to 2,000
// pageviews a day (730,000 hits, about 60,000 a month: 1/165 of the target),
// which keeps the setup at 7–11 s on two shared cores. The overview's cost
// grows with the days and with the distinct values per day, not with the
// counts: the workload keeps those realistic (2,000 pages, 20 campaigns, 311
// referrers, countries from random IPs, 12 user agents, 8 languages), but at
// full scale more of the 2,000 pages occur each day, so expect up to about
// twice the time of this benchmark there.
const benchPerDay = 2000

// BenchmarkOverview measures GET /stats/:domain over a range of days
// (the engine's cache of answers off: every request computes them),
// rendering included: unfiltered over 365 days, and with two filters
// (device and source) over 365 and 30 days.
func BenchmarkOverview(b *testing.B) {
	for _, days := range []int{365} {
		b.Run(fmt.Sprintf("site=%dd", days), func(b *testing.B) {
			now := testNow
			e, err := engine.Open(&engine.Options{Now: func() time.Time { return now }, SnapshotEvery: -1, NoSync: true, QueryCache: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ctx := context.Background()
			acc, _, err := identity.Must(e).CreateAccount(ctx, "Bench", "bench@example.org")
			if err != nil {
				b.Fatal(err)
			}
			domain, privacy := "bench.example", "0"
			if _, err := e.Owner(acc.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain, Privacy: &privacy}); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			trackYear(b, e, days)
			// As the background snapshots do in a server: closed days are
			// frozen and compacted.
			if err := e.Snapshot(ctx); err != nil {
				b.Fatal(err)
			}
			b.Logf("setup: %d days × %d pageviews in %v", days, benchPerDay, time.Since(start).Round(time.Millisecond))

			p, err := New(e, &Options{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
			if err != nil {
				b.Fatal(err)
			}
			r := httprouter.New()
			p.Register(r)
			for _, c := range []struct {
				name, filters string
				days          int
			}{
				{"unfiltered", "", days},
				{"filters=2", "&f=is,device,Desktop&f=is,source,Google", days},
				{"filters=2/days=30", "&f=is,device,Desktop&f=is,source,Google", 30},
			} {
				b.Run(c.name, func(b *testing.B) {
					from := testNow.AddDate(0, 0, -c.days+1).Format("2006-01-02")
					url := fmt.Sprintf("/stats/bench.example?from=%s&to=%s%s", from, testNow.Format("2006-01-02"), c.filters)
					b.ReportAllocs()
					for b.Loop() {
						w := httptest.NewRecorder()
						r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, url, nil))
						if w.Code != http.StatusOK {
							b.Fatalf("status %d: %s", w.Code, w.Body)
						}
					}
				})
			}
		})
	}
}

var benchUAs = []string{
	chromeUA,
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:127.0) Gecko/20100101 Firefox/127.0",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Edg/126.0.0.0",
	"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/25.0 Chrome/121.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 OPR/111.0.0.0",
}

var benchLangs = []string{"en-US,en;q=0.9", "de-DE,de;q=0.9", "fr-FR,fr;q=0.8", "es-ES", "ja-JP", "pt-BR", "nl-NL", "it-IT"}
var benchRes = []string{"1920x1080", "1440x900", "390x844", "412x915", "2560x1440", "1366x768", "820x1180"}
var benchRefs = func() []string {
	refs := []string{"", "", "", "https://www.google.com/", "https://www.google.de/", "https://www.bing.com/", "https://duckduckgo.com/",
		"https://t.co/abc", "https://news.ycombinator.com/", "https://www.reddit.com/r/golang/", "https://l.facebook.com/"}
	for i := range 300 {
		refs = append(refs, fmt.Sprintf("https://blog%d.example.net/post", i))
	}
	return refs
}()

// trackYear tracks benchPerDay pageviews on each of days days up to
// testNow, with skewed (Zipf-like) pages and referrers.
func trackYear(b *testing.B, e *engine.Engine, days int) {
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := func(n int) int { // about Zipf: small indexes are frequent
		return int(float64(n) * rng.Float64() * rng.Float64() * rng.Float64())
	}
	ctx := context.Background()
	batch := make([]engine.Hit, 0, 1000)
	flush := func() {
		if _, err := e.Track(ctx, batch...); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	first := testNow.AddDate(0, 0, -days+1).Truncate(24 * time.Hour)
	for d := range days {
		dayStart := first.AddDate(0, 0, d)
		for i := range benchPerDay {
			v := rng.IntN(benchPerDay / 2) // about two pageviews a visitor
			ip := netip.AddrFrom4([4]byte{byte(1 + v%200), byte(v / 200), byte(v), byte(7 + d%11)})
			h := engine.Hit{
				Time:       dayStart.Add(time.Duration(i) * 24 * time.Hour / benchPerDay),
				URL:        fmt.Sprintf("https://bench.example/docs/page-%d?utm_campaign=c%d", zipf(2000), zipf(20)),
				Referrer:   benchRefs[zipf(len(benchRefs))],
				UserAgent:  benchUAs[v%len(benchUAs)],
				Language:   benchLangs[v%len(benchLangs)],
				Resolution: benchRes[v%len(benchRes)],
				IP:         ip,
			}
			if i%20 == 0 {
				h.Event = &engine.Event{Name: fmt.Sprintf("Event %d", zipf(10))}
			}
			batch = append(batch, h)
			if len(batch) == cap(batch) {
				flush()
			}
		}
	}
	flush()
}

package bench

import (
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mileusna/useragent"
	"github.com/phuslu/iploc"

	"github.com/webstats/webstats/engine"
)

var addrComparer = cmp.Comparer(func(a, b netip.Addr) bool { return a == b })

func first(g *Generator, n int) []engine.Hit {
	var hits []engine.Hit
	for h := range g.Hits() {
		if len(hits) == n {
			break
		}
		hits = append(hits, h)
	}
	return hits
}

func TestDeterminism(t *testing.T) {
	cfg := Config{Seed: 42, Sites: []Site{Small, Medium}, Days: 2}
	want := first(NewGenerator(cfg), 1000)
	got := first(NewGenerator(cfg), 1000)
	if len(want) != 1000 {
		t.Fatalf("got %d hits, want 1000", len(want))
	}
	if diff := cmp.Diff(want, got, addrComparer); diff != "" {
		t.Errorf("same seed: mismatch (-want +got):\n%s", diff)
	}
	cfg.Seed = 43
	other := first(NewGenerator(cfg), 1000)
	if cmp.Equal(want, other, addrComparer) {
		t.Errorf("seeds 42 and 43 give the same hits")
	}
}

// TestDay checks that Day gives the hits Next gives for that site and day.
func TestDay(t *testing.T) {
	cfg := Config{Seed: 7, Sites: []Site{Small, Medium}, Days: 2}
	g := NewGenerator(cfg)
	var fromNext [2][2][]engine.Hit
	for h := range g.Hits() {
		day := int(h.Time.Sub(g.cfg.Start) / (24 * time.Hour))
		site := 0
		if strings.HasPrefix(h.URL, "https://medium.example") {
			site = 1
		}
		fromNext[day][site] = append(fromNext[day][site], h)
	}
	for day := range 2 {
		for site := range 2 {
			want, got := fromNext[day][site], NewGenerator(cfg).Day(day, site)
			if len(want) != len(got) {
				t.Errorf("day %d site %d: Day gave %d hits, Next %d", day, site, len(got), len(want))
				continue
			}
			for i := range want {
				if diff := cmp.Diff(want[i], got[i], addrComparer); diff != "" {
					t.Errorf("day %d site %d hit %d: mismatch (-want +got):\n%s", day, site, i, diff)
					break
				}
			}
		}
	}
}

func TestTotalHits(t *testing.T) {
	for _, tc := range []struct {
		name string
		site Site
		days int
	}{
		{name: "small/1", site: Small, days: 1},
		{name: "small/30", site: Small, days: 30},
		{name: "medium/1", site: Medium, days: 1},
		{name: "medium/7", site: Medium, days: 7},
		{name: "large/30", site: Large, days: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Sites: []Site{tc.site}, Days: tc.days}
			want := float64(tc.site.PageviewsPerMonth) / 30 * float64(tc.days) * (1 + DefaultEventShare) / (1 - DefaultBotShare)
			got := cfg.TotalHits()
			if math.Abs(float64(got)-want) > 0.05*want {
				t.Errorf("TotalHits = %d, want %.0f ± 5%%", got, want)
			}
		})
	}
	cfg := Config{Seed: 3, Sites: []Site{Small, Medium}, Days: 3}
	n := 0
	for range NewGenerator(cfg).Hits() {
		n++
	}
	if want := cfg.TotalHits(); n != want {
		t.Errorf("generator gave %d hits, TotalHits = %d", n, want)
	}
}

func TestTimes(t *testing.T) {
	start := time.Date(2026, 3, 28, 17, 30, 0, 0, time.FixedZone("X", 3600))
	cfg := Config{Seed: 5, Sites: []Site{Small, Medium}, Start: start, Days: 3}
	day0 := time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)
	end := day0.AddDate(0, 0, 3)
	var prev time.Time
	for h := range NewGenerator(cfg).Hits() {
		if h.Time.Before(day0) || !h.Time.Before(end) {
			t.Fatalf("hit at %v, outside [%v, %v)", h.Time, day0, end)
		}
		if h.Time.Before(prev) {
			t.Fatalf("hit at %v after one at %v", h.Time, prev)
		}
		if h.Time.Location() != time.UTC {
			t.Fatalf("hit time %v is not in UTC", h.Time)
		}
		prev = h.Time
	}
}

// stream is 7 days of the medium site: about 258k hits.
type stream struct {
	g    *Generator
	hits []engine.Hit
	recs [][]rec // by day
}

var medium7 = func() func(t *testing.T) *stream {
	var s *stream
	return func(t *testing.T) *stream {
		t.Helper()
		if s == nil {
			g := NewGenerator(Config{Seed: 1, Sites: []Site{Medium}, Days: 7})
			s = &stream{g: g}
			for d := range 7 {
				r := g.sites[0].genDay(g.cfg, d, nil, new(scratch))
				s.recs = append(s.recs, r)
			}
			s.hits = append(s.hits, first(g, math.MaxInt)...)
		}
		return s
	}
}()

func isBot(h engine.Hit) bool { return !humanUA[h.UserAgent] }

var humanUA = func() map[string]bool {
	m := map[string]bool{}
	for _, u := range userAgents {
		m[u.s] = true
	}
	return m
}()

func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %.4f", name, got, want, tol)
	}
}

func TestShares(t *testing.T) {
	s := medium7(t)
	var botN, eventN, pvN int
	for _, h := range s.hits {
		switch {
		case isBot(h):
			botN++
			if h.Event != nil {
				t.Fatalf("bot hit with an event: %+v", h)
			}
		case h.Event != nil:
			eventN++
		default:
			pvN++
		}
		if !h.Live || h.IP == (netip.Addr{}) || !strings.HasPrefix(h.URL, "https://medium.example/") {
			t.Fatalf("bad hit %+v", h)
		}
		if !isBot(h) && (h.Language == "" || h.Resolution == "") {
			t.Fatalf("human hit without language or resolution: %+v", h)
		}
	}
	t.Logf("%d hits: %d pageviews, %d events, %d bot hits", len(s.hits), pvN, eventN, botN)
	within(t, "bot share", float64(botN)/float64(len(s.hits)), DefaultBotShare, 0.005)
	within(t, "events per pageview", float64(eventN)/float64(pvN), DefaultEventShare, 0.003)

	// Referrers of landing pageviews.
	var landings, direct, external, internal, campaign float64
	for _, rs := range s.recs {
		for _, r := range rs {
			if r.kind != kindPageview || !r.landing {
				continue
			}
			landings++
			switch {
			case r.ref == 0:
				direct++
			case r.ref&refInternal != 0:
				internal++
			default:
				external++
			}
			if strings.Contains(s.g.sites[0].urls[r.page], "utm_campaign=") {
				campaign++
			}
		}
	}
	within(t, "direct landings", direct/landings, 0.45, 0.01)
	within(t, "external landings", external/landings, 0.30, 0.01)
	within(t, "internal landings", internal/landings, 0.25, 0.01)
	within(t, "campaign landings", campaign/landings, 0.05, 0.005)
	within(t, "pageviews per visit", float64(pvN)/landings, 2.69, 0.1)
}

func TestUserAgents(t *testing.T) {
	// The table.
	seen := map[string]bool{}
	for _, u := range userAgents {
		if seen[u.s] {
			t.Errorf("duplicate user agent %q", u.s)
		}
		seen[u.s] = true
		ua := useragent.Parse(u.s)
		if ua.Name == "" || ua.OS == "" || ua.IsUnknown() {
			t.Errorf("%s: %q parses as %+v", u.family, u.s, ua)
		}
	}
	if len(userAgents) < 500 {
		t.Errorf("%d user agents in the table, want ≥ 500", len(userAgents))
	}

	// The stream: distinct user agents and family shares of human pageviews.
	s := medium7(t)
	family := map[string]string{}
	for _, u := range userAgents {
		family[u.s] = u.family
	}
	distinct := map[string]bool{}
	byFamily := map[string]float64{}
	var n float64
	for _, h := range s.hits {
		if isBot(h) {
			continue
		}
		distinct[h.UserAgent] = true
		byFamily[family[h.UserAgent]]++
		n++
	}
	if len(distinct) < 500 {
		t.Errorf("%d distinct user agents, want ≥ 500", len(distinct))
	}
	var total float64
	for _, f := range uaFamilies {
		total += f.share
	}
	for _, f := range uaFamilies[:6] {
		want := f.share / total
		within(t, f.name+" share", byFamily[f.name]/n, want, max(0.01, 0.15*want))
	}
	t.Logf("%d distinct user agents of %d in the table", len(distinct), len(userAgents))
}

func TestZipf(t *testing.T) {
	for _, tc := range []struct {
		name string
		site Site
	}{
		{name: "small", site: Small},
		{name: "medium", site: Medium},
		{name: "large", site: Large},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGenerator(Config{Seed: 9, Sites: []Site{tc.site}, Days: 2})
			for day := range 2 {
				counts := map[string]int{}
				for _, h := range g.Day(day, 0) {
					if h.Event == nil && !isBot(h) {
						counts[h.URL]++
					}
				}
				top := "https://" + tc.site.Domain + "/"
				for u, c := range counts {
					if c > counts[top] {
						t.Errorf("day %d: %s has %d pageviews, more than the top page %s (%d)", day, u, c, top, counts[top])
					}
				}
				if n, want := float64(len(counts)), float64(tc.site.PagesPerDay); math.Abs(n-want) > 0.3*want {
					t.Errorf("day %d: %.0f distinct pages, want %.0f ± 30%%", day, n, want)
				}
				t.Logf("day %d: %d distinct pages (Zipf s=%.2f)", day, len(counts), g.sites[0].zipfS)
			}
		})
	}
}

func TestDiurnal(t *testing.T) {
	var hours [24]float64
	for _, h := range medium7(t).hits {
		hours[h.Time.Hour()]++
	}
	peak, trough := 0, 0
	for h := range hours {
		if hours[h] > hours[peak] {
			peak = h
		}
		if hours[h] < hours[trough] {
			trough = h
		}
	}
	if hours[peak] < 3*hours[trough] {
		t.Errorf("peak hour %02d has %.0f hits, less than 3× the trough hour %02d (%.0f)", peak, hours[peak], trough, hours[trough])
	}
	if peak < 13 || peak > 17 || trough < 2 || trough > 6 {
		t.Errorf("peak at %02d:00, trough at %02d:00; want about 15:00 and 04:00", peak, trough)
	}
}

func TestVisitors(t *testing.T) {
	s := medium7(t)
	day := s.g.cfg.Start
	visitors := map[string]bool{}
	for _, h := range s.hits {
		if h.Time.Sub(day) < 24*time.Hour && !isBot(h) && h.Event == nil {
			visitors[h.IP.String()+h.UserAgent] = true
		}
	}
	want := float64(Medium.visitorsPerDay())
	within(t, "visitors on day 0 / VisitorsPerDay", float64(len(visitors))/want, 1, 0.1)
}

func TestCountryIPs(t *testing.T) {
	if len(countries) < 40 {
		t.Errorf("%d countries, want ≥ 40", len(countries))
	}
	// Every block, sampled.
	r := rng{1}
	for c, cn := range countries {
		for _, p := range append(append([]netip.Prefix{}, tables.v4[c]...), tables.v6[c]...) {
			for range 50 {
				if a := randomAddr(&r, p); iploc.IPCountry(a) != cn.cc || !p.Contains(a) {
					t.Errorf("%s (%s of %s) maps to %q", a, p, cn.cc, iploc.IPCountry(a))
				}
			}
		}
	}
	// The visitors of a site.
	g := NewGenerator(Config{Seed: 11, Sites: []Site{Medium}, Days: 1})
	var v6 int
	for _, v := range g.sites[0].visitors {
		if got := iploc.IPCountry(v.ip); got != countries[v.cc].cc {
			t.Errorf("visitor %s from %s maps to %q", v.ip, countries[v.cc].cc, got)
		}
		if v.ip.Is6() {
			v6++
		}
	}
	t.Logf("%d of %d visitors on IPv6", v6, len(g.sites[0].visitors))
}

func TestEvents(t *testing.T) {
	names := map[string]int{}
	for _, h := range medium7(t).hits {
		if h.Event == nil {
			continue
		}
		e := h.Event
		names[e.Name]++
		if e.Name != "Payment" && (e.Value != nil || e.Unit != "") {
			t.Errorf("event %+v has a value", e)
		}
	}
	for _, n := range []string{"Signup", "Download", "Payment"} {
		if names[n] == 0 {
			t.Errorf("no %s events", n)
		}
	}
}

// BenchmarkGenerator measures Next, day generation included.
func BenchmarkGenerator(b *testing.B) {
	for _, tc := range []struct {
		name string
		site Site
	}{
		{name: "site=small", site: Small},
		{name: "site=medium", site: Medium},
		{name: "site=large", site: Large},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := Config{Seed: 1, Sites: []Site{tc.site}}
			g := NewGenerator(cfg)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, ok := g.Next(); !ok {
					b.StopTimer()
					g = NewGenerator(cfg)
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hits/s")
		})
	}
}

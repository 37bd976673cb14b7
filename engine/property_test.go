package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/ua"
)

// refSite is a website of the reference model.
type refSite struct {
	id     uint32
	domain string
	loc    *time.Location
}

// reference recomputes every statistic from the list of hits by scanning it,
// the slow and obvious way. It shares only the user-agent parser and the geo
// database with the engine: URLs, referrers, visits and events are handled
// by the test's own code (refnorm_test.go), so a bug in the engine's
// normalisers or visit rule cannot hide in both.
type reference struct {
	period engine.SaltPeriod
	sites  map[uint32]refSite
	hits   []engine.Hit
}

type refVisitor struct {
	site   uint32
	period buckets.Date
	key    string
}

type refDay struct {
	site uint32
	date buckets.Date
}

// result is every statistic of every day: site → name → date → value → count.
type refStats map[uint32]map[string]map[buckets.Date]map[string]uint64

func (r *reference) periodStart(d buckets.Date) buckets.Date {
	switch r.period {
	case engine.SaltWeek:
		return d - buckets.Date((int(d.Weekday())+6)%7)
	case engine.SaltMonth:
		y, m, _ := d.Civil()
		return buckets.DateOf(y, m, 1)
	}
	return d
}

// compute returns the per-day statistics and, per site, the visitors seen
// each day (for unique visitors over ranges).
func (r *reference) compute() (refStats, map[refDay]map[refVisitor]bool) {
	stats := refStats{}
	seen := map[refDay]map[refVisitor]bool{}
	type visitState struct {
		last time.Time
		host string
	}
	visits := map[refVisitor]*visitState{}
	parser := ua.New(0)
	loc, _ := geo.Open("")
	add := func(site uint32, name string, d buckets.Date, value string) {
		if stats[site] == nil {
			stats[site] = map[string]map[buckets.Date]map[string]uint64{}
		}
		if stats[site][name] == nil {
			stats[site][name] = map[buckets.Date]map[string]uint64{}
		}
		if stats[site][name][d] == nil {
			stats[site][name][d] = map[string]uint64{}
		}
		stats[site][name][d][value]++
	}
	seenHour := map[string]bool{}
	for _, h := range r.hits {
		s := r.sites[h.Website]
		lt := h.Time.In(s.loc)
		d := buckets.DateFromTime(lt)
		hour := fmt.Sprintf("%02d", lt.Hour())
		key := h.Visitor
		if key == "" {
			key = h.IP.String() + "|" + h.UserAgent
		}
		v := refVisitor{s.id, r.periodStart(d), key}
		if h.Event != nil {
			row, _ := refEventRow(h.Event.Name, h.Event.Value, h.Event.Unit)
			add(s.id, "event", d, row)
			continue
		}
		page, campaign, _ := refPage(h.URL, refRules{})
		add(s.id, "pageviews", d, d.String())
		add(s.id, "pageviews_hours", d, hour)
		add(s.id, "page", d, page)
		refHost := refReferrerHost(h.Referrer)
		refSite := refSiteHost(refHost)
		external := refSite != "" && refSite != s.domain
		st := visits[v]
		if st == nil || h.Time.Sub(st.last) > 30*time.Minute || st.last.Sub(h.Time) > 30*time.Minute || (external && refSite != st.host) {
			if st == nil {
				st = &visitState{}
				visits[v] = st
			}
			st.host = ""
			ref := ""
			if external {
				st.host, ref = refSite, refHost
			}
			add(s.id, "landing_page", d, page)
			add(s.id, "referrer", d, ref)
			if campaign != "" {
				add(s.id, "campaign", d, campaign)
			}
		}
		if h.Time.After(st.last) {
			st.last = h.Time
		}
		dk := refDay{s.id, d}
		if seen[dk] == nil {
			seen[dk] = map[refVisitor]bool{}
		}
		if hk := fmt.Sprint(dk, v, hour); !seenHour[hk] {
			seenHour[hk] = true
			add(s.id, "visitors_hours", d, hour)
		}
		if seen[dk][v] {
			continue
		}
		seen[dk][v] = true
		add(s.id, "visitors", d, d.String())
		ag := parser.Parse(h.UserAgent)
		l := loc.Lookup(h.IP)
		for name, val := range map[string]string{"browser": ag.Browser, "os": ag.OS, "device": ag.Device,
			"resolution": refResolution(h.Resolution), "language": refLanguage(h.Language),
			"country": l.Country, "continent": l.Continent, "city": l.City} {
			add(s.id, name, d, val)
		}
	}
	return stats, seen
}

// rangeRows sums a statistic's daily rows over [from, to].
func (st refStats) rangeRows(site uint32, name string, from, to buckets.Date) map[string]uint64 {
	out := map[string]uint64{}
	for d, vals := range st[site][name] {
		if d < from || d > to {
			continue
		}
		for v, n := range vals {
			out[v] += n
		}
	}
	return out
}

// randomHits makes n hits, time-ordered with some jitter, that no rule drops.
func randomHits(rng *rand.Rand, sites []refSite, start time.Time, days, n int) []engine.Hit {
	pages := []string{"/", "/a", "/b?x=1", "/blog/post?utm_campaign=fall&utm_source=nl", "/shop?utm_campaign=sale", "/%C3%A9t%C3%A9", "/c#frag"}
	uas := []string{chromeWin, safariIOS, firefoxLin}
	ips := []string{"8.8.8.8", "1.1.1.1", "46.4.0.1", "133.242.0.1", "2a01:4f8::1", "200.147.0.1"}
	langs := []string{"en-US,en;q=0.9", "de-DE", "fr", "ja-JP"}
	res := []string{"1920x1080", "390x844", "", "bogus"}
	hits := make([]engine.Hit, 0, n)
	span := time.Duration(days) * 24 * time.Hour
	for i := range n {
		s := sites[rng.IntN(len(sites))]
		// Mostly increasing times, with bursts close together so that visits continue.
		t := start.Add(span * time.Duration(i) / time.Duration(n)).Add(time.Duration(rng.IntN(40)-20) * time.Minute)
		refs := []string{"", "", "https://www.google.com/search?q=1", "https://google.com/", "https://t.co/abc", "https://" + s.domain + "/a", "https://www." + s.domain + "/"}
		h := engine.Hit{
			Time:       t,
			Website:    s.id,
			URL:        "https://" + s.domain + pages[rng.IntN(len(pages))],
			Referrer:   refs[rng.IntN(len(refs))],
			UserAgent:  uas[rng.IntN(len(uas))],
			IP:         netip.MustParseAddr(ips[rng.IntN(len(ips))]),
			Language:   langs[rng.IntN(len(langs))],
			Resolution: res[rng.IntN(len(res))],
		}
		if rng.IntN(5) == 0 {
			h.Visitor = fmt.Sprint("v", rng.IntN(4))
		}
		if rng.IntN(10) == 0 {
			h.Event = &engine.Event{Name: []string{"Signup", "Pay:ment"}[rng.IntN(2)], Value: []byte([]string{"5", "0", `"7.50"`}[rng.IntN(3)]), Unit: "USD"}
		}
		hits = append(hits, h)
	}
	return hits
}

// checkAgainstReference compares every statistic and the totals of e over
// several ranges with the reference.
func checkAgainstReference(t *testing.T, e *engine.Engine, ref *reference, first, last buckets.Date) {
	t.Helper()
	stats, seen := ref.compute()
	ctx := context.Background()
	ranges := [][2]buckets.Date{{first, last}, {first, first}, {first + 1, last - 1}, {last, last}, {first - 3, first + 2}}
	for id := range ref.sites {
		for _, rg := range ranges {
			for _, name := range engine.StatNames() {
				got := rows(t, e, id, name, rg[0].String(), rg[1].String())
				want := stats.rangeRows(id, name, rg[0], rg[1])
				if name == "pageviews" || name == "visitors" {
					// Daily rows are keyed by their date already.
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("site %d %s %v..%v mismatch (-want +got):\n%s", id, name, rg[0], rg[1], diff)
				}
			}
			// Totals.
			var want engine.Totals
			uniq := map[refVisitor]bool{}
			for dk, vs := range seen {
				if dk.site == id && dk.date >= rg[0] && dk.date <= rg[1] {
					for v := range vs {
						uniq[v] = true
					}
				}
			}
			want.Visitors = uint64(len(uniq))
			for _, n := range stats.rangeRows(id, "pageviews", rg[0], rg[1]) {
				want.Pageviews += n
			}
			for _, n := range stats.rangeRows(id, "landing_page", rg[0], rg[1]) {
				want.Visits += n
			}
			for _, n := range stats.rangeRows(id, "event", rg[0], rg[1]) {
				want.Events += n
			}
			got, err := e.Unscoped().Totals(ctx, id, rg[0], rg[1])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("site %d totals %v..%v mismatch (-want +got):\n%s", id, rg[0], rg[1], diff)
			}
		}
	}
}

// propertySites creates three websites in three time zones.
func propertySites(t *testing.T, e *engine.Engine) []refSite {
	var sites []refSite
	for _, s := range []struct{ domain, tz string }{{"alpha.example", "UTC"}, {"beta.example", "Europe/Berlin"}, {"gamma.example", "America/New_York"}} {
		w := newSite(t, e, s.domain, func(in *engine.WebsiteInput) { in.Timezone = str(s.tz) })
		l, _ := time.LoadLocation(s.tz)
		sites = append(sites, refSite{id: w.ID, domain: w.Domain, loc: l})
	}
	return sites
}

func TestPropertyAgainstReference(t *testing.T) {
	for _, period := range []engine.SaltPeriod{engine.SaltDay, engine.SaltWeek, engine.SaltMonth} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("salt=%v/seed=%d", period, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 42))
				start := at("2026-10-28T00:00:00Z")
				c := newClock("2026-11-10T00:00:00Z")
				e, _ := openMem(t, c, func(o *engine.Options) { o.SaltPeriod = period })
				sites := propertySites(t, e)
				hits := randomHits(rng, sites, start, 8, 3000)
				for chunk := range slices.Chunk(hits, 97) {
					res := track(t, e, chunk...)
					if res.Accepted != len(chunk) {
						t.Fatalf("accepted %d of %d: %v", res.Accepted, len(chunk), res.Reasons)
					}
				}
				ref := &reference{period: period, sites: map[uint32]refSite{}, hits: hits}
				for _, s := range sites {
					ref.sites[s.id] = s
				}
				checkAgainstReference(t, e, ref, buckets.DateFromTime(start), buckets.DateFromTime(start)+8)
			})
		}
	}
}

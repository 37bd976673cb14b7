package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/record"
)

// BenchmarkApply measures steps 3–5 of the pipeline alone (visitor id,
// visit, day bucket) on pre-enriched records of a large site's day: 5,000
// Zipf pages, 100k visitors of ~3.3 pageviews, 30% external referrers. The
// target is 2,000,000 hits/s on one core.
func BenchmarkApply(b *testing.B) {
	recs := syntheticRecords(1<<20, 100_000, 5_000)
	e := &Engine{opts: Options{SaltPeriod: SaltDay, MaxValues: DefaultMaxValues}}
	b.ReportAllocs()
	b.ResetTimer()
	var st *siteState
	var p *period
	for i := 0; i < b.N; i++ {
		if i%len(recs) == 0 {
			b.StopTimer()
			st = newSiteState(1)
			p = new(period)
			b.StartTimer()
		}
		r := &recs[i%len(recs)]
		e.applyLocked(st, r, "large.example", st.days[r.Date], p)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "hits/s")
}

// syntheticRecords makes n enriched pageview records of one day.
func syntheticRecords(n, visitors, pages int) []record.Hit {
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(pages-1))
	pageNames := make([]string, pages)
	for i := range pageNames {
		pageNames[i] = fmt.Sprintf("/blog/post-%d?ref=x", i)
	}
	refs := []string{"", "", "", "", "", "", "www.google.com", "t.co", "www.bing.com", "news.ycombinator.com"}
	browsers := []string{"Chrome", "Safari", "Firefox", "Edge", "Samsung Internet"}
	oses := []string{"Windows", "iOS", "Android", "macOS", "Linux"}
	countries := []string{"US:United States", "DE:Germany", "FR:France", "JP:Japan", "BR:Brazil"}
	day := buckets.DateOf(2026, 11, 21)
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC).UnixMilli()
	recs := make([]record.Hit, n)
	for i := range recs {
		v := rng.IntN(visitors)
		ms := start + int64(i)*86_400_000/int64(n)
		recs[i] = record.Hit{
			Website: 1, Date: day, Period: day, Hour: uint8(ms / 3_600_000 % 24), Ms: ms,
			Hash:    uint64(v)*0x9E3779B97F4A7C15 + 1,
			Page:    pageNames[zipf.Uint64()],
			RefHost: refs[rng.IntN(len(refs))],
			Browser: browsers[v%len(browsers)], OS: oses[v%len(oses)], Device: "desktop",
			Resolution: "1920x1080", Language: "en", Country: countries[v%len(countries)],
			Continent: "NA:North America",
		}
	}
	return recs
}

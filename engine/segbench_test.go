package engine_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/snapshot"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
)

// Benchmarks of the segments store and Owner.Query (issue #12): 30 days of
// the medium site (about 1M pageviews, built once per process through
// Track), every day closed and resident. WEBSTATS_SEG_DAYS sets the days
// (365 for the year target; the build then takes a few minutes and a few
// GiB) and WEBSTATS_SEG_SITE=large the large site:
//
//	go test ./engine -run '^$' -bench Segments -benchtime 20x -count 3
//	WEBSTATS_SEG_DAYS=365 go test ./engine -run '^$' -bench Segments -benchtime 5x -count 3 -timeout 60m
//	WEBSTATS_SEG_SITE=large go test ./engine -run '^$' -bench Segments -benchtime 5x -count 3 -timeout 60m

type segStore struct {
	e     *engine.Engine
	site  uint32
	hits  int
	first engine.Date
	last  engine.Date
	build time.Duration
}

var (
	segStores  = map[string]*segStore{}
	segStoreMu sync.Mutex
)

func segBenchFixture(b *testing.B, site bench.Site, days int) *segStore {
	segStoreMu.Lock()
	defer segStoreMu.Unlock()
	key := fmt.Sprintf("%s/%d", site.Domain, days)
	if s, ok := segStores[key]; ok {
		return s
	}
	t0 := time.Now()
	start := bench.DefaultStart
	now := start
	e, err := engine.Open(&engine.Options{NoSync: true, SnapshotEvery: -1, QueryCache: -1, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	s := &segStore{e: e, site: benchSites(b, e, site.Domain)[0], first: engine.DateFromTime(start), last: engine.DateFromTime(start) + engine.Date(days) - 1}
	cfg := bench.Config{Seed: 5, Sites: []bench.Site{site}, Days: days}
	batch := make([]engine.Hit, 0, 4096)
	day := 0
	flush := func() {
		res, err := e.Track(benchCtx, batch...)
		if err != nil {
			b.Fatal(err)
		}
		s.hits += res.Accepted
		batch = batch[:0]
	}
	for h := range bench.NewGenerator(cfg).Hits() {
		if d := int(h.Time.Sub(start) / (24 * time.Hour)); d != day {
			flush()
			day = d
			now = start.AddDate(0, 0, d)
			if err := e.Snapshot(benchCtx); err != nil { // closes and freezes the day before
				b.Fatal(err)
			}
		}
		if batch = append(batch, h); len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	now = start.AddDate(0, 0, days)
	if err := e.Snapshot(benchCtx); err != nil {
		b.Fatal(err)
	}
	s.build = time.Since(t0)
	segStores[key] = s
	return s
}

func BenchmarkSegments(b *testing.B) {
	days := 30
	if v, err := strconv.Atoi(os.Getenv("WEBSTATS_SEG_DAYS")); err == nil && v > 0 {
		days = v
	}
	queries := []struct{ name, body string }{
		{"filtered", `"metrics":["visitors","visits","bounce_rate"],"dimensions":["visit:source"],"filters":[["is","visit:country",["US"]],["contains","event:page",["/p"]]],"pagination":{"limit":10}`},
		{"filtered-visit", `"metrics":["visitors","pageviews"],"dimensions":["event:page"],"filters":[["is","visit:device",["Mobile"]]],"pagination":{"limit":10}`},
		{"unfiltered-source", `"metrics":["visitors","visits","bounce_rate","visit_duration"],"dimensions":["visit:source"],"pagination":{"limit":10}`},
		{"aggregate-session", `"metrics":["visitors","visits","pageviews","bounce_rate","visit_duration","views_per_visit"]`},
		{"timeseries", `"metrics":["visitors","pageviews"],"dimensions":["time:day"],"filters":[["is","visit:country",["US"]]]`},
	}
	site, name := bench.Medium, "medium"
	if os.Getenv("WEBSTATS_SEG_SITE") == "large" {
		site, name = bench.Large, "large"
	}
	{
		s := segBenchFixture(b, site, days)
		for _, q := range queries {
			for _, cold := range []bool{false, true} {
				if cold && !strings.Contains(q.body, `"filters"`) {
					continue
				}
				sub := fmt.Sprintf("%s/days=%d/%s", name, days, q.name)
				if cold {
					// Every run evaluates its filters: nothing kept from
					// the last run's (segments.Memo's filter memo), as for a
					// filter just chosen. What the memo keeps of the day
					// itself (its time span, its values' ids in the
					// engine's table) is used, as after any query.
					sub += "/cold"
				}
				b.Run(sub, func(b *testing.B) {
					defer engine.SetFilterMemo(engine.SetFilterMemo(!cold))
					body := fmt.Sprintf(`{"site_id":%q,"date_range":[%q,%q],%s}`, site.Domain, s.first.String(), s.last.String(), q.body)
					eq, err := engine.ParseQuery([]byte(body))
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.e.Unscoped().Query(benchCtx, s.site, eq); err != nil {
						b.Fatal(err)
					}
					lat := make([]time.Duration, 0, b.N)
					b.ResetTimer()
					for b.Loop() {
						t0 := time.Now()
						if _, err := s.e.Unscoped().Query(benchCtx, s.site, eq); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(t0))
					}
					b.StopTimer()
					b.ReportMetric(float64(s.hits), "hits")
					b.ReportMetric(float64(s.e.Metrics().ResidentBytes)/float64(s.hits), "resident-B/hit")
					percentiles(b, lat)
				})
			}
		}
	}
}

// BenchmarkSegmentsDisk reports the bytes per hit of the segments store
// as the store holds them (the segments part of each day value: columns,
// zstd-compressed), beside the day buckets' part, for 30 days of the
// medium site. The value layout is persist.go's day envelope:
// 0xd5, uvarint length of the buckets day, the buckets day, the segments.
//
//	go test ./engine -run '^$' -bench SegmentsDisk -benchtime 1x -count 3
func BenchmarkSegmentsDisk(b *testing.B) {
	for b.Loop() {
		fs := snapshot.NewMemFS()
		start := bench.DefaultStart
		now := start
		e, err := engine.Open(&engine.Options{FS: fs, Dir: "disk", NoSync: true, SnapshotEvery: -1, Now: func() time.Time { return now }})
		if err != nil {
			b.Fatal(err)
		}
		site := benchSites(b, e, bench.Medium.Domain)[0]
		hits := 0
		batch := make([]engine.Hit, 0, 4096)
		flush := func() {
			res, err := e.Track(benchCtx, batch...)
			if err != nil {
				b.Fatal(err)
			}
			hits += res.Accepted
			batch = batch[:0]
		}
		const days = 30
		for h := range bench.NewGenerator(bench.Config{Seed: 5, Sites: []bench.Site{bench.Medium}, Days: days}).Hits() {
			if batch = append(batch, h); len(batch) == cap(batch) {
				flush()
			}
		}
		flush()
		now = start.AddDate(0, 0, days+1) // every day closed, compacted
		if err := e.Snapshot(benchCtx); err != nil {
			b.Fatal(err)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		st, err := snapshot.Open(&snapshot.Options{FS: fs, Dir: "disk"})
		if err != nil {
			b.Fatal(err)
		}
		var segBytes, dayBytes int
		err = st.Days(site, int32(engine.DateFromTime(start))-1, int32(engine.DateFromTime(now)), func(_ int32, v []byte) error {
			if len(v) == 0 || v[0] != 0xd5 {
				return fmt.Errorf("a day value without segments")
			}
			n, k := binary.Uvarint(v[1:])
			dayBytes += int(n)
			segBytes += len(v) - 1 - k - int(n)
			return nil
		})
		st.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(segBytes)/float64(hits), "seg-B/hit")
		b.ReportMetric(float64(dayBytes)/float64(hits), "buckets-B/hit")
		b.ReportMetric(float64(hits), "hits")
	}
}

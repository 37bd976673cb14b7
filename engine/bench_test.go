//go:build unix

// (unix: getrusage measures the CPU time of a run, which on a shared
// machine says more about "one core" than the wall-clock time does.)

package engine_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/netip"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// Benchmarks of whole-engine costs against the targets of SPEC §9 (the
// medium site unless named). Workloads come from package bench. Setup-heavy
// benchmarks build their store once per process and time only what they
// name; run them with -benchtime=1x (or a few x) and -count 3:
//
//	go test ./engine -run '^$' -bench 'Apply|Track' -count 3
//	go test ./engine -run '^$' -bench 'Stat|Restart' -benchtime 200x -count 3
//	go test ./engine -run '^$' -bench Memory -benchtime 1x -count 3 -timeout 30m
//
// Custom metrics: hits/s (throughput), p50-ms/p99-ms/p99.9-ms (latency
// percentiles of single operations), bytes/hit (memory, disk).

var benchCtx = context.Background()

// benchOpen opens an engine for a benchmark with a clock fixed at now.
func benchOpen(b *testing.B, o engine.Options, now time.Time) *engine.Engine {
	b.Helper()
	o.Now = func() time.Time { return now }
	if o.SnapshotEvery == 0 {
		o.SnapshotEvery = -1
	}
	e, err := engine.Open(&o)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// benchSites creates an account and a website per domain.
func benchSites(b *testing.B, e *engine.Engine, domains ...string) []uint32 {
	b.Helper()
	acc, _, err := engine.NewTestAccount()
	if err != nil {
		b.Fatal(err)
	}
	var ids []uint32
	for _, d := range domains {
		w, err := e.Owner(acc.ID).CreateWebsite(benchCtx, engine.WebsiteInput{Domain: &d})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	return ids
}

// benchStream is a pre-generated slice of a workload, so that generating it
// is not timed.
type benchStream struct {
	hits []engine.Hit
	end  time.Time // after the last hit
}

var (
	mediumOnce   sync.Once
	mediumStream benchStream
)

// mediumHits returns 3 days of the medium site (about 110k hits: ≥ 500 user
// agents, Zipf pages, about 30% of visits from external referrers, 7% bots,
// 3% events).
func mediumHits() benchStream {
	mediumOnce.Do(func() {
		cfg := bench.Config{Seed: 1, Sites: []bench.Site{bench.Medium}, Days: 3}
		for h := range bench.NewGenerator(cfg).Hits() {
			mediumStream.hits = append(mediumStream.hits, h)
		}
		mediumStream.end = bench.DefaultStart.AddDate(0, 0, cfg.Days)
	})
	return mediumStream
}

// reportStreamShape reports what the stream is made of: distinct user
// agents and the share of hits with an external referrer.
func reportStreamShape(b *testing.B, hits []engine.Hit) {
	uas := make(map[string]bool)
	ext := 0
	for _, h := range hits {
		uas[h.UserAgent] = true
		if h.Referrer != "" && !sameSite(h.Referrer, h.URL) {
			ext++
		}
	}
	b.ReportMetric(float64(len(uas)), "UAs")
	b.ReportMetric(100*float64(ext)/float64(len(hits)), "%ext-ref")
}

func sameSite(ref, url string) bool {
	host := func(u string) string {
		if i := indexOf(u, "://"); i >= 0 {
			u = u[i+3:]
		}
		for i := 0; i < len(u); i++ {
			if u[i] == '/' || u[i] == '?' || u[i] == '#' {
				return u[:i]
			}
		}
		return u
	}
	return host(ref) == host(url)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// cpuTime is the CPU time (user + system) the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// percentiles reports the p50, p99 and p99.9 of lat in milliseconds.
func percentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / 1e6
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(ms(0.999), "p99.9-ms")
}

// BenchmarkTrack measures Track, one hit per call, on a real directory:
//
//   - pipeline: the whole pipeline (drops, enrichment, visitor ids, visits,
//     day buckets, the log write) with NoSync, one goroutine, on the medium
//     site's traffic. Target ≥ 200,000 hits/s on one core.
//   - durable/writers=64: sync on (each Track returns once its hit is
//     fsynced; group commit), 64 goroutines. Target ≥ 100,000 hits/s.
//
// Background snapshots are off: their cost is measured by the snapshot
// package and BenchmarkMemory.
func BenchmarkTrack(b *testing.B) {
	s := mediumHits()
	b.Run("pipeline", func(b *testing.B) {
		e := benchOpen(b, engine.Options{Dir: b.TempDir(), NoSync: true}, s.end)
		defer e.Close()
		benchSites(b, e, bench.Medium.Domain)
		reportStreamShape(b, s.hits)
		b.ResetTimer()
		start, cpu := time.Now(), cpuTime()
		for i := range b.N {
			if _, err := e.Track(benchCtx, s.hits[i%len(s.hits)]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "hits/s")
		b.ReportMetric(float64(b.N)/(cpuTime()-cpu).Seconds(), "hits/cpu-s")
	})
	b.Run("durable/writers=64", func(b *testing.B) {
		const writers = 64
		e := benchOpen(b, engine.Options{Dir: b.TempDir()}, s.end)
		defer e.Close()
		benchSites(b, e, bench.Medium.Domain)
		var next atomic.Int64
		lat := make([][]time.Duration, writers)
		var wg sync.WaitGroup
		b.ResetTimer()
		start, cpu := time.Now(), cpuTime()
		for w := range writers {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(b.N) {
						return
					}
					t0 := time.Now()
					if _, err := e.Track(benchCtx, s.hits[int(i)%len(s.hits)]); err != nil {
						b.Error(err)
						return
					}
					lat[w] = append(lat[w], time.Since(t0))
				}
			})
		}
		wg.Wait()
		elapsed, cpuUsed := time.Since(start), cpuTime()-cpu
		b.StopTimer()
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "hits/s")
		b.ReportMetric(float64(b.N)/cpuUsed.Seconds(), "hits/cpu-s")
		percentiles(b, slices.Concat(lat...))
	})
}

// BenchmarkReplay measures recovery: it times engine.Open on a store whose
// log holds N hits and no snapshot, so Open replays (reads from Pebble,
// decodes and applies) all of them, single-threaded. The store is a backup
// of an engine that tracked 10 days of the medium site with NoSync, on an
// in-memory file system. Applying alone is BenchmarkApply (package engine).
func BenchmarkReplay(b *testing.B) {
	mfs := snapshot.NewMemFS()
	cfg := bench.Config{Seed: 2, Sites: []bench.Site{bench.Medium}, Days: 10}
	end := bench.DefaultStart.AddDate(0, 0, cfg.Days)
	src := benchOpen(b, engine.Options{FS: mfs, Dir: "src", NoSync: true}, end)
	benchSites(b, src, bench.Medium.Domain)
	hits := make([]engine.Hit, 0, 1024)
	flush := func() {
		if _, err := src.Track(benchCtx, hits...); err != nil {
			b.Fatal(err)
		}
		hits = hits[:0]
	}
	for h := range bench.NewGenerator(cfg).Hits() {
		if hits = append(hits, h); len(hits) == cap(hits) {
			flush()
		}
	}
	flush()
	applied := src.Metrics().Tracked
	b.ResetTimer()
	var total, cpuUsed time.Duration
	for i := range b.N {
		b.StopTimer()
		dir := fmt.Sprintf("replay-%d", i)
		if err := src.Backup(benchCtx, dir); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		b.StartTimer()
		t0, cpu := time.Now(), cpuTime()
		e, err := engine.Open(&engine.Options{FS: mfs, Dir: dir, SnapshotEvery: -1, NoSync: true, Now: func() time.Time { return end }})
		total += time.Since(t0)
		cpuUsed += cpuTime() - cpu
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		e.Close()
		mfs.RemoveAll(dir)
		b.StartTimer()
	}
	b.StopTimer()
	src.Close()
	b.ReportMetric(float64(applied), "hits")
	b.ReportMetric(float64(applied)*float64(b.N)/total.Seconds(), "hits/s")
	b.ReportMetric(float64(applied)*float64(b.N)/cpuUsed.Seconds(), "hits/cpu-s")
}

// yearStore is a year of a site shaped like the large one where a query
// can tell: about 5,000 distinct pages a day (from a vocabulary of 20,000),
// but 12,000 pageviews and 4,000 visitors a day instead of 333k and 100k, so
// that it builds in reasonable time (4.4M hits). Every day is closed,
// snapshotted and compacted. restartDir is a backup taken before the last
// day's hits were snapshotted: its log holds that day (12,000 hits).
type yearStore struct {
	fs         snapshot.FS
	e          *engine.Engine
	site       uint32
	first      buckets.Date
	last       buckets.Date
	restartDir string
	tail       uint64 // hits in restartDir's log
	hits       uint64
	build      time.Duration
}

var (
	yearOnce sync.Once
	year     *yearStore
)

const yearDays = 365

func yearFixture(b *testing.B) *yearStore {
	yearOnce.Do(func() {
		t0 := time.Now()
		site := bench.Site{Domain: bench.Large.Domain, PageviewsPerMonth: 12_000 * 30, PagesPerDay: bench.Large.PagesPerDay, VisitorsPerDay: 4_000}
		cfg := bench.Config{Seed: 3, Sites: []bench.Site{site}, Days: yearDays, BotShare: -1, EventShare: -1}
		start := bench.DefaultStart
		now := start
		y := &yearStore{fs: snapshot.NewMemFS(), first: buckets.DateFromTime(start), last: buckets.DateFromTime(start) + yearDays - 1}
		e, err := engine.Open(&engine.Options{FS: y.fs, Dir: "year", NoSync: true, SnapshotEvery: -1, Now: func() time.Time { return now }})
		if err != nil {
			b.Fatal(err)
		}
		y.e = e
		y.site = benchSites(b, e, site.Domain)[0]
		g := bench.NewGenerator(cfg)
		batch := make([]engine.Hit, 0, 1024)
		day := 0
		flush := func() {
			res, err := e.Track(benchCtx, batch...)
			if err != nil {
				b.Fatal(err)
			}
			y.hits += uint64(res.Accepted)
			if day == yearDays-1 {
				y.tail += uint64(res.Accepted)
			}
			batch = batch[:0]
		}
		for h := range g.Hits() {
			if d := int(h.Time.Sub(start) / (24 * time.Hour)); d != day {
				flush()
				day = d
				now = start.AddDate(0, 0, d) // the previous day is now closed
				if err := e.Snapshot(benchCtx); err != nil {
					b.Fatal(err)
				}
			}
			if batch = append(batch, h); len(batch) == cap(batch) {
				flush()
			}
		}
		flush()
		y.restartDir = "restart"
		if err := e.Backup(benchCtx, y.restartDir); err != nil {
			b.Fatal(err)
		}
		now = start.AddDate(0, 0, yearDays) // every day closed
		if err := e.Snapshot(benchCtx); err != nil {
			b.Fatal(err)
		}
		y.build = time.Since(t0)
		year = y
	})
	if year == nil {
		b.Fatal("year fixture failed")
	}
	return year
}

// BenchmarkStat measures one query (the top 10 rows, by count) over the
// last 30 or 365 days of the year fixture, every day closed and compacted
// and resident. Targets: ≤ 2 ms over 30 days for any statistic, ≤ 10 ms
// over 365 days for page (read as p99.9).
func BenchmarkStat(b *testing.B) {
	y := yearFixture(b)
	for _, bc := range []struct {
		days int
		name string
	}{
		{30, "page"}, {30, "referrer"}, {30, "browser"}, {30, "country"},
		{30, "landing_page"}, {30, "visitors"}, {30, "visitors_hours"},
		{365, "page"},
	} {
		b.Run(fmt.Sprintf("days=%d/name=%s", bc.days, bc.name), func(b *testing.B) {
			q := engine.StatQuery{Website: y.site, Name: bc.name, From: y.last - buckets.Date(bc.days) + 1, To: y.last}
			p, err := y.e.Unscoped().Stat(benchCtx, q)
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				if _, err := y.e.Unscoped().Stat(benchCtx, q); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			b.ReportMetric(float64(p.Total), "rows")
			percentiles(b, lat)
		})
	}
}

// BenchmarkRestart measures engine.Open on a copy of the year fixture as a
// crash left it: 365 snapshotted days (5,000 pages a day, 20,000 distinct
// strings) and a log tail of the last day's 12,000 hits to replay. Days are
// read on demand, so Open reads the registry, the strings, the visitor state
// and the site meta, and replays the tail.
func BenchmarkRestart(b *testing.B) {
	y := yearFixture(b)
	b.ResetTimer()
	var total time.Duration
	for i := range b.N {
		b.StopTimer()
		dir := fmt.Sprintf("restart-%d", i)
		s, err := snapshot.Open(&snapshot.Options{FS: y.fs, Dir: y.restartDir, NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Backup(benchCtx, dir); err != nil {
			b.Fatal(err)
		}
		s.Close()
		b.StartTimer()
		t0 := time.Now()
		e, err := engine.Open(&engine.Options{FS: y.fs, Dir: dir, SnapshotEvery: -1, NoSync: true})
		total += time.Since(t0)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		e.Close()
		y.fs.RemoveAll(dir)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/open")
	b.ReportMetric(float64(y.tail), "replayed")
	b.ReportMetric(float64(y.hits), "hits")
}

// BenchmarkMemory tracks memoryDays days of the large site (333k pageviews,
// 5,000 pages and 100k visitors a day, plus 7% bots, which are dropped, and
// 3% events) on a real directory with NoSync, snapshotting at each day's
// end as the background loop would, then reports:
//
//   - heap-bytes/hit: Go heap in use after GC, less the heap before the
//     engine opened, per counted hit (target ≤ 8); process-wide tables
//     loaded on first use (the geo database) are loaded before the baseline;
//   - disk-bytes/hit: the data directory's size after Close (target ≤ 4);
//   - compacted-disk-bytes/hit: the same after a full Pebble compaction
//     (snapshot.Store.Compact, which the engine does not run itself).
//
// The month is scaled to memoryDays days to stay within about a minute of
// setup on a 2-core machine; per-hit costs fall as days are added (the
// strings table and the open salt periods are fixed costs), so a full month
// can only do better.
func BenchmarkMemory(b *testing.B) {
	for range b.N {
		benchMemory(b)
	}
}

const memoryDays = 10

func benchMemory(b *testing.B) {
	b.StopTimer()
	dir := b.TempDir()
	cfg := bench.Config{Seed: 4, Sites: []bench.Site{bench.Large}, Days: memoryDays}
	start := bench.DefaultStart
	now := start
	benchWarmGeo(b)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	e, err := engine.Open(&engine.Options{Dir: dir, NoSync: true, SnapshotEvery: -1, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	benchSites(b, e, bench.Large.Domain)
	g := bench.NewGenerator(cfg)
	batch := make([]engine.Hit, 0, 1024)
	var counted uint64
	flush := func() {
		res, err := e.Track(benchCtx, batch...)
		if err != nil {
			b.Fatal(err)
		}
		counted += uint64(res.Accepted)
		batch = batch[:0]
	}
	day := 0
	t0 := time.Now()
	b.StartTimer()
	for h := range g.Hits() {
		if d := int(h.Time.Sub(start) / (24 * time.Hour)); d != day {
			flush()
			day = d
			now = start.AddDate(0, 0, d)
			if err := e.Snapshot(benchCtx); err != nil {
				b.Fatal(err)
			}
		}
		if batch = append(batch, h); len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	now = start.AddDate(0, 0, memoryDays)
	if err := e.Snapshot(benchCtx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	elapsed := time.Since(t0)
	g, batch = nil, nil
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	resident := e.Metrics().ResidentBytes
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	runtime.KeepAlive(e)
	disk := dirSize(b, dir)
	s, err := snapshot.Open(&snapshot.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Compact(); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	compacted := dirSize(b, dir)
	n := float64(counted)
	b.ReportMetric(n, "hits")
	b.ReportMetric(n/elapsed.Seconds(), "hits/s")
	b.ReportMetric((float64(after.HeapInuse)-float64(before.HeapInuse))/n, "heap-bytes/hit")
	b.ReportMetric(float64(resident)/n, "resident-bytes/hit")
	b.ReportMetric(float64(disk)/n, "disk-bytes/hit")
	b.ReportMetric(float64(compacted)/n, "compacted-disk-bytes/hit")
}

// benchWarmGeo tracks one hit on a throwaway engine, so that the process-wide
// tables loaded on first use (the embedded geo databases for IPv4 and IPv6) are in
// the heap before BenchmarkMemory's baseline: they are a fixed cost, not a
// cost per hit.
func benchWarmGeo(b *testing.B) {
	e := benchOpen(b, engine.Options{}, bench.DefaultStart)
	defer e.Close()
	site := benchSites(b, e, "warm.example")[0]
	for _, ip := range []string{"81.2.69.160", "2a00:1450:4001::1"} {
		if _, err := e.Track(benchCtx, engine.Hit{Website: site, URL: "/", UserAgent: crashUA, IP: netip.MustParseAddr(ip)}); err != nil {
			b.Fatal(err)
		}
	}
}

// dirSize is the total size of the regular files under dir.
func dirSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkFirstQuery measures issue #16's "first query of each statistic
// over 365 days after a restart" in the engine, without HTTP. The store is a
// year of about a million hits (200 pages a day) that an engine tracked and
// then closed, so its final snapshot holds every day and the log is empty.
// Each run opens a copy, then asks each of the 17 statistics once over the
// year: the first query reads the year from the store. It reports the Open,
// the first query (the one that reads), and the slowest of the 17.
//
//	go test ./engine -run '^$' -bench '^BenchmarkFirstQuery$' -benchtime 5x -count 3
func BenchmarkFirstQuery(b *testing.B) {
	mfs := snapshot.NewMemFS()
	site := bench.Site{Domain: "restart.example", PageviewsPerMonth: 80_000, PagesPerDay: 200}
	cfg := bench.Config{Seed: 16, Sites: []bench.Site{site}, Days: 365}
	end := bench.DefaultStart.AddDate(0, 0, cfg.Days+1)
	src := benchOpen(b, engine.Options{FS: mfs, Dir: "src", NoSync: true}, end)
	id := benchSites(b, src, site.Domain)[0]
	hits := make([]engine.Hit, 0, 1024)
	var n int
	flush := func() {
		res, err := src.Track(benchCtx, hits...)
		if err != nil {
			b.Fatal(err)
		}
		n += res.Accepted
		hits = hits[:0]
	}
	for h := range bench.NewGenerator(cfg).Hits() {
		if hits = append(hits, h); len(hits) == cap(hits) {
			flush()
		}
	}
	flush()
	if err := src.Close(); err != nil {
		b.Fatal(err)
	}
	from := buckets.DateFromTime(bench.DefaultStart)
	to := from + 364
	var open, first, slowest []time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		dir := fmt.Sprintf("copy-%d", i)
		s, err := snapshot.Open(&snapshot.Options{FS: mfs, Dir: "src", NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Backup(benchCtx, dir); err != nil {
			b.Fatal(err)
		}
		s.Close()
		runtime.GC()
		b.StartTimer()
		t0 := time.Now()
		e, err := engine.Open(&engine.Options{FS: mfs, Dir: dir, SnapshotEvery: -1, NoSync: true, Now: func() time.Time { return end }})
		if err != nil {
			b.Fatal(err)
		}
		open = append(open, time.Since(t0))
		var most time.Duration
		for j, name := range engine.StatNames() {
			t0 := time.Now()
			if _, err := e.Unscoped().Stat(benchCtx, engine.StatQuery{Website: id, Name: name, From: from, To: to}); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			if j == 0 {
				first = append(first, d)
			}
			most = max(most, d)
		}
		slowest = append(slowest, most)
		b.StopTimer()
		e.Close()
		mfs.RemoveAll(dir)
		b.StartTimer()
	}
	med := func(xs []time.Duration) float64 {
		slices.Sort(xs)
		return float64(xs[len(xs)/2].Microseconds()) / 1000
	}
	b.ReportMetric(float64(n), "hits")
	b.ReportMetric(med(open), "open-ms")
	b.ReportMetric(med(first), "first-query-ms")
	b.ReportMetric(med(slowest), "slowest-query-ms")
}

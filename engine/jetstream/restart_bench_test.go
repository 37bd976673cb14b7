package jetstream_test

import (
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
)

var restartDays = flag.Int("cluster.restart-days", 365, "days of the medium site BenchmarkClusterRestart loads")

// BenchmarkClusterRestart: how long a cluster node holding a year of the
// medium site takes to come back (issue #15: at most 5 s), and its first
// answers. The node follows a lone NATS server (R=1); its store is an
// in-memory crashable file system, so that each restart starts from the
// same bytes:
//
//   - after-close: the node was closed (its final snapshot is the stream's
//     end): Open finds nothing to apply;
//   - after-crash: the node lost power with a day of the site (about 37,000
//     hits, in 8 messages of at most 5,000: imports, not one hit a
//     message as live tracking sends them) applied since its last
//     snapshot: Open applies that day again from the stream before it
//     returns (Options.CatchUp).
//
// open-ms is jetstream.New and engine.Open (catching up included), the
// time until the node answers; first-ms the first query of each of the 17
// statistics over days 1 to 365, after it. Loading the year takes minutes
// (-cluster.restart-days fewer for a quick look).
func BenchmarkClusterRestart(b *testing.B) {
	c := startNATS(b, 1)
	days := *restartDays
	clk := &clock{now: bench.DefaultStart}
	fs := vfs.NewCrashableMem()
	o := &engine.Options{FS: fs, Dir: "data", SnapshotEvery: -1}
	n := openNodeOn(b, c.url(0), "restart", 1, clk, o)
	id := addSites(b, n.e, bench.Medium.Domain)[0]
	g := bench.NewGenerator(bench.Config{Seed: 5, Sites: []bench.Site{bench.Medium}, Days: days + 1})
	hits := 0
	track := func(day int) {
		clk.set(bench.DefaultStart.AddDate(0, 0, day).Add(23*time.Hour + 59*time.Minute))
		day1 := g.Day(day, 0)
		hits += len(day1)
		for len(day1) > 0 {
			k := min(len(day1), 5000)
			if _, err := n.e.Track(ctx, day1[:k]...); err != nil {
				b.Fatal(err)
			}
			day1 = day1[k:]
		}
	}
	t0 := time.Now()
	for day := range days {
		track(day)
		if day%7 == 6 {
			if err := n.e.Snapshot(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := n.e.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	before := hits
	track(days) // the next day, not in a snapshot
	waitApplied(b, []*node{n})
	end, err := n.log.Last(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d days, %d hits (%d the last day) in %v", days+1, hits, hits-before, time.Since(t0).Round(time.Second))
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	n.close(b)
	closed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	// The morning after: the last day is closed.
	clk.set(bench.DefaultStart.AddDate(0, 0, days+1).Add(time.Hour))
	first := engine.DateFromTime(bench.DefaultStart.AddDate(0, 0, 1))
	last := engine.DateFromTime(bench.DefaultStart.AddDate(0, 0, days))
	for _, v := range []struct {
		name string
		fs   *vfs.MemFS
	}{{"after-close", closed}, {"after-crash", crashed}} {
		b.Run(v.name, func(b *testing.B) {
			var opens, firsts []time.Duration
			for range b.N {
				b.StopTimer()
				clone := v.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
				b.StartTimer()
				t0 := time.Now()
				n := openNodeOn(b, c.url(0), "restart", 1, clk, &engine.Options{FS: clone, Dir: "data", SnapshotEvery: -1})
				opened := time.Now()
				for _, name := range engine.StatNames() {
					if _, err := n.e.Unscoped().Stat(ctx, engine.StatQuery{Website: id, Name: name, From: first, To: last}); err != nil {
						b.Fatal(err)
					}
				}
				done := time.Now()
				b.StopTimer()
				if got := n.e.Metrics().LogSeq; got != end {
					b.Fatalf("the node opened at message %d, the stream ends at %d", got, end)
				}
				opens, firsts = append(opens, opened.Sub(t0)), append(firsts, done.Sub(opened))
				n.close(b)
				b.StartTimer()
			}
			b.ReportMetric(median(opens).Seconds()*1000, "open-ms")
			b.ReportMetric(median(firsts).Seconds()*1000, "first-ms")
		})
	}
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

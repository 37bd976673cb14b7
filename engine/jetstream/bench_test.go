//go:build unix

package jetstream_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
)

// BenchmarkClusterTrack measures tracking with 64 writers, one hit per
// Track, on the medium site's traffic, three ways in the same run:
//
//	go test ./engine/jetstream -run '^$' -bench ClusterTrack -benchtime 30000x -count 3
//
// single/durable is one engine whose Track returns once its hit is fsynced
// (the default webstatsd); single/nosync the same without fsync;
// cluster/nodes=3 three engines on three in-process NATS servers (stream
// replicas 3), the writers spread over the engines, each Track returning
// once the stream acknowledged its hit. The cluster run also reports the
// replication lag: every 100 ms the stream's last sequence is noted, and
// the time until every engine has applied it is a sample.
//
// Everything runs on this machine's cores: three NATS servers, three
// engines and the writers share them, so the cluster figure is a lower
// bound for three machines.
func BenchmarkClusterTrack(b *testing.B) {
	// The medium site's traffic over eight websites (an eighth each), so
	// that the partitioned run spreads it.
	var sites []bench.Site
	var domains []string
	for i := range 8 {
		s := bench.Medium
		s.Domain = fmt.Sprintf("m%d.example", i)
		s.PageviewsPerMonth /= 8
		sites, domains = append(sites, s), append(domains, s.Domain)
	}
	var hits []engine.Hit
	for h := range bench.NewGenerator(bench.Config{Seed: 3, Sites: sites, Days: 1}).Hits() {
		hits = append(hits, h)
	}
	clk := &clock{now: hits[len(hits)-1].Time.Add(time.Minute)}
	run := func(b *testing.B, engines []*engine.Engine) {
		var next atomic.Int64
		lat := make([][]time.Duration, 64)
		var wg sync.WaitGroup
		b.ResetTimer()
		t0, cpu0 := time.Now(), cpuTime()
		for w := range 64 {
			wg.Go(func() {
				e := engines[w%len(engines)]
				for {
					i := int(next.Add(1)) - 1
					if i >= b.N {
						return
					}
					s := time.Now()
					if _, err := e.Track(ctx, hits[i%len(hits)]); err != nil {
						b.Error(err)
						return
					}
					lat[w] = append(lat[w], time.Since(s))
				}
			})
		}
		wg.Wait()
		el := time.Since(t0)
		b.StopTimer()
		// (Per Track call: the generator's bots, about 7%, are dropped
		// before publishing.)
		b.ReportMetric(float64(b.N)/el.Seconds(), "hits/s")
		b.ReportMetric(float64(cpuTime()-cpu0)/1e3/float64(b.N), "cpu-us/hit")
		all := slices.Concat(lat...)
		slices.Sort(all)
		if len(all) > 0 {
			b.ReportMetric(float64(all[len(all)*99/100])/1e6, "p99-ms")
		}
	}
	for _, mode := range []string{"durable", "nosync"} {
		b.Run("single/"+mode, func(b *testing.B) {
			e, err := engine.Open(&engine.Options{Dir: b.TempDir(), NoSync: mode == "nosync", Now: clk.Now})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			addSites(b, e, domains...)
			run(b, []*engine.Engine{e})
		})
	}
	b.Run("cluster/nodes=3", func(b *testing.B) {
		nc := startNATS(b, 3)
		var nodes []*node
		var engines []*engine.Engine
		for i := range 3 {
			n := openNode(b, nc.urls(i), b.TempDir(), clk, "")
			defer n.close(b)
			nodes = append(nodes, n)
			engines = append(engines, n.e)
		}
		addSites(b, nodes[0].e, domains...)
		waitApplied(b, nodes)
		stop := make(chan struct{})
		var lags []time.Duration
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				last, err := nodes[0].log.Last(ctx)
				if err != nil || last == 0 {
					continue
				}
				s := time.Now()
				for _, n := range nodes {
					for n.e.Metrics().LogSeq < last {
						time.Sleep(time.Millisecond)
					}
				}
				lags = append(lags, time.Since(s))
			}
		})
		run(b, engines)
		close(stop)
		wg.Wait()
		if len(lags) > 0 {
			slices.Sort(lags)
			b.ReportMetric(float64(lags[len(lags)*99/100])/1e6, "lag-p99-ms")
			b.ReportMetric(float64(lags[len(lags)/2])/1e6, "lag-p50-ms")
		}
		// What one more node costs: a new node applies every message of
		// the stream (no partitions yet), one hit each (the generator's
		// bots and excluded hits are never published), before its Open
		// returns (Options.CatchUp), alone on the machine's cores with
		// the NATS servers.
		last, err := nodes[0].log.Last(ctx)
		if err != nil {
			b.Fatal(err)
		}
		t0, cpu0 := time.Now(), cpuTime()
		n := openNodeOn(b, nc.urls(0), "", 3, clk, &engine.Options{Dir: b.TempDir(), NoSync: true, SnapshotEvery: -1, CatchUp: 10 * time.Minute})
		el, cpu := time.Since(t0), cpuTime()-cpu0
		defer n.close(b)
		if got := n.e.Metrics().LogSeq; got < last {
			b.Fatalf("the new node opened at message %d of %d", got, last)
		}
		b.ReportMetric(float64(last)/el.Seconds(), "join-hits/s")
		b.ReportMetric(float64(cpu)/1e3/float64(last), "join-cpu-us/hit")
	})
	// Partitioned: each website's hits are applied by two of the three
	// nodes only. A fourth node then joins: it fetches its share (about
	// half of the partitions) from the holders instead of applying the
	// stream; join-s is the time until every node holds its share.
	b.Run("cluster/nodes=3/partitions=64", func(b *testing.B) {
		const parts, owners = 64, 2
		nc := startNATS(b, 3)
		var nodes []*node
		var engines []*engine.Engine
		for i := range 3 {
			n := openPartNode(b, nc.urls(i), b.TempDir(), "", fmt.Sprint("n", i), clk, parts, owners)
			nodes = append(nodes, n)
			engines = append(engines, n.e)
		}
		addSites(b, nodes[0].e, domains...)
		settle(b, nodes, parts, owners)
		run(b, engines)
		settle(b, nodes, parts, owners)
		t0, cpu0 := time.Now(), cpuTime()
		n := openPartNode(b, nc.urls(0), b.TempDir(), "", "n3", clk, parts, owners)
		settle(b, append(nodes, n), parts, owners)
		b.ReportMetric(time.Since(t0).Seconds(), "join-s")
		b.ReportMetric((cpuTime() - cpu0).Seconds(), "join-cpu-s")
	})
}

// cpuTime is the CPU time (user and system) this process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

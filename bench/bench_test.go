package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
)

// The Benchmark functions run the workloads of Run through the same code,
// one measurement at a time, for `go test -bench` and benchstat:
//
//	go test ./bench -run '^$' -bench 'Pipeline|Query/site=medium/days=30' -count 6

var benchHits = sync.OnceValue(func() []engine.Hit { return pipelineStream(1, 200_000) })

// BenchmarkPipeline tracks the medium site's stream one hit per Track call
// from one goroutine (NoSync, on disk): run 1's full pipeline. -benchtime
// 200000x tracks the stream once; more repeats it from its start. The
// engine has no memory budget (4 MiB memtables) unless
// WEBSTATS_PIPELINE_BUDGET gives one in bytes (536870912 gives 32 MiB
// memtables, the default before c00a0ea; it also lets closed days be
// evicted past it, which this stream's few hundred MiB never reach). The
// final snapshot of Close is not timed (before ca802c0 it was, in ns/op
// but not in hits/s).
func BenchmarkPipeline(b *testing.B) {
	ctx := context.Background()
	hits := benchHits()
	var budget int64
	if v := os.Getenv("WEBSTATS_PIPELINE_BUDGET"); v != "" {
		var err error
		if budget, err = strconv.ParseInt(v, 10, 64); err != nil {
			b.Fatalf("WEBSTATS_PIPELINE_BUDGET: %v", err)
		}
	}
	for _, batch := range []int{1, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			e, err := openPipelineEngine(ctx, b.TempDir(), nil, hits, budget)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				b.StopTimer()
				e.Close()
			}()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N; {
				n := min(b.N-done, len(hits))
				if batch == 1 {
					_, err = trackEach(ctx, e, hits[:n])
				} else {
					_, err = trackBatches(ctx, e, hits[:n], batch)
				}
				if err != nil {
					b.Fatal(err)
				}
				done += n
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "hits/s")
		})
	}
}

// BenchmarkApply replays a log of 50,000 hits in engine.Open: run 1's apply
// rate. One op is one hit.
func BenchmarkApply(b *testing.B) {
	ctx := context.Background()
	hits := benchHits()[:50_000]
	var rates []float64
	for b.Loop() {
		rate, _, _, err := applyRun(ctx, hits, func(replay func() error) error { return replay() })
		if err != nil {
			b.Fatal(err)
		}
		rates = append(rates, rate)
	}
	b.ReportMetric(median(rates), "hits/s")
}

// BenchmarkDurableTrack tracks from 64 goroutines on a durable engine.
func BenchmarkDurableTrack(b *testing.B) {
	ctx := context.Background()
	hits := benchHits()
	e, err := engine.Open(&engine.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if _, _, _, err := setup(ctx, e, Medium.Domain); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.SetParallelism(32) // 64 writers on two cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Track(ctx, hits[int(next.Add(1))%len(hits)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkHTTPTrack posts tracking requests to an in-process server from
// keep-alive clients: run 2. Modes: durable (the default: fsync before the
// answer), interval (engine.Options.SyncInterval of 100 ms, webstatsd's
// -sync interval) and nosync. It reports requests a second and the CPU of
// the whole process (server and clients) per request.
func BenchmarkHTTPTrack(b *testing.B) {
	ctx := context.Background()
	reqs := trackRequests(benchHits()[:20_000])
	for _, mode := range []string{"durable", "interval", "nosync"} {
		b.Run("mode="+mode, func(b *testing.B) {
			o := &engine.Options{Dir: b.TempDir(), NoSync: mode == "nosync"}
			if mode == "interval" {
				o.SyncInterval = 100 * time.Millisecond
			}
			e, err := engine.Open(o)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if _, _, _, err := setup(ctx, e, Medium.Domain); err != nil {
				b.Fatal(err)
			}
			srv, err := startServer(e)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.close()
			if why, err := probe(ctx, srv.url, &reqs[0]); err != nil || why != "" {
				b.Skip(why, err)
			}
			client := newClient(64)
			var next atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			start, cpu0 := time.Now(), processCPU()
			defer func() {
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
				b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-us/req")
			}()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := reqs[int(next.Add(1))%len(reqs)].newRequest(ctx, srv.url)
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					// Read to the end, or the connection is not reused.
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusAccepted {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}

// benchFixture is the query benchmarks' history: 30 days of the small and
// medium sites, loaded by the query run's code.
var benchFixture = sync.OnceValues(func() (*fixture, error) {
	cfg, err := RunConfig{Quick: true, QuerySites: []string{"small", "medium"}, QueryDays: []int{1, 30}}.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, prog: newProgress(nil, 1)}
	dir, err := tempDir()
	if err != nil {
		return nil, err
	}
	r.dir = dir
	// The fixture lives as long as the test binary.
	return r.buildFixture(context.Background())
})

// BenchmarkQuery runs engine.Stat for every statistic over 1 and 30 days of
// the small and medium sites: run 3, sub-benchmarks named
// site=medium/days=30/name=page.
func BenchmarkQuery(b *testing.B) {
	ctx := context.Background()
	f, err := benchFixture()
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []string{"small", "medium"} {
		for _, days := range []int{1, 30} {
			b.Run(fmt.Sprintf("site=%s/days=%d", size, days), func(b *testing.B) {
				s, _ := f.siteFor(size, days)
				for _, name := range statNames() {
					b.Run("name="+name, func(b *testing.B) {
						q, err := f.statQuery(s, name, days)
						if err != nil {
							b.Fatal(err)
						}
						for b.Loop() {
							if _, err := f.e.Unscoped().Stat(ctx, q); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			})
		}
	}
}

// benchDir holds the data directories of the benchmarks' fixtures; TestMain
// removes it.
var benchDir string

func tempDir() (string, error) {
	d, err := os.MkdirTemp("", "webstats-bench-test-")
	benchDir = d
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		if f, err := benchFixture(); err == nil && f.e != nil {
			f.e.Close()
		}
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// BenchmarkHTTPImport posts the medium site's stream to the import API
// (POST /api/v1/websites/{id}/events) in NDJSON requests of 10,000 events
// from one client, to a durable engine behind an in-process server: issue
// #16's "import, 10,000-event NDJSON requests, durable". One op is one
// event.
//
//	go test ./bench -run '^$' -bench '^BenchmarkHTTPImport$' -benchtime 200000x -count 3
func BenchmarkHTTPImport(b *testing.B) {
	ctx := context.Background()
	hits := benchHits()
	bodies, _ := importBodies(slices.Values(hits), 10_000)
	e, err := engine.Open(&engine.Options{Dir: b.TempDir(), Now: func() time.Time { return hits[len(hits)-1].Time.Add(time.Hour) }})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	_, key, ids, err := setup(ctx, e, Medium.Domain)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := startServer(e)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.close()
	url := fmt.Sprintf("%s/api/v1/websites/%d/events", srv.url, ids[Medium.Domain])
	client := newClient(1)
	b.ResetTimer()
	start := time.Now()
	for done, i := 0, 0; done < b.N; i++ {
		body := bodies[i%len(bodies)]
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b.Fatalf("import: %s: %.300s", resp.Status, msg)
		}
		done += bytes.Count(body, []byte("\n"))
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "hits/s")
}

// processCPU returns the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	// The crash clone of an in-memory file system is the one way to reopen
	// a store whose log has not been snapshotted (Close always snapshots),
	// so the apply run needs Pebble's vfs directly; snapshot.FS is the same
	// type.
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/webstats/webstats/engine"
)

// PipelineResult is the outcome of the pipeline run: how fast one goroutine
// (one core) pushes a realistic stream through engine.Track with NoSync.
type PipelineResult struct {
	// Hits is the stream's length per repetition; Accepted how many of them
	// were counted (bots are dropped).
	Hits, Accepted int
	// TrackPerSec is the median of TrackRuns: hits per second with one hit
	// per Track call, on a data directory on disk.
	TrackPerSec float64
	TrackRuns   []float64
	// BatchPerSec is the same stream in Track calls of BatchSize hits.
	BatchPerSec float64
	BatchRuns   []float64
	BatchSize   int
	// ApplyPerSec is the median of ApplyRuns: hits per second applied by
	// the replay of the log in engine.Open (records decoded and applied,
	// without normalisation and enrichment), after subtracting OpenFixed,
	// the time Open takes on the same store without the log.
	ApplyPerSec float64
	ApplyRuns   []float64
	Replayed    int
	OpenFixed   time.Duration
	// DurablePerSec is the median of DurableRuns: hits per second tracked
	// by DurableWriters goroutines, one hit per call, on a durable engine
	// (group commit) on disk, for RunConfig.HTTPDuration each.
	DurablePerSec  float64
	DurableRuns    []float64
	DurableWriters int
	DurableLatency Latency
}

// pipelineStream returns the first n hits of the medium site's stream.
func pipelineStream(seed uint64, n int) []engine.Hit {
	g := NewGenerator(Config{Seed: seed, Sites: []Site{Medium}, Days: 1 + n/30_000})
	hits := make([]engine.Hit, 0, n)
	for h := range g.Hits() {
		if len(hits) == n {
			break
		}
		hits = append(hits, h)
	}
	return hits
}

// trackEach tracks hits one per Track call, as a tracking endpoint does,
// and returns how many were counted.
func trackEach(ctx context.Context, e *engine.Engine, hits []engine.Hit) (int, error) {
	n := 0
	for i := range hits {
		res, err := e.Track(ctx, hits[i])
		if err != nil {
			return n, err
		}
		n += res.Accepted
	}
	return n, nil
}

// trackConcurrent tracks hits (cycling through them) from writers
// goroutines, one hit per call, for d, and returns the hits per second and
// the latency of the calls.
func trackConcurrent(ctx context.Context, e *engine.Engine, hits []engine.Hit, writers int, d time.Duration) (float64, Latency, error) {
	var wg sync.WaitGroup
	lats := make([][]time.Duration, writers)
	errs := make([]error, writers)
	start := time.Now()
	deadline := start.Add(d)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ls []time.Duration
			for i := w; time.Now().Before(deadline); i += writers {
				t0 := time.Now()
				if _, err := e.Track(ctx, hits[i%len(hits)]); err != nil {
					errs[w] = err
					return
				}
				ls = append(ls, time.Since(t0))
			}
			lats[w] = ls
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, Latency{}, err
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return float64(len(all)) / el.Seconds(), latencyOf(all), nil
}

// openPipelineEngine opens a NoSync engine without background snapshots
// on dir (or fs when not nil) with the medium site, its clock after hits.
// budget is its Options.MemoryBudget (0: none).
func openPipelineEngine(ctx context.Context, dir string, fs vfs.FS, hits []engine.Hit, budget int64) (*engine.Engine, error) {
	end := time.Now()
	if len(hits) > 0 {
		end = hits[len(hits)-1].Time.Add(time.Hour)
	}
	e, err := engine.Open(&engine.Options{Dir: dir, FS: fs, NoSync: true, SnapshotEvery: -1, Now: newClock(end).fn(), MemoryBudget: budget})
	if err != nil {
		return nil, err
	}
	if _, _, _, err := setup(ctx, e, Medium.Domain); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (r *runner) pipeline(ctx context.Context, rep *Report) error {
	c := r.cfg
	hits := pipelineStream(c.Seed, c.PipelineHits)
	res := &PipelineResult{Hits: len(hits), BatchSize: 1000, DurableWriters: 64}
	var lats []Latency
	for i := range c.Repeats {
		last := i == c.Repeats-1 // profiled
		r.prog.step("pipeline: Track, one hit per call (%d/%d)", i+1, c.Repeats)
		for _, batch := range []int{1, res.BatchSize} {
			dir := r.newDir("pipeline")
			e, err := openPipelineEngine(ctx, dir, nil, hits, 0)
			if err != nil {
				return err
			}
			var n int
			var el time.Duration
			_, err = r.cpuProfile(last && batch == 1, false, Profile{Name: "pipeline-track", What: "Track, one hit per call, one goroutine, NoSync",
				Targets: []string{"full pipeline on one core"}}, func() (err error) {
				start := time.Now()
				if batch == 1 {
					n, err = trackEach(ctx, e, hits)
				} else {
					n, err = trackBatches(ctx, e, hits, batch)
				}
				el = time.Since(start)
				return err
			})
			if cerr := e.Close(); err == nil {
				err = cerr
			}
			removeAll(dir)
			if err != nil {
				return err
			}
			res.Accepted = n
			rate := float64(len(hits)) / el.Seconds()
			if batch == 1 {
				res.TrackRuns = append(res.TrackRuns, rate)
			} else {
				res.BatchRuns = append(res.BatchRuns, rate)
			}
		}
		r.prog.step("pipeline: apply (log replay in Open), durable Track from %d goroutines (%d/%d)", res.DurableWriters, i+1, c.Repeats)
		rate, replayed, fixed, err := applyRun(ctx, hits, func(replay func() error) error {
			_, err := r.cpuProfile(last, false, Profile{Name: "pipeline-apply", What: "apply: the log replay of engine.Open",
				Targets: []string{"engine apply on one core", "restart after kill -9"}}, replay)
			return err
		})
		if err != nil {
			return err
		}
		res.ApplyRuns = append(res.ApplyRuns, rate)
		res.Replayed, res.OpenFixed = replayed, fixed

		dir := r.newDir("durable")
		e, err := engine.Open(&engine.Options{Dir: dir})
		if err != nil {
			return err
		}
		if _, _, _, err := setup(ctx, e, Medium.Domain); err != nil {
			e.Close()
			return err
		}
		var lat Latency
		_, err = r.cpuProfile(last, false, Profile{Name: "pipeline-durable", What: fmt.Sprintf("durable Track from %d goroutines", res.DurableWriters),
			Targets: []string{"durable Track from"}}, func() (err error) {
			rate, lat, err = trackConcurrent(ctx, e, hits, res.DurableWriters, c.HTTPDuration)
			return err
		})
		if cerr := e.Close(); err == nil {
			err = cerr
		}
		removeAll(dir)
		if err != nil {
			return err
		}
		res.DurableRuns = append(res.DurableRuns, rate)
		lats = append(lats, lat)
	}
	res.DurableLatency = medianLatency(lats)
	res.DurablePerSec = median(res.DurableRuns)
	res.TrackPerSec = median(res.TrackRuns)
	res.BatchPerSec = median(res.BatchRuns)
	res.ApplyPerSec = median(res.ApplyRuns)
	rep.Pipeline = res
	return nil
}

// applyRun tracks hits into an in-memory store without snapshots, takes a
// crash clone of it and times engine.Open on the clone, which replays the
// whole log. It returns the replayed hits per second, the hits replayed and
// the fixed cost of Open (on a clone taken before any hit). The timed Open
// runs inside profile.
func applyRun(ctx context.Context, hits []engine.Hit, profile func(func() error) error) (rate float64, replayed int, fixed time.Duration, err error) {
	fs := vfs.NewCrashableMem()
	e, err := openPipelineEngine(ctx, "db", fs, hits, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	open := true
	defer func() {
		if open {
			e.Close()
		}
	}()
	empty := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 2))})
	if _, err := trackBatches(ctx, e, hits, 1000); err != nil {
		return 0, 0, 0, err
	}
	time.Sleep(20 * time.Millisecond) // let Pebble's log writer hand its buffer to the file
	full := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 2))})
	// Closed before the timed Open, so that its compactions do not share
	// the cores with the replay (the reopened store still compacts what it
	// inherits: background work, apart in the profile).
	open = false
	if err := e.Close(); err != nil {
		return 0, 0, 0, err
	}

	// reopen times Open; the caller closes the engine, outside the time
	// (and the profile): Close writes a snapshot of all that was replayed.
	reopen := func(fs vfs.FS) (*engine.Engine, time.Duration, int, error) {
		var n atomic.Int64
		start := time.Now()
		e2, err := engine.Open(&engine.Options{Dir: "db", FS: fs, NoSync: true, SnapshotEvery: -1, Logger: slog.New(&replayHandler{n: &n})})
		el := time.Since(start)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("reopen: %w", err)
		}
		return e2, el, int(n.Load()), nil
	}
	e2, fixed, _, err := reopen(empty)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := e2.Close(); err != nil {
		return 0, 0, 0, err
	}
	var el time.Duration
	err = profile(func() (err error) {
		e2, el, replayed, err = reopen(full)
		return err
	})
	if err != nil {
		return 0, 0, 0, err
	}
	if err := e2.Close(); err != nil {
		return 0, 0, 0, err
	}
	apply := max(el-fixed, time.Microsecond)
	return float64(replayed) / apply.Seconds(), replayed, fixed, nil
}

// replayHandler is a slog.Handler that keeps the "replayed" attribute of
// the engine's "engine opened" log line.
type replayHandler struct{ n *atomic.Int64 }

func (h *replayHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *replayHandler) Handle(_ context.Context, rec slog.Record) error {
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "replayed" {
			h.n.Store(a.Value.Int64())
			return false
		}
		return true
	})
	return nil
}

func (h *replayHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *replayHandler) WithGroup(string) slog.Handler      { return h }

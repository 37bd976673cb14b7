package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/webstats/webstats/engine"
)

// SnapshotResult is the outcome of the snapshot run.
type SnapshotResult struct {
	// Writers is the number of goroutines tracking (one hit per call,
	// NoSync, so that a pause is the snapshot's and not an fsync's) while
	// snapshots are taken every Every; HistoryDays of the medium site are
	// loaded first.
	Writers     int
	Every       time.Duration
	HistoryDays int
	// Snapshots counts the snapshots taken over all repetitions; Duration
	// summarises how long engine.Snapshot took, and LastSnapshot is the
	// engine's own Metrics().LastSnapshot at the end (median over the
	// repetitions).
	Snapshots    int
	Duration     Latency
	LastSnapshot time.Duration
	// During summarises the Track calls that overlapped a snapshot,
	// Outside the others (field-by-field medians over the repetitions).
	// MaxPause is the median over the repetitions of the longest Track call
	// that overlapped a snapshot.
	During, Outside Latency
	MaxPause        time.Duration
	// TrackPerSec is the tracking rate while snapshots ran.
	TrackPerSec float64

	// Restart is measured on the query run's history (RestartHistory
	// describes it): Close (which writes a final snapshot) and Open (which
	// then replays nothing), medians over the repetitions.
	RestartHistory string
	RestartHits    int
	RestartClose   time.Duration
	RestartOpen    time.Duration
}

func (r *runner) snapshotRun(ctx context.Context, rep *Report) error {
	c := r.cfg
	res := &SnapshotResult{Writers: max(2, runtime.GOMAXPROCS(0)), Every: c.SnapshotEvery, HistoryDays: 7}
	if c.Quick {
		res.HistoryDays = 2
	}
	rep.Snapshot = res
	var durs, during, outside []Latency
	var pauses, rates, lasts []float64
	for i := range c.Repeats {
		r.prog.step("snapshot: tracking while snapshotting (%d/%d)", i+1, c.Repeats)
		sr, err := r.snapshotPauses(ctx, res)
		if err != nil {
			return err
		}
		res.Snapshots += sr.snaps.N
		durs = append(durs, sr.snaps)
		during = append(during, sr.during)
		outside = append(outside, sr.outside)
		pauses = append(pauses, float64(sr.during.Max))
		rates = append(rates, sr.rate)
		lasts = append(lasts, float64(sr.last))
	}
	res.Duration = medianLatency(durs)
	res.Duration.N = res.Snapshots
	res.During, res.Outside = medianLatency(during), medianLatency(outside)
	res.MaxPause = time.Duration(median(pauses))
	res.TrackPerSec = median(rates)
	res.LastSnapshot = time.Duration(median(lasts))

	r.prog.step("snapshot: restart (Close + Open)")
	return r.restart(ctx, res)
}

type pauseResult struct {
	snaps, during, outside Latency
	rate                   float64
	last                   time.Duration
}

// snapshotPauses loads res.HistoryDays of the medium site, then tracks the
// next day's hits from res.Writers goroutines for RunConfig.SnapshotDuration
// while a goroutine takes a snapshot every res.Every.
func (r *runner) snapshotPauses(ctx context.Context, res *SnapshotResult) (pauseResult, error) {
	c := r.cfg
	days := res.HistoryDays
	g := NewGenerator(Config{Seed: c.Seed + 4, Sites: []Site{Medium}, Days: days + 1})
	dir := r.newDir("snapshot")
	defer removeAll(dir)
	clk := newClock(DefaultStart)
	e, err := engine.Open(&engine.Options{Dir: dir, NoSync: true, SnapshotEvery: -1, Now: clk.fn()})
	if err != nil {
		return pauseResult{}, err
	}
	defer e.Close()
	if _, _, _, err := setup(ctx, e, Medium.Domain); err != nil {
		return pauseResult{}, err
	}
	for day := range days {
		clk.set(DefaultStart.AddDate(0, 0, day).Add(23*time.Hour + 59*time.Minute))
		if _, err := trackBatches(ctx, e, g.Day(day, 0), 1000); err != nil {
			return pauseResult{}, err
		}
	}
	clk.set(DefaultStart.AddDate(0, 0, days).Add(12 * time.Hour))
	if err := e.Snapshot(ctx); err != nil {
		return pauseResult{}, err
	}
	today := g.Day(days, 0)

	type call struct{ start, dur time.Duration }
	type span struct{ start, end time.Duration }
	t0 := time.Now()
	deadline := t0.Add(c.SnapshotDuration)
	calls := make([][]call, res.Writers)
	var snaps []span
	var wg sync.WaitGroup
	errs := make(chan error, res.Writers+1)
	for w := range res.Writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := make([]call, 0, 1<<16)
			for i := w; time.Now().Before(deadline); i += res.Writers {
				s := time.Since(t0)
				if _, err := e.Track(ctx, today[i%len(today)]); err != nil {
					errs <- err
					return
				}
				cs = append(cs, call{s, time.Since(t0) - s})
			}
			calls[w] = cs
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(res.Every)
		defer tick.Stop()
		for time.Now().Before(deadline) {
			<-tick.C
			s := time.Since(t0)
			if err := e.Snapshot(ctx); err != nil {
				errs <- err
				return
			}
			snaps = append(snaps, span{s, time.Since(t0)})
		}
	}()
	wg.Wait()
	el := time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		return pauseResult{}, err
	}
	var in, out, sd []time.Duration
	for _, s := range snaps {
		sd = append(sd, s.end-s.start)
	}
	n := 0
	for _, cs := range calls {
		n += len(cs)
		for _, cl := range cs {
			end := cl.start + cl.dur
			// The last snapshot that started before the call ended.
			j := sort.Search(len(snaps), func(j int) bool { return snaps[j].start > end }) - 1
			if j >= 0 && snaps[j].end >= cl.start {
				in = append(in, cl.dur)
			} else {
				out = append(out, cl.dur)
			}
		}
	}
	return pauseResult{
		snaps: latencyOf(sd), during: latencyOf(in), outside: latencyOf(out),
		rate: float64(n) / el.Seconds(), last: e.Metrics().LastSnapshot,
	}, nil
}

// restart times Close and Open of the query run's history.
func (r *runner) restart(ctx context.Context, res *SnapshotResult) error {
	f, err := r.buildFixture(ctx)
	if err != nil {
		return err
	}
	var names []string
	for _, s := range f.sites {
		names = append(names, fmt.Sprintf("%s (%d days, %s hits)", s.Name, s.Days, formatCount(float64(s.Hits))))
	}
	res.RestartHistory = joinAnd(names)
	res.RestartHits = f.hits
	var closes, opens []float64
	for range r.cfg.Repeats {
		start := time.Now()
		err := f.e.Close()
		closed := time.Since(start)
		f.e = nil
		if err != nil {
			return err
		}
		start = time.Now()
		f.e, err = engine.Open(&engine.Options{Dir: f.dir, NoSync: true, SnapshotEvery: -1, QueryCache: -1, Now: f.clock.fn()})
		if err != nil {
			return err
		}
		// The first query after a restart reads its days from the store:
		// part of the cost of coming back, but not of Open.
		opened := time.Since(start)
		closes = append(closes, float64(closed))
		opens = append(opens, float64(opened))
	}
	res.RestartClose = time.Duration(median(closes))
	res.RestartOpen = time.Duration(median(opens))
	return nil
}

// joinAnd joins names with commas and a final "and".
func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return fmt.Sprintf("%s and %s", joinComma(names[:len(names)-1]), names[len(names)-1])
}

func joinComma(s []string) string {
	out := ""
	for i, x := range slices.Clone(s) {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

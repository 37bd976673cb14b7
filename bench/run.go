package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// The sections of a run, in the order Run runs them and the report lists
// them. RunConfig.Runs selects among them by these names.
const (
	RunPipeline = "pipeline" // engine pipeline and apply throughput
	RunHTTP     = "http"     // tracking over real HTTP
	RunQuery    = "query"    // query latency, in process and over HTTP
	RunMemory   = "memory"   // memory and disk per hit as history grows
	RunSnapshot = "snapshot" // snapshot duration, tracking pauses, restart
	RunServer   = "server"   // the webstatsd binary: import, restart, idle memory
	RunPeer     = "peer"     // the binary beside another server (-peer)
)

// AllRuns lists every section name, in order.
func AllRuns() []string {
	return []string{RunPipeline, RunHTTP, RunQuery, RunMemory, RunSnapshot, RunServer, RunPeer}
}

// RunConfig configures Run. The zero value is the full run; Quick gives the
// smoke-test run (under a minute on two cores). Every other field left at
// zero takes the value of the chosen preset, given beside it as full/quick.
type RunConfig struct {
	// Seed seeds the generated traffic.
	Seed uint64
	// Quick selects the quick preset.
	Quick bool
	// Runs selects the sections by name (see AllRuns); nil means all.
	Runs []string
	// Repeats is how many times each throughput measurement is repeated;
	// the report gives the median. Default 3/1.
	Repeats int
	// Dir holds the runs' data directories. Default "": a new temporary
	// directory, removed at the end.
	Dir string

	// Target, when set, is the base URL of an external webstatsd that the
	// HTTP tracking run measures instead of an in-process server; Key is
	// an API key of it (needed to create the website tracked).
	Target string `json:"-"` // may hold credentials: HTTPResult.Target is redacted
	Key    string `json:"-"` // never written into a report

	// PipelineHits is the number of hits tracked per repetition of the
	// pipeline run. Default 500,000/100,000.
	PipelineHits int
	// HTTPConcurrency lists the numbers of keep-alive clients of the HTTP
	// runs. Default 1, 8, 64/8, 64.
	HTTPConcurrency []int
	// HTTPDuration is how long each HTTP measurement lasts. Default 3s/1s.
	HTTPDuration time.Duration
	// QueryDays lists the ranges queried, in days. Default 1, 30, 365/1, 30.
	QueryDays []int
	// QuerySites lists the site sizes queried: "small", "medium",
	// "large". Default all three/small and medium.
	QuerySites []string
	// QueryNames lists the statistics queried. Default all 17/five.
	QueryNames []string
	// QueryTime is the least time spent measuring one query. Default
	// 200ms/40ms.
	QueryTime time.Duration
	// LargeYearScale is the share of the large site's traffic loaded for
	// the days beyond the last 30 (its pages per day are kept): a full
	// year of it is too long to load for a benchmark. Default 0.1.
	LargeYearScale float64
	// HistoryDays lists the history lengths of the memory run. Default
	// 1, 7, 30, 90, 365/1, 7.
	HistoryDays []int
	// MemoryBudget is the engine.Options.MemoryBudget of the memory run's
	// budgeted variant. Default 16 MiB/2 MiB.
	MemoryBudget int64
	// SnapshotDuration is how long tracking runs while snapshots are taken,
	// per repetition. Default 4s/1s.
	SnapshotDuration time.Duration
	// SnapshotEvery is the interval of the snapshots of the snapshot run.
	// Default 250ms.
	SnapshotEvery time.Duration

	// Webstatsd is the path of the webstatsd binary the server run starts
	// (BuildWebstatsd builds one). Default "": the server run is reported
	// as not available, WebstatsdNote saying why (a failed build, say).
	Webstatsd     string `json:"-"`
	WebstatsdNote string `json:"-"`
	// ServerDays is how many days of ServerSite the server run imports.
	// Default 365/30.
	ServerDays int
	// IdleWait is how long the server run leaves the binary idle before
	// reading its memory. Default 5s/1s.
	IdleWait time.Duration

	// Peer is the base URL of another server that speaks Plausible's
	// Events API, which the peer run measures beside the webstatsd binary
	// (Webstatsd); PeerKey is an API key of its Stats API (without, the
	// query load is left out) and PeerName what it is ("Plausible CE
	// v2.1.4"), for the report. Default "": the peer run is not made.
	Peer     string `json:"-"` // may hold credentials: PeerResult.Peer is redacted
	PeerKey  string `json:"-"` // never written into a report
	PeerName string
	// PeerQueryHits is how many tracking requests both servers get before
	// the peer run's query load. Default 20,000/2,000.
	PeerQueryHits int
	// PeerAPI is the Stats API version of the peer run's query load: "v2"
	// (POST /api/v2/query, the default) or "v1" (GET
	// /api/v1/stats/breakdown), for a peer that speaks only v1. Both
	// servers get the same form.
	PeerAPI string
}

// withDefaults fills the zero fields from the preset.
func (c RunConfig) withDefaults() (RunConfig, error) {
	if c.Runs == nil {
		c.Runs = AllRuns()
	}
	for _, r := range c.Runs {
		if !slices.Contains(AllRuns(), r) {
			return c, fmt.Errorf("bench: unknown run %q (want one of %s)", r, strings.Join(AllRuns(), ", "))
		}
	}
	if c.Target != "" && c.Key == "" {
		return c, errors.New("bench: an external target needs an API key")
	}
	q := c.Quick
	pick := func(full, quick int) int {
		if q {
			return quick
		}
		return full
	}
	if c.Repeats <= 0 {
		c.Repeats = pick(3, 1)
	}
	if c.PipelineHits <= 0 {
		c.PipelineHits = pick(500_000, 100_000)
	}
	if c.HTTPConcurrency == nil {
		c.HTTPConcurrency = []int{1, 8, 64}
		if q {
			c.HTTPConcurrency = []int{8, 64}
		}
	}
	if c.HTTPDuration <= 0 {
		c.HTTPDuration = time.Duration(pick(3000, 1000)) * time.Millisecond
	}
	if c.QueryDays == nil {
		c.QueryDays = []int{1, 30, 365}
		if q {
			c.QueryDays = []int{1, 30}
		}
	}
	if c.QuerySites == nil {
		c.QuerySites = []string{"small", "medium", "large"}
		if q {
			c.QuerySites = []string{"small", "medium"}
		}
	}
	for _, s := range c.QuerySites {
		if _, ok := siteBySize(s); !ok {
			return c, fmt.Errorf("bench: unknown site size %q (want small, medium or large)", s)
		}
	}
	if c.QueryNames == nil {
		c.QueryNames = statNames()
		if q {
			c.QueryNames = []string{"pageviews", "visitors_hours", "page", "referrer", "browser", "country"}
		}
	}
	if c.QueryTime <= 0 {
		c.QueryTime = time.Duration(pick(200, 40)) * time.Millisecond
	}
	if c.LargeYearScale <= 0 || c.LargeYearScale > 1 {
		c.LargeYearScale = 0.1
	}
	if c.HistoryDays == nil {
		c.HistoryDays = []int{1, 7, 30, 90, 365}
		if q {
			c.HistoryDays = []int{1, 7}
		}
	}
	slices.Sort(c.HistoryDays)
	if c.MemoryBudget <= 0 {
		c.MemoryBudget = int64(pick(16, 2)) << 20
	}
	if c.SnapshotDuration <= 0 {
		c.SnapshotDuration = time.Duration(pick(4000, 1000)) * time.Millisecond
	}
	if c.SnapshotEvery <= 0 {
		c.SnapshotEvery = 250 * time.Millisecond
	}
	if c.ServerDays <= 0 {
		c.ServerDays = pick(365, 30)
	}
	if c.PeerQueryHits <= 0 {
		c.PeerQueryHits = pick(20_000, 2_000)
	}
	switch c.PeerAPI {
	case "":
		c.PeerAPI = "v2"
	case "v1", "v2":
	default:
		return c, fmt.Errorf("bench: PeerAPI %q: v1 or v2", c.PeerAPI)
	}
	if c.IdleWait <= 0 {
		c.IdleWait = time.Duration(pick(5000, 1000)) * time.Millisecond
	}
	return c, nil
}

func (c *RunConfig) has(run string) bool { return slices.Contains(c.Runs, run) }

// Run runs the sections cfg selects and returns their report. It writes a
// progress bar to progress (nil means none): one line redrawn in place on a
// terminal, one line per step otherwise. A section that cannot run (the
// tracking endpoint answers 404, say) is reported as not available; Run
// fails only when the engine or the file system does.
func Run(ctx context.Context, cfg RunConfig, progress io.Writer) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "webstats-bench-"); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r := &runner{cfg: cfg, dir: dir, prog: newProgress(progress, planSteps(&cfg))}
	rep := &Report{Config: cfg, Machine: ThisMachine(), Started: time.Now()}
	r.rep = rep
	defer r.closeFixture()
	steps := []struct {
		name string
		fn   func(context.Context, *Report) error
	}{
		{RunPipeline, r.pipeline},
		{RunHTTP, r.httpTracking},
		// Memory before query: the query run's history stays open for the
		// restart run, and would weigh on the memory run's heap.
		{RunMemory, r.memory},
		{RunQuery, r.query},
		{RunSnapshot, r.snapshotRun},
		{RunServer, r.serverRun},
		{RunPeer, r.peerRun},
	}
	for _, s := range steps {
		if !cfg.has(s.name) {
			continue
		}
		err := s.fn(ctx, rep)
		if err == nil {
			err = ctx.Err() // a load cut short by the cancel measured nothing
		}
		if err != nil {
			r.prog.done()
			return nil, fmt.Errorf("bench: %s run: %w", s.name, err)
		}
	}
	r.prog.done()
	rep.Duration = time.Since(rep.Started)
	return rep, nil
}

// runner is the state of one Run.
type runner struct {
	cfg  RunConfig
	dir  string
	prog *progress
	fix  *fixture // the history of the query and restart runs, built once
	n    int      // data directories made
	rep  *Report  // what the runs measured (cpuProfile adds to its Profiles)
}

// newDir returns a new empty data directory under r.dir.
func (r *runner) newDir(name string) string {
	r.n++
	return fmt.Sprintf("%s/%02d-%s", r.dir, r.n, name)
}

// planSteps counts the progress steps of a run.
func planSteps(c *RunConfig) int {
	n := 0
	if c.has(RunPipeline) {
		n += 2 * c.Repeats
	}
	if c.has(RunHTTP) {
		modes := 4 // baseline, durable, interval, nosync
		if c.Target != "" {
			modes = 1
		}
		n += 1 + modes*len(c.HTTPConcurrency)
	}
	if c.has(RunQuery) || c.has(RunSnapshot) {
		n += fixtureSteps(c)
	}
	if c.has(RunQuery) {
		n += len(c.QuerySites)*len(c.QueryDays) + 2
	}
	if c.has(RunMemory) {
		n += 2*len(c.HistoryDays) + 1
	}
	if c.has(RunSnapshot) {
		n += c.Repeats + 1
	}
	if c.has(RunServer) {
		n += serverSteps(c)
	}
	if c.has(RunPeer) {
		n += peerSteps(c)
	}
	return n
}

// progress draws the progress bar.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	n     int
	calls int // steps reported, drawn or not
	width int // of the last line drawn, to blank it
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: max(1, total)}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// step reports that the step named name starts.
func (p *progress) step(format string, args ...any) {
	p.calls++
	if p.w == nil {
		return
	}
	p.n = min(p.n+1, p.total)
	name := fmt.Sprintf(format, args...)
	if !p.tty {
		fmt.Fprintf(p.w, "[%d/%d] %s\n", p.n, p.total, name)
		return
	}
	const barLen = 20
	fill := barLen * (p.n - 1) / p.total
	line := fmt.Sprintf("[%s%s] %d/%d %s", strings.Repeat("#", fill), strings.Repeat(".", barLen-fill), p.n, p.total, name)
	pad := max(0, p.width-len(line))
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

// done ends the bar.
func (p *progress) done() {
	if p.w != nil && p.tty && p.width > 0 {
		fmt.Fprintln(p.w)
		p.width = 0
	}
}

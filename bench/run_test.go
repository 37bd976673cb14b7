package bench

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// smokeConfig is the quick run, cut further so that the test stays well
// under a minute on a shared two-core machine (and further under -short).
// The CLI's -quick is the full quick run; CI runs it as a smoke test.
func smokeConfig(t *testing.T) RunConfig {
	c := RunConfig{
		Seed:             1,
		Quick:            true,
		Dir:              t.TempDir(),
		PipelineHits:     30_000,
		HTTPConcurrency:  []int{8, 64},
		HTTPDuration:     300 * time.Millisecond,
		QueryDays:        []int{1, 7},
		QueryTime:        5 * time.Millisecond,
		HistoryDays:      []int{1, 3},
		SnapshotDuration: 400 * time.Millisecond,
		SnapshotEvery:    100 * time.Millisecond,
	}
	if testing.Short() {
		c.PipelineHits = 5_000
		c.HTTPConcurrency = []int{4}
		c.HTTPDuration = 100 * time.Millisecond
		c.QuerySites = []string{"small"}
		c.QueryDays = []int{1, 2}
		c.HistoryDays = []int{1}
		c.SnapshotDuration = 200 * time.Millisecond
	}
	return c
}

// TestRun runs every section and checks that the report is complete:
// every section present, with numbers (not that they are fast).
func TestRun(t *testing.T) {
	cfg := smokeConfig(t)
	var progress bytes.Buffer
	rep, err := Run(context.Background(), cfg, &progress)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Config

	if p := rep.Pipeline; p == nil {
		t.Error("no pipeline section")
	} else {
		for name, v := range map[string]float64{"track": p.TrackPerSec, "batch": p.BatchPerSec, "apply": p.ApplyPerSec, "durable": p.DurablePerSec} {
			if !(v > 0) || math.IsInf(v, 0) {
				t.Errorf("pipeline %s rate = %v, want > 0", name, v)
			}
		}
		if p.Replayed == 0 || p.Accepted == 0 {
			t.Errorf("pipeline replayed %d, accepted %d: want > 0", p.Replayed, p.Accepted)
		}
	}

	if h := rep.HTTP; h == nil {
		t.Error("no http section")
	} else if h.Unavailable == "" {
		if got, want := len(h.Points), 4*len(c.HTTPConcurrency); got != want { // baseline, durable, interval, nosync
			t.Errorf("http: %d points, want %d", got, want)
		}
		for _, p := range h.Points {
			if !(p.PerSec > 0) || p.Latency.P50 <= 0 {
				t.Errorf("http %s %d clients: %v hits/s, p50 %v", p.Mode, p.Clients, p.PerSec, p.Latency.P50)
			}
		}
	} else {
		t.Logf("http not available: %s", h.Unavailable)
	}

	if q := rep.Query; q == nil {
		t.Error("no query section")
	} else {
		if got, want := len(q.Points), len(c.QuerySites)*len(c.QueryDays)*len(c.QueryNames); got != want {
			t.Errorf("query: %d points, want %d", got, want)
		}
		for _, p := range q.Points {
			if p.Latency.N < 5 || p.Latency.P50 <= 0 {
				t.Errorf("query %s %dd %s: %+v", p.Size, p.Days, p.Name, p.Latency)
			}
		}
		if q.APIUnavailable == "" && len(q.API) != len(c.HTTPConcurrency) {
			t.Errorf("query API: %d points, want %d", len(q.API), len(c.HTTPConcurrency))
		}
		if q.PagesUnavailable == "" && q.Pages.N == 0 {
			t.Error("statistics page: neither measured nor unavailable")
		}
	}

	if m := rep.Memory; m == nil {
		t.Error("no memory section")
	} else {
		if got, want := len(m.Points), 2*len(c.HistoryDays)+1; got != want {
			t.Errorf("memory: %d points, want %d", got, want)
		}
		for _, p := range m.Points {
			if p.Hits == 0 || p.Disk == 0 || p.Heap == 0 || p.Store == 0 {
				t.Errorf("memory point %+v: want hits, heap and disk", p)
			}
		}
	}

	if s := rep.Snapshot; s == nil {
		t.Error("no snapshot section")
	} else {
		if s.Snapshots == 0 || s.During.N+s.Outside.N == 0 || s.RestartOpen <= 0 || s.RestartClose <= 0 {
			t.Errorf("snapshot section incomplete: %+v", s)
		}
	}

	for _, tg := range rep.Targets() {
		if !tg.Measured() && tg.Note == "" {
			t.Errorf("target %q neither measured nor explained", tg.What)
		}
	}

	if !strings.Contains(progress.String(), "query: latency") {
		t.Errorf("progress lacks the query steps:\n%s", progress.String())
	}

	dir := t.TempDir()
	if err := rep.WriteMarkdown(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**Machine:**", "GOMAXPROCS", "## Summary",
		"## 1. Engine pipeline", "## 2. Tracking over HTTP", "## 3. Query latency",
		"## 4. Memory and disk", "## 5. Snapshots and restart", "## Capacity planning",
		"| 1 × 10,000 |", "| 10 × 10,000,000 |",
	} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if bytes.Contains(md, []byte("Not run")) {
		t.Error("report.md says a section was not run")
	}
	svgs, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	if len(svgs) < 2 {
		t.Errorf("got SVGs %v, want the memory and latency charts at least", svgs)
	}
	for _, f := range svgs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkXML(t, filepath.Base(f), b)
		if !bytes.Contains(md, []byte("]("+filepath.Base(f)+")")) {
			t.Errorf("report.md does not link %s", filepath.Base(f))
		}
	}
}

// checkXML decodes b to its end.
func checkXML(t *testing.T, name string, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Errorf("%s: not well-formed XML: %v", name, err)
			return
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", name, root)
	}
}

func TestChartSVG(t *testing.T) {
	tests := []struct {
		name string
		c    chart
	}{
		{name: "lines with a gap", c: chart{title: `a <b> & "c"`, xLabel: "x", yLabel: "y", xs: []string{"1", "8", "64"},
			series: []series{{name: "s&1", ys: []float64{1, math.NaN(), 3}}, {name: "s2", ys: []float64{1000, 2000, 500}}}}},
		{name: "one category", c: chart{xs: []string{"1"}, series: []series{{name: "x", ys: []float64{5}}}}},
		{name: "all zero", c: chart{xs: []string{"1", "2"}, series: []series{{name: "x", ys: []float64{0, 0}}}}},
		{name: "no series", c: chart{xs: []string{"1", "2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.c.svg()
			checkXML(t, tt.name, b)
			if bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Inf")) {
				t.Errorf("SVG holds NaN or Inf:\n%s", b)
			}
		})
	}
}

func TestCapacityPlan(t *testing.T) {
	c := Capacity{
		MemBytesPerHit: 8, DiskBytesPerHit: 4, FixedRAM: 0, HitsPerSecPerCore: 100,
		PeakFactor: 2, HitsPerPageview: 1, RequestsPerPageview: 1, RetentionDays: 30, Headroom: 1,
	}
	tests := []struct {
		name              string
		c                 Capacity
		websites, monthly int
		want              Plan
	}{
		{
			name: "one GiB of hits", c: c, websites: 1, monthly: gib / 8,
			want: Plan{Websites: 1, PageviewsPerMonth: gib / 8, HitsKept: gib / 8, PeakPerSec: float64(gib/8) / (30 * 86400) * 2, RAMGiB: 1, DiskGiB: 0.5, Cores: 2},
		},
		{
			name: "websites multiply", c: c, websites: 10, monthly: 2_592_000,
			want: Plan{Websites: 10, PageviewsPerMonth: 2_592_000, HitsKept: 25_920_000, PeakPerSec: 20, RAMGiB: 25_920_000 * 8.0 / gib, DiskGiB: 25_920_000 * 4.0 / gib, Cores: 1},
		},
		{
			name: "retention, headroom and fixed memory", c: func() Capacity {
				c := c
				c.RetentionDays, c.Headroom, c.FixedRAM, c.FixedDisk = 360, 2, gib, gib/2
				return c
			}(), websites: 1, monthly: 2_592_000,
			want: Plan{Websites: 1, PageviewsPerMonth: 2_592_000, HitsKept: 31_104_000, PeakPerSec: 2, RAMGiB: 2 * (gib + 31_104_000*8.0) / gib, DiskGiB: 2 * (gib/2 + 31_104_000*4.0) / gib, Cores: 1},
		},
		{
			name: "cores round up", c: func() Capacity { c := c; c.HitsPerSecPerCore = 7; return c }(), websites: 1, monthly: 2_592_000 * 50,
			want: Plan{Websites: 1, PageviewsPerMonth: 2_592_000 * 50, HitsKept: 2_592_000 * 50, PeakPerSec: 100, RAMGiB: 2_592_000 * 50 * 8.0 / gib, DiskGiB: 2_592_000 * 50 * 4.0 / gib, Cores: 15},
		},
		{
			name: "nearest size", c: func() Capacity {
				c := c
				c.Sizes = []SizeCost{{PageviewsPerMonth: 10_000, MemBytesPerHit: 80, DiskBytesPerHit: 40}, {PageviewsPerMonth: 1_000_000, MemBytesPerHit: 2, DiskBytesPerHit: 1}}
				return c
			}(), websites: 1, monthly: 2_592_000,
			want: Plan{Websites: 1, PageviewsPerMonth: 2_592_000, HitsKept: 2_592_000, PeakPerSec: 2, RAMGiB: 2_592_000 * 2.0 / gib, DiskGiB: 2_592_000 * 1.0 / gib, Cores: 1},
		},
		{
			name: "a tie takes the costlier size", c: func() Capacity {
				c := c
				c.Sizes = []SizeCost{{PageviewsPerMonth: 10_000, MemBytesPerHit: 80, DiskBytesPerHit: 1}, {PageviewsPerMonth: 1_000_000, MemBytesPerHit: 2, DiskBytesPerHit: 40}}
				return c
			}(), websites: 25, monthly: 100_000,
			want: Plan{Websites: 25, PageviewsPerMonth: 100_000, HitsKept: 2_500_000, PeakPerSec: 2_500_000 / (30 * 86400.0) * 2, RAMGiB: 2_500_000 * 80.0 / gib, DiskGiB: 2_500_000 * 40.0 / gib, Cores: 1},
		},
		{
			name: "events and bots", c: func() Capacity { c := c; c.HitsPerPageview, c.RequestsPerPageview = 1.5, 3; return c }(), websites: 1, monthly: 2_592_000,
			want: Plan{Websites: 1, PageviewsPerMonth: 2_592_000, HitsKept: 3_888_000, PeakPerSec: 6, RAMGiB: 3_888_000 * 8.0 / gib, DiskGiB: 3_888_000 * 4.0 / gib, Cores: 1},
		},
	}
	approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.c.Plan(tt.websites, tt.monthly)
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Plan(%d, %d) mismatch (-want +got):\n%s", tt.websites, tt.monthly, diff)
			}
		})
	}
}

func TestDefaultCapacity(t *testing.T) {
	c := DefaultCapacity()
	if pf := c.PeakFactor; pf < 1.5 || pf > 1.8 {
		t.Errorf("PeakFactor = %v, want about 1.65", pf)
	}
	p := c.Plan(1, 10_000_000)
	if p.Cores != 1 || p.RAMGiB <= 0 || p.DiskGiB <= 0 {
		t.Errorf("Plan(1, 10M) = %+v", p)
	}
}

func TestRunConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     RunConfig
		wantErr string
	}{
		{name: "full defaults", cfg: RunConfig{}},
		{name: "quick", cfg: RunConfig{Quick: true}},
		{name: "unknown run", cfg: RunConfig{Runs: []string{"pipeline", "nope"}}, wantErr: `unknown run "nope"`},
		{name: "unknown size", cfg: RunConfig{QuerySites: []string{"huge"}}, wantErr: `unknown site size "huge"`},
		{name: "target without key", cfg: RunConfig{Target: "http://localhost:8080"}, wantErr: "needs an API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.withDefaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Repeats == 0 || c.PipelineHits == 0 || len(c.QueryNames) == 0 || len(c.HistoryDays) == 0 || planSteps(&c) == 0 {
				t.Errorf("defaults not filled: %+v", c)
			}
			if !tt.cfg.Quick && len(c.QueryNames) != 17 {
				t.Errorf("full run queries %d statistics, want 17", len(c.QueryNames))
			}
		})
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{formatCount(1234567.4), "1,234,567"},
		{formatCount(999.6), "1,000"},
		{formatCount(8.126), "8.13"},
		{formatCount(24.25), "24.2"},
		{formatCount(3), "3"},
		{formatDur(1500 * time.Microsecond), "1.50 ms"},
		{formatDur(123 * time.Microsecond), "0.123 ms"},
		{formatDur(2500 * time.Millisecond), "2.50 s"},
		{formatBytes(16 << 20), "16 MiB"},
		{formatBytes(512), "512 B"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 2)
	p.step("first %d", 1)
	p.step("second")
	p.done()
	want := "[1/2] first 1\n[2/2] second\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("progress mismatch (-want +got):\n%s", diff)
	}
}

// TestBinaryRunsFail checks that a server or peer run that fails (here, a
// "binary" that exits 1 at once) is reported as such, and leaves the rest
// of the report.
func TestBinaryRunsFail(t *testing.T) {
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false(1)")
	}
	rep, err := Run(context.Background(), RunConfig{Quick: true, Runs: []string{RunServer, RunPeer}, Webstatsd: bin, Peer: "http://127.0.0.1:9", Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, why := range map[string]string{"server": rep.Server.Unavailable, "peer": rep.Peer.Unavailable} {
		if !strings.HasPrefix(why, "failed: ") || !strings.Contains(why, "user add") {
			t.Errorf("%s section: %q, want the failure of user add", name, why)
		}
	}
	md := rep.Markdown("")
	if !strings.Contains(md, "Not available: failed: ") {
		t.Errorf("the report does not say the runs failed:\n%s", md)
	}
}

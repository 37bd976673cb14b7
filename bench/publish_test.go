package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// publishedReport is a report as a full run makes it, with made-up
// figures: durable tracking at 7,500 of a no-op handler's 10,000 req/s
// (75%, met) for 41 µs of the server's CPU a request against the no-op's
// 20 (2.05 times, shown 2.1: not met), NoSync at 8,000 (80%, not met);
// the binary restarted after
// kill -9 in 1.5 s (met), idle at 30 MiB (not met).
func publishedReport() *Report {
	return &Report{
		Config:   RunConfig{Seed: 1, Repeats: 3, Runs: AllRuns(), Key: "secret-key"},
		Machine:  Machine{OS: "linux", Arch: "amd64", GoVersion: "go1.26", NumCPU: 2, GOMAXPROCS: 2, MemTotal: 24 << 30, Commit: "0123456789ab"},
		Started:  time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC),
		Duration: 11 * time.Minute,
		HTTP: &HTTPResult{Target: "in-process", Points: []HTTPPoint{
			{Mode: "baseline", Clients: 64, PerSec: 10_000, Runs: []float64{10_000}, CPUPerReq: 20 * time.Microsecond, CPURuns: []time.Duration{20 * time.Microsecond}},
			{Mode: "durable", Clients: 64, PerSec: 7_500, Runs: []float64{7_500}, Latency: Latency{N: 10, P50: time.Millisecond, P99: 3 * time.Millisecond},
				CPUPerReq: 41 * time.Microsecond, CPURuns: []time.Duration{41 * time.Microsecond}},
			{Mode: "nosync", Clients: 64, PerSec: 8_000, Runs: []float64{8_000}},
		}},
		Query: &QueryResult{APIDays: 30, API: []HTTPPoint{
			{Mode: "api", Clients: 64, PerSec: 5_999, Runs: []float64{5_999}, Latency: Latency{N: 10, P50: time.Millisecond, P99: 4 * time.Millisecond}},
		}},
		Server: &ServerResult{Days: 365, Hits: 1_000_000, Accepted: 930_000, Batch: 10_000, ImportPerSec: 100_000, ImportRuns: []float64{100_000},
			Restarts: []ServerRestart{
				{After: AfterKill, Ready: 1500 * time.Millisecond, ReadyRuns: []time.Duration{1500 * time.Millisecond}, Slowest: 20 * time.Millisecond, All: 90 * time.Millisecond},
				{After: AfterStop, Ready: 200 * time.Millisecond, ReadyRuns: []time.Duration{200 * time.Millisecond}, Slowest: 60 * time.Millisecond, All: 300 * time.Millisecond},
			},
			IdleWait: 5 * time.Second, Idle: ProcMemory{RSS: 30 << 20, Anon: 8 << 20, File: 22 << 20}, IdleRuns: []int64{30 << 20}},
		Profiles: []*Profile{{Name: "http-nosync-64", What: "POST /api/event, 64 clients, nosync", Targets: []string{"POST /api/event, 64 clients, NoSync"},
			Kind: "cpu", Wall: time.Second, CPU: 2 * time.Second, Cores: 2, Measured: 0.4, Server: 0.5,
			Parts: []Share{{"net/http", 0.3}}, Funcs: []Share{{"syscall.Syscall6", 0.2}}, Data: []byte("a CPU profile")}},
	}
}

func TestPublish(t *testing.T) {
	root := t.TempDir()
	readme := "# project\n\nSome text.\n\n" + SummaryStart + "\nan old table\n" + SummaryEnd + "\n\nMore text.\n"
	if err := os.MkdirAll(filepath.Join(root, "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := publishedReport()
	if err := rep.Publish(root); err != nil {
		t.Fatal(err)
	}

	got, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(got)
	if !strings.HasPrefix(doc, "# project\n\nSome text.\n\n"+SummaryStart+"\n") || !strings.HasSuffix(doc, SummaryEnd+"\n\nMore text.\n") {
		t.Errorf("README outside the block changed:\n%s", doc)
	}
	for _, want := range []string{
		"at commit 0123456789ab",
		"[bench/RESULTS.md](bench/RESULTS.md)",
		"| http | POST /api/event, 64 clients, durable, share of the no-op handler | ≥ 75% | 75.0% | met |",
		"| http | POST /api/event, 64 clients, NoSync, share of the no-op handler | ≥ 85% | 80.0% | **not met** |",
		"| http | server CPU per request, POST /api/event, 64 clients, durable, times the no-op handler's | ≤ 2.0× | 2.1× | **not met** | 41.0 µs against 20.0 µs a request |",
		// 5,999 of 10,000 is 59.99%: shown rounded down, and not met.
		"| query | GET /api/v1/stats `page` over 30 days, 64 clients, share of the no-op handler | ≥ 60% | 59.9% | **not met** | 5,999 of 10,000 req/s, the no-op handler as measured by the http run |",
		"| server | import, 10,000-event NDJSON requests, one client, durable | ≥ 250,000 hits/s | 100,000 hits/s | **not met** |",
		"| server | restart after kill -9, until /healthz | ≤ 2.00 s | 1.50 s | met | 930,000 hits in the log |",
		"| server | first query of each statistic over the year after kill -9 (the slowest) | ≤ 50.0 ms | 20.0 ms | met |",
		"| server | first query of each statistic over the year after a clean stop (the slowest) | ≤ 50.0 ms | 60.0 ms | **not met** |",
		"| server | idle RSS after start | ≤ 24 MiB | 30 MiB | **not met** | 8 MiB anonymous, 22 MiB file-backed (the binary's pages) |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("README lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "an old table") {
		t.Errorf("the old block was kept:\n%s", doc)
	}

	results, err := os.ReadFile(filepath.Join(root, "bench", "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| mode | clients | median hits/s | server CPU/request |", "| durable | 64 | 7,500 | 41.0 µs |", "| nosync | 64 | 8,000 | — |",
		"durable tracking runs at 75% of it and costs the server 2.1 times its CPU a request."} {
		if !strings.Contains(string(results), want) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
	if !strings.Contains(string(results), "# webstats capacity report") || !strings.Contains(string(results), "at commit 0123456789ab") {
		t.Errorf("RESULTS.md is not the report:\n%s", results)
	}
	if _, err := os.Stat(filepath.Join(root, "bench", "results", "report.md")); !os.IsNotExist(err) {
		t.Errorf("bench/results/report.md: %v, want it removed (RESULTS.md is the report)", err)
	}

	// report.json reads back as the report, less the API key it must not
	// hold.
	raw, err := os.ReadFile(filepath.Join(root, "bench", "results", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "secret-key") {
		t.Error("report.json holds the API key")
	}
	back, err := ReadReport(filepath.Join(root, "bench", "results", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := publishedReport()
	want.Config.Key = ""
	if d := cmp.Diff(want, back); d != "" {
		t.Errorf("report.json read back (-want +got):\n%s", d)
	}
	// Publishing what was read back changes nothing.
	if err := back.Publish(root); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != doc {
		t.Errorf("publishing the same report again changed the README:\n%s", cmp.Diff(doc, string(again)))
	}
}

func TestReplaceSummaryNeedsOneBlock(t *testing.T) {
	for name, doc := range map[string]string{
		"none":     "# project\n",
		"no end":   SummaryStart + "\n",
		"reversed": SummaryEnd + "\n" + SummaryStart + "\n",
		"two":      SummaryStart + SummaryEnd + SummaryStart + SummaryEnd,
	} {
		if _, err := ReplaceSummary(doc, "table"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	got, err := ReplaceSummary("a\n"+SummaryStart+"\nold\n"+SummaryEnd+"\nb", "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n" + SummaryStart + "\n\nnew\n" + SummaryEnd + "\nb"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPublishOnlyFullRuns: a quick or partial run is refused and changes
// nothing; a full one removes the charts of the report it replaces that it
// does not have itself.
func TestPublishOnlyFullRuns(t *testing.T) {
	root := t.TempDir()
	results := filepath.Join(root, "bench", "results")
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	readme := SummaryStart + "\nold\n" + SummaryEnd + "\n"
	for path, data := range map[string]string{
		filepath.Join(root, "README.md"):           readme,
		filepath.Join(root, "bench", "RESULTS.md"): "old report",
		filepath.Join(results, "memory.svg"):       "an old chart",
		filepath.Join(results, "old.pprof"):        "an old profile",
	} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	quick := publishedReport()
	quick.Config.Quick = true
	partial := publishedReport()
	partial.Config.Runs = []string{RunHTTP}
	noBinary := publishedReport()
	noBinary.Server = &ServerResult{Unavailable: "no webstatsd binary"}
	for name, rep := range map[string]*Report{"quick": quick, "partial": partial, "no binary": noBinary} {
		if err := rep.Publish(root); err == nil {
			t.Errorf("%s run published", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "bench", "RESULTS.md")); string(b) != "old report" {
		t.Errorf("a refused run changed RESULTS.md: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "README.md")); string(b) != readme {
		t.Errorf("a refused run changed README.md: %q", b)
	}

	// publishedReport has no memory section, so no memory chart.
	if err := publishedReport().Publish(root); err != nil {
		t.Fatal(err)
	}
	for _, old := range []string{"memory.svg", "old.pprof"} {
		if _, err := os.Stat(filepath.Join(results, old)); !os.IsNotExist(err) {
			t.Errorf("the old %s is still there (%v)", old, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(results, "http-nosync-64.pprof")); string(b) != "a CPU profile" {
		t.Errorf("the report's profile: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "bench", "RESULTS.md")); !strings.Contains(string(b), "Bears on: POST /api/event, 64 clients, NoSync (8,000 hits/s; not met); POST /api/event, 64 clients, NoSync, share of the no-op handler (80.0%; not met).") {
		t.Errorf("RESULTS.md lacks what the profile bears on:\n%s", b)
	}
	left, err := os.ReadDir(results)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
}

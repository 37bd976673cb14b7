package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/bench"
)

// TestBenchServerRun makes webstats-bench's server run (quick) on the
// binary: import, a restart after kill -9 and one after a clean stop,
// the first queries, idle memory. The figures are the bench's business;
// this checks that each was measured, and the section written.
func TestBenchServerRun(t *testing.T) {
	bin := buildBinary(t)
	rep, err := bench.Run(context.Background(), bench.RunConfig{Quick: true, Runs: []string{bench.RunServer}, Webstatsd: bin, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Server
	if s == nil || s.Unavailable != "" {
		t.Fatalf("server section: %+v", s)
	}
	if s.Hits < 50_000 || s.ImportPerSec <= 0 || len(s.ImportRuns) != 2 {
		t.Errorf("import: %d hits at %v hits/s, runs %v", s.Hits, s.ImportPerSec, s.ImportRuns)
	}
	for _, after := range []string{bench.AfterKill, bench.AfterStop} {
		r, ok := s.Restart(after)
		if !ok || r.Ready <= 0 || r.Slowest <= 0 || r.All < r.Slowest || len(r.ReadyRuns) != 1 {
			t.Errorf("restart after %s: %+v (measured: %v)", after, r, ok)
		}
		if r.Ready > time.Minute {
			t.Errorf("restart after %s took %v", after, r.Ready)
		}
	}
	if m := s.Idle; m.RSS <= 0 || m.Anon <= 0 || m.File <= 0 || m.Anon+m.File > m.RSS+1<<20 {
		t.Errorf("idle memory: %+v", m)
	}
	md := rep.Markdown("")
	for _, want := range []string{"## 6. The webstatsd binary", "| restart after kill -9, until /healthz |", "| idle RSS after start |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

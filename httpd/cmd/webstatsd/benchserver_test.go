package main

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
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
	// About 7% of the generated hits are bots, which the server drops.
	if s.Accepted < s.Hits*8/10 || s.Accepted >= s.Hits {
		t.Errorf("%d of %d hits accepted", s.Accepted, s.Hits)
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
	// The binary's -cpuprofile, written at the last clean stop, finds
	// the server at work: the engine among the parts.
	if len(rep.Profiles) != 1 || rep.Profiles[0].Name != "server-import" || rep.Profiles[0].CPU <= 0 {
		t.Fatalf("profiles: %+v (notes: %q)", rep.Profiles, rep.Notes)
	}
	engineSeen := false
	for _, p := range rep.Profiles[0].Parts {
		engineSeen = engineSeen || p.Name == "webstats engine"
	}
	if !engineSeen {
		t.Errorf("the import's profile: %+v", rep.Profiles[0].Parts)
	}
	md := rep.Markdown("")
	for _, want := range []string{"## 6. The webstatsd binary", "| restart after kill -9, until /healthz |", "| idle RSS after start |",
		"### server-import: the webstatsd binary", "Bears on: import, 10,000-event NDJSON requests"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// TestBenchPeerRun makes webstats-bench's peer run (quick) with a second
// webstatsd as the peer: the Plausible-compatible server this machine can
// run. Both sides are measured, and the peer counted the Plausible-form
// requests it answered.
func TestBenchPeerRun(t *testing.T) {
	bin := buildBinary(t)
	for _, api := range []string{"v2", "v1"} {
		t.Run(api, func(t *testing.T) { testBenchPeerRun(t, bin, api) })
	}
}

func testBenchPeerRun(t *testing.T, bin, api string) {
	peer := startServer(t, bin, filepath.Join(t.TempDir(), "peer"), "-trust-proxy", "-rate-limit", "0", "-max-conns-per-ip", "-1")
	key := peer.adminKey(t)
	createSite(t, peer.base(), key, url.Values{"domain": {bench.Medium.Domain}})
	cfg := bench.RunConfig{Quick: true, Runs: []string{bench.RunPeer}, Webstatsd: bin, Dir: t.TempDir(),
		Peer: peer.base(), PeerKey: key, PeerName: "webstatsd (the test's peer)", PeerAPI: api,
		HTTPConcurrency: []int{4}, HTTPDuration: 300 * time.Millisecond, PipelineHits: 2_000, PeerQueryHits: 1_000}
	rep, err := bench.Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Peer
	if p == nil || p.Unavailable != "" || p.QueryUnavailable != "" {
		t.Fatalf("peer section: %+v", p)
	}
	// Tracking at the one concurrency of the run; the query alone (one
	// client) and at that concurrency; each for both sides.
	for name, want := range map[string]struct {
		points  []bench.HTTPPoint
		clients []int
	}{"tracking": {p.Tracking, []int{4}}, "queries": {p.Queries, []int{1, 4}}} {
		points := want.points
		if len(points) != 2*len(want.clients) {
			t.Fatalf("%s: %+v (note: %q)", name, points, p.QueryNote)
		}
		for i, pt := range points {
			side := []string{bench.SideWebstats, bench.SidePeer}[i%2]
			if pt.Mode != side || pt.Clients != want.clients[i/2] || pt.PerSec <= 0 || pt.Errors != 0 {
				t.Errorf("%s, point %d: %+v", name, i, pt)
			}
		}
	}
	// The same server on both sides: the same first answer, of 10 rows.
	if p.QueryRows[0] != 10 || p.QueryRows != [2]int{10, 10} || p.QueryRowPageviews[0] <= 0 || p.QueryRowPageviews[0] != p.QueryRowPageviews[1] || p.QueryNote != "" {
		t.Errorf("first answers: rows %v, pageviews %v, note %q", p.QueryRows, p.QueryRowPageviews, p.QueryNote)
	}
	// Both counted the same preload alike (the same server), about 7% of
	// it bots; and the peer counted what it answered since.
	if p.QueryHits != 1_000 || p.QueryPageviews[0] != p.QueryPageviews[1] || p.QueryPageviews[0] < 500 {
		t.Errorf("before the queries: %d requests, pageviews %v", p.QueryHits, p.QueryPageviews)
	}
	var answer struct {
		Results []struct{ Metrics []float64 } `json:"results"`
	}
	now := time.Now().UTC() // the test may cross midnight
	body := `{"site_id":"` + bench.Medium.Domain + `","metrics":["pageviews"],"date_range":["` + now.AddDate(0, 0, -1).Format(time.DateOnly) + `","` + now.Format(time.DateOnly) + `"]}`
	(&client{t: t, base: peer.base(), key: key}).do("POST", "/api/v2/query", "application/json", body, http.StatusOK, &answer)
	if len(answer.Results) != 1 || len(answer.Results[0].Metrics) != 1 || answer.Results[0].Metrics[0] <= p.QueryPageviews[1] {
		t.Errorf("the peer counted %+v pageviews, %v before the tracking load", answer.Results, p.QueryPageviews[1])
	}
	md := rep.Markdown("")
	for _, want := range []string{"## 7. Beside another server (-peer)", "webstatsd (the test's peer)", "| POST /api/event, 4 clients |", map[string]string{
		"v2": "| POST /api/v2/query, 4 clients |", "v1": "| GET /api/v1/stats/breakdown, 4 clients |"}[api]} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

package jetstream_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
)

// TestClusterImportKey: an import's idempotency key travels with its
// batch in the shared log (SPEC §3.4 "Retries": it "holds on every
// cluster node"). A key one node applied is honoured when the retry goes
// to another; two nodes given the same key at once (neither has the
// other's message yet) both publish, and every node applies the first
// message only; then a node restarted from its store still knows the key.
func TestClusterImportKey(t *testing.T) {
	nc := startNATS(t, 3)
	clk := &clock{now: bench.DefaultStart.Add(48 * time.Hour)}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	var nodes []*node
	defer func() {
		for _, n := range nodes {
			n.close(t)
		}
	}()
	for i := range 3 {
		nodes = append(nodes, openNode(t, nc.urls(i), dirs[i], clk, ""))
	}
	site := addSites(t, nodes[0].e, "keys.example")[0]
	waitApplied(t, nodes)
	day := engine.DateFromTime(bench.DefaultStart)
	batch := func(page string, n int) []engine.Hit {
		var hits []engine.Hit
		for i := range n {
			hits = append(hits, engine.Hit{Website: site, Time: bench.DefaultStart.Add(time.Duration(i) * time.Minute),
				URL: page, Visitor: fmt.Sprintf("v%d", i)})
		}
		return hits
	}
	views := func(n *node, page string) uint64 {
		t.Helper()
		p, err := n.e.Unscoped().Stat(ctx, engine.StatQuery{Website: site, Name: "page", From: day, To: day, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Rows {
			if r.Value == page {
				return r.Count
			}
		}
		return 0
	}
	once := func(n *node, key string, hits []engine.Hit) engine.TrackResult {
		t.Helper()
		res, err := n.e.TrackOnce(ctx, key, hits...)
		if err != nil {
			t.Fatalf("TrackOnce(%s): %v", key, err)
		}
		if res.Accepted != len(hits) {
			t.Errorf("TrackOnce(%s): %d accepted, want %d", key, res.Accepted, len(hits))
		}
		return res
	}
	wantViews := func(what, page string, want uint64) {
		t.Helper()
		waitApplied(t, nodes)
		for i, n := range nodes {
			if got := views(n, page); got != want {
				t.Errorf("%s: node %d counted %s %d times, want %d", what, i, page, got, want)
			}
		}
	}

	// Applied on node 0, retried on node 1 and node 2.
	if res := once(nodes[0], "k1", batch("/a", 20)); res.Repeated {
		t.Errorf("first call repeated")
	}
	wantViews("first call", "/a", 20)
	for _, i := range []int{1, 2} {
		if res := once(nodes[i], "k1", batch("/a", 20)); !res.Repeated {
			t.Errorf("retry on node %d: counted again", i)
		}
	}
	wantViews("retries on other nodes", "/a", 20)

	// The same key on every node at once: each may publish; the log
	// decides which message counts, on every node alike.
	for round := range 5 {
		key, page := fmt.Sprintf("race-%d", round), fmt.Sprintf("/race-%d", round)
		var wg sync.WaitGroup
		results := make([]engine.TrackResult, len(nodes))
		for i, n := range nodes {
			wg.Go(func() { results[i] = once(n, key, batch(page, 30)) })
		}
		wg.Wait()
		firsts := 0
		for _, r := range results {
			if !r.Repeated {
				firsts++
			}
		}
		if firsts != 1 {
			t.Errorf("%s: %d calls answered as the first, want 1", key, firsts)
		}
		wantViews(key, page, 30)
	}

	// A restarted node knows the keys (from its snapshot, or from the
	// log it follows again).
	if err := nodes[2].e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	nodes[2].close(t)
	nodes[2] = openNode(t, nc.urls(2), dirs[2], clk, "")
	if res := once(nodes[2], "k1", batch("/a", 20)); !res.Repeated {
		t.Errorf("retry on a restarted node: counted again")
	}
	wantViews("retry on a restarted node", "/a", 20)

	// Seven days on, the key counts again, once.
	clk.set(clk.Now().Add(engine.KeyTTL))
	if res := once(nodes[1], "k1", batch("/a", 20)); res.Repeated {
		t.Errorf("seven days later: repeated")
	}
	wantViews("seven days later", "/a", 40)
}

package jetstream_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
)

var faultSchedules = flag.Int("cluster.schedules", 10, "TestClusterFaults: number of randomized fault schedules")

// Randomized fault schedules on a three-server, three-engine cluster under
// load: a NATS server stops and comes back, an engine restarts (from its
// snapshot), an engine is wiped and rejoins empty, snapshots are taken
// midway. A client sends every hit to the nodes in turn and, when a node
// fails, sends it again to the next, as a tracker retrying against another
// node does. Afterwards every node gives the same answers, and they are a
// single engine's fed the acknowledged hits in order, plus, at most, the
// hits of calls that failed (an unacknowledged publish may have landed).
func TestClusterFaults(t *testing.T) {
	nc := startNATS(t, 3)
	for seed := range *faultSchedules {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { faultSchedule(t, nc, uint64(seed), 0) })
	}
}

// The same schedules with partitions: two websites in two of three
// partitions, each held by two of the three nodes. A restarted node
// resumes what it held; a wiped one gains its share again.
func TestClusterFaultsPartitions(t *testing.T) {
	nc := startNATS(t, 3)
	for seed := range *faultSchedules {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { faultSchedule(t, nc, uint64(seed), 3) })
	}
}

func faultSchedule(t *testing.T, nc *natsCluster, seed uint64, parts int) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	name := fmt.Sprintf("faults%d", seed) // a stream and bucket of its own
	if parts > 0 {
		name += "p"
	}
	clk := &clock{now: bench.DefaultStart}
	open := func(i int, dir string) *node {
		if parts > 0 {
			return openPartNode(t, nc.urls(i), dir, name, fmt.Sprint("n", i), clk, parts, 2)
		}
		return openNode(t, nc.urls(i), dir, clk, name)
	}
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = open(i, t.TempDir())
	}
	defer func() {
		for _, n := range nodes {
			n.close(t)
		}
	}()
	wait := func() {
		t.Helper()
		if parts > 0 {
			settle(t, nodes, parts, 2)
		} else {
			waitApplied(t, nodes)
		}
	}
	single, err := engine.Open(&engine.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	sites := []bench.Site{{Domain: "f.example", PageviewsPerMonth: 4_000, PagesPerDay: 30}}
	if parts > 0 {
		sites = append(sites, bench.Site{Domain: "g.example", PageviewsPerMonth: 2_000, PagesPerDay: 20})
	}
	var domains []string
	for _, s := range sites {
		domains = append(domains, s.Domain)
	}
	ids := addSites(t, nodes[0].e, domains...)
	if got := addSites(t, single, domains...); !slices.Equal(got, ids) {
		t.Fatalf("websites %v in the cluster, %v in one process", ids, got)
	}
	if parts > 0 && engine.PartitionOf(ids[0], parts) == engine.PartitionOf(ids[1], parts) {
		t.Fatalf("websites %v share a partition of %d: the schedule would not move two", ids, parts)
	}
	wait() // the others know the websites before they take their hits
	reopen := func(i int, wipe bool) {
		nodes[i].close(t)
		dir := nodes[i].dir
		if wipe {
			// A new, empty node: it follows the stream from its
			// start, the registry's transactions included.
			dir = t.TempDir()
		}
		nodes[i] = open(i, dir)
	}
	var hits []engine.Hit
	for h := range bench.NewGenerator(bench.Config{Seed: seed, Sites: sites, Days: 2}).Hits() {
		hits = append(hits, h)
	}
	faultAt := map[int]int{}
	for range 4 {
		faultAt[rng.IntN(len(hits))] = rng.IntN(4)
	}
	down := -1 // the NATS server stopped, if any
	defer func() {
		if down >= 0 { // a failed schedule leaves the servers whole
			nc.start(down)
		}
	}()
	failed := 0
	var log []string
	for k, h := range hits {
		if f, ok := faultAt[k]; ok {
			i := rng.IntN(3)
			switch {
			case f == 0 && down < 0:
				nc.stop(i)
				down = i
				log = append(log, fmt.Sprintf("%d: stop nats %d", k, i))
			case f == 0:
				nc.start(down)
				log = append(log, fmt.Sprintf("%d: start nats %d", k, down))
				down = -1
			case f == 1:
				reopen(i, false)
				log = append(log, fmt.Sprintf("%d: restart engine %d", k, i))
			case f == 2:
				reopen(i, true)
				log = append(log, fmt.Sprintf("%d: wipe engine %d", k, i))
			case f == 3:
				if err := nodes[i].e.Snapshot(ctx); err != nil {
					t.Fatal(err)
				}
				log = append(log, fmt.Sprintf("%d: snapshot engine %d", k, i))
			}
		}
		clk.set(h.Time.Add(time.Second))
		want, err := single.Track(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		for try := 0; ; try++ {
			got, err := nodes[(k+try)%3].e.Track(ctx, h)
			if err == nil {
				if got.Accepted != want.Accepted {
					t.Fatalf("hit %d: accepted %d, a single engine %d", k, got.Accepted, want.Accepted)
				}
				break
			}
			failed++
			if try == 5 {
				t.Fatalf("hit %d: every node failed: %v (%v)", k, err, log)
			}
		}
	}
	if down >= 0 {
		nc.start(down)
		down = -1
	}
	wait()
	first := engine.DateFromTime(bench.DefaultStart)
	var pageviews [2]uint64 // the single engine's, the first node's
	for i, id := range ids {
		domain := domains[i]
		want := answers(t, single, id, domain, first, first+1)
		pageviews[0] += want["totals"].(engine.Totals).Pageviews
		for j, n := range nodes {
			got := answers(t, n.e, id, domain, first, first+1)
			if j == 0 {
				pageviews[1] += got["totals"].(engine.Totals).Pageviews
			}
			if failed == 0 {
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("%s: node %d differs from a single engine (-single +node), schedule %v:\n%s", domain, j, log, d)
				}
				continue
			}
			// Failed calls may have landed: the nodes agree with each
			// other, and count more than the single engine by at most
			// their number (below).
			if j > 0 {
				if d := cmp.Diff(answers(t, nodes[0].e, id, domain, first, first+1), got); d != "" {
					t.Fatalf("%s: node %d differs from node 0, schedule %v:\n%s", domain, j, log, d)
				}
			}
		}
	}
	if pageviews[1] < pageviews[0] || pageviews[1] > pageviews[0]+uint64(failed) {
		t.Fatalf("%d pageviews, want %d to %d, schedule %v", pageviews[1], pageviews[0], pageviews[0]+uint64(failed), log)
	}
	t.Logf("%d hits, %d failed calls, schedule %v", len(hits), failed, log)
}

package jetstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/bits"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/jetstream"
	"github.com/webstats/webstats/snapshot"
)

// testLogger logs to stderr when WEBSTATS_TEST_LOG is set (nil otherwise:
// the engine's default, discarded).
func testLogger(name string) *slog.Logger {
	if os.Getenv("WEBSTATS_TEST_LOG") == "" {
		return nil
	}
	var o slog.HandlerOptions
	if os.Getenv("WEBSTATS_TEST_LOG") == "debug" {
		o.Level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &o)).With("node", name)
}

// smallSites adds count small websites (s0.example, ...) to the
// cluster through node and to single, and returns them for a generator,
// with their domains and ids.
func smallSites(t testing.TB, count int, node, single *engine.Engine) ([]bench.Site, []string, []uint32) {
	t.Helper()
	var sites []bench.Site
	var domains []string
	for i := range count {
		d := fmt.Sprintf("s%d.example", i)
		sites, domains = append(sites, bench.Site{Domain: d, PageviewsPerMonth: 2_000, PagesPerDay: 20}), append(domains, d)
	}
	ids := addSites(t, node, domains...)
	addSites(t, single, domains...)
	return sites, domains, ids
}

// openPartNode opens an engine on dir, node name of the cluster's stream
// (name; "" for the default), holding its share of count partitions, each
// held by owners nodes. It is closed at the end of the test if it is not
// before.
func openPartNode(t testing.TB, urls, dir, stream, name string, clk *clock, count, owners int) *node {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	var (
		log *jetstream.Log
		pt  *jetstream.Partitioner
	)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		log, err = jetstream.New(c, nc, jetstream.Options{Name: stream, Node: name})
		if err == nil {
			pt, err = jetstream.NewPartitioner(c, log, jetstream.PartitionOptions{Count: count, Owners: owners, Logger: testLogger(name)})
		}
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jetstream: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	e, err := engine.Open(&engine.Options{Dir: dir, NoSync: true, SnapshotEvery: -1, Now: clk.Now, Cluster: log, Partitions: pt, Logger: testLogger(name)})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{e: e, log: log, nc: nc, dir: dir, pt: pt}
	t.Cleanup(func() { n.close(t) })
	return n
}

// openWrapped opens an engine with options o (its clock, log and
// partitions set here) as node name of the stream on a lone server at
// url, its partitioner passed through wrap (a test's stand-in for some of
// its calls). It is closed at the end of the test if it is not before.
func openWrapped(t testing.TB, url, stream, name string, clk *clock, count, owners int, o engine.Options, wrap func(*jetstream.Partitioner) engine.Partitioner) *node {
	t.Helper()
	n, err := openWrappedErr(t, url, stream, name, clk, count, owners, o, wrap)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// openWrappedErr is openWrapped, returning engine.Open's error (its
// connection and partitioner closed then).
func openWrappedErr(t testing.TB, url, stream, name string, clk *clock, count, owners int, o engine.Options, wrap func(*jetstream.Partitioner) engine.Partitioner) (*node, error) {
	t.Helper()
	conn, err := nats.Connect(url, nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	l, err := jetstream.New(ctx, conn, jetstream.Options{Name: stream, Replicas: 1, Node: name})
	if err != nil {
		t.Fatal(err)
	}
	pt, err := jetstream.NewPartitioner(ctx, l, jetstream.PartitionOptions{Count: count, Owners: owners, Logger: testLogger(name)})
	if err != nil {
		t.Fatal(err)
	}
	o.Now, o.Cluster, o.Partitions, o.NoSync, o.SnapshotEvery, o.Logger = clk.Now, l, wrap(pt), o.FS == nil, -1, testLogger(name)
	e, err := engine.Open(&o)
	if err != nil {
		pt.Close()
		conn.Close()
		return nil, err
	}
	n := &node{e: e, log: l, nc: conn, dir: o.Dir, pt: pt}
	t.Cleanup(func() { n.close(t) })
	return n, nil
}

// plain is openWrapped's wrap that changes nothing.
func plain(pt *jetstream.Partitioner) engine.Partitioner { return pt }

// settle waits until every node holds the partitions it should, the
// partitions are each held by want nodes, and every node has applied the
// messages of what it holds.
func settle(t testing.TB, nodes []*node, count, want int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := settled(nodes, count, want)
		if err == "" {
			return
		}
		if time.Now().After(deadline) {
			for _, n := range nodes {
				t.Logf("node %s: %+v", n.log.Node(), n.e.ClusterMetrics())
			}
			t.Fatalf("partitions did not settle: %s", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func settled(nodes []*node, count, want int) string {
	holders := make([]int, count)
	for _, n := range nodes {
		m := n.e.ClusterMetrics()
		if m.Held != m.Target || m.Ready != m.Held {
			return fmt.Sprintf("node %s holds %b (answers for %b), should hold %b", n.log.Node(), m.Held, m.Ready, m.Target)
		}
		for p := range count {
			if m.Held&(1<<p) != 0 {
				holders[p]++
			}
		}
		last, err := n.pt.Last(ctx, m.Held)
		if err != nil {
			return err.Error()
		}
		if m.Applied < last {
			return fmt.Sprintf("node %s applied %d of %d", n.log.Node(), m.Applied, last)
		}
	}
	for p, h := range holders {
		if h != want {
			return fmt.Sprintf("partition %d held by %d nodes, want %d", p, h, want)
		}
	}
	// Every node knows what the others answer for.
	for _, n := range nodes {
		seen := n.pt.Held()
		for _, m := range nodes {
			if r := m.e.ClusterMetrics().Ready; seen[m.log.Node()] != r {
				return fmt.Sprintf("node %s sees node %s answer for %b, not %b", n.log.Node(), m.log.Node(), seen[m.log.Node()], r)
			}
		}
	}
	return ""
}

// Partitions: nodes join and leave while tracking goes on; after each
// move every node holds only its share, and every node, asking the
// holders for what it does not hold, answers like a single engine.
func TestClusterPartitions(t *testing.T) {
	nc := startNATS(t, 3)
	clk := &clock{now: bench.DefaultStart}
	// With these names, each of the three holds four partitions.
	const count, owners = 6, 2
	single, err := engine.Open(&engine.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	a := openPartNode(t, nc.urls(0), t.TempDir(), "", "a", clk, count, owners)
	b := openPartNode(t, nc.urls(1), t.TempDir(), "", "b", clk, count, owners)
	nodes := []*node{a, b}
	var sites []bench.Site
	var domains []string
	for i := range 6 {
		d := fmt.Sprintf("site%d.example", i)
		sites = append(sites, bench.Site{Domain: d, PageviewsPerMonth: 3_000, PagesPerDay: 20})
		domains = append(domains, d)
	}
	ids := addSites(t, a.e, domains...)
	if got := addSites(t, single, domains...); !slices.Equal(got, ids) {
		t.Fatalf("website ids %v in the cluster, %v in one process", ids, got)
	}
	parts := map[int]bool{}
	for _, id := range ids {
		parts[engine.PartitionOf(id, count)] = true
	}
	if len(parts) != count {
		t.Fatalf("the websites %v fall in %d partitions of %d", ids, len(parts), count)
	}
	const days = 3
	var all []engine.Hit
	for h := range bench.NewGenerator(bench.Config{Seed: 5, Sites: sites, Days: days}).Hits() {
		all = append(all, h)
	}
	k := 0
	track := func(nodes []*node, n int) {
		t.Helper()
		for ; n > 0 && len(all) > 0; n-- {
			batch := all[:min(len(all), 1+k%3)]
			all = all[len(batch):]
			clk.set(batch[len(batch)-1].Time.Add(time.Second))
			want, err := single.Track(ctx, batch...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := nodes[k%len(nodes)].e.Track(ctx, batch...)
			if err != nil {
				t.Fatal(err)
			}
			if got.Accepted != want.Accepted {
				t.Fatalf("call %d: node accepted %d, a single engine %d", k, got.Accepted, want.Accepted)
			}
			k++
		}
	}
	first := engine.DateFromTime(bench.DefaultStart)
	last := first + days - 1
	check := func(nodes []*node) {
		t.Helper()
		for i, id := range ids {
			want := answers(t, single, id, domains[i], first, last)
			for _, n := range nodes {
				got := answers(t, n.e, id, domains[i], first, last)
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("%s (partition %d), node %s (holds %b) differs from a single engine (-single +node):\n%s",
						domains[i], engine.PartitionOf(id, count), n.log.Node(), n.e.ClusterMetrics().Held, d)
				}
			}
		}
	}

	// Two nodes: both hold everything.
	settle(t, nodes, count, 2)
	track(nodes, len(all)/4)
	settle(t, nodes, count, 2)
	check(nodes)
	// A no-op on the registry's subject (what a node publishes when its
	// position has not moved for an hour) moves every node's position
	// (settle waits for it) and changes nothing.
	if err := a.log.Publish(ctx, 0, []byte{'n'}); err != nil {
		t.Fatal(err)
	}
	settle(t, nodes, count, 2)
	check(nodes)

	// A third joins while hits come: it gains its share from the others,
	// which then drop what is no longer theirs.
	c := openPartNode(t, nc.urls(2), t.TempDir(), "", "c", clk, count, owners)
	nodes = append(nodes, c)
	track(nodes, len(all)/3)
	settle(t, nodes, count, owners)
	for _, n := range nodes {
		if h := n.e.ClusterMetrics().Held; bits.OnesCount64(h) != count*owners/3 {
			t.Errorf("node %s holds partitions %b", n.log.Node(), h)
		}
	}
	check(nodes)

	// The first leaves: the two others hold everything again.
	a.close(t)
	nodes = nodes[1:]
	track(nodes, len(all)/2)
	settle(t, nodes, count, 2)
	check(nodes)

	// It comes back on its own store (behind what it held) and takes its
	// share again.
	a = openPartNode(t, nc.urls(0), a.dir, "", "a", clk, count, owners)
	nodes = append(nodes, a)
	track(nodes, len(all))
	settle(t, nodes, count, owners)
	check(nodes)

	// A node's store holds the statistics of its partitions' websites and
	// of no other.
	for _, n := range nodes {
		held := n.e.ClusterMetrics().Held
		n.close(t)
		st, err := snapshot.Open(&snapshot.Options{Dir: n.dir, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			_, err := st.Site(id)
			if mine := held&(1<<engine.PartitionOf(id, count)) != 0; mine != (err == nil) {
				t.Errorf("node %s (holds %b): website %d (partition %d) has a site record: %v", n.log.Node(), held, id, engine.PartitionOf(id, count), err == nil)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d calls", k)
}

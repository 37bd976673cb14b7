package jetstream_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/jetstream"
)

// stalePartitioner gives, for the partitions in stale, a state fetched
// earlier: the state of a holder that is behind this node.
type stalePartitioner struct {
	*jetstream.Partitioner
	mu    sync.Mutex
	stale map[int][]byte
}

func (s *stalePartitioner) Fetch(ctx context.Context, p int) (io.ReadCloser, error) {
	s.mu.Lock()
	b, ok := s.stale[p]
	s.mu.Unlock()
	if ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	return s.Partitioner.Fetch(ctx, p)
}

// A node gains partitions from a holder behind it (the state it imports
// ends before the node's own position), and loses power right after: the
// node must follow the gained partitions from where their state ends, not
// from its own position, and its store must say so, or the records in
// between are missing after the restart.
func TestPartitionGainBehind(t *testing.T) {
	nc := startNATS(t, 1)
	const count, owners = 6, 2 // a holds 0, 3, 4, 5; b 0–3; c 1, 2, 4, 5
	clk := &clock{now: bench.DefaultStart}
	single, err := engine.Open(&engine.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	open := func(name string, o engine.Options, wrap func(*jetstream.Partitioner) engine.Partitioner) *node {
		return openWrapped(t, nc.url(0), "behind", name, clk, count, owners, o, wrap)
	}
	a := open("a", engine.Options{Dir: t.TempDir()}, plain)
	b := open("b", engine.Options{Dir: t.TempDir()}, plain)
	fs := vfs.NewCrashableMem()
	var stale *stalePartitioner
	c := open("c", engine.Options{FS: fs, Dir: "data"}, func(pt *jetstream.Partitioner) engine.Partitioner {
		stale = &stalePartitioner{Partitioner: pt, stale: map[int][]byte{}}
		return stale
	})
	nodes := []*node{a, b, c}
	sites, domains, ids := smallSites(t, count, a.e, single)
	settle(t, nodes, count, owners)
	var hits []engine.Hit
	for h := range bench.NewGenerator(bench.Config{Seed: 9, Sites: sites, Days: 2}).Hits() {
		hits = append(hits, h)
	}
	track := func(hits []engine.Hit) {
		t.Helper()
		for k, h := range hits {
			clk.set(h.Time.Add(time.Second))
			want, err := single.Track(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			got, err := nodes[k%len(nodes)].e.Track(ctx, h)
			if err != nil || got.Accepted != want.Accepted {
				t.Fatalf("hit %d: %+v %v, a single engine %+v", k, got, err, want)
			}
		}
	}
	track(hits[:len(hits)/2])
	settle(t, nodes, count, owners)
	// The states c will be given for the partitions it gains when a
	// leaves, as they are now: behind what follows.
	for _, p := range []int{0, 3} {
		rc, err := stale.Partitioner.Fetch(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		stale.stale[p] = data
	}
	track(hits[len(hits)/2:])
	settle(t, nodes, count, owners)
	if err := c.e.Snapshot(ctx); err != nil { // c's store is at its position
		t.Fatal(err)
	}
	a.close(t)
	nodes = []*node{b, c}
	settle(t, nodes, count, 2)
	first := engine.DateFromTime(bench.DefaultStart)
	check := func(when string, n *node) {
		t.Helper()
		for i, id := range ids {
			want := answers(t, single, id, domains[i], first, first+1)
			got := answers(t, n.e, id, domains[i], first, first+1)
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("%s: %s (partition %d) differs from a single engine (-single +node):\n%s", when, domains[i], engine.PartitionOf(id, count), d)
			}
		}
	}
	check("after the gain", c)
	// Power lost: the store as last synced, then a restart.
	clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rand.New(rand.NewPCG(1, 2))})
	c.close(t)
	c = open("c", engine.Options{FS: clone, Dir: "data"}, plain)
	settle(t, []*node{b, c}, count, 2)
	check("after the restart", c)
}

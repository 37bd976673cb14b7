package jetstream_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/jetstream"
)

// noFetch refuses every fetch.
type noFetch struct{ *jetstream.Partitioner }

func (noFetch) Fetch(ctx context.Context, p int) (io.ReadCloser, error) {
	return nil, errors.New("test: fetch refused")
}

// A node that never gained anything (every fetch refused) restarts: it
// must not take its store, which has applied the registry, for one
// written without partitions, which holds them all; the others would
// then drop partitions it does not have.
func TestPartitionRestartBeforeGain(t *testing.T) {
	nc := startNATS(t, 1)
	const count, owners = 6, 2
	clk := &clock{now: bench.DefaultStart}
	single, err := engine.Open(&engine.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	open := func(name, dir string, wrap func(*jetstream.Partitioner) engine.Partitioner) *node {
		return openWrapped(t, nc.url(0), "beforegain", name, clk, count, owners, engine.Options{Dir: dir}, wrap)
	}
	a := open("a", t.TempDir(), plain)
	b := open("b", t.TempDir(), plain)
	sites, domains, ids := smallSites(t, count, a.e, single)
	settle(t, []*node{a, b}, count, 2)
	k := 0
	for h := range bench.NewGenerator(bench.Config{Seed: 9, Sites: sites, Days: 1}).Hits() {
		clk.set(h.Time.Add(time.Second))
		if _, err := single.Track(ctx, h); err != nil {
			t.Fatal(err)
		}
		if _, err := []*node{a, b}[k%2].e.Track(ctx, h); err != nil {
			t.Fatal(err)
		}
		k++
	}
	settle(t, []*node{a, b}, count, 2)
	if err := a.log.Publish(ctx, 0, []byte{'n'}); err != nil {
		t.Fatal(err)
	}
	cdir := t.TempDir()
	c := open("c", cdir, func(pt *jetstream.Partitioner) engine.Partitioner { return noFetch{pt} })
	time.Sleep(time.Second)
	m := c.e.ClusterMetrics()
	if m.Held != 0 {
		t.Fatalf("c holds %b with every fetch refused", m.Held)
	}
	// Open caught up with the registry (the no-op above is its last
	// message): c's store has applied it, as one written without
	// partitions would have.
	if last, err := c.pt.Last(ctx, 0); err != nil || m.Applied < last || last == 0 {
		t.Fatalf("c applied %d of the registry's %d (%v): the restart below would prove nothing", m.Applied, last, err)
	}
	c.close(t)
	c = open("c", cdir, plain)
	settle(t, []*node{a, b, c}, count, owners)
	first := engine.DateFromTime(bench.DefaultStart)
	for i, id := range ids {
		want := answers(t, single, id, domains[i], first, first)
		got := answers(t, c.e, id, domains[i], first, first)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (partition %d) on c differs (-single +c):\n%s", domains[i], engine.PartitionOf(id, count), d)
		}
	}
}

package jetstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/jetstream"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/plausiblezip/plgen"
)

// smallLog takes messages of at most max bytes, so that an import goes
// through the log as many messages.
type smallLog struct {
	*jetstream.Log
	max int
}

func (l smallLog) MaxMessage() int { return l.max }

// openSmallNode opens a node on dir following the stream name of the lone
// server at url, whose messages are at most max bytes.
func openSmallNode(t *testing.T, url, name, dir string, clk *clock, max int) *node {
	t.Helper()
	return openSmallNodeOn(t, url, name, engine.Options{Dir: dir, NoSync: true, SnapshotEvery: -1}, clk, max)
}

// openSmallNodeOn is openSmallNode with options o (their Now and Cluster
// set here).
func openSmallNodeOn(t *testing.T, url, name string, o engine.Options, clk *clock, max int) *node {
	t.Helper()
	dir := o.Dir
	nc, err := nats.Connect(url, nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	l, err := jetstream.New(ctx, nc, jetstream.Options{Name: name, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	o.Now, o.Cluster = clk.Now, smallLog{l, max}
	e, err := engine.Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{e: e, log: l, nc: nc, dir: dir}
	t.Cleanup(func() { n.close(t) })
	return n
}

// readExport makes a Plausible export (plgen) and reads it.
func readExport(t *testing.T, seed uint64, days int) *plausiblezip.Export {
	t.Helper()
	zip, _ := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 1, 1), Days: days, DailyVisitors: 200, Pages: 6, Cities: 4, Seed: seed})
	x, err := plausiblezip.Read(bytes.NewReader(zip), int64(len(zip)))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// importAnswers are what e says of website's imported layer: its imports
// and queries that include them.
func importAnswers(t *testing.T, e *engine.Engine, website uint32, domain string) map[string]any {
	t.Helper()
	list, err := e.Unscoped().Imports(ctx, website)
	out := map[string]any{}
	if err != nil {
		t.Fatal(err)
	}
	out["imports"] = list
	for k, v := range importQueries(t, e, website, domain) {
		out[k] = v
	}
	return out
}

// sameImports fails unless every node answers website's imported layer as
// the single engine does.
func sameImports(t *testing.T, single *engine.Engine, nodes map[string]*node, website uint32, domain string) map[string]any {
	t.Helper()
	want := importAnswers(t, single, website, domain)
	for name, n := range nodes {
		if d := cmp.Diff(want, importAnswers(t, n.e, website, domain)); d != "" {
			t.Fatalf("node %s differs from a single engine (-single +node):\n%s", name, d)
		}
	}
	return want
}

// TestClusterImport: an import of Plausible's export through node a (many
// messages: the log takes 16 KiB), another through b, then a deletion
// through b: once applied, a and b answer the imported layer as a single
// engine given the same exports; so do a node started afterwards and b
// restarted (SPEC §14, design "The imported layer").
func TestClusterImport(t *testing.T) {
	c := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart}
	const limit = 16 << 10
	a := openSmallNode(t, c.url(0), "imports", t.TempDir(), clk, limit)
	b := openSmallNode(t, c.url(0), "imports", t.TempDir(), clk, limit)
	single, err := engine.Open(&engine.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	const domain = "imp.example"
	id := addSites(t, a.e, domain)[0]
	if got := addSites(t, single, domain)[0]; got != id {
		t.Fatalf("website %d in the cluster, %d in one process", id, got)
	}
	x1, x2 := readExport(t, 1, 30), readExport(t, 2, 10)
	before := a.e.ClusterMetrics().Publishes
	imp, err := a.e.Unscoped().ImportPlausible(ctx, id, x1, "first.zip")
	if err != nil {
		t.Fatal(err)
	}
	if n := a.e.ClusterMetrics().Publishes - before; n < 3 {
		t.Fatalf("the import took %d messages, want several", n)
	}
	want, err := single.Unscoped().ImportPlausible(ctx, id, x1, "first.zip")
	if err != nil {
		t.Fatal(err)
	}
	if imp != want {
		t.Fatalf("import %+v, a single engine's %+v", imp, want)
	}
	// Id 0 is no import: refused before the log, and the followers go
	// on applying (the second import below).
	if err := a.e.Unscoped().DeleteImport(ctx, id, 0); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("delete of import 0: %v, want ErrNotFound", err)
	}
	nodes := map[string]*node{"a": a, "b": b}
	// d, on a file system that can lose power, snapshots after the
	// first import and crashes at the end: its restart replays the
	// import messages after the snapshot over what reached its disk.
	dfs := vfs.NewCrashableMem()
	dopts := engine.Options{FS: dfs, Dir: "data", SnapshotEvery: -1}
	d := openSmallNodeOn(t, c.url(0), "imports", dopts, clk, limit)
	waitApplied(t, []*node{a, b, d})
	if err := d.e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	first := sameImports(t, single, nodes, id, domain)
	if v := first["query0"].(engine.QueryResult).Results[0].Metrics[0]; v == int64(0) {
		t.Fatalf("no imported visitors: %v", first["query0"])
	}

	if imp, err = b.e.Unscoped().ImportPlausible(ctx, id, x2, "second.zip"); err != nil || imp.ID != 2 {
		t.Fatalf("second import %+v, %v", imp, err)
	}
	if _, err := single.Unscoped().ImportPlausible(ctx, id, x2, "second.zip"); err != nil {
		t.Fatal(err)
	}
	if err := b.e.Unscoped().DeleteImport(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	if err := single.Unscoped().DeleteImport(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.e.Unscoped().DeleteImport(ctx, id, 1); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("deleted twice: %v, want ErrNotFound", err)
	}
	waitApplied(t, []*node{a, b})
	got := sameImports(t, single, nodes, id, domain)
	if list := got["imports"].([]engine.Import); len(list) != 1 || list[0].ID != 2 {
		t.Fatalf("imports %+v, want the second only", list)
	}

	// A node started afterwards, and b restarted, have them.
	nodes["c"] = openSmallNode(t, c.url(0), "imports", t.TempDir(), clk, limit)
	b.close(t)
	nodes["b"] = openSmallNode(t, c.url(0), "imports", b.dir, clk, limit)
	waitApplied(t, []*node{a, nodes["b"], nodes["c"]})
	sameImports(t, single, nodes, id, domain)
	// And a deletion after the restart applies there too.
	if err := nodes["c"].e.Unscoped().DeleteImport(ctx, id, 2); err != nil {
		t.Fatal(err)
	}
	if err := single.Unscoped().DeleteImport(ctx, id, 2); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, []*node{a, nodes["b"], nodes["c"]})
	sameImports(t, single, nodes, id, domain)

	// d loses power (no final snapshot), with some of its unsynced
	// writes, and restarts.
	waitApplied(t, []*node{a, d})
	clone := dfs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(1, 2))})
	d.close(t)
	dopts.FS = clone
	d = openSmallNodeOn(t, c.url(0), "imports", dopts, clk, limit)
	waitApplied(t, []*node{a, d})
	sameImports(t, single, map[string]*node{"a": a, "d": d}, id, domain)
}

// TestClusterImportPartitions: with partitions, imports made through a
// node that holds every partition move with the partitions a second node
// gains; both nodes (one asking the other) answer and list them as a
// single engine, and a node that does not hold a website's partition
// refuses to import into it (ErrImportCluster).
func TestClusterImportPartitions(t *testing.T) {
	c := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart}
	const count, owners = 4, 1
	single, err := engine.Open(&engine.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	a := openWrapped(t, c.url(0), "impparts", "a", clk, count, owners, engine.Options{Dir: t.TempDir()}, plain)
	settle(t, []*node{a}, count, owners)
	_, domains, ids := smallSites(t, count, a.e, single)
	for i, id := range ids {
		x := readExport(t, uint64(i+1), 5)
		if _, err := a.e.Unscoped().ImportPlausible(ctx, id, x, "export.zip"); err != nil {
			t.Fatal(err)
		}
		if _, err := single.Unscoped().ImportPlausible(ctx, id, x, "export.zip"); err != nil {
			t.Fatal(err)
		}
	}
	b := openWrapped(t, c.url(0), "impparts", "b", clk, count, owners, engine.Options{Dir: t.TempDir()}, plain)
	nodes := []*node{a, b}
	settle(t, nodes, count, owners)
	gained := b.e.ClusterMetrics().Held
	if gained == 0 {
		t.Fatal("b gained no partition")
	}
	for i, id := range ids {
		holder, other := a, b
		if gained&(1<<engine.PartitionOf(id, count)) != 0 {
			holder, other = b, a
		}
		want := sameImports(t, single, map[string]*node{"holder": holder}, id, domains[i])
		// The other node asks the holder for the queries and the list;
		// it changes imports only where they are held.
		if d := cmp.Diff(want, importAnswers(t, other.e, id, domains[i])); d != "" {
			t.Fatalf("asked through the other node (-single +node):\n%s", d)
		}
		if _, err := other.e.Unscoped().ImportPlausible(ctx, id, readExport(t, 9, 2), "x.zip"); !errors.Is(err, engine.ErrImportCluster) {
			t.Fatalf("import through a node without the partition: %v, want ErrImportCluster", err)
		}
		if err := other.e.Unscoped().DeleteImport(ctx, id, 1); !errors.Is(err, engine.ErrImportCluster) {
			t.Fatalf("deletion through a node without the partition: %v, want ErrImportCluster", err)
		}
	}
}

// importQueries are importAnswers' queries, with include.imports.
func importQueries(t *testing.T, e *engine.Engine, website uint32, domain string) map[string]any {
	t.Helper()
	o := e.Unscoped()
	out := map[string]any{}
	for i, q := range []string{
		`"metrics":["visitors","visits","pageviews","bounce_rate","visit_duration","views_per_visit"]`,
		`"metrics":["visitors","pageviews"],"dimensions":["time:day"]`,
		`"metrics":["visitors","visits"],"dimensions":["visit:source"]`,
		`"metrics":["visitors","pageviews"],"dimensions":["event:page"]`,
		`"metrics":["visitors"],"dimensions":["visit:city"]`,
	} {
		body := fmt.Sprintf(`{"site_id":%q,"date_range":["2024-01-01","2024-03-31"],"include":{"imports":true},%s}`, domain, q)
		eq, err := engine.ParseQuery([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		res, err := o.Query(ctx, website, eq)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint("query", i)] = res
	}
	return out
}

// stallLog is a log whose follower stops at the first import message
// (until its context ends): an import published through it waits.
type stallLog struct{ smallLog }

func (l stallLog) Follow(c context.Context, after uint64, fn func(m engine.LogMessage) error) error {
	return l.smallLog.Follow(c, after, func(m engine.LogMessage) error {
		if len(m.Data) > 0 && m.Data[0] == 'i' {
			<-c.Done()
			return c.Err()
		}
		return fn(m)
	})
}

// TestClusterImportWaitClose: an import waiting for a follower that does
// not apply it does not hold Close (nor, meanwhile, the node's other
// operations).
func TestClusterImportWaitClose(t *testing.T) {
	c := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart}
	nc, err := nats.Connect(c.url(0), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	l, err := jetstream.New(ctx, nc, jetstream.Options{Name: "impstall", Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(&engine.Options{Dir: t.TempDir(), NoSync: true, SnapshotEvery: -1, Now: clk.Now, Cluster: stallLog{smallLog{l, 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	id := addSites(t, e, "stall.example")[0]
	res := make(chan error, 1)
	go func() {
		_, err := e.Unscoped().ImportPlausible(ctx, id, readExport(t, 1, 3), "x.zip")
		res <- err
	}()
	// The import is published, then waits.
	deadline := time.Now().Add(20 * time.Second)
	for e.ClusterMetrics().Publishes == 0 || len(res) > 0 {
		if len(res) > 0 || time.Now().After(deadline) {
			t.Fatalf("the import did not wait: %v", <-res)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	t0 := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waits after 10 s for an import's wait")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := <-res; !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("the waiting import: %v, want ErrClosed", err)
	}
}

// TestClusterImportEscapedName: a file name whose JSON escapes take six
// bytes a character (<, >, &, invalid UTF-8) still fits the import's
// first message; a name is kept to engine.MaxImportFile bytes.
func TestClusterImportEscapedName(t *testing.T) {
	c := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart}
	x := readExport(t, 1, 30)
	// Message sizes from 8 to 24 KiB: the first chunk comes close to
	// its bound under some of them.
	for limit := 8 << 10; limit <= 24<<10; limit += 1 << 10 {
		a := openSmallNode(t, c.url(0), fmt.Sprintf("impname%d", limit), t.TempDir(), clk, limit)
		id := addSites(t, a.e, "name.example")[0]
		for _, name := range []string{strings.Repeat("<", 255), strings.Repeat("&\xff", 200)} {
			imp, err := a.e.Unscoped().ImportPlausible(ctx, id, x, name)
			if err != nil {
				t.Fatalf("messages of %d bytes, an import named %.12q…: %v", limit, name, err)
			}
			if name[0] == '<' && imp.File != name {
				t.Fatalf("file %q (%d bytes)", imp.File, len(imp.File))
			}
		}
		a.close(t)
	}
	const limit = 16 << 10
	a := openSmallNode(t, c.url(0), "impname", t.TempDir(), clk, limit)
	id := addSites(t, a.e, "name.example")[0]
	// Cut (invalid UTF-8 comes back as U+FFFD, as JSON has it).
	imp, err := a.e.Unscoped().ImportPlausible(ctx, id, x, strings.Repeat("é", 200))
	if err != nil || imp.File != strings.Repeat("é", engine.MaxImportFile/2) {
		t.Fatalf("a long name: %q (%d bytes), %v", imp.File, len(imp.File), err)
	}
}

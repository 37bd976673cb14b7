package jetstream_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/jetstream"
)

// A node catching up with the stream loses power (a crash clone of its file
// system) while snapshots run beside its follower, then opens a day later
// with a retention that drops a day at Open (which snapshots at once), and
// follows the rest. Its
// answers for the days it keeps equal a single engine's fed the same hits:
// no record is skipped on resuming, none applied twice.
func TestClusterCrash(t *testing.T) {
	c := startNATS(t, 1)
	for seed := range 8 {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { crashSchedule(t, c, uint64(seed)) })
	}
}

func crashSchedule(t *testing.T, c *natsCluster, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0xc4a5))
	name := fmt.Sprintf("crash%d", seed)
	clk := &clock{now: bench.DefaultStart}
	var sites []bench.Site
	var domains []string
	for i := range 64 {
		d := fmt.Sprintf("s%d.example", i)
		sites = append(sites, bench.Site{Domain: d, PageviewsPerMonth: 1200, PagesPerDay: 10})
		domains = append(domains, d)
	}
	single, err := engine.Open(&engine.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	ids := addSites(t, single, domains...)
	newLog := func() (*nats.Conn, *jetstream.Log) {
		conn, err := nats.Connect(c.url(0), nats.ReconnectBufSize(-1))
		if err != nil {
			t.Fatal(err)
		}
		l, err := jetstream.New(ctx, conn, jetstream.Options{Name: name, Replicas: 1})
		if err != nil {
			t.Fatal(err)
		}
		return conn, l
	}
	// The publisher: a node that is never crashed.
	pub := openNodeOn(t, c.url(0), name, 1, clk, &engine.Options{Dir: t.TempDir(), NoSync: true})
	defer pub.close(t)
	addSites(t, pub.e, domains...)
	// The follower under test, on a file system that can lose power.
	fs := vfs.NewCrashableMem()
	conn, l := newLog()
	// (Its registry comes from the log too.)
	opts := engine.Options{FS: fs, Dir: "data", SnapshotEvery: -1, Now: clk.Now, Retention: 2}
	var hits []engine.Hit
	for h := range bench.NewGenerator(bench.Config{Seed: seed, Sites: sites, Days: 3}).Hits() {
		hits = append(hits, h)
	}
	for _, h := range hits {
		clk.set(h.Time.Add(time.Second))
		if _, err := single.Track(ctx, h); err != nil {
			t.Fatal(err)
		}
		if _, err := pub.e.Track(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	last, err := pub.log.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The node follows the whole stream, snapshots beside it, and loses
	// power partway.
	o := opts
	o.Cluster = l
	f, err := engine.Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	snapRng := rand.New(rand.NewPCG(seed, 3)) // the goroutine's own
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(snapRng.IntN(300)) * time.Microsecond):
			}
			if err := f.Snapshot(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	})
	crashAt := last/4 + rng.Uint64N(last/2)
	unsynced := rng.IntN(101)
	deadline := time.Now().Add(30 * time.Second)
	for f.Metrics().LogSeq < crashAt || f.Metrics().Snapshots == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the node did not reach message %d with a snapshot: %+v", crashAt, f.Metrics())
		}
		time.Sleep(100 * time.Microsecond)
	}
	clone := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: unsynced, RNG: rand.New(rand.NewPCG(seed, 2))})
	close(stop)
	wg.Wait()
	f.Close()
	conn.Close()
	fs = clone
	// The restart, the next day: retention drops the first day at Open.
	clk.set(bench.DefaultStart.AddDate(0, 0, 3).Add(time.Hour))
	conn, l = newLog()
	defer conn.Close()
	o.FS, o.Cluster = fs, l
	f, err = engine.Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	waitApplied(t, []*node{{e: f, log: l}, pub})
	first := engine.DateFromTime(bench.DefaultStart)
	for i, id := range ids {
		want := answers(t, single, id, domains[i], first+1, first+2)
		got := answers(t, f, id, domains[i], first+1, first+2)
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s after the crash differs from a single engine (-single +node), crash at message %d of %d:\n%s", domains[i], crashAt, last, d)
		}
	}
}

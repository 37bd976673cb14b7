package jetstream_test

import (
	"errors"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/webstats/webstats/engine"
	webstatsjs "github.com/webstats/webstats/engine/jetstream"
)

// saltNode starts a lone NATS server and a node on it with a retention of
// three days and one website, s.example, the clock at start; track tracks
// a hit on it at the given time (zero: the clock's).
func saltNode(t *testing.T) (c *natsCluster, n *node, clk *clock, start time.Time, track func(at time.Time)) {
	t.Helper()
	c = startNATS(t, 1)
	start = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	clk = &clock{now: start}
	n = openNodeOn(t, c.urls(0), "", 1, clk, &engine.Options{Dir: t.TempDir(), NoSync: true, SnapshotEvery: -1, Retention: 3})
	t.Cleanup(func() { n.close(t) })
	addSites(t, n.e, "s.example")
	waitApplied(t, []*node{n})
	ua := "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	track = func(at time.Time) {
		t.Helper()
		h := engine.Hit{URL: "https://s.example/", UserAgent: ua, IP: netip.MustParseAddr("8.8.8.8"), Time: at}
		if res, err := n.e.Track(ctx, h); err != nil || res.Accepted != 1 {
			t.Fatalf("hit at %v: %+v, %v", at, res, err)
		}
	}
	return c, n, clk, start, track
}

// With retention, a salt period's shared salt goes from the cluster's
// bucket when the period's data goes, as a single process forgets it; a
// period still within retention keeps its salt.
func TestClusterDropsOldSalts(t *testing.T) {
	_, n, clk, start, track := saltNode(t)

	// One hit on each of two days: two daily salts in the bucket.
	for day := range 2 {
		clk.set(start.AddDate(0, 0, day))
		track(time.Time{})
	}
	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := js.KeyValue(ctx, webstatsjs.DefaultName+"_salts")
	if err != nil {
		t.Fatal(err)
	}
	first := engine.DateFromTime(start)
	has := func(d engine.Date) bool {
		t.Helper()
		_, err := bucket.Get(ctx, "salt."+strconv.Itoa(int(d)))
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if !has(first) || !has(first+1) {
		t.Fatal("the salts of the two days are not in the bucket")
	}

	// Five days on, retention (3 days) has dropped the first day, not the
	// second; a day later, both.
	clk.set(start.AddDate(0, 0, 5))
	if err := n.e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if has(first) {
		t.Error("the first day's salt outlived its data")
	}
	if !has(first + 1) {
		t.Error("the second day's salt went with the first's")
	}
	clk.set(start.AddDate(0, 0, 6))
	if err := n.e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if has(first + 1) {
		t.Error("the second day's salt outlived its data")
	}

	// A hit in a dropped period again (an import into the past, counted
	// until the next snapshot drops it) makes a new salt, which the bucket
	// takes after the purge.
	track(start)
	if !has(first) {
		t.Error("no new salt for the first day")
	}
}

// A purge the cluster cannot take (its server down) keeps the salt where it
// is, and the next snapshot with the server back drops it; the snapshot
// with the server down does not wait longer than the purge's deadline.
func TestClusterDropsOldSaltsLater(t *testing.T) {
	c, n, clk, start, track := saltNode(t)
	track(time.Time{})
	key := "salt." + strconv.Itoa(int(engine.DateFromTime(start)))

	c.stop(0)
	clk.set(start.AddDate(0, 0, 5))
	began := time.Now()
	_ = n.e.Snapshot(ctx) // may fail with the log down; the salt must stay
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("a snapshot with the cluster down took %v", d)
	}
	c.start(0)

	js, err := jetstream.New(n.nc)
	if err != nil {
		t.Fatal(err)
	}
	var bucket jetstream.KeyValue
	deadline := time.Now().Add(30 * time.Second)
	for {
		bucket, err = js.KeyValue(ctx, webstatsjs.DefaultName+"_salts")
		if err == nil {
			_, err = bucket.Get(ctx, key)
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the salt is not in the bucket after the server came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The server is back: the next snapshot drops it.
	deadline = time.Now().Add(30 * time.Second)
	for {
		if err := n.e.Snapshot(ctx); err == nil {
			if _, err := bucket.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the salt is still in the bucket")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package jetstream_test

import (
	"errors"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
)

// A partitioned node whose position the log no longer reaches (the
// messages after it were purged while it was down) refuses to open, as an
// unpartitioned one does, rather than answering without that history;
// its follower must report the gap, not follow again at once in silence.
func TestPartitionFollowGap(t *testing.T) {
	nc := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart}
	dir := t.TempDir()
	open := func() (*node, error) {
		return openWrappedErr(t, nc.url(0), "pgap", "a", clk, 2, 1, engine.Options{Dir: dir, CatchUp: 10 * time.Second}, plain)
	}
	a, err := open()
	if err != nil {
		t.Fatal(err)
	}
	addSites(t, a.e, "gap.example")
	settle(t, []*node{a}, 2, 1)
	applied := a.e.ClusterMetrics().Applied
	a.close(t)

	_, js := nc.raw(t)
	st, err := js.Stream(ctx, "PGAP_HITS")
	if err != nil {
		t.Fatal(err)
	}
	// Messages after the node's position, then purged with it.
	for range 3 {
		if _, err := js.Publish(ctx, "pgap.hits.registry", []byte{'n'}); err != nil {
			t.Fatal(err)
		}
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, natsjs.WithPurgeSequence(info.State.LastSeq)); err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq <= applied+1 {
		t.Fatalf("the stream ends at %d, the node applied %d: no gap made", info.State.LastSeq, applied)
	}
	if _, err := open(); !errors.Is(err, engine.ErrLogGap) {
		t.Fatalf("open after a gap: %v; want ErrLogGap", err)
	}
}

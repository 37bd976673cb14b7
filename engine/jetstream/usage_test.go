package jetstream_test

import (
	"testing"
	"time"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// TestClusterUsageAtClose: an API key used on a node that then closes
// (no snapshot in between) is seen used on the other node: Close writes
// the last uses into the registry while its follower still runs.
func TestClusterUsageAtClose(t *testing.T) {
	nc := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart}
	opts := func() *engine.Options { return &engine.Options{Dir: t.TempDir(), NoSync: true, SnapshotEvery: -1} }
	a := openNodeOn(t, nc.urls(0), "", 1, clk, opts())
	b := openNodeOn(t, nc.urls(0), "", 1, clk, opts())
	defer b.close(t)
	acc, key, err := identity.Must(a.e).CreateAccount(ctx, "Owner", "owner@example.org")
	if err != nil {
		t.Fatal(err)
	}
	clk.set(bench.DefaultStart.Add(time.Hour))
	if _, err := identity.Must(a.e).Authenticate(ctx, key); err != nil {
		t.Fatal(err)
	}
	a.close(t)
	waitApplied(t, []*node{b})
	got, err := identity.Must(b.e).Account(ctx, acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Keys) != 1 || !got.Keys[0].LastUsed.Equal(bench.DefaultStart.Add(time.Hour)) {
		t.Fatalf("the key's last use on the other node: %+v, want %v", got.Keys, bench.DefaultStart.Add(time.Hour))
	}
}

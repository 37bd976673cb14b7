package jetstream_test

import (
	"sync"
	"testing"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// TestClusterReportClaim: three nodes claim the same report at once (as
// each node's scheduler does when it comes due), round after round: one
// claim wins each time, the others see the period taken, and every node
// then records it. A released claim (the delivery failed) lets the next
// claim win, and a release after another period was claimed changes
// nothing.
func TestClusterReportClaim(t *testing.T) {
	nc := startNATS(t, 3)
	clk := &clock{now: bench.DefaultStart}
	var nodes []*node
	for i := range 3 {
		n := openNode(t, nc.urls(i), t.TempDir(), clk, "")
		defer n.close(t)
		nodes = append(nodes, n)
	}
	site := addSites(t, nodes[0].e, "claim.example")[0]
	waitApplied(t, nodes)
	first := engine.DateOf(2026, 1, 5)
	const rounds = 15
	for r := range rounds {
		due := first + engine.Date(7*r)
		var wg sync.WaitGroup
		var won [3]bool
		var errs [3]error
		start := make(chan struct{})
		for i, n := range nodes {
			wg.Go(func() {
				<-start
				won[i], _, _, errs[i] = identity.Must(n.e).ClaimReport(ctx, site, identity.ReportWeekly, due)
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for i := range nodes {
			if errs[i] != nil {
				t.Fatalf("round %d, node %d: %v", r, i, errs[i])
			}
			if won[i] {
				winners++
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d nodes claimed the report of %v (%v)", r, winners, due, won)
		}
		waitApplied(t, nodes)
		for i, n := range nodes {
			got, ok, err := identity.Must(n.e).LastReport(ctx, site, identity.ReportWeekly)
			if err != nil || !ok || got != due {
				t.Fatalf("round %d: node %d records %v (%v, %v), want %v", r, i, got, ok, err, due)
			}
		}
	}
	// A delivery that failed: released, the next claim (another node's) wins.
	last := first + engine.Date(7*(rounds-1))
	due := last + 7
	ok, prev, hadPrev, err := identity.Must(nodes[0].e).ClaimReport(ctx, site, identity.ReportWeekly, due)
	if err != nil || !ok || !hadPrev || prev != last {
		t.Fatalf("claim: %v, prev %v (%v), %v", ok, prev, hadPrev, err)
	}
	if err := identity.Must(nodes[0].e).ReleaseReport(ctx, site, identity.ReportWeekly, due, prev, hadPrev); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, nodes)
	if got, _, _ := identity.Must(nodes[2].e).LastReport(ctx, site, identity.ReportWeekly); got != last {
		t.Fatalf("after the release node 2 records %v, want %v", got, last)
	}
	if ok, _, _, err := identity.Must(nodes[1].e).ClaimReport(ctx, site, identity.ReportWeekly, due); err != nil || !ok {
		t.Fatalf("the claim after a release: %v, %v", ok, err)
	}
	// A stale release (its period claimed again since) changes nothing.
	if err := identity.Must(nodes[0].e).ReleaseReport(ctx, site, identity.ReportWeekly, due-7, prev, hadPrev); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, nodes)
	if got, _, _ := identity.Must(nodes[0].e).LastReport(ctx, site, identity.ReportWeekly); got != due {
		t.Fatalf("after a stale release node 0 records %v, want %v", got, due)
	}
}

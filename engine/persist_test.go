package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// allStats returns every statistic and the totals of every website over
// [from, to], for comparing two engines.
func allStats(t *testing.T, e *engine.Engine, sites []uint32, from, to buckets.Date) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, id := range sites {
		for _, name := range engine.StatNames() {
			out[fmt.Sprint(id, name)] = rows(t, e, id, name, from.String(), to.String())
		}
		tot, err := e.Unscoped().Totals(context.Background(), id, from, to)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint(id, "totals")] = tot
	}
	return out
}

// TestRestartScenario: track → snapshot → more tracking → close → reopen →
// every statistic equals an engine that never restarted; then more tracking
// after the restart numbers visitors and splits visits as the uninterrupted
// engine does.
func TestRestartScenario(t *testing.T) {
	for _, period := range []engine.SaltPeriod{engine.SaltDay, engine.SaltWeek} {
		t.Run(period.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			c := newClock("2026-11-05T12:00:00Z")
			fs := snapshot.NewMemFS()
			mod := func(o *engine.Options) { o.FS = fs; o.SaltPeriod = period }
			steady, _ := openMem(t, c, func(o *engine.Options) { o.SaltPeriod = period })
			e, opts := openMem(t, c, mod)
			sites := propertySites(t, e)
			propertySites(t, steady)
			start := at("2026-11-01T00:00:00Z")
			hits := randomHits(rng, sites, start, 4, 2400)
			parts := [][]engine.Hit{hits[:600], hits[600:1200], hits[1200:1800], hits[1800:]}
			var ids []uint32
			for _, s := range sites {
				ids = append(ids, s.id)
			}
			first, last := buckets.DateFromTime(start)-1, buckets.DateFromTime(start)+5
			for i, part := range parts {
				track(t, steady, part...)
				track(t, e, part...)
				switch i {
				case 0:
					if err := e.Snapshot(context.Background()); err != nil {
						t.Fatal(err)
					}
				case 1, 2:
					// Close (final snapshot) or crash-like reopen: after part 2
					// the engine is reopened without a snapshot of part 2's
					// tail being the only copy: the log replays it.
					if i == 2 {
						if err := e.Snapshot(context.Background()); err != nil {
							t.Fatal(err)
						}
					}
					if err := e.Close(); err != nil {
						t.Fatal(err)
					}
					var err error
					e, err = engine.Open(opts)
					if err != nil {
						t.Fatalf("reopen: %v", err)
					}
					t.Cleanup(func() { e.Close() })
				}
				if diff := cmp.Diff(allStats(t, steady, ids, first, last), allStats(t, e, ids, first, last)); diff != "" {
					t.Fatalf("after part %d: mismatch (-steady +restarted):\n%s", i, diff)
				}
			}
		})
	}
}

// TestReplayWithoutSnapshot: hits acknowledged but never snapshotted are in
// the log; an engine opened on the same store (as after kill -9) counts them
// once.
func TestReplayWithoutSnapshot(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	fs := snapshot.NewMemFS()
	e, opts := openMem(t, c, func(o *engine.Options) { o.FS = fs })
	w := newSite(t, e, "example.com")
	track(t, e, pv("2026-11-21T10:00:00Z", "https://example.com/a"))
	if err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	track(t, e, pv("2026-11-21T10:01:00Z", "https://example.com/b"), pv("2026-11-21T11:01:00Z", "https://example.com/c"))
	// Copy the store as it is now, as a crash would leave it.
	if err := e.Backup(context.Background(), "crash"); err != nil {
		t.Fatal(err)
	}
	o2 := *opts
	o2.Dir = "crash"
	e2, err := engine.Open(&o2)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	day := "2026-11-21"
	want := map[string]uint64{"/a": 1, "/b": 1, "/c": 1}
	if diff := cmp.Diff(want, rows(t, e2, w.ID, "page", day, day)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	tot, _ := e2.Unscoped().Totals(context.Background(), w.ID, date(day), date(day))
	if diff := cmp.Diff(engine.Totals{Visitors: 1, Pageviews: 3, Visits: 2}, tot); diff != "" {
		t.Errorf("totals mismatch (-want +got):\n%s", diff)
	}
	// New visitors after the replay get new ids: a second visitor counts.
	track(t, e2, pv("2026-11-21T11:30:00Z", "https://example.com/d", func(h *engine.Hit) { h.IP = ip("1.1.1.1") }))
	tot, _ = e2.Unscoped().Totals(context.Background(), w.ID, date(day), date(day))
	if tot.Visitors != 2 {
		t.Errorf("visitors after replay = %d, want 2", tot.Visitors)
	}
}

func TestDeleteWebsite(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	fs := snapshot.NewMemFS()
	e, opts := openMem(t, c, func(o *engine.Options) { o.FS = fs })
	w := newSite(t, e, "example.com")
	other := newSite(t, e, "other.com")
	track(t, e, pv("2026-11-20T10:00:00Z", "https://example.com/a"), pv("2026-11-21T10:00:00Z", "https://other.com/a"))
	if err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	track(t, e, pv("2026-11-21T10:00:00Z", "https://example.com/b"))
	if err := e.Unscoped().DeleteWebsite(context.Background(), w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Unscoped().Stat(context.Background(), engine.StatQuery{Website: w.ID, Name: "page", From: 1, To: 2}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Stat of a deleted website: %v", err)
	}
	res := track(t, e, pv("2026-11-21T10:00:00Z", "https://example.com/c"))
	if res.Reasons[0] != engine.DropUnknownSite {
		t.Errorf("hit of a deleted website: %v", res.Reasons)
	}
	e.Close()
	e, err := engine.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Unscoped().Website(context.Background(), w.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("deleted website came back: %v", err)
	}
	// The same domain again: a new id, empty statistics.
	again := newSite(t, e, "example.com")
	if again.ID <= other.ID {
		t.Errorf("id reused: %d", again.ID)
	}
	if got := rows(t, e, again.ID, "page", "2026-11-01", "2026-11-30"); len(got) != 0 {
		t.Errorf("new website has old data: %v", got)
	}
	if got := rows(t, e, other.ID, "page", "2026-11-21", "2026-11-21"); !cmp.Equal(got, map[string]uint64{"/a": 1}) {
		t.Errorf("other website lost data: %v", got)
	}
}

// TestEvictionUnderBudget: with a tiny memory budget, a 400-day history
// answers every query exactly and the resident closed days stay under the
// budget.
func TestEvictionUnderBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("long history; run without -short")
	}
	c := newClock("2026-11-21T12:00:00Z")
	const budget = 64 << 10
	small, _ := openMem(t, c, func(o *engine.Options) { o.MemoryBudget = budget })
	big, _ := openMem(t, c)
	sites := propertySites(t, small)
	propertySites(t, big)
	start := at("2025-10-17T00:00:00Z")
	rng := rand.New(rand.NewPCG(3, 3))
	hits := randomHits(rng, sites[:1], start, 400, 8000)
	for chunk := range slices.Chunk(hits, 500) {
		track(t, small, chunk...)
		track(t, big, chunk...)
		if err := small.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	id := []uint32{sites[0].id}
	first := buckets.DateFromTime(start)
	for _, rg := range [][2]buckets.Date{{first, first + 400}, {first + 100, first + 130}, {first, first}, {first + 399, first + 399}} {
		if diff := cmp.Diff(allStats(t, big, id, rg[0], rg[1]), allStats(t, small, id, rg[0], rg[1])); diff != "" {
			t.Fatalf("%v..%v mismatch (-unbounded +budget):\n%s", rg[0], rg[1], diff)
		}
		if m := small.Metrics(); m.ResidentBytes > budget {
			t.Errorf("resident %d bytes > budget %d", m.ResidentBytes, budget)
		}
	}
	if small.Metrics().Evicted == 0 {
		t.Error("nothing was evicted")
	}
}

// TestMonthRollups: a range over whole closed months reads their rollups;
// an import into a closed month afterwards is counted, and the rollup is
// rebuilt, across snapshots and a restart.
func TestMonthRollups(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, opts := openMem(t, c)
	ref, _ := openMem(t, c)
	sites := propertySites(t, e)
	propertySites(t, ref)
	rng := rand.New(rand.NewPCG(9, 9))
	start := at("2026-07-25T00:00:00Z")
	hits := randomHits(rng, sites, start, 110, 4000)
	track(t, e, hits...)
	track(t, ref, hits...)
	if err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ids []uint32
	for _, s := range sites {
		ids = append(ids, s.id)
	}
	check := func(when string) {
		t.Helper()
		for _, rg := range [][2]string{{"2026-08-01", "2026-10-31"}, {"2026-07-20", "2026-11-21"}, {"2026-09-01", "2026-09-30"}, {"2026-08-15", "2026-09-15"}} {
			if diff := cmp.Diff(allStats(t, ref, ids, date(rg[0]), date(rg[1])), allStats(t, e, ids, date(rg[0]), date(rg[1]))); diff != "" {
				t.Fatalf("%s, %v: mismatch (-reference +rollups):\n%s", when, rg, diff)
			}
		}
	}
	check("first")
	late := randomHits(rng, sites, at("2026-09-10T00:00:00Z"), 2, 50)
	track(t, e, late...)
	track(t, ref, late...)
	check("after an import into September")
	if err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after a snapshot")
	e.Close()
	e, err := engine.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	check("after a restart")
}

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
)

// sealQueries are segment queries whose answers depend on every visit
// column a seal leaves to be derived: entry and exit pages, bounce (with
// interactive and non-interactive events), duration, pageviews, and on
// time on page and scroll depth (engagement reports of sealed visits).
var sealQueries = []string{
	`{"metrics":["visitors","visits","pageviews","events","views_per_visit","bounce_rate","visit_duration"]}`,
	`{"metrics":["visits","bounce_rate","visit_duration"],"dimensions":["visit:entry_page","visit:exit_page"]}`,
	`{"metrics":["visitors","pageviews","bounce_rate","time_on_page","scroll_depth"],"dimensions":["event:page"]}`,
	`{"metrics":["visitors","events"],"dimensions":["event:name","time:hour"]}`,
	`{"metrics":["visits","pageviews"],"dimensions":["visit:source"],"filters":[["has_done",["is","event:name",["Signup"]]]]}`,
	`{"metrics":["visitors","bounce_rate"],"filters":[["is","visit:exit_page",["/p1","/p3"]]]}`,
}

func sealAnswers(t *testing.T, e *Engine, site uint32, from, to string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, body := range sealQueries {
		body = fmt.Sprintf(`{"site_id":"hard.example","date_range":[%q,%q],%s`, from, to, body[1:])
		q, err := ParseQuery([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		res, err := e.Unscoped().Query(context.Background(), site, q)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		b, err := json.Marshal(res.Results)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint("q", i)] = string(b)
	}
	return out
}

// sealedParts counts the sealed parts of site's resident days.
func sealedParts(e *Engine, site uint32) (parts int) {
	e.regMu.RLock()
	s := e.sites[site]
	e.regMu.RUnlock()
	sh := e.shardOf(site)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, ent := range s.state.days {
		parts += int(ent.seg.parts)
	}
	return parts
}

// TestSealedSegments: sealing an open day's rows into the store never
// changes an answer. An engine whose tiny MemoryBudget makes every
// snapshot seal is compared with one that never seals, given the same
// hits (live and imported out of order, visits continuing across seals and
// midnight under a weekly salt, interactive and non-interactive events,
// engagement reports), across restarts, day changes and queries of open
// and closed days.
func TestSealedSegments(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			now := time.Date(2026, 11, 20, 0, 5, 0, 0, time.UTC)
			clock := func() time.Time { return now }
			sealFS := vfs.NewMem()
			sealing, site := hardEngine(t, sealFS, Options{SaltPeriod: SaltWeek, MemoryBudget: 1 << 10, Now: clock})
			plain, site2 := hardEngine(t, vfs.NewMem(), Options{SaltPeriod: SaltWeek, Now: clock})
			defer func() { plain.Close() }()
			if site != site2 {
				t.Fatalf("websites %d and %d", site, site2)
			}
			if sealing.sealBytes != 64 {
				t.Fatalf("sealBytes = %d with a 1 KiB budget, want 64", sealing.sealBytes)
			}
			ctx := context.Background()
			maxParts := 0
			for step := range 60 {
				var hits []Hit
				for range 1 + rng.IntN(12) {
					at := now.Add(-time.Duration(rng.IntN(90)) * time.Minute) // imports reach back before midnight
					h := hardHit(site, at, fmt.Sprint("v", rng.IntN(9)), fmt.Sprint("https://hard.example/p", rng.IntN(4)))
					switch rng.IntN(6) {
					case 0:
						h.Event = &Event{Name: "Signup", NonInteractive: rng.IntN(2) == 0}
					case 1:
						h.Engagement = &Engagement{EngagedMs: int64(1000 + rng.IntN(9000)), ScrollDepth: rng.IntN(101)}
					case 2:
						h.Referrer = "https://www.google.com/search?q=x"
					}
					hits = append(hits, h)
				}
				for _, e := range []*Engine{sealing, plain} {
					if _, err := e.Track(ctx, hits...); err != nil {
						t.Fatal(err)
					}
					if err := e.Snapshot(ctx); err != nil {
						t.Fatal(err)
					}
				}
				maxParts = max(maxParts, sealedParts(sealing, site))
				if step%7 == 6 {
					// A restart reads the open day back as its value (the
					// rows since the last seal) and its parts.
					if err := sealing.Close(); err != nil {
						t.Fatal(err)
					}
					var err error
					if sealing, err = Open(&Options{FS: sealFS, Dir: "data", SnapshotEvery: -1, SaltPeriod: SaltWeek, MemoryBudget: 1 << 10, Now: clock}); err != nil {
						t.Fatal(err)
					}
				}
				for _, r := range [][2]string{{"2026-11-19", "2026-11-22"}, {now.Format(time.DateOnly), now.Format(time.DateOnly)}} {
					want, got := sealAnswers(t, plain, site, r[0], r[1]), sealAnswers(t, sealing, site, r[0], r[1])
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("step %d, %v: sealing engine's answers differ (-never sealed +sealed):\n%s", step, r, diff)
					}
				}
				now = now.Add(time.Duration(20+rng.IntN(60)) * time.Minute)
			}
			if maxParts < 5 {
				t.Errorf("at most %d sealed parts resident: the test did not seal", maxParts)
			}
			sealing.Close()
		})
	}
}

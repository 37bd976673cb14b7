package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/segments"
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
	`{"metrics":["visitors","pageviews"],"dimensions":["event:props:plan"]}`,
}

func sealAnswers(t *testing.T, e *Engine, site uint32, from, to string) map[string]string {
	t.Helper()
	out, err := sealAnswersErr(e, site, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sealAnswersErr(e *Engine, site uint32, from, to string) (map[string]string, error) {
	out := map[string]string{}
	for i, body := range sealQueries {
		body = fmt.Sprintf(`{"site_id":"hard.example","date_range":[%q,%q],%s`, from, to, body[1:])
		q, err := ParseQuery([]byte(body))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", body, err)
		}
		res, err := e.Unscoped().Query(context.Background(), site, q)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", body, err)
		}
		b, err := json.Marshal(res.Results)
		if err != nil {
			return nil, err
		}
		out[fmt.Sprint("q", i)] = string(b)
	}
	return out, nil
}

// sealHits returns 1 to n random hits of 9 visitors on 4 pages, up to
// back minutes before now: pageviews (some from Google, some with a prop),
// interactive and non-interactive events, engagement reports.
func sealHits(rng *rand.Rand, site uint32, now time.Time, n, back int) []Hit {
	var hits []Hit
	for range 1 + rng.IntN(n) {
		at := now.Add(-time.Duration(rng.IntN(back)) * time.Minute)
		h := hardHit(site, at, fmt.Sprint("v", rng.IntN(9)), fmt.Sprint("https://hard.example/p", rng.IntN(4)))
		switch rng.IntN(6) {
		case 0:
			h.Event = &Event{Name: "Signup", NonInteractive: rng.IntN(2) == 0}
		case 1:
			h.Engagement = &Engagement{EngagedMs: int64(1000 + rng.IntN(9000)), ScrollDepth: rng.IntN(101)}
		case 2:
			h.Referrer = "https://www.google.com/search?q=x"
		}
		if rng.IntN(3) == 0 {
			h.Props = []Prop{{Key: "plan", Value: fmt.Sprint("p", rng.IntN(3))}}
		}
		hits = append(hits, h)
	}
	return hits
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
		parts += int(ent.seg.Parts)
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
				hits := sealHits(rng, site, now, 12, 90) // imports reach back before midnight
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
			hits := sealing.parts.Hits()
			if hits == 0 {
				t.Error("no query read a sealed part from the cache: the test did not exercise it")
			}
			hits = sealing.wholes.Hits()
			if hits == 0 {
				t.Error("no query read an open day made whole from the cache: the test did not exercise it")
			}
			sealing.Close()
		})
	}
}

// TestKickOnlySealableDays: writes to a past day, which no snapshot seals
// (it is frozen before the seal check), ask for no early snapshot however
// many rows it holds: at most one when the day was read back from the store
// and may still be today somewhere (within a day of the UTC date), none
// when it is older. (Before, every write asked for one, a snapshot a
// second for as long as an import into the past went on.)
func TestKickOnlySealableDays(t *testing.T) {
	for _, tc := range []struct {
		daysBack int
		most     uint64
	}{{1, 1}, {3, 0}} {
		t.Run(fmt.Sprint("days_back=", tc.daysBack), func(t *testing.T) {
			now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
			fs := vfs.NewMem()
			o := Options{MemoryBudget: 1 << 20, Now: func() time.Time { return now }}
			e, site := hardEngine(t, fs, o) // no background loop
			ctx := context.Background()
			past := now.AddDate(0, 0, -tc.daysBack)
			var hits []Hit
			for i := range 3000 {
				hits = append(hits, hardHit(site, past.Add(time.Duration(i)*time.Second), fmt.Sprint("v", i), "https://hard.example/p"))
			}
			if _, err := e.Track(ctx, hits...); err != nil {
				t.Fatal(err)
			}
			if e.sealBytes > 3000*segments.HitBytes {
				t.Fatalf("sealBytes %d: the day is too small to ask for a snapshot", e.sealBytes)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			// Read back from the store by the first write, with the
			// background loop on (a snapshot an hour, and early ones).
			o.FS, o.Dir, o.SnapshotEvery = fs, "data", time.Hour
			var err error
			if e, err = Open(&o); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				before := e.counters.snapshots.Load()
				for i := range 25 { // an import trickling into the past day
					h := hardHit(site, past.Add(time.Duration(i)*time.Second), fmt.Sprint("late", round, i), "https://hard.example/q")
					if _, err := e.Track(ctx, h); err != nil {
						t.Fatal(err)
					}
					time.Sleep(100 * time.Millisecond)
				}
				most := tc.most
				if round == 1 {
					most = 0 // frozen as past by a snapshot since
				}
				if n := e.counters.snapshots.Load() - before; n > most {
					t.Errorf("round %d: %d early snapshots asked by writes to a day %d days back, want at most %d", round, n, tc.daysBack, most)
				}
				if p := sealedParts(e, site); p != 0 {
					t.Errorf("round %d: the past day has %d sealed parts", round, p)
				}
				if err := e.Snapshot(ctx); err != nil {
					t.Fatal(err)
				}
			}
			e.Close()
		})
	}
}

// TestSealConcurrentCrash: snapshots run beside tracking, so rows are
// applied between a seal's collection and the dropping of the sealed rows
// (dropSealed keeps them, props included); queries run beside both; then
// the sealing engine loses power and replays its log onto its sealed days.
// Its answers must equal those of an engine that never seals.
func TestSealConcurrentCrash(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			var nowNs atomic.Int64
			nowNs.Store(time.Date(2026, 11, 20, 22, 30, 0, 0, time.UTC).UnixNano())
			clock := func() time.Time { return time.Unix(0, nowNs.Load()).UTC() }
			sealFS := vfs.NewCrashableMem()
			sealing, site := hardEngine(t, sealFS, Options{SaltPeriod: SaltWeek, MemoryBudget: 1 << 10, Now: clock})
			plain, _ := hardEngine(t, vfs.NewMem(), Options{SaltPeriod: SaltWeek, Now: clock})
			defer plain.Close()
			ctx := context.Background()
			stop := make(chan struct{})
			errs := make(chan error, 2)
			var wg sync.WaitGroup
			background := func(f func() error) {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := f(); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			background(func() error { return sealing.Snapshot(ctx) })
			background(func() error {
				_, err := sealAnswersErr(sealing, site, "2026-11-19", "2026-11-22")
				return err
			})
			for range 150 {
				now := clock()
				hits := sealHits(rng, site, now, 8, 60)
				for _, e := range []*Engine{sealing, plain} {
					for _, h := range hits { // one a call: interleaved with the snapshots
						if _, err := e.Track(ctx, h); err != nil {
							t.Fatal(err)
						}
					}
				}
				nowNs.Add(int64(time.Duration(1+rng.IntN(3)) * time.Minute))
				time.Sleep(2 * time.Millisecond)
			}
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if n := sealedParts(sealing, site); n < 5 {
				t.Fatalf("%d sealed parts: the test did not seal", n)
			}
			want := sealAnswers(t, plain, site, "2026-11-19", "2026-11-22")
			if diff := cmp.Diff(want, sealAnswers(t, sealing, site, "2026-11-19", "2026-11-22")); diff != "" {
				t.Fatalf("before the crash (-never sealed +sealed):\n%s", diff)
			}
			// Power loss: what was synced survives; the log is replayed
			// onto the sealed days.
			clone := sealFS.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
			sealing.Close()
			re, err := Open(&Options{FS: clone, Dir: "data", SnapshotEvery: -1, SaltPeriod: SaltWeek, MemoryBudget: 1 << 10, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			defer re.Close()
			if diff := cmp.Diff(want, sealAnswers(t, re, site, "2026-11-19", "2026-11-22")); diff != "" {
				t.Fatalf("after the crash (-never sealed +sealed):\n%s", diff)
			}
		})
	}
}

// TestSealAfterZoneChange: a day a snapshot closed as past becomes today
// again when its website's time zone moves west; it is sealed again then.
// (Before, it stayed closed: today's rows grew unsealed for up to a day.)
func TestSealAfterZoneChange(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 7, 22, 22, 30, 0, 0, time.UTC) // 00:30 on the 23rd in Berlin
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }})
	defer e.Close()
	e.sealBytes = 64 // no budget: the closed day stays resident
	berlin, ny := "Europe/Berlin", "America/New_York"
	if _, err := e.Unscoped().UpdateWebsite(ctx, site, WebsiteInput{Timezone: &berlin}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Track(ctx, hardHit(site, now.Add(-2*time.Hour), "v1", "https://hard.example/a")); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil { // 2026-07-22 is past in Berlin: closed
		t.Fatal(err)
	}
	if _, err := e.Unscoped().UpdateWebsite(ctx, site, WebsiteInput{Timezone: &ny}); err != nil {
		t.Fatal(err)
	}
	var hits []Hit
	for i := range 50 { // 2026-07-22 in New York
		hits = append(hits, hardHit(site, now.Add(-time.Duration(i)*time.Minute), fmt.Sprint("n", i), "https://hard.example/b"))
	}
	if _, err := e.Track(ctx, hits...); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if p := sealedParts(e, site); p == 0 {
		t.Errorf("today (2026-07-22 in New York) was not sealed: %d parts", p)
	}
}

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/segments"
)

// TestDimMemoEqualsScan (issue #37: "where the day buckets answer faster,
// they must answer the same thing"): an unfiltered breakdown by one
// dimension answers the same with the memo of closed days' breakdowns as
// scanning every day, over random hits on closed and open days, late hits
// on days closed before, daily and weekly salts (a week's days share
// their visitors: scanned, never from the memo). The memo is used
// (segments.DimMemoHits grows) under daily salts.
func TestDimMemoEqualsScan(t *testing.T) {
	defer SetDimMemo(SetDimMemo(true))
	for _, salt := range []SaltPeriod{SaltDay, SaltWeek} {
		for _, seed := range []uint64{1, 2} {
			t.Run(fmt.Sprintf("salt=%v/seed=%d", salt, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				now := time.Date(2026, 11, 20, 0, 5, 0, 0, time.UTC)
				e, site := hardEngine(t, vfs.NewMem(), Options{SaltPeriod: salt, Now: func() time.Time { return now }, QueryCache: -1})
				defer e.Close()
				ctx := context.Background()
				if _, err := e.Unscoped().AddGoal(ctx, site, Goal{EventName: "Signup"}); err != nil {
					t.Fatal(err)
				}
				h0 := segments.DimMemoHits.Load()
				for step := range 40 {
					if _, err := e.Track(ctx, sealHits(rng, site, now, 15, 600)...); err != nil {
						t.Fatal(err)
					}
					if err := e.Snapshot(ctx); err != nil {
						t.Fatal(err)
					}
					if step%4 == 3 {
						checkDimMemo(t, e, site, step)
					}
					now = now.Add(time.Duration(30+rng.IntN(120)) * time.Minute)
				}
				if n := segments.DimMemoHits.Load() - h0; salt == SaltDay && n == 0 {
					t.Error("no day's breakdown came from its memo")
				}
			})
		}
	}
}

// dimMemoBodies are unfiltered breakdowns by one dimension.
var dimMemoBodies = []string{
	`"metrics":["visitors","visits","pageviews","events","bounce_rate","visit_duration"],"dimensions":["visit:source"]`,
	`"metrics":["visitors"],"dimensions":["visit:source"]`,
	`"metrics":["visitors","pageviews","bounce_rate"],"dimensions":["event:page"],"include":{"total_rows":true},"pagination":{"limit":2}`,
	`"metrics":["visitors","visits","bounce_rate","visit_duration"],"dimensions":["visit:entry_page"]`,
	`"metrics":["visits"],"dimensions":["visit:exit_page"]`,
	`"metrics":["visitors","percentage"],"dimensions":["visit:browser"]`,
	`"metrics":["visitors"],"dimensions":["visit:country_name"]`,
	`"metrics":["visitors"],"dimensions":["visit:city"]`,
	`"metrics":["events","visitors"],"dimensions":["event:name"]`,
	`"metrics":["visitors","events"],"dimensions":["event:props:plan"]`,
	`"metrics":["visitors"],"dimensions":["visit:country","visit:country_name"]`,
	`"metrics":["visitors","events"],"dimensions":["event:name"],"filters":[["is_not","event:name",["pageview"]]]`,
	`"metrics":["visitors","pageviews"],"dimensions":["event:page"],"filters":[["is","event:name",["pageview"]]]`,
	`"metrics":["visitors","visits","bounce_rate","visit_duration"],"filters":[["is","visit:source",["Google"]]]`,
	`"metrics":["visitors","bounce_rate"],"dimensions":["visit:source"],"filters":[["is","event:page",["/p1"]]]`,
	`"metrics":["visitors"],"dimensions":["visit:source"],"filters":[["has_done",["is","event:name",["Signup"]]]]`,
	`"metrics":["visitors"],"dimensions":["visit:source"],"filters":[["is","event:goal",["Signup"]]]`,
	`"metrics":["visitors"],"dimensions":["time:day"]`,
	`"metrics":["visitors","visits","bounce_rate"],"dimensions":["time:week"]`,
	`"metrics":["visitors","pageviews"],"dimensions":["time:month"],"filters":[["is","event:name",["pageview"]]]`,
	`"metrics":["visitors","pageviews"],"dimensions":["time:hour"]`,
	`"metrics":["visitors","visits","pageviews","events","bounce_rate","visit_duration","views_per_visit"]`,
}

// checkDimMemo compares each of dimMemoBodies, over ranges of closed and
// open days, answered with the memo off, then on twice (kept, then used).
func checkDimMemo(t *testing.T, e *Engine, site uint32, step int) {
	t.Helper()
	ctx := context.Background()
	o := e.Unscoped()
	for _, r := range [][2]string{{"2026-11-19", "2026-11-30"}, {"2026-11-20", "2026-11-21"}, {"2026-11-22", "2026-11-22"}} {
		for _, b := range dimMemoBodies {
			body := fmt.Sprintf(`{"site_id":"hard.example","date_range":[%q,%q],`+b+`}`, r[0], r[1])
			q, err := ParseQuery([]byte(body))
			if err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			var got [3]string
			for i, on := range []bool{false, true, true} {
				SetDimMemo(on)
				res, err := o.Query(ctx, site, q)
				if err != nil {
					t.Fatalf("step %d: %s: %v", step, body, err)
				}
				j, _ := json.Marshal(res)
				got[i] = string(j)
			}
			for i := 1; i < 3; i++ {
				if diff := cmp.Diff(got[0], got[i]); diff != "" {
					t.Fatalf("step %d: %s: with the memo (pass %d) differs (-scan +memo):\n%s", step, body, i, diff)
				}
			}
		}
	}
}

// TestDimMemoInvalidated: a closed day's breakdown kept in its memo is
// not what a later query of the day answers once visits are written to
// it (copy on write, closed again), nor after a restart: each answer is
// the visits by source the test tracked.
func TestDimMemoInvalidated(t *testing.T) {
	defer SetDimMemo(SetDimMemo(true))
	ctx := context.Background()
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	now := day.Add(36 * time.Hour) // closed in every time zone
	e, site := hardEngine(t, vfs.NewMem(), Options{QueryCache: -1, Now: func() time.Time { return now }})
	defer func() { e.Close() }()
	want := map[string]int{}
	n := 0
	track := func(k int) {
		t.Helper()
		var hs []Hit
		for range k {
			h := hardHit(site, day.Add(time.Duration(n)*time.Second), fmt.Sprint("v", n), "https://hard.example/p")
			src := "Direct / None"
			if n%3 == 0 {
				h.Referrer, src = "https://www.google.com/", "Google"
			}
			want[src]++
			n++
			hs = append(hs, h)
		}
		if _, err := e.Track(ctx, hs...); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(what string) {
		t.Helper()
		q, err := ParseQuery([]byte(`{"site_id":"hard.example","date_range":["2026-11-20","2026-11-20"],"metrics":["visits"],"dimensions":["visit:source"]}`))
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Unscoped().Query(ctx, site, q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res.Results {
			got = append(got, fmt.Sprintf("%v=%v", r.Dimensions[0], r.Metrics[0]))
		}
		exp := []string{fmt.Sprintf("Direct / None=%d", want["Direct / None"]), fmt.Sprintf("Google=%d", want["Google"])}
		if strings.Join(got, " ") != strings.Join(exp, " ") {
			t.Errorf("%s: %v, want %v", what, got, exp)
		}
	}
	track(300)
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	h0 := segments.DimMemoHits.Load()
	ask("first")
	ask("again")
	if segments.DimMemoHits.Load() != h0+1 {
		t.Fatalf("the repeated query found the memo %d times, want 1", segments.DimMemoHits.Load()-h0)
	}
	track(30)
	ask("written again")
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	ask("closed again")
	ask("closed again, repeated")
	track(9)
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	fs := e.opts.FS
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o := e.opts
	o.FS = fs
	var err error
	if e, err = Open(&o); err != nil {
		t.Fatal(err)
	}
	ask("reopened")
	ask("reopened, repeated")
}

// TestDimMemoBytesCounted: what the closed days' memos keep of their
// breakdowns is counted in the budget as it is kept (counters.dimMemos,
// part of Metrics.ResidentBytes), never above the days' bounds, and
// leaves the count with its day: evicted, or, for a day left any other
// way (a website deleted), once its memo is garbage.
func TestDimMemoBytesCounted(t *testing.T) {
	defer SetDimMemo(SetDimMemo(true))
	rng := rand.New(rand.NewPCG(5, 9))
	now := time.Date(2026, 11, 20, 0, 5, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }, QueryCache: -1})
	defer e.Close()
	ctx := context.Background()
	if _, err := e.Unscoped().AddGoal(ctx, site, Goal{EventName: "Signup"}); err != nil {
		t.Fatal(err)
	}
	for range 30 {
		if _, err := e.Track(ctx, sealHits(rng, site, now, 15, 600)...); err != nil {
			t.Fatal(err)
		}
		if err := e.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Duration(60+rng.IntN(120)) * time.Minute)
	}
	if got := e.counters.dimMemos.Load(); got != 0 {
		t.Fatalf("%d bytes of breakdowns before any query", got)
	}
	checkDimMemo(t, e, site, 0)
	kept := e.counters.dimMemos.Load()
	bound := int64(0)
	e.regMu.RLock()
	s := e.sites[site]
	e.regMu.RUnlock()
	sh := e.shardOf(site)
	sh.mu.Lock()
	for _, ent := range s.state.days {
		if ent.seg != nil && ent.seg.Memo() != nil {
			bound += int64(segments.DimMemoBytes(ent.seg.Visits()))
		}
	}
	sh.mu.Unlock()
	if kept <= 0 || kept > bound {
		t.Fatalf("the memos keep %d bytes of breakdowns, want some and at most the days' bound %d", kept, bound)
	}
	if m := e.Metrics(); m.ResidentBytes < kept+e.counters.resident.Load() {
		t.Errorf("ResidentBytes %d does not count the memos' %d bytes", m.ResidentBytes, kept)
	}
	// Evicted: every closed day leaves memory, and its memo's bytes the count.
	e.opts.MemoryBudget = 1
	e.snapMu.Lock()
	e.evictLocked(now)
	e.snapMu.Unlock()
	if got := e.counters.dimMemos.Load(); got != 0 {
		t.Errorf("every day evicted: %d bytes of breakdowns still counted", got)
	}
	e.opts.MemoryBudget = 0
	// Read again, kept again; then the website goes: its days' memos are
	// garbage, and their bytes leave the count with them.
	checkDimMemo(t, e, site, 1)
	if e.counters.dimMemos.Load() == 0 {
		t.Fatal("nothing kept after the days were read again")
	}
	if err := e.Unscoped().DeleteWebsite(ctx, site); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.counters.dimMemos.Load() != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := e.counters.dimMemos.Load(); got != 0 {
		t.Errorf("website deleted: %d bytes of breakdowns still counted after GC", got)
	}
}

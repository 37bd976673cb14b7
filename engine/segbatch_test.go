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

// TestQueryBatchEqualsQuery (issue #37: the overview's cards share one
// scan): QueryBatch answers each query of a set as Query answers it
// alone: the overview's set (totals, session metrics, the chart's series,
// a breakdown per card with a limit and total_rows, conversion rates),
// unfiltered and under random filters, with ranges that differ, over
// random hits on closed and open days, daily and weekly salts, with and
// without sealed parts read in chunks. Query's answers are computed with
// the answer cache off, so neither side serves the other's.
func TestQueryBatchEqualsQuery(t *testing.T) {
	for _, salt := range []SaltPeriod{SaltDay, SaltWeek} {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("salt=%v/seed=%d", salt, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 5))
				now := time.Date(2026, 11, 20, 0, 5, 0, 0, time.UTC)
				o := Options{SaltPeriod: salt, Now: func() time.Time { return now }, QueryCache: -1}
				if seed == 3 {
					o.MemoryBudget = 1 << 10 // seals, and reads the sealed days in chunks
				}
				e, site := hardEngine(t, vfs.NewMem(), o)
				defer e.Close()
				if seed == 3 {
					e.wholeLimit = 2 * int64(e.sealBytes)
				}
				ctx := context.Background()
				for step := range 30 {
					if _, err := e.Track(ctx, sealHits(rng, site, now, 15, 120)...); err != nil {
						t.Fatal(err)
					}
					if err := e.Snapshot(ctx); err != nil {
						t.Fatal(err)
					}
					if step%5 == 4 {
						checkBatch(t, e, site, rng, step)
					}
					now = now.Add(time.Duration(20+rng.IntN(90)) * time.Minute)
				}
			})
		}
	}
}

// batchFilters are the filters a batch's queries share.
var batchFilters = []string{
	``,
	`,"filters":[["is","visit:source",["Google"]]]`,
	`,"filters":[["is","event:page",["/p1","/p2"]]]`,
	`,"filters":[["is_not","visit:exit_page",["/p3"]],["has_done",["is","event:name",["Signup"]]]]`,
	`,"filters":[["contains","event:props:plan",["p1"]]]`,
}

// batchBodies are the overview's queries (%s: the filters).
var batchBodies = []string{
	`"metrics":["visitors","visits","pageviews","events","bounce_rate","visit_duration"]%s`,
	`"metrics":["pageviews","events"]%s`,
	`"metrics":["visitors","pageviews"],"dimensions":["time:day"],"include":{"time_labels":true}%s`,
	`"metrics":["visitors","pageviews"],"dimensions":["time:hour"]%s`,
	`"metrics":["pageviews"],"dimensions":["event:page"],"include":{"total_rows":true},"pagination":{"limit":2}%s`,
	`"metrics":["visits"],"dimensions":["visit:entry_page"],"include":{"total_rows":true},"pagination":{"limit":10}%s`,
	`"metrics":["visits"],"dimensions":["visit:source"],"include":{"total_rows":true}%s`,
	`"metrics":["visitors"],"dimensions":["visit:country","visit:country_name"],"pagination":{"limit":10}%s`,
	`"metrics":["visitors","percentage"],"dimensions":["visit:browser"]%s`,
	`"metrics":["events"],"dimensions":["event:name"],"pagination":{"limit":1}%s`,
	`"metrics":["visitors","conversion_rate"],"dimensions":["event:goal"]%s`,
	`"metrics":["visitors","bounce_rate","time_on_page","scroll_depth"],"dimensions":["event:page"]%s`,
	`"metrics":["visitors"],"dimensions":["event:props:plan"]%s`,
}

func checkBatch(t *testing.T, e *Engine, site uint32, rng *rand.Rand, step int) {
	t.Helper()
	ctx := context.Background()
	o := e.Unscoped()
	if _, err := o.AddGoal(ctx, site, Goal{EventName: "Signup"}); err != nil && step == 4 {
		t.Fatal(err)
	}
	ranges := [][2]string{{"2026-11-19", "2026-11-23"}, {"2026-11-20", "2026-11-20"}, {"2026-11-21", "2026-11-22"}}
	for _, fs := range batchFilters {
		var qs []Query
		var bodies []string
		for _, b := range batchBodies {
			r := ranges[0]
			if rng.IntN(3) == 0 {
				r = ranges[rng.IntN(len(ranges))]
			}
			body := fmt.Sprintf(`{"site_id":"hard.example","date_range":[%q,%q],`+b+`}`, r[0], r[1], fs)
			q, err := ParseQuery([]byte(body))
			if err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			qs = append(qs, q)
			bodies = append(bodies, body)
		}
		got, err := o.QueryBatch(ctx, site, qs)
		if err != nil {
			t.Fatalf("step %d: batch: %v", step, err)
		}
		for i, q := range qs {
			want, err := o.Query(ctx, site, q)
			if err != nil {
				t.Fatalf("step %d: %s: %v", step, bodies[i], err)
			}
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got[i])
			if diff := cmp.Diff(string(wj), string(gj)); diff != "" {
				t.Fatalf("step %d: %s: batch differs from Query (-Query +batch):\n%s", step, bodies[i], diff)
			}
		}
	}
}

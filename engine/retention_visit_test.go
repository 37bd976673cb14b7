package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestRetentionDroppedVisitRowNotReused: a late import into a day older
// than the retention cut counts until the next snapshot drops the day, but
// the visitor state of its salt period (which ends after the cut) stays,
// with each visitor's segments row in the dropped day. When a later import
// made the day again, a returning visitor's old row number named a row of
// the new day and the hit continued that visit: another visitor's (two
// visitors merged into one visit: fewer visitors, a duration where each
// had none) or another of the same visitor's (an hour-long visit of two
// bounces). Metamorphic seed 9 did this when a concurrent snapshot dropped
// the day in the middle of an import.
func TestRetentionDroppedVisitRowNotReused(t *testing.T) {
	for _, tc := range []struct {
		name string
		// now and retention put day in the retention window at first, in
		// a salt period that is not the current one but ends after the
		// cut; later moves the cut past day.
		now, later string
		salt       engine.SaltPeriod
		budget     int64
		day        string
		before     []engine.Hit // tracked, then a snapshot drops day (at later)
		after      [][]engine.Hit
		want       string // visits of day by exit page
	}{{
		// A's visit was row 0 of the dropped day; C's visit is row 0 of
		// the day made again.
		name: "another visitor's row",
		now:  "2026-07-20T12:00:00Z", later: "2026-07-20T12:00:00Z", salt: engine.SaltMonth,
		day:    "2026-07-02",
		before: []engine.Hit{hitOf("2026-07-02T10:00:00Z", "/a", "A"), hitOf("2026-07-02T10:01:00Z", "/b", "B")},
		after:  [][]engine.Hit{{hitOf("2026-07-02T10:05:00Z", "/c", "C")}, {hitOf("2026-07-02T10:20:00Z", "/a2", "A")}},
		want:   `[{"dimensions":["/a2"],"metrics":[1,1,100,0]},{"dimensions":["/c"],"metrics":[1,1,100,0]}]`,
	}, {
		// A's visit at 11:00 was row 0 of the dropped day; A's visit at
		// 10:00 (an hour earlier: a visit of its own) is row 0 of the day
		// made again, then A comes back at 11:10.
		name: "another visit's row",
		now:  "2026-07-20T12:00:00Z", later: "2026-07-20T12:00:00Z", salt: engine.SaltMonth,
		day:    "2026-07-02",
		before: []engine.Hit{hitOf("2026-07-02T11:00:00Z", "/a", "A")},
		after:  [][]engine.Hit{{hitOf("2026-07-02T10:00:00Z", "/early", "A")}, {hitOf("2026-07-02T11:10:00Z", "/late", "A")}},
		want:   `[{"dimensions":["/early"],"metrics":[1,1,100,0]},{"dimensions":["/late"],"metrics":[1,1,100,0]}]`,
	}, {
		// As above, but the week's visitor state left memory (a tiny
		// budget; last week's) with A's row written, before retention
		// dropped the day: it is read back for the day made again.
		name: "state read back",
		now:  "2026-07-21T12:00:00Z", later: "2026-07-22T12:00:00Z", salt: engine.SaltWeek, budget: 1,
		day:    "2026-07-14",
		before: []engine.Hit{hitOf("2026-07-14T11:00:00Z", "/a", "A")},
		after:  [][]engine.Hit{{hitOf("2026-07-14T10:00:00Z", "/early", "A")}, {hitOf("2026-07-14T11:10:00Z", "/late", "A")}},
		want:   `[{"dimensions":["/early"],"metrics":[1,1,100,0]},{"dimensions":["/late"],"metrics":[1,1,100,0]}]`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := newClock(tc.now)
			e, _ := openMem(t, c, func(o *engine.Options) { o.Retention = 7; o.SaltPeriod = tc.salt; o.MemoryBudget = tc.budget })
			w := newSite(t, e, "ret.example")
			track(t, e, tc.before...)
			if err := e.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			c.Set(tc.later)
			if err := e.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			if got := rows(t, e, w.ID, "pageviews", tc.day, tc.day); len(got) != 0 {
				t.Fatalf("%s not dropped: pageviews %v", tc.day, got)
			}
			for _, hits := range tc.after {
				track(t, e, hits...)
			}
			q, err := engine.ParseQuery([]byte(`{"site_id":"ret.example","date_range":["` + tc.day + `","` + tc.day + `"],` +
				`"metrics":["visitors","visits","bounce_rate","visit_duration"],"dimensions":["visit:exit_page"]}`))
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Unscoped().Query(ctx, w.ID, q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(res.Results)
			if err != nil {
				t.Fatal(err)
			}
			// The old visit's row went with the day: each hit after starts
			// a visit of its own, as when they are imported after the
			// snapshot in any order.
			if string(got) != tc.want {
				t.Fatalf("%s by exit page:\n got %s\nwant %s", tc.day, got, tc.want)
			}
		})
	}
}

// hitOf is an imported pageview of visitor on ret.example.
func hitOf(when, path, visitor string) engine.Hit {
	return pv(when, "https://ret.example"+path, func(h *engine.Hit) { h.Live = false; h.Visitor = visitor })
}

package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
)

// TestEarlierVisitImportedLater: under a weekly or monthly salt, an earlier
// visit of a visitor imported after a later one starts a visit of its own,
// but the visit rule keeps the later one's time, so the next pageview
// continues the later visit: in the day buckets and in the segments alike.
// (The earlier visit took over the visitor's row: the next pageview went to
// the earlier visit's day, where retention then erased it, or to a new row
// of a visit the day buckets do not count.)
func TestEarlierVisitImportedLater(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention int
		snapshot  bool // between the import and the next pageview
	}{
		{name: "no retention"},
		{name: "retention", retention: 10},
		{name: "retention, snapshot between", retention: 10, snapshot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Date(2026, 6, 20, 12, 0, 0, 0, time.UTC)
			e, site := hardEngine(t, vfs.NewMem(), Options{SaltPeriod: SaltMonth, Retention: tc.retention, Now: func() time.Time { return now }})
			defer e.Close()
			later := time.Date(2026, 6, 20, 11, 0, 0, 0, time.UTC)
			earlier := time.Date(2026, 6, 5, 10, 0, 0, 0, time.UTC) // before the retention cut
			for _, h := range []Hit{hardHit(site, later, "v", "/later")} {
				if _, err := e.Track(ctx, h); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Track(ctx, hardHit(site, earlier, "v", "/earlier")); err != nil {
				t.Fatal(err)
			}
			if tc.snapshot {
				if err := e.Snapshot(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// Continues the later visit (10 minutes after it).
			if _, err := e.Track(ctx, hardHit(site, later.Add(10*time.Minute), "v", "/next")); err != nil {
				t.Fatal(err)
			}
			if err := e.Snapshot(ctx); err != nil { // applies retention
				t.Fatal(err)
			}
			day := DateFromTime(later)
			tot, err := e.Unscoped().Totals(ctx, site, day, day)
			if err != nil {
				t.Fatal(err)
			}
			if tot.Visits != 1 || tot.Pageviews != 2 {
				t.Fatalf("day buckets: %+v, want 1 visit of 2 pageviews", tot)
			}
			q, err := ParseQuery([]byte(`{"site_id":"hard.example","date_range":["2026-06-20","2026-06-20"],"metrics":["visitors","visits","pageviews","visit_duration","views_per_visit"]}`))
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Unscoped().Query(ctx, site, q)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(res.Results)
			want := `[{"dimensions":[],"metrics":[1,1,2,600,2]}]`
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("segments: mismatch (-want +got):\n%s", diff)
			}
			q, err = ParseQuery([]byte(`{"site_id":"hard.example","date_range":["2026-06-20","2026-06-20"],"metrics":["visits"],"dimensions":["visit:entry_page","visit:exit_page"]}`))
			if err != nil {
				t.Fatal(err)
			}
			if res, err = e.Unscoped().Query(ctx, site, q); err != nil {
				t.Fatal(err)
			}
			got, _ = json.Marshal(res.Results)
			want = `[{"dimensions":["/later","/next"],"metrics":[1]}]`
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("segments entry and exit: mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

package engine

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/engine/internal/segments"
)

// TestLegacyHitDayDailySalt: a hit written before hits kept their day
// (SPEC §10.1: a hit's day is its stored local day) has, under daily salts,
// its row's day: a salt period is one local day, and a visitor's hits all
// live in its period's day. A website that moved from UTC to Berlin
// afterwards must not see the hits of a visit that crossed Berlin's
// midnight (22:50 and 23:10 UTC) on two days: both were counted on the
// 10th, as the day buckets say.
func TestLegacyHitDayDailySalt(t *testing.T) {
	now := time.Date(2026, 3, 11, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	at := func(h, m int) time.Time { return time.Date(2026, 3, 10, h, m, 0, 0, time.UTC) }
	if _, err := e.Track(ctx, hardHit(site, at(12, 0), "b", "https://hard.example/"),
		hardHit(site, at(22, 50), "a", "https://hard.example/"), hardHit(site, at(23, 10), "a", "https://hard.example/x")); err != nil {
		t.Fatal(err)
	}
	// The rows as code before the hit's day was kept wrote them.
	e.regMu.RLock()
	s := e.sites[site]
	e.regMu.RUnlock()
	sh := e.shardOf(site)
	sh.mu.Lock()
	ent := s.state.days[DateOf(2026, 3, 10)]
	for i := range ent.seg.HFlags {
		ent.seg.HFlags[i] &= segments.HitInteractive
	}
	sh.mu.Unlock()
	tz := "Europe/Berlin"
	if _, err := e.Unscoped().UpdateWebsite(ctx, site, WebsiteInput{Timezone: &tz}); err != nil {
		t.Skip(err) // no time zone data
	}
	q := Query{Metrics: []string{"pageviews"}, Dimensions: []string{"time:day"},
		DateRange: DateRange{FromDay: DateOf(2026, 3, 9), ToDay: DateOf(2026, 3, 11)},
		Filters:   []Filter{{Op: "is_not", Dimension: "event:page", Clauses: []string{"/never"}}}}
	res, err := e.Unscoped().Query(ctx, site, q)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Results)
	if want := `[{"dimensions":["2026-03-10"],"metrics":[3]}]`; string(got) != want {
		t.Errorf("pageviews by day: %s, want %s (all three counted on the 10th)", got, want)
	}
}

// TestEarlierHitDayBeforeItsRow: under weekly salts an earlier hit
// imported after its visit began (within 30 minutes of it, the previous
// evening) joins the visit, whose rows live on the later day; its own day
// (SPEC §10.1) is the earlier one. A query of that day alone counts it, as
// the day buckets do and as the two days' breakdown by day does.
func TestEarlierHitDayBeforeItsRow(t *testing.T) {
	now := time.Date(2026, 3, 12, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{SaltPeriod: SaltWeek, Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	// Tuesday 00:05, then Monday 23:50 imported: one visit of the week
	// that started on Monday the 9th.
	for _, at := range []time.Time{time.Date(2026, 3, 10, 0, 5, 0, 0, time.UTC), time.Date(2026, 3, 9, 23, 50, 0, 0, time.UTC)} {
		if _, err := e.Track(ctx, hardHit(site, at, "a", "https://hard.example/")); err != nil {
			t.Fatal(err)
		}
	}
	query := func(from, to Date, dims ...string) string {
		t.Helper()
		q := Query{Metrics: []string{"pageviews"}, Dimensions: dims, DateRange: DateRange{FromDay: from, ToDay: to},
			Filters: []Filter{{Op: "is_not", Dimension: "event:page", Clauses: []string{"/never"}}}}
		res, err := e.Unscoped().Query(ctx, site, q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Results)
		return string(b)
	}
	if got, want := query(DateOf(2026, 3, 9), DateOf(2026, 3, 10), "time:day"), `[{"dimensions":["2026-03-09"],"metrics":[1]},{"dimensions":["2026-03-10"],"metrics":[1]}]`; got != want {
		t.Errorf("by day over both days: %s, want %s", got, want)
	}
	if got, want := query(DateOf(2026, 3, 9), DateOf(2026, 3, 9)), `[{"dimensions":[],"metrics":[1]}]`; got != want {
		t.Errorf("Monday alone: %s, want %s", got, want)
	}
}

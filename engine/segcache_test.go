package engine

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
)

// TestResultCache: a repeated query is answered from the cache with the
// same answer, which the caller may change without changing the next; a
// new hit, a new goal, a time zone change and the retention cut each
// change the answer at once.
func TestResultCache(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Retention: 30, Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	o := e.Unscoped()
	track := func(hs ...Hit) {
		t.Helper()
		if _, err := e.Track(ctx, hs...); err != nil {
			t.Fatal(err)
		}
	}
	track(hardHit(site, now.Add(-time.Hour), "a", "https://hard.example/"),
		hardHit(site, now.Add(-50*time.Minute), "a", "https://hard.example/pricing"),
		hardHit(site, now.Add(-40*time.Minute), "b", "https://hard.example/"))
	q := Query{Metrics: []string{"visitors", "bounce_rate", "visit_duration"}, DateRange: DateRange{Period: "7d"},
		Dimensions: []string{"event:page"}}
	ask := func() QueryResult {
		t.Helper()
		res, err := o.Query(ctx, site, q)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	hits := func() uint64 {
		return e.results.Hits()
	}
	q.DateRange = DateRange{FromDay: DateOf(2026, 11, 15), ToDay: DateOf(2026, 11, 21)}
	first := ask()
	h := hits()
	second := ask()
	if hits() != h+1 {
		t.Fatalf("the repeated query was not answered from the cache (%d hits, then %d)", h, hits())
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("cached answer differs:\n%+v\n%+v", first, second)
	}
	second.Results[0].Metrics[0] = int64(99)
	second.Results = second.Results[:0]
	if third := ask(); !reflect.DeepEqual(first, third) {
		t.Fatalf("the caller's change reached the cache:\n%+v\n%+v", first, third)
	}
	// Visitors of "/": a and b; a new visitor c changes it at once.
	if got := first.Results[0]; got.Dimensions[0] != "/" || got.Metrics[0] != int64(2) {
		t.Fatalf("first row %+v, want / with 2 visitors", got)
	}
	track(hardHit(site, now.Add(-30*time.Minute), "c", "https://hard.example/"))
	if got := ask().Results[0]; got.Metrics[0] != int64(3) {
		t.Errorf("after a new visitor: %+v, want 3 visitors", got)
	}
	// A goal: the goal's name becomes valid in a filter at once.
	gq := Query{Metrics: []string{"visitors"}, DateRange: q.DateRange, Dimensions: []string{"event:goal"}}
	res, err := o.Query(ctx, site, gq)
	if err != nil || len(res.Results) != 0 {
		t.Fatalf("goals before any: %+v, %v", res.Results, err)
	}
	if _, err := o.AddGoal(ctx, site, Goal{PagePath: "/pricing"}); err != nil {
		t.Fatal(err)
	}
	if res, err = o.Query(ctx, site, gq); err != nil || len(res.Results) != 1 || res.Results[0].Metrics[0] != int64(1) {
		t.Errorf("goals after adding one: %+v, %v", res.Results, err)
	}
	// A time zone 13 hours ahead moves the hits of 11:00–11:30 UTC to
	// the next local day, 22 November, outside a range that ends on the
	// 21st.
	tz := "Pacific/Auckland"
	if _, err := o.UpdateWebsite(ctx, site, WebsiteInput{Timezone: &tz}); err != nil {
		t.Fatal(err)
	}
	after := ask()
	if reflect.DeepEqual(after.Results, first.Results) {
		t.Errorf("the answer did not change with the time zone: %+v", after.Results)
	}
}

// TestResultCacheOff: QueryCache < 0 keeps no answer.
func TestResultCacheOff(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{QueryCache: -1, Now: func() time.Time { return now }})
	defer e.Close()
	if _, err := e.Track(context.Background(), hardHit(site, now.Add(-time.Hour), "a", "https://hard.example/")); err != nil {
		t.Fatal(err)
	}
	q := Query{Metrics: []string{"bounce_rate"}, DateRange: DateRange{FromDay: DateOf(2026, 11, 21), ToDay: DateOf(2026, 11, 21)}}
	for range 2 {
		if _, err := e.Unscoped().Query(context.Background(), site, q); err != nil {
			t.Fatal(err)
		}
	}
	if e.results != nil {
		t.Errorf("a cache of answers with QueryCache -1")
	}
}

// TestResultCacheGoalsReplaced: deleting a goal and adding one of the same
// name on another page answers the new goal, however often it is done
// (a key of the goal set's address served the old goal once the garbage
// collector reused the address).
func TestResultCacheGoalsReplaced(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	o := e.Unscoped()
	var hs []Hit
	for i, p := range []string{"/a", "/a", "/a", "/b"} {
		hs = append(hs, hardHit(site, now.Add(-time.Duration(i+1)*time.Minute), fmt.Sprint("v", i), "https://hard.example"+p))
	}
	if _, err := e.Track(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	q := Query{Metrics: []string{"visitors"}, Dimensions: []string{"event:goal"}, DateRange: DateRange{FromDay: DateOf(2026, 11, 21), ToDay: DateOf(2026, 11, 21)}}
	for i := range 300 {
		page, want := "/a", int64(3)
		if i%2 == 1 {
			page, want = "/b", 1
		}
		g, err := o.AddGoal(ctx, site, Goal{DisplayName: "G", PagePath: page})
		if err != nil {
			t.Fatal(err)
		}
		res, err := o.Query(ctx, site, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Results) != 1 || res.Results[0].Metrics[0] != want {
			t.Fatalf("round %d, goal G on %s: %+v, want %d visitors", i, page, res.Results, want)
		}
		if err := o.DeleteGoal(ctx, site, g.ID); err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			runtime.GC()
		}
	}
}

// TestResultCacheZoneRules: two time zones with the same offset at both
// ends of a range (UTC and London in January and December) give the same
// range, but London's summer hour moves a hit at 23:30 UTC to the next
// day's first hour: the answer by hour changes with the zone. (By day it
// does not: SPEC §10.1, the hit stays on the day it was counted under.)
func TestResultCacheZoneRules(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	o := e.Unscoped()
	h := hardHit(site, time.Date(2025, 7, 1, 23, 30, 0, 0, time.UTC), "a", "https://hard.example/")
	if _, err := e.Track(ctx, h); err != nil {
		t.Fatal(err)
	}
	q := Query{Metrics: []string{"visitors"}, Dimensions: []string{"time:hour"}, DateRange: DateRange{FromDay: DateOf(2025, 1, 1), ToDay: DateOf(2025, 12, 31)}}
	day := func() any {
		t.Helper()
		res, err := o.Query(ctx, site, q)
		if err != nil || len(res.Results) != 1 {
			t.Fatalf("%+v, %v", res.Results, err)
		}
		return res.Results[0].Dimensions[0]
	}
	if d := day(); d != "2025-07-01 23:00:00" {
		t.Fatalf("in UTC the hit is in %v", d)
	}
	tz := "Europe/London"
	if _, err := o.UpdateWebsite(ctx, site, WebsiteInput{Timezone: &tz}); err != nil {
		t.Fatal(err)
	}
	if d := day(); d != "2025-07-02 00:00:00" {
		t.Errorf("in London the hit is in %v, want 2025-07-02 00:00:00", d)
	}
}

// TestResultCacheRetention: days retention drops leave the answer at once.
func TestResultCacheRetention(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Retention: 30, Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	if _, err := e.Track(ctx, hardHit(site, now.AddDate(0, 0, -20), "a", "https://hard.example/"),
		hardHit(site, now.Add(-time.Hour), "b", "https://hard.example/")); err != nil {
		t.Fatal(err)
	}
	q := Query{Metrics: []string{"visitors", "bounce_rate"}, DateRange: DateRange{FromDay: DateOf(2026, 10, 1), ToDay: DateOf(2026, 11, 21)}}
	visitors := func() any {
		t.Helper()
		res, err := e.Unscoped().Query(ctx, site, q)
		if err != nil {
			t.Fatal(err)
		}
		return res.Results[0].Metrics[0]
	}
	if v := visitors(); v != int64(2) {
		t.Fatalf("before the cut: %v visitors", v)
	}
	now = now.AddDate(0, 0, 15) // the first hit is 35 days old
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if v := visitors(); v != int64(1) {
		t.Errorf("after retention dropped the first hit's day: %v visitors, want 1", v)
	}
}

// TestWholeLimit: a segment query of a range holding a day with more
// sealed rows than wholeLimit answers what it answers under the limit
// (the day is read in chunks, SPEC §13; it was refused with a
// *QueryError before); the day buckets answer too.
func TestWholeLimit(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{MemoryBudget: 1 << 10, Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	for i := range 20 {
		if _, err := e.Track(ctx, hardHit(site, now.Add(-time.Duration(i)*time.Minute), fmt.Sprint("v", i), fmt.Sprintf("https://hard.example/p%d", i))); err != nil {
			t.Fatal(err)
		}
		if err := e.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := sealedParts(e, site); n < 3 {
		t.Fatalf("%d sealed parts: the test did not seal", n)
	}
	q := Query{Metrics: []string{"visitors", "bounce_rate"}, DateRange: DateRange{FromDay: DateOf(2026, 11, 21), ToDay: DateOf(2026, 11, 21)}}
	want, err := e.Unscoped().Query(ctx, site, q)
	if err != nil {
		t.Fatalf("under the limit: %v", err)
	}
	e.wholeLimit = 2 * int64(e.sealBytes)
	e.wholes.Drop(site)
	e.results.Drop(site) // else the answer above is served again
	got, err := e.Unscoped().Query(ctx, site, q)
	if err != nil {
		t.Fatalf("over the limit: %v", err)
	}
	if diff := cmp.Diff(want.Results, got.Results); diff != "" || e.streamed.Load() == 0 {
		t.Fatalf("over the limit (%d chunks read): (-under +over)\n%s", e.streamed.Load(), diff)
	}
	tot, err := e.Unscoped().Totals(ctx, site, DateOf(2026, 11, 21), DateOf(2026, 11, 21))
	if err != nil || tot.Visitors != 20 {
		t.Errorf("the day buckets: %+v, %v", tot, err)
	}
}

package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
)

// The expected weeks come from the calendar (date -d ... +%a): 2026-03-09,
// 2026-11-02 and 1900-01-01 were Mondays.
func TestSegments(t *testing.T) {
	d := func(s string) buckets.Date {
		v, err := buckets.ParseDate(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	days := func(from, to string) segment { return segment{d(from), d(to), false} }
	rolled := func(from, to string) segment { return segment{d(from), d(to), true} }
	tests := []struct {
		name            string
		from, to, today string
		want            []segment
	}{
		{"inside one month", "2026-03-05", "2026-03-20", "2026-11-01", []segment{
			days("2026-03-05", "2026-03-08"), rolled("2026-03-09", "2026-03-15"), days("2026-03-16", "2026-03-20")}},
		{"a few days", "2026-03-10", "2026-03-14", "2026-11-01", []segment{days("2026-03-10", "2026-03-14")}},
		{"whole month", "2026-02-01", "2026-02-28", "2026-11-01", []segment{rolled("2026-02-01", "2026-02-28")}},
		{"ends and months", "2026-01-15", "2026-04-10", "2026-11-01", []segment{
			days("2026-01-15", "2026-01-18"), rolled("2026-01-19", "2026-01-25"), days("2026-01-26", "2026-01-31"),
			rolled("2026-02-01", "2026-02-28"), rolled("2026-03-01", "2026-03-31"), days("2026-04-01", "2026-04-10")}},
		{"the current month is weeks and days", "2026-10-01", "2026-11-30", "2026-11-21", []segment{
			rolled("2026-10-01", "2026-10-31"), days("2026-11-01", "2026-11-01"), rolled("2026-11-02", "2026-11-08"),
			rolled("2026-11-09", "2026-11-15"), days("2026-11-16", "2026-11-30")}},
		{"a month ending today is weeks and days", "2026-10-01", "2026-10-31", "2026-10-31", []segment{
			days("2026-10-01", "2026-10-04"), rolled("2026-10-05", "2026-10-11"), rolled("2026-10-12", "2026-10-18"),
			rolled("2026-10-19", "2026-10-25"), days("2026-10-26", "2026-10-31")}},
		{"before 1970", "1899-12-25", "1900-01-14", "2026-11-01", []segment{
			rolled("1899-12-25", "1899-12-31"), rolled("1900-01-01", "1900-01-07"), rolled("1900-01-08", "1900-01-14")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, splitRange(d(tt.from), d(tt.to), d(tt.today)), cmp.AllowUnexported(segment{})); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// weekOf gives Monday to Sunday for every day, before 1970 too.
func TestWeekOf(t *testing.T) {
	monday := buckets.DateOf(1899, 12, 25) // a Monday
	for date := monday; date < monday+60_000; date++ {
		first, last := weekOf(date)
		if first.Weekday().String() != "Monday" || last != first+6 || date < first || date > last {
			t.Fatalf("weekOf(%s) = %s (%s), %s", date, first, first.Weekday(), last)
		}
	}
}

// TestWeekRollupInvalidated: a closed week's rollup answers a range query
// once its days are frozen, and a late hit on one of its days (an import
// into the past) drops it: the next answer counts the hit.
func TestWeekRollupInvalidated(t *testing.T) {
	ctx := context.Background()
	monday := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // a Monday
	now := monday.AddDate(0, 0, 10)                        // the week closed
	e, site := hardEngine(t, vfs.NewMem(), Options{QueryCache: -1, Now: func() time.Time { return now }})
	defer e.Close()
	var hs []Hit
	for d := range 7 {
		hs = append(hs, hardHit(site, monday.AddDate(0, 0, d).Add(9*time.Hour), fmt.Sprint("v", d), "/a"))
	}
	if _, err := e.Track(ctx, hs...); err != nil {
		t.Fatal(err)
	}
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	first := buckets.DateFromTime(monday)
	q := StatQuery{Website: site, Name: "page", From: first, To: first + 6}
	pages := func() map[string]uint64 {
		t.Helper()
		res, err := e.Unscoped().Stat(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]uint64{}
		for _, r := range res.Rows {
			m[r.Value] = r.Count
		}
		return m
	}
	if got := pages(); got["/a"] != 7 {
		t.Fatalf("before: %v, want /a 7", got)
	}
	sh := e.shardOf(site)
	sh.mu.Lock()
	_, cached := e.sites[site].state.rollups[rollKey{first, first + 6}]
	sh.mu.Unlock()
	if !cached {
		t.Fatal("the closed week's rollup was not kept")
	}
	if _, err := e.Track(ctx, hardHit(site, monday.AddDate(0, 0, 2).Add(10*time.Hour), "late", "/b")); err != nil {
		t.Fatal(err)
	}
	if got := pages(); got["/a"] != 7 || got["/b"] != 1 {
		t.Errorf("after a late hit: %v, want /a 7 and /b 1", got)
	}
}

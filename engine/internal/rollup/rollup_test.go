package rollup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
)

// The expected weeks come from the calendar (date -d ... +%a): 2026-03-09,
// 2026-11-02 and 1900-01-01 were Mondays.
func TestSplit(t *testing.T) {
	d := func(s string) buckets.Date {
		v, err := buckets.ParseDate(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	days := func(from, to string) Part { return Part{d(from), d(to), false} }
	rolled := func(from, to string) Part { return Part{d(from), d(to), true} }
	tests := []struct {
		name            string
		from, to, today string
		want            []Part
	}{
		{"inside one month", "2026-03-05", "2026-03-20", "2026-11-01", []Part{
			days("2026-03-05", "2026-03-08"), rolled("2026-03-09", "2026-03-15"), days("2026-03-16", "2026-03-20")}},
		{"a few days", "2026-03-10", "2026-03-14", "2026-11-01", []Part{days("2026-03-10", "2026-03-14")}},
		{"whole month", "2026-02-01", "2026-02-28", "2026-11-01", []Part{rolled("2026-02-01", "2026-02-28")}},
		{"ends and months", "2026-01-15", "2026-04-10", "2026-11-01", []Part{
			days("2026-01-15", "2026-01-18"), rolled("2026-01-19", "2026-01-25"), days("2026-01-26", "2026-01-31"),
			rolled("2026-02-01", "2026-02-28"), rolled("2026-03-01", "2026-03-31"), days("2026-04-01", "2026-04-10")}},
		{"the current month is weeks and days", "2026-10-01", "2026-11-30", "2026-11-21", []Part{
			rolled("2026-10-01", "2026-10-31"), days("2026-11-01", "2026-11-01"), rolled("2026-11-02", "2026-11-08"),
			rolled("2026-11-09", "2026-11-15"), days("2026-11-16", "2026-11-30")}},
		{"a month ending today is weeks and days", "2026-10-01", "2026-10-31", "2026-10-31", []Part{
			days("2026-10-01", "2026-10-04"), rolled("2026-10-05", "2026-10-11"), rolled("2026-10-12", "2026-10-18"),
			rolled("2026-10-19", "2026-10-25"), days("2026-10-26", "2026-10-31")}},
		{"before 1970", "1899-12-25", "1900-01-14", "2026-11-01", []Part{
			rolled("1899-12-25", "1899-12-31"), rolled("1900-01-01", "1900-01-07"), rolled("1900-01-08", "1900-01-14")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Split(d(tt.from), d(tt.to), d(tt.today))); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Week gives Monday to Sunday for every day, before 1970 too.
func TestWeek(t *testing.T) {
	monday := buckets.DateOf(1899, 12, 25) // a Monday
	for date := monday; date < monday+60_000; date++ {
		first, last := Week(date)
		if first.Weekday().String() != "Monday" || last != first+6 || date < first || date > last {
			t.Fatalf("Week(%s) = %s (%s), %s", date, first, first.Weekday(), last)
		}
	}
}

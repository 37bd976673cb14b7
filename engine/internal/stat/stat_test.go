package stat

import (
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/invalid"
	"github.com/webstats/webstats/engine/query"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{name: "pageviews_hour", want: PageviewsHours, ok: true},
		{name: "visitors_hour", want: VisitorsHours, ok: true},
		{name: "visitors", want: Visitors, ok: true},
		{name: "referrer", want: "referrer", ok: true},
		{name: "nope", want: "", ok: false},
	} {
		if got, ok := Canonical(tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("Canonical(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if n := len(Names()); n != 17 {
		t.Errorf("%d statistics, want 17", n)
	}
	for _, n := range Names() {
		if c, ok := Canonical(n); !ok || c != n {
			t.Errorf("Canonical(%q) = %q, %v", n, c, ok)
		}
	}
}

func TestSearchSort(t *testing.T) {
	rows := []Row{{Value: "/b", Count: 3}, {Value: "/Ä", Count: 1}, {Value: "/a", Count: 3}, {Value: "/AB", Count: 5}, {Value: "/c", Count: 2}}
	got := Search(slices.Clone(rows), "a")
	Sort(got, false, true, len(got))
	want := []Row{{Value: "/AB", Count: 5}, {Value: "/a", Count: 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("search a, count desc: mismatch (-want +got):\n%s", diff)
	}
	got = Search(slices.Clone(rows), "ä")
	if diff := cmp.Diff([]Row{{Value: "/Ä", Count: 1}}, got); diff != "" {
		t.Errorf("search ä: mismatch (-want +got):\n%s", diff)
	}
	if Hour(7) != "07" || Hour(23) != "23" {
		t.Errorf("Hour(7), Hour(23) = %q, %q", Hour(7), Hour(23))
	}
}

func TestCheck(t *testing.T) {
	day := buckets.Date(20000)
	for _, tc := range []struct {
		name, stat, sortBy string
		from, to           buckets.Date
		want               string // "" for nil
	}{
		{name: "valid", stat: "pageviews", from: day, to: day},
		{name: "alias, value sort", stat: "pageviews_hour", sortBy: "value", from: day, to: day + 6},
		{name: "everything wrong", stat: "nope", sortBy: "size", from: day + 1, to: day,
			want: "engine: invalid input: name: The selected name is invalid.; to: The to must be a date after or equal to from.; sort_by: The selected sort by is invalid."},
		{name: "a century and a day", stat: "pageviews", from: day, to: day + query.MaxRangeDays,
			want: "engine: invalid input: to: The range must not be longer than 36525 days."},
		{name: "int32 overflow", stat: "pageviews", from: math.MinInt32, to: math.MaxInt32,
			want: "engine: invalid input: to: The range must not be longer than 36525 days."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.stat, tc.sortBy, tc.from, tc.to)
			got := ""
			if err != nil {
				got = err.Error()
				if _, ok := err.(*invalid.Error); !ok {
					t.Errorf("%T, want *invalid.Error", err)
				}
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

package stat

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
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

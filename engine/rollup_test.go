package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
)

func TestSegments(t *testing.T) {
	d := func(s string) buckets.Date {
		v, err := buckets.ParseDate(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	seg := func(from, to string, month bool) segment { return segment{d(from), d(to), month} }
	tests := []struct {
		name            string
		from, to, today string
		want            []segment
	}{
		{"inside one month", "2026-03-05", "2026-03-20", "2026-11-01", []segment{seg("2026-03-05", "2026-03-20", false)}},
		{"whole month", "2026-02-01", "2026-02-28", "2026-11-01", []segment{seg("2026-02-01", "2026-02-28", true)}},
		{"ends and months", "2026-01-15", "2026-04-10", "2026-11-01", []segment{
			seg("2026-01-15", "2026-01-31", false), seg("2026-02-01", "2026-02-28", true),
			seg("2026-03-01", "2026-03-31", true), seg("2026-04-01", "2026-04-10", false)}},
		{"the current month is days", "2026-10-01", "2026-11-30", "2026-11-21", []segment{
			seg("2026-10-01", "2026-10-31", true), seg("2026-11-01", "2026-11-30", false)}},
		{"a month ending today is days", "2026-10-01", "2026-10-31", "2026-10-31", []segment{seg("2026-10-01", "2026-10-31", false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, segments(d(tt.from), d(tt.to), d(tt.today)), cmp.AllowUnexported(segment{})); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

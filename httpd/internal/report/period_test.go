package report

import (
	"errors"
	"testing"
	"time"
)

func TestParsePeriod(t *testing.T) {
	tests := []struct {
		in      string
		want    Period
		wantErr bool
	}{
		{in: "weekly", want: Weekly},
		{in: "week", want: Weekly},
		{in: "monthly", want: Monthly},
		{in: "Month", want: Monthly},
		{in: "off", wantErr: true},
		{in: "", wantErr: true},
		{in: "daily", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParsePeriod(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrInvalidPeriod) {
				t.Errorf("ParsePeriod(%q): err = %v, want ErrInvalidPeriod", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParsePeriod(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestPeriodDue(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	la, _ := time.LoadLocation("America/Los_Angeles")
	tests := []struct {
		name string
		p    Period
		now  string
		loc  *time.Location
		want string // first day of the latest due period
	}{
		{name: "Monday before 06:00", p: Weekly, now: "2026-11-16T05:59:59Z", loc: time.UTC, want: "2026-11-02"},
		{name: "Monday 06:00", p: Weekly, now: "2026-11-16T06:00:00Z", loc: time.UTC, want: "2026-11-09"},
		{name: "Sunday", p: Weekly, now: "2026-11-15T23:00:00Z", loc: time.UTC, want: "2026-11-02"},
		{name: "Berlin 06:00 is 05:00 UTC", p: Weekly, now: "2026-11-16T05:00:00Z", loc: berlin, want: "2026-11-09"},
		{name: "Los Angeles Sunday evening", p: Weekly, now: "2026-11-16T05:00:00Z", loc: la, want: "2026-11-02"},
		{name: "Los Angeles 06:00 is 14:00 UTC", p: Weekly, now: "2026-11-16T14:00:00Z", loc: la, want: "2026-11-09"},
		{name: "Berlin summer time", p: Weekly, now: "2026-07-06T04:00:00Z", loc: berlin, want: "2026-06-29"},
		{name: "1st before 06:00", p: Monthly, now: "2026-12-01T05:59:00Z", loc: time.UTC, want: "2026-10-01"},
		{name: "1st 06:00", p: Monthly, now: "2026-12-01T06:00:00Z", loc: time.UTC, want: "2026-11-01"},
		{name: "January", p: Monthly, now: "2027-01-15T00:00:00Z", loc: time.UTC, want: "2026-12-01"},
		{name: "1 January before 06:00", p: Monthly, now: "2027-01-01T05:00:00Z", loc: time.UTC, want: "2026-11-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.due(at(tt.now), tt.loc); got != date(tt.want) {
				t.Errorf("due = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPeriodLabel(t *testing.T) {
	tests := []struct {
		p     Period
		first string
		want  string
	}{
		{p: Weekly, first: "2026-11-09", want: "9–15 November 2026"},
		{p: Weekly, first: "2026-10-26", want: "26 October – 1 November 2026"},
		{p: Weekly, first: "2026-12-28", want: "28 December 2026 – 3 January 2027"},
		{p: Monthly, first: "2026-02-01", want: "February 2026"},
	}
	for _, tt := range tests {
		if got := tt.p.label(date(tt.first)); got != tt.want {
			t.Errorf("%s label(%s) = %q, want %q", tt.p, tt.first, got, tt.want)
		}
	}
	if Monthly.last(date("2028-02-01")) != date("2028-02-29") {
		t.Error("February 2028 has 29 days")
	}
}

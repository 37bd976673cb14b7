package buckets

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin without a system zoneinfo

	"github.com/google/go-cmp/cmp"
)

func TestDateOf(t *testing.T) {
	tests := []struct {
		name  string
		year  int
		month time.Month
		day   int
		want  Date
	}{
		{name: "epoch", year: 1970, month: time.January, day: 1, want: 0},
		{name: "day before epoch", year: 1969, month: time.December, day: 31, want: -1},
		{name: "leap day 2000", year: 2000, month: time.February, day: 29, want: 11016},
		{name: "leap day 2024", year: 2024, month: time.February, day: 29, want: 19782},
		{name: "1900 is not leap", year: 1900, month: time.February, day: 29, want: DateOf(1900, time.March, 1)},
		{name: "2023-02-29 normalises", year: 2023, month: time.February, day: 29, want: DateOf(2023, time.March, 1)},
		{name: "month 13", year: 2023, month: 13, day: 1, want: DateOf(2024, time.January, 1)},
		{name: "month 0", year: 2024, month: 0, day: 15, want: DateOf(2023, time.December, 15)},
		{name: "month -13", year: 2024, month: -13, day: 1, want: DateOf(2022, time.November, 1)},
		{name: "day 0", year: 2024, month: time.March, day: 0, want: DateOf(2024, time.February, 29)},
		{name: "day 400", year: 2024, month: time.January, day: 400, want: DateOf(2025, time.February, 3)},
		{name: "year 0", year: 0, month: time.January, day: 1, want: -719528},
		{name: "clamped high", year: 1e8, month: time.January, day: 1, want: math.MaxInt32},
		{name: "clamped low", year: -1e8, month: time.January, day: 1, want: math.MinInt32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DateOf(tt.year, tt.month, tt.day); got != tt.want {
				t.Errorf("DateOf(%d, %d, %d) = %d, want %d", tt.year, tt.month, tt.day, got, tt.want)
			}
		})
	}
}

// TestDateAgainstTime checks Civil, DateOf, Weekday and DateFromTime against
// the time package, every day of 1600..2400 and every 97th day of ±1 million
// years.
func TestDateAgainstTime(t *testing.T) {
	check := func(d Date) {
		tm := time.Unix(int64(d)*86400, 0).UTC()
		y, m, dd := d.Civil()
		wy, wm, wd := tm.Date()
		if y != wy || m != wm || dd != wd {
			t.Fatalf("Date(%d).Civil() = %d-%d-%d, want %d-%d-%d", d, y, m, dd, wy, wm, wd)
		}
		if got := DateOf(wy, wm, wd); got != d {
			t.Fatalf("DateOf(%d, %d, %d) = %d, want %d", wy, wm, wd, got, d)
		}
		if got := DateFromTime(tm); got != d {
			t.Fatalf("DateFromTime(%v) = %d, want %d", tm, got, d)
		}
		if got, want := d.Weekday(), tm.Weekday(); got != want {
			t.Fatalf("Date(%d).Weekday() = %v, want %v", d, got, want)
		}
	}
	for d := DateOf(1600, 1, 1); d <= DateOf(2400, 1, 1); d++ {
		check(d)
	}
	for d := int64(-365_250_000); d <= 365_250_000; d += 97 * 3001 {
		check(Date(d))
	}
}

func TestParseDate(t *testing.T) {
	tests := []struct {
		in      string
		want    Date
		wantErr bool
	}{
		{in: "1970-01-01", want: 0},
		{in: "1969-12-31", want: -1},
		{in: "2024-02-29", want: DateOf(2024, 2, 29)},
		{in: "2000-02-29", want: DateOf(2000, 2, 29)},
		{in: "0000-01-01", want: DateOf(0, 1, 1)},
		{in: "9999-12-31", want: DateOf(9999, 12, 31)},
		{in: "2023-02-29", wantErr: true},
		{in: "1900-02-29", wantErr: true},
		{in: "2024-04-31", wantErr: true},
		{in: "2024-13-01", wantErr: true},
		{in: "2024-00-10", wantErr: true},
		{in: "2024-01-00", wantErr: true},
		{in: "2024-1-01", wantErr: true},
		{in: "2024-01-1", wantErr: true},
		{in: "24-01-01", wantErr: true},
		{in: "2024/01/01", wantErr: true},
		{in: "2024-01-01 ", wantErr: true},
		{in: " 2024-01-01", wantErr: true},
		{in: "2024-01-01T00:00:00Z", wantErr: true},
		{in: "+024-01-01", wantErr: true},
		{in: "-024-01-01", wantErr: true},
		{in: "２０２４-01-01", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDate(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidDate) {
					t.Fatalf("ParseDate(%q) = %v, %v; want an ErrInvalidDate", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseDate(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestDateString(t *testing.T) {
	tests := []struct {
		d    Date
		want string
	}{
		{d: 0, want: "1970-01-01"},
		{d: -1, want: "1969-12-31"},
		{d: DateOf(2024, 2, 29), want: "2024-02-29"},
		{d: DateOf(5, 3, 7), want: "0005-03-07"},
		{d: DateOf(0, 1, 1), want: "0000-01-01"},
		{d: DateOf(-1, 12, 31), want: "-0001-12-31"},
		{d: DateOf(12345, 6, 7), want: "12345-06-07"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Errorf("Date(%d).String() = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
	// Every date of years 0..9999 round-trips through String and ParseDate.
	for d := DateOf(0, 1, 1); d <= DateOf(9999, 12, 31); d++ {
		got, err := ParseDate(d.String())
		if err != nil || got != d {
			t.Fatalf("ParseDate(%q) = %v, %v; want %d", d.String(), got, err, d)
		}
	}
}

func TestDateJSON(t *testing.T) {
	type doc struct {
		From Date `json:"from"`
		To   Date `json:"to"`
	}
	want := doc{From: DateOf(2024, 2, 28), To: DateOf(2024, 3, 1)}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if got, wantJSON := string(b), `{"from":"2024-02-28","to":"2024-03-01"}`; got != wantJSON {
		t.Fatalf("json.Marshal = %s, want %s", got, wantJSON)
	}
	var got doc
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`{"from":"2024-02-30"}`), &got); !errors.Is(err, ErrInvalidDate) {
		t.Errorf("json.Unmarshal of 2024-02-30: %v, want ErrInvalidDate", err)
	}
}

func TestDateIn(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		d         Date
		loc       *time.Location
		want      string // RFC 3339
		dayLength time.Duration
	}{
		{name: "utc", d: 0, loc: time.UTC, want: "1970-01-01T00:00:00Z", dayLength: 24 * time.Hour},
		{name: "nil is utc", d: 0, loc: nil, want: "1970-01-01T00:00:00Z", dayLength: 24 * time.Hour},
		{name: "berlin winter", d: DateOf(2024, 1, 15), loc: berlin, want: "2024-01-15T00:00:00+01:00", dayLength: 24 * time.Hour},
		{name: "berlin spring forward", d: DateOf(2024, 3, 31), loc: berlin, want: "2024-03-31T00:00:00+01:00", dayLength: 23 * time.Hour},
		{name: "berlin summer", d: DateOf(2024, 7, 1), loc: berlin, want: "2024-07-01T00:00:00+02:00", dayLength: 24 * time.Hour},
		{name: "berlin fall back", d: DateOf(2024, 10, 27), loc: berlin, want: "2024-10-27T00:00:00+02:00", dayLength: 25 * time.Hour},
		{name: "negative date", d: DateOf(1900, 6, 1), loc: berlin, want: "1900-06-01T00:00:00+01:00", dayLength: 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := tt.d.In(tt.loc)
			if got := start.Format(time.RFC3339); got != tt.want {
				t.Errorf("In = %s, want %s", got, tt.want)
			}
			if got := (tt.d + 1).In(tt.loc).Sub(start); got != tt.dayLength {
				t.Errorf("day length = %v, want %v", got, tt.dayLength)
			}
			if got := DateFromTime(start); got != tt.d {
				t.Errorf("DateFromTime(In) = %v, want %v", got, tt.d)
			}
			// The last instant of the day is still the same date.
			if got := DateFromTime((tt.d + 1).In(tt.loc).Add(-time.Nanosecond)); got != tt.d {
				t.Errorf("DateFromTime(end of day) = %v, want %v", got, tt.d)
			}
		})
	}
}

package buckets

import (
	"math"
	"strconv"
	"time"
)

// Date is a civil date counted in days since 1970-01-01 (a Thursday), so
// that Date(0) is 1970-01-01 and Date(-1) is 1969-12-31. It has no time zone.
// Dates are ordered and d+n is the date n days after d.
type Date int32

// DateOf returns the date of year, month and day in the proleptic Gregorian
// calendar. Like [time.Date] it normalises values out of their usual ranges:
// October 32 is November 1 and month 0 is December of the previous year.
// Dates beyond the range of Date (about ±5.8 million years) are clamped.
func DateOf(year int, month time.Month, day int) Date {
	// Normalise the month into 1..12 first; the day then simply adds.
	m := int64(month) - 1
	y := int64(year) + floorDiv(m, 12)
	m = m - floorDiv(m, 12)*12 + 1
	n := daysFromCivil(y, m) + int64(day) - 1
	switch {
	case n > math.MaxInt32:
		return math.MaxInt32
	case n < math.MinInt32:
		return math.MinInt32
	}
	return Date(n)
}

// DateFromTime returns the civil date of t in t's own location.
func DateFromTime(t time.Time) Date {
	y, m, d := t.Date()
	return DateOf(y, m, d)
}

// ParseDate parses a date written strictly as "2006-01-02": four-digit year,
// two-digit month and day, a valid day of that month. Errors wrap
// [ErrInvalidDate].
func ParseDate(s string) (Date, error) {
	d, ok := parseDate(s)
	if !ok {
		return 0, &codedError{
			msg:  "buckets: invalid date " + strconv.Quote(s) + " (want YYYY-MM-DD)",
			kind: ErrInvalidDate,
		}
	}
	return d, nil
}

func parseDate(s string) (Date, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	num := func(s string) (int, bool) {
		n := 0
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	y, ok1 := num(s[:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, time.Month(m)) {
		return 0, false
	}
	return DateOf(y, time.Month(m), d), true
}

// daysIn returns the number of days of month in year.
func daysIn(year int, month time.Month) int {
	if month == time.February {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 30 + int((month+month/8)&1) // 31 in Jan, Mar, May, Jul, Aug, Oct, Dec
}

// String returns the date as "2006-01-02". Years outside 0..9999 are written
// with as many digits as they need and a leading '-' when negative; only
// years 0..9999 parse back with [ParseDate].
func (d Date) String() string {
	return string(d.appendText(make([]byte, 0, 10)))
}

// AppendText implements [encoding.TextAppender]: it appends d.String() to b.
func (d Date) AppendText(b []byte) ([]byte, error) {
	return d.appendText(b), nil
}

// MarshalText implements [encoding.TextMarshaler] (so a Date is a JSON
// string "2006-01-02").
func (d Date) MarshalText() ([]byte, error) {
	return d.appendText(make([]byte, 0, 10)), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler] with [ParseDate].
func (d *Date) UnmarshalText(text []byte) error {
	v, err := ParseDate(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

func (d Date) appendText(b []byte) []byte {
	y, m, dd := d.Civil()
	if y < 0 {
		b = append(b, '-')
		y = -y
	}
	if y < 1000 {
		b = append(b, "000"[:4-digits(y)]...)
	}
	b = strconv.AppendInt(b, int64(y), 10)
	b = append(b, '-', byte('0'+m/10), byte('0'+m%10), '-', byte('0'+dd/10), byte('0'+dd%10))
	return b
}

// digits returns the number of decimal digits of 0 <= n < 1000 (1 for 0).
func digits(n int) int {
	switch {
	case n >= 100:
		return 3
	case n >= 10:
		return 2
	}
	return 1
}

// Civil returns the year, month and day of d.
func (d Date) Civil() (year int, month time.Month, day int) {
	// Howard Hinnant's civil_from_days, on eras of 400 years.
	z := int64(d) + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100) // [0, 365]
	mp := (5*doy + 2) / 153                  // [0, 11], March = 0
	day = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		month = time.Month(mp + 3)
	} else {
		month = time.Month(mp - 9)
		y++
	}
	return int(y), month, day
}

// daysFromCivil returns the days since 1970-01-01 of the first day of month
// m (1..12) of year y.
func daysFromCivil(y, m int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400                     // [0, 399]
	doy := (153*((m+9)%12) + 2) / 5        // first day of the month, March = 0
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return era*146097 + doe - 719468
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// In returns local midnight of d in loc, as time.Date(y, m, d, 0, 0, 0, 0,
// loc) does: on the rare day whose midnight is skipped by a daylight-saving
// change, the result is whatever [time.Date] picks for the missing instant.
// A nil loc means UTC.
func (d Date) In(loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	y, m, dd := d.Civil()
	return time.Date(y, m, dd, 0, 0, 0, 0, loc)
}

// Weekday returns the day of the week of d.
func (d Date) Weekday() time.Weekday {
	w := (int64(d) + 4) % 7 // 1970-01-01 was a Thursday
	if w < 0 {
		w += 7
	}
	return time.Weekday(w)
}

package engine

import (
	"time"

	"github.com/webstats/webstats/buckets"
)

// Date is a civil day with no time zone, counted in days since 1970-01-01:
// statistics are kept per local day of each website. Dates are ordered and
// d+n is the day n days after d. Its methods are buckets.Date's: String
// ("2006-01-02"), Civil, Weekday, In (local midnight), and text marshalling,
// so a Date is a JSON string. The alias spares library users an import of
// buckets.
type Date = buckets.Date

// ParseDate parses a day written "2006-01-02".
func ParseDate(s string) (Date, error) { return buckets.ParseDate(s) }

// DateOf returns the day of year, month and day, normalised like time.Date
// (October 32 is November 1).
func DateOf(year int, month time.Month, day int) Date { return buckets.DateOf(year, month, day) }

// DateFromTime returns the day of t in t's location: a website's local day
// is DateFromTime(t.In(its time zone)), as Owner.Today gives it.
func DateFromTime(t time.Time) Date { return buckets.DateFromTime(t) }

package report

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// Period is the period a report covers. The zero value is Weekly, the
// default of SPEC §8.
type Period uint8

// The report periods.
const (
	// Weekly reports cover Monday to Sunday and are sent from Monday 06:00.
	Weekly Period = iota
	// Monthly reports cover a calendar month and are sent from the 1st, 06:00.
	Monthly
)

// ErrInvalidPeriod is returned by ParsePeriod for an unknown period; use
// errors.Is.
var ErrInvalidPeriod = errors.New("report: invalid period")

// ParsePeriod parses "weekly" or "week", and "monthly" or "month". "off" is
// not a Period: a caller that accepts it checks it first.
func ParsePeriod(s string) (Period, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "weekly", "week":
		return Weekly, nil
	case "monthly", "month":
		return Monthly, nil
	}
	return 0, fmt.Errorf("%w %q: want weekly or monthly", ErrInvalidPeriod, s)
}

// String returns "weekly" or "monthly".
func (p Period) String() string {
	if p == Monthly {
		return "monthly"
	}
	return "weekly"
}

// valid reports whether p is one of the periods.
func (p Period) valid() bool { return p <= Monthly }

// kind is the engine's name of the period, for LastReport and SetLastReport.
func (p Period) kind() identity.ReportKind {
	if p == Monthly {
		return identity.ReportMonthly
	}
	return identity.ReportWeekly
}

// start returns the first day of the period holding d: its Monday, or the
// 1st of its month.
func (p Period) start(d engine.Date) engine.Date {
	if p == Monthly {
		y, m, _ := d.Civil()
		return engine.DateOf(y, m, 1)
	}
	return d - engine.Date((d.Weekday()+6)%7)
}

// next returns the first day of the period after the one starting on first.
func (p Period) next(first engine.Date) engine.Date {
	if p == Monthly {
		y, m, _ := first.Civil()
		return engine.DateOf(y, m+1, 1)
	}
	return first + 7
}

// prev returns the first day of the period before the one starting on first.
func (p Period) prev(first engine.Date) engine.Date {
	if p == Monthly {
		y, m, _ := first.Civil()
		return engine.DateOf(y, m-1, 1)
	}
	return first - 7
}

// last returns the last day of the period starting on first.
func (p Period) last(first engine.Date) engine.Date { return p.next(first) - 1 }

// sendHour is the local hour from which a period's report is due, on the
// first day of the next period.
const sendHour = 6

// dueAt returns when the report of the period starting on first is due:
// 06:00 on the first day of the next period, in loc.
func (p Period) dueAt(first engine.Date, loc *time.Location) time.Time {
	y, m, d := p.next(first).Civil()
	return time.Date(y, m, d, sendHour, 0, 0, 0, loc)
}

// due returns the first day of the latest period whose report is due at now
// in loc.
func (p Period) due(now time.Time, loc *time.Location) engine.Date {
	prev := p.prev(p.start(engine.DateFromTime(now.In(loc))))
	if now.Before(p.dueAt(prev, loc)) {
		prev = p.prev(prev)
	}
	return prev
}

// complete returns the first day of the latest period that has ended at now
// in loc, whether or not its report is due yet.
func (p Period) complete(now time.Time, loc *time.Location) engine.Date {
	return p.prev(p.start(engine.DateFromTime(now.In(loc))))
}

// label names the period starting on first for people: "2–8 November 2026",
// "27 October – 2 November 2026", "29 December 2025 – 4 January 2026", or
// "November 2026".
func (p Period) label(first engine.Date) string {
	y1, m1, d1 := first.Civil()
	if p == Monthly {
		return fmt.Sprintf("%s %d", m1, y1)
	}
	y2, m2, d2 := p.last(first).Civil()
	switch {
	case y1 != y2:
		return fmt.Sprintf("%d %s %d – %d %s %d", d1, m1, y1, d2, m2, y2)
	case m1 != m2:
		return fmt.Sprintf("%d %s – %d %s %d", d1, m1, d2, m2, y2)
	}
	return fmt.Sprintf("%d–%d %s %d", d1, d2, m2, y2)
}

// noun is "week" or "month".
func (p Period) noun() string {
	if p == Monthly {
		return "month"
	}
	return "week"
}

// title is "Weekly" or "Monthly".
func (p Period) title() string {
	if p == Monthly {
		return "Monthly"
	}
	return "Weekly"
}

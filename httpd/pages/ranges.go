package pages

import (
	"net/url"
	"time"

	"github.com/webstats/webstats/engine"
)

// dateRange is the range of local days a page shows.
type dateRange struct {
	From, To engine.Date
	Preset   string // one of presets, or "custom"
}

// Days returns the number of days of the range.
func (d dateRange) Days() int { return int(d.To-d.From) + 1 }

// Previous returns the range of equal length just before d.
func (d dateRange) Previous() dateRange {
	n := engine.Date(d.Days())
	return dateRange{From: d.From - n, To: d.From - 1, Preset: "custom"}
}

// lastYear returns the range of the same days a year before d.
func (d dateRange) lastYear() dateRange {
	back := func(x engine.Date) engine.Date {
		y, m, dd := x.Civil()
		return engine.DateOf(y-1, m, dd)
	}
	return dateRange{From: back(d.From), To: back(d.To), Preset: "custom"}
}

// Query returns the query parameters that select d.
func (d dateRange) Query() url.Values {
	v := url.Values{}
	if d.Preset == "custom" {
		v.Set("from", d.From.String())
		v.Set("to", d.To.String())
	} else if d.Preset != defaultPreset {
		v.Set("range", d.Preset)
	}
	return v
}

// Label describes the range for headings ("1 Nov 2026 – 30 Nov 2026").
func (d dateRange) Label() string {
	if d.From == d.To {
		return dayLabel(d.From)
	}
	return dayLabel(d.From) + " – " + dayLabel(d.To)
}

func dayLabel(d engine.Date) string {
	y, m, dd := d.Civil()
	return time.Date(y, m, dd, 0, 0, 0, 0, time.UTC).Format("2 Jan 2006")
}

// preset is a named range relative to today.
type preset struct {
	Key, Label string
	span       func(today engine.Date) (from, to engine.Date)
}

const defaultPreset = "30d"

var presets = []preset{
	{"today", "Today", func(t engine.Date) (engine.Date, engine.Date) { return t, t }},
	{"7d", "Last 7 days", func(t engine.Date) (engine.Date, engine.Date) { return t - 6, t }},
	{"30d", "Last 30 days", func(t engine.Date) (engine.Date, engine.Date) { return t - 29, t }},
	{"month", "This month", func(t engine.Date) (engine.Date, engine.Date) {
		y, m, _ := t.Civil()
		return engine.DateOf(y, m, 1), t
	}},
	{"lastmonth", "Last month", func(t engine.Date) (engine.Date, engine.Date) {
		y, m, _ := t.Civil()
		first := engine.DateOf(y, m, 1)
		py, pm, _ := (first - 1).Civil()
		return engine.DateOf(py, pm, 1), first - 1
	}},
	{"12m", "Last 12 months", func(t engine.Date) (engine.Date, engine.Date) {
		y, m, _ := t.Civil()
		return engine.DateOf(y, m-11, 1), t
	}},
}

// parseRange reads the range of a page from q: from and to (both, as
// YYYY-MM-DD), else a preset (default: the last 30 days). Errors are 400s
// with a message for people.
func parseRange(q url.Values, today engine.Date) (dateRange, error) {
	fromS, toS := q.Get("from"), q.Get("to")
	if fromS != "" || toS != "" {
		if fromS == "" || toS == "" {
			return dateRange{}, badRequest("Give both the first and the last day of the range.")
		}
		from, err := parseDay(fromS, "first")
		if err != nil {
			return dateRange{}, err
		}
		to, err := parseDay(toS, "last")
		if err != nil {
			return dateRange{}, err
		}
		switch {
		case from > to:
			return dateRange{}, badRequest("The first day (%s) is after the last day (%s).", from, to)
		case int64(to)-int64(from) >= engine.MaxRangeDays:
			return dateRange{}, badRequest("The range is longer than %d days.", engine.MaxRangeDays)
		}
		return dateRange{From: from, To: to, Preset: "custom"}, nil
	}
	key := q.Get("range")
	if key == "" {
		key = defaultPreset
	}
	for _, p := range presets {
		if p.Key == key {
			from, to := p.span(today)
			return dateRange{From: from, To: to, Preset: key}, nil
		}
	}
	return dateRange{}, badRequest("Unknown range. Pick one of the ranges offered, or give a first and a last day.")
}

func parseDay(s, which string) (engine.Date, error) {
	if len(s) > 10 {
		return 0, badRequest("The %s day is not a date (YYYY-MM-DD).", which)
	}
	d, err := engine.ParseDate(s)
	if err != nil {
		return 0, badRequest("The %s day %q is not a date (YYYY-MM-DD).", which, s)
	}
	return d, nil
}

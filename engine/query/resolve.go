package query

import (
	"fmt"
	"slices"
	"time"

	"github.com/webstats/webstats/buckets"
)

// Resolve validates q (see Validate) and makes it concrete for site: the
// range as instants in the website's time zone (the shorthands relative to
// site.Now, "all" from site.StatsStart), "time" resolved by the range's
// length (≤ 48 hours: time:hour; ≤ 40 days: time:day; ≤ 52 weeks:
// time:week; else time:month), the default order_by and pagination filled
// in. A range longer than MaxRangeDays days, or include.time_labels beyond
// MaxTimeLabels buckets, is a *QueryError.
func (q *Query) Resolve(site QuerySite) (ResolvedQuery, error) {
	if err := q.Validate(site); err != nil {
		return ResolvedQuery{}, err
	}
	loc := site.Location
	if loc == nil {
		loc = time.UTC
	}
	now := site.Now
	if now.IsZero() {
		now = time.Now()
	}
	from, to := q.DateRange.instants(loc, now.Truncate(time.Second), site.StatsStart)
	r := ResolvedQuery{Query: q.Clone(), Location: loc, From: from.In(loc), To: to.In(loc)}
	r.FirstDay, r.LastDay = buckets.DateFromTime(r.From), buckets.DateFromTime(r.To)
	if int64(r.LastDay)-int64(r.FirstDay) >= MaxRangeDays {
		return ResolvedQuery{}, &QueryError{Msg: fmt.Sprintf("Invalid date_range. A query may span at most %d days.", MaxRangeDays), Limit: "MaxRangeDays"}
	}
	if site.Domain != "" {
		r.SiteID = site.Domain
	}
	resolved := r.resolveTime()
	for i, d := range r.Dimensions {
		if d == "time" {
			r.Dimensions[i] = resolved
		}
	}
	if r.OrderBy == nil {
		if td := r.TimeDimension(); td != "" {
			r.OrderBy = append(r.OrderBy, OrderBy{Key: td})
		}
		r.OrderBy = append(r.OrderBy, OrderBy{Key: r.Metrics[0], Desc: true})
	}
	for i, o := range r.OrderBy {
		if o.Key == "time" {
			r.OrderBy[i].Key = resolved
		}
	}
	if r.Pagination.Limit == 0 {
		r.Pagination.Limit = MaxQueryLimit
	}
	if r.Include.TimeLabels && r.timeLabelCount() > MaxTimeLabels {
		return ResolvedQuery{}, &QueryError{Msg: fmt.Sprintf("Invalid include.time_labels: more than %d time buckets.", MaxTimeLabels), Limit: "MaxTimeLabels"}
	}
	return r, nil
}

// Clone copies q and its slices and filter trees: the copy shares nothing
// with q, as a ResolvedQuery shares nothing with its Query.
func (q *Query) Clone() Query {
	c := *q
	c.Metrics = slices.Clone(q.Metrics)
	c.Dimensions = slices.Clone(q.Dimensions)
	c.OrderBy = slices.Clone(q.OrderBy)
	c.Filters = cloneFilters(q.Filters)
	return c
}

func cloneFilters(fs []Filter) []Filter {
	if fs == nil {
		return nil
	}
	out := make([]Filter, len(fs))
	for i, f := range fs {
		f.Clauses = slices.Clone(f.Clauses)
		f.Children = cloneFilters(f.Children)
		out[i] = f
	}
	return out
}

// instants resolves the range to inclusive instants: whole local days run
// from the day's first instant to its last second.
func (d DateRange) instants(loc *time.Location, now time.Time, statsStart buckets.Date) (from, to time.Time) {
	today := buckets.DateFromTime(now.In(loc))
	days := func(a, b buckets.Date) (time.Time, time.Time) { return LocalDayStart(a, loc), localDayEnd(b, loc) }
	y, m, _ := today.Civil()
	switch p := d.Period; p {
	case "":
		if !d.From.IsZero() {
			return d.From, d.To
		}
		return days(d.FromDay, d.ToDay)
	case "day":
		return LocalDayStart(today, loc), now
	case "24h":
		return now.Add(-24 * time.Hour), now
	case "month":
		return days(buckets.DateOf(y, m, 1), buckets.DateOf(y, m+1, 0))
	case "year":
		return days(buckets.DateOf(y, 1, 1), buckets.DateOf(y, 12, 31))
	case "all":
		start := statsStart
		if start == 0 {
			start = today
		}
		return days(start, today)
	default:
		n, _ := periodCount(p)
		if n > 0 {
			return days(today-buckets.Date(n), today-1)
		}
		return days(buckets.DateOf(y, m+time.Month(n), 1), buckets.DateOf(y, m, 0))
	}
}

// LocalDayStart is the first instant of local day d: the later one when midnight
// happens twice, the end of the gap when midnight is skipped (as Plausible
// resolves them).
func LocalDayStart(d buckets.Date, loc *time.Location) time.Time {
	y, m, dd := d.Civil()
	return wallInstant(loc, y, m, dd, 0, 0, 0, true)
}

// localDayEnd is the last second of local day d: the earlier 23:59:59 when it
// happens twice, the instant before the gap when it is skipped.
func localDayEnd(d buckets.Date, loc *time.Location) time.Time {
	y, m, dd := d.Civil()
	return wallInstant(loc, y, m, dd, 23, 59, 59, false)
}

// wallInstant returns the instant whose wall clock in loc reads the given
// time: of two, the latest or the earliest; of none (a gap), the end of the
// gap, or its last second before when !latest.
func wallInstant(loc *time.Location, y int, m time.Month, d, hh, mm, ss int, latest bool) time.Time {
	naive := time.Date(y, m, d, hh, mm, ss, 0, time.UTC)
	var found []time.Time
	var offsets []int
	for _, probe := range []time.Duration{-36 * time.Hour, 0, 36 * time.Hour} {
		_, off := naive.Add(probe).In(loc).Zone()
		if !slices.Contains(offsets, off) {
			offsets = append(offsets, off)
		}
	}
	for _, off := range offsets {
		c := naive.Add(-time.Duration(off) * time.Second)
		if c.In(loc).Format(time.DateTime) == naive.Format(time.DateTime) {
			found = append(found, c)
		}
	}
	if len(found) > 0 {
		slices.SortFunc(found, time.Time.Compare)
		if latest {
			return found[len(found)-1]
		}
		return found[0]
	}
	// A gap: read the wall clock with the offset before it, which lands past
	// the transition; the zone that instant is in starts at the gap's end.
	_, before := naive.Add(-36 * time.Hour).In(loc).Zone()
	start, _ := naive.Add(-time.Duration(before) * time.Second).In(loc).ZoneBounds()
	if latest || start.IsZero() {
		return start
	}
	return start.Add(-time.Second)
}

// resolveTime is the size "time" stands for over this range, by Plausible's
// rule on the range's length (truncated to whole hours, days, weeks).
func (r *ResolvedQuery) resolveTime() string {
	span := r.To.Sub(r.From)
	switch {
	case span/time.Hour <= 48:
		return "time:hour"
	case span/(24*time.Hour) <= 40:
		return "time:day"
	case span/(7*24*time.Hour) <= 52:
		return "time:week"
	}
	return "time:month"
}

// TimeDimension returns the query's time dimension ("time:hour", "time:day",
// "time:week" or "time:month"), or "" if it has none.
func (r *ResolvedQuery) TimeDimension() string {
	for _, d := range r.Dimensions {
		if isTimeDimension(d) {
			return d
		}
	}
	return ""
}

// Contains reports whether an event at t falls in the range.
func (r *ResolvedQuery) Contains(t time.Time) bool {
	t = t.Truncate(time.Second)
	return !t.Before(r.From) && !t.After(r.To)
}

// TimeBucket returns the label of the time dimension's bucket holding t, in
// the website's time zone: "2021-01-01 13:00:00" for hours, "2021-01-01"
// for days, the week's Monday clamped to the range's first day for weeks
// ("2020-12-20" for a range starting on Sunday 2020-12-20), the first of the
// month for months. "" when the query has no time dimension.
func (r *ResolvedQuery) TimeBucket(t time.Time) string {
	lt := t.In(r.Location)
	switch r.TimeDimension() {
	case "time:hour":
		return lt.Format("2006-01-02 15:00:00")
	case "time:day":
		return lt.Format(time.DateOnly)
	case "time:week":
		return max(WeekMonday(buckets.DateFromTime(lt)), r.FirstDay).String()
	case "time:month":
		y, m, _ := lt.Date()
		return buckets.DateOf(y, m, 1).String()
	}
	return ""
}

// DayBucket is the time:day, time:week or time:month bucket of a hit
// counted under local day d (SPEC §10.1: over whole days a hit is in the
// bucket of its stored day, whatever the time zone is now), as TimeBucket
// reads it of a time; "" for another dimension.
func (r *ResolvedQuery) DayBucket(d buckets.Date) string {
	switch r.TimeDimension() {
	case "time:day":
		return d.String()
	case "time:week":
		return max(WeekMonday(d), r.FirstDay).String()
	case "time:month":
		y, m, _ := d.Civil()
		return buckets.DateOf(y, m, 1).String()
	}
	return ""
}

// WeekMonday returns the Monday starting d's week.
func WeekMonday(d buckets.Date) buckets.Date {
	return d - buckets.Date((int(d.Weekday())+6)%7)
}

// TimeLabels lists every bucket of the time dimension over the range, as
// include.time_labels returns them: each day; the first day and then each
// Monday for weeks; the first of each month from the month of the first
// day; each local hour from the hour of From to To. Nil without a time
// dimension. The slice is the caller's.
func (r *ResolvedQuery) TimeLabels() []string {
	var out []string
	r.eachLabel(func(label string) bool {
		out = append(out, label)
		return true
	})
	return out
}

// timeLabelCount counts TimeLabels without building them.
func (r *ResolvedQuery) timeLabelCount() int {
	n := 0
	r.eachLabel(func(string) bool {
		n++
		return n <= MaxTimeLabels
	})
	return n
}

func (r *ResolvedQuery) eachLabel(yield func(string) bool) {
	switch r.TimeDimension() {
	case "time:day":
		for d := r.FirstDay; d <= r.LastDay; d++ {
			if !yield(d.String()) {
				return
			}
		}
	case "time:week":
		for d := r.FirstDay; d <= r.LastDay; d = WeekMonday(d) + 7 {
			if !yield(d.String()) {
				return
			}
		}
	case "time:month":
		y, m, _ := r.FirstDay.Civil()
		for d := buckets.DateOf(y, m, 1); d <= r.LastDay; {
			if !yield(d.String()) {
				return
			}
			y, m, _ := d.Civil()
			d = buckets.DateOf(y, m+1, 1)
		}
	case "time:hour":
		lt := r.From.In(r.Location)
		t := wallInstant(r.Location, lt.Year(), lt.Month(), lt.Day(), lt.Hour(), 0, 0, false)
		if t.After(r.From) { // the hour began in a gap
			t = r.From
		}
		last := ""
		for ; !t.After(r.To); t = t.Add(time.Hour) {
			label := t.In(r.Location).Format("2006-01-02 15:00:00")
			if label == last { // a repeated hour when clocks go back
				continue
			}
			last = label
			if !yield(label) {
				return
			}
		}
	}
}

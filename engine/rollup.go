package engine

import (
	"context"

	"github.com/webstats/webstats/buckets"
)

// Closed months and weeks are kept as rolled-up buckets (SPEC §9): a range
// query over a year sums a dozen month rollups and the weeks and days at
// its ends, not 365 days; one over the last 30 days sums three or four
// weeks and the days around them. A rollup is built on first use from its
// frozen days and dropped when one of them changes (an import into the
// past).

// monthOf returns the first and last day of date's month.
func monthOf(date buckets.Date) (first, last buckets.Date) {
	y, m, _ := date.Civil()
	first = buckets.DateOf(y, m, 1)
	return first, buckets.DateOf(y, m+1, 1) - 1
}

// weekOf returns the Monday and the Sunday of date's week.
func weekOf(date buckets.Date) (first, last buckets.Date) {
	// Day 0, 1970-01-01, was a Thursday: three days after a Monday.
	first = date - ((date+3)%7+7)%7
	return first, first + 6
}

// rollKey names a rollup: its first and last day, a month or a week (a
// month can start on a Monday).
type rollKey struct{ first, last buckets.Date }

// rollEntry is a cached rollup of a closed month or week, counted in the
// resident bytes and evicted like a frozen day.
type rollEntry struct {
	day  *buckets.Day
	size int
	used int64 // LRU clock
}

// invalidateRollupsLocked drops the rollups of date's month and week. The
// shard lock must be held.
func (e *Engine) invalidateRollupsLocked(st *siteState, date buckets.Date) {
	mFirst, mLast := monthOf(date)
	wFirst, wLast := weekOf(date)
	for _, k := range [...]rollKey{{mFirst, mLast}, {wFirst, wLast}} {
		if m, ok := st.rollups[k]; ok {
			e.counters.resident.Add(-int64(m.size))
			delete(st.rollups, k)
		}
	}
	st.rollGen++
}

// segment is a part of a query range: a whole closed month or week
// (rolled), or days.
type segment struct {
	from, to buckets.Date
	rolled   bool
}

// splitRange splits [from, to] into whole months that ended before today
// (in the website's time zone), whole weeks (Monday to Sunday) that ended
// before today among the days around them, and the days left.
func splitRange(from, to, today buckets.Date) []segment {
	var out []segment
	days := func(from, to buckets.Date) {
		split(from, to, today, weekOf, func(s segment) { out = append(out, s) })
	}
	split(from, to, today, monthOf, func(s segment) {
		if s.rolled {
			out = append(out, s)
		} else {
			days(s.from, s.to)
		}
	})
	return out
}

// split calls emit, in order, with the whole periods of [from, to] (as
// period gives them) that ended before today, and the days between them.
func split(from, to, today buckets.Date, period func(buckets.Date) (first, last buckets.Date), emit func(segment)) {
	start := from
	for d := from; d <= to; {
		first, last := period(d)
		if first >= from && last <= to && last < today {
			if start < first {
				emit(segment{from: start, to: first - 1})
			}
			emit(segment{from: first, to: last, rolled: true})
			start = last + 1
		}
		d = last + 1
	}
	if start <= to {
		emit(segment{from: start, to: to})
	}
}

// rollup returns the rollup of the month or week [first, last] of website
// s, building it if every day of it is frozen; nil otherwise (the caller
// then reads the days).
func (e *Engine) rollup(ctx context.Context, s *site, first, last buckets.Date) (*buckets.Day, error) {
	sh := e.shardOf(s.state.id)
	sh.mu.Lock()
	key := rollKey{first, last}
	if m, ok := s.state.rollups[key]; ok {
		m.used = e.counters.tick.Add(1)
		sh.mu.Unlock()
		return m.day, nil
	}
	// A change to one of the days from here on (even to a copy loadRange
	// reads and does not keep) means the rollup is not cached.
	gen := s.state.rollGen
	sh.mu.Unlock()
	defer e.maybeEvict() // the days it loaded and the rollup it keeps
	loaded, pinned, err := e.loadRange(s, sh, first, last, false)
	if err != nil {
		return nil, err
	}
	var days []*buckets.Day
	sh.mu.Lock()
	unpinDaysLocked(pinned)
	st := s.state
	for date := first; date <= last; date++ {
		if ent, ok := st.days[date]; ok {
			if !ent.frozen {
				sh.mu.Unlock()
				return nil, nil
			}
			days = append(days, ent.day)
		} else if _, ok := st.dates[date]; ok {
			d, ok := loaded[date]
			if !ok {
				sh.mu.Unlock()
				return nil, nil // evicted, or changed, meanwhile
			}
			days = append(days, d.day)
		}
	}
	sh.mu.Unlock()
	if len(days) == 0 {
		return nil, nil // no data: nothing to sum, nothing to cache
	}
	r := buckets.Rollup(days...)
	sh.mu.Lock()
	if st.rollGen == gen && !st.deleted {
		if _, ok := st.rollups[key]; !ok {
			m := &rollEntry{day: r, size: r.SizeBytes(), used: e.counters.tick.Add(1)}
			st.rollups[key] = m
			e.counters.resident.Add(int64(m.size))
		}
	}
	sh.mu.Unlock()
	return r, nil
}

// sumDim sums dimension dim of website s over [from, to]: its rows, by
// value. The work is proportional to the rows of the range (a rollup for
// each closed month and week, days around them).
func (e *Engine) sumDim(ctx context.Context, s *site, dim buckets.Dim, from, to buckets.Date) ([]buckets.Row, error) {
	today := buckets.DateFromTime(e.now().In(s.cfg.Load().loc))
	var sum buckets.Sum
	add := func(_ buckets.Date, d *buckets.Day) { sum.Add(dim, d) }
	for _, seg := range splitRange(from, to, today) {
		if seg.rolled {
			r, err := e.rollup(ctx, s, seg.from, seg.to)
			if err != nil {
				return nil, err
			}
			if r != nil {
				sum.Add(dim, r)
				continue
			}
		}
		if err := e.scan(ctx, s, seg.from, seg.to, nil, add); err != nil {
			return nil, err
		}
	}
	return sum.Unordered(), nil
}

package engine

import (
	"context"

	"github.com/webstats/webstats/buckets"
)

// Closed months are kept as rolled-up buckets (SPEC §9): a range query over
// a year sums a dozen month rollups and the days at its ends, not 365 days.
// A rollup is built on first use from the month's frozen days and dropped
// when one of them changes (an import into the past).

// monthOf returns the first and last day of date's month.
func monthOf(date buckets.Date) (first, last buckets.Date) {
	y, m, _ := date.Civil()
	first = buckets.DateOf(y, m, 1)
	return first, buckets.DateOf(y, m+1, 1) - 1
}

// monthEntry is a cached rollup of a closed month, counted in the
// resident bytes and evicted like a frozen day.
type monthEntry struct {
	day  *buckets.Day
	size int
	used int64 // LRU clock
}

// invalidateMonthLocked drops the rollup of date's month. The shard lock
// must be held.
func (e *Engine) invalidateMonthLocked(st *siteState, date buckets.Date) {
	first, _ := monthOf(date)
	if m, ok := st.months[first]; ok {
		e.counters.resident.Add(-int64(m.size))
		delete(st.months, first)
	}
	st.rollGen++
}

// segment is a part of a query range: a whole closed month, or days.
type segment struct {
	from, to buckets.Date
	month    bool
}

// segments splits [from, to] into whole months that ended before today
// (in the website's time zone) and the days around them.
func segments(from, to, today buckets.Date) []segment {
	var out []segment
	start := from
	for d := from; d <= to; {
		first, last := monthOf(d)
		if first >= from && last <= to && last < today {
			if start < first {
				out = append(out, segment{from: start, to: first - 1})
			}
			out = append(out, segment{from: first, to: last, month: true})
			start = last + 1
		}
		d = last + 1
	}
	if start <= to {
		out = append(out, segment{from: start, to: to})
	}
	return out
}

// monthRollup returns the rollup of the month [first, last] of website s,
// building it if every day of the month is frozen; nil otherwise (the
// caller then reads the days).
func (e *Engine) monthRollup(ctx context.Context, s *site, first, last buckets.Date) (*buckets.Day, error) {
	sh := e.shardOf(s.state.id)
	sh.mu.Lock()
	if m, ok := s.state.months[first]; ok {
		m.used = e.counters.tick.Add(1)
		sh.mu.Unlock()
		return m.day, nil
	}
	sh.mu.Unlock()
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
	gen := st.rollGen
	sh.mu.Unlock()
	if len(days) == 0 {
		return nil, nil // no data: nothing to sum, nothing to cache
	}
	r := buckets.Rollup(days...)
	sh.mu.Lock()
	if st.rollGen == gen && !st.deleted {
		if _, ok := st.months[first]; !ok {
			m := &monthEntry{day: r, size: r.SizeBytes(), used: e.counters.tick.Add(1)}
			st.months[first] = m
			e.counters.resident.Add(int64(m.size))
		}
	}
	sh.mu.Unlock()
	return r, nil
}

// sumDim sums dimension dim of website s over [from, to]: its rows, by
// value. The work is proportional to the rows of the range (a month rollup
// for each closed month, days around them).
func (e *Engine) sumDim(ctx context.Context, s *site, dim buckets.Dim, from, to buckets.Date) ([]buckets.Row, error) {
	today := buckets.DateFromTime(e.now().In(s.cfg.Load().loc))
	var sum buckets.Sum
	add := func(_ buckets.Date, d *buckets.Day) { sum.Add(dim, d) }
	for _, seg := range segments(from, to, today) {
		if seg.month {
			r, err := e.monthRollup(ctx, s, seg.from, seg.to)
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

package engine

import (
	"context"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/rollup"
)

// Closed months and weeks are kept as rolled-up buckets (SPEC §9,
// package rollup): built on first use from their frozen days, dropped when
// one of them changes (an import into the past).

// invalidateRollupsLocked drops the rollups of date's month and week. The
// shard lock must be held.
func (e *Engine) invalidateRollupsLocked(st *siteState, date buckets.Date) {
	e.counters.resident.Add(-st.rollups.Invalidate(date))
	st.rollGen++
}

// rollup returns the rollup of the month or week [first, last] of website
// s, building it if every day of it is frozen; nil otherwise (the caller
// then reads the days).
func (e *Engine) rollup(ctx context.Context, s *site, first, last buckets.Date) (*buckets.Day, error) {
	sh := e.shardOf(s.state.id)
	sh.mu.Lock()
	key := rollup.Key{First: first, Last: last}
	if d, ok := s.state.rollups.Get(key, e.counters.tick.Add(1)); ok {
		sh.mu.Unlock()
		return d, nil
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
		e.counters.resident.Add(st.rollups.Put(key, r, e.counters.tick.Add(1)))
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
	for _, seg := range rollup.Split(from, to, today) {
		if seg.Rolled {
			r, err := e.rollup(ctx, s, seg.From, seg.To)
			if err != nil {
				return nil, err
			}
			if r != nil {
				sum.Add(dim, r)
				continue
			}
		}
		if err := e.scan(ctx, s, seg.From, seg.To, nil, add); err != nil {
			return nil, err
		}
	}
	return sum.Unordered(), nil
}

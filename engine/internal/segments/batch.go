package segments

import (
	"context"
	"math"

	"github.com/webstats/webstats/buckets"
)

// Batch scans the days of several plans' ranges into them, each day
// passed once for all of them and scanned into each plan whose range holds
// it. Days passed locked (open days, chunks) are scanned at once; the
// others, which never change, at Finish on every core (ScanParallel).
type Batch struct {
	ps      []*Plan
	spans   [][2]buckets.Date // the days each plan reads
	later   []*Day            // the days scanned at Finish
	dates   []buckets.Date    // later's days
	periods [][2]int32        // the salt periods of the days scanned at once
	others  map[int32]bool    // the periods of the days before the chunks
	err     error
}

// NewBatch returns the batch of plans ps, each reading the days of its
// span (first and last).
func NewBatch(ps []*Plan, spans [][2]buckets.Date) *Batch {
	return &Batch{ps: ps, spans: spans}
}

// Range returns the first and last days any plan of b reads.
func (b *Batch) Range() (lo, hi buckets.Date) {
	lo, hi = buckets.Date(math.MaxInt32), buckets.Date(math.MinInt32)
	for _, s := range b.spans {
		lo, hi = min(lo, s[0]), max(hi, s[1])
	}
	return lo, hi
}

// Day passes day sd of date. locked: it is read at once and not kept (an
// open day read under the engine's lock, or a chunk); else it is kept
// until Finish.
func (b *Batch) Day(date buckets.Date, sd *Day, locked bool) {
	switch {
	case sd.Hits() == 0 || b.err != nil:
	case locked:
		plo, phi := PeriodSpan(sd)
		// A chunk of the only day read in chunks, all of whose visits
		// are of a salt period no other day holds, is counted as a day
		// of its own period: the chunks' visitors are disjoint, and
		// every other day was passed before.
		var solo map[*Day]bool
		if sd.Lone && b.ps[0].Daily && plo == phi {
			if b.others == nil {
				b.others = PeriodsOf(b.later, b.periods)
			}
			if !b.others[plo] && !b.others[math.MinInt32] {
				solo = map[*Day]bool{sd: true}
			}
		}
		b.periods = append(b.periods, [2]int32{plo, phi})
		for i, p := range b.ps {
			if date >= b.spans[i][0] && date <= b.spans[i][1] {
				p.SoloDays = solo
				p.ScanDay(sd, date, false)
				p.SoloDays = nil // a chunk is garbage once scanned
				if p.Err != nil {
					b.err = p.Err
					return
				}
			}
		}
	default:
		b.later = append(b.later, sd)
		b.dates = append(b.dates, date)
	}
}

// Finish scans the days kept with up to workers goroutines and returns
// the batch's first error.
func (b *Batch) Finish(ctx context.Context, workers int) error {
	if b.err != nil {
		return b.err
	}
	solo := SoloDays(b.later, b.periods)
	for _, p := range b.ps {
		p.SoloDays = solo
	}
	return ScanParallel(ctx, b.ps, b.spans, b.later, b.dates, workers)
}

// Days returns the first and last days a scan of p reads; start returns
// the first day of a date's salt period (not called when p.Daily).
func (p *Plan) Days(start func(buckets.Date) buckets.Date) (lo, hi buckets.Date) {
	lo, hi = p.Query.FirstDay, p.Query.LastDay
	if !p.ByDay {
		// A sub-day range compares times: a hit in it may have been
		// counted under a day of another time zone (SPEC §2.3: changing
		// the zone does not move old hits), up to 26 hours away.
		lo, hi = lo-2, hi+2
	}
	if !p.Daily {
		// A visit's rows live in the day it started, which may be any day
		// of its salt period before the range. An earlier hit imported
		// after its visit began joins it only within 30 minutes of its
		// last hit: on the day before the rows' at most (a negative
		// DayFlags), which a range ending that day must scan too.
		lo = start(lo)
		if p.ByDay {
			hi++
		}
	}
	return lo, hi
}

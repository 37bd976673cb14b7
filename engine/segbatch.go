package engine

import (
	"context"
	"math"
	"runtime"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
)

// One scan for a set of queries (issue #37: the statistics pages answer
// every card through Query). The overview asks a dozen queries of the
// same range: the totals, the chart's series and a breakdown per card.
// Asked one by one, each read the range's days again: a day too large to
// stay resident was read (or streamed, segstream.go) once per card.
// QueryBatch reads each day once and passes it to every query's plan in
// turn, while it is in the processor's caches; each plan still counts the
// day as its own query would, so the answers are Query's.

// QueryBatch answers qs for one website, as Query answers each of them,
// reading each day of their ranges once for all of them. The answers are
// in the order of qs; the first error is the batch's.
func (o Owner) QueryBatch(ctx context.Context, website uint32, qs []Query) ([]QueryResult, error) {
	out := make([]QueryResult, len(qs))
	far, done, err := o.elsewhere(website)
	if err != nil {
		return nil, err
	}
	if far || len(qs) == 1 {
		if !far {
			done()
		}
		for i, q := range qs {
			if out[i], err = o.query(ctx, website, q); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	defer done()
	qc, err := o.queryContext(website)
	if err != nil {
		return nil, err
	}
	pqs := make([]*preparedQuery, len(qs))
	var plans []*segments.Plan
	for i, q := range qs {
		if pqs[i], err = qc.prepare(ctx, o, q); err != nil {
			return nil, err
		}
		if pqs[i].plan != nil {
			plans = append(plans, pqs[i].plan)
		}
	}
	if len(plans) > 0 {
		if err := o.e.scanPlans(ctx, qc.s, plans); err != nil {
			return nil, err
		}
	}
	for i, pq := range pqs {
		if pq.plan == nil {
			out[i] = pq.res
			continue
		}
		if out[i], err = qc.finish(ctx, o.e, pq); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// planDays returns the days p's scan reads.
func (e *Engine) planDays(p *segments.Plan) (lo, hi buckets.Date) {
	lo, hi = p.Query.FirstDay, p.Query.LastDay
	if !p.ByDay {
		// A sub-day range compares times: a hit in it may have been
		// counted under a day of another time zone (SPEC §2.3: changing
		// the zone does not move old hits), up to 26 hours away.
		lo, hi = lo-2, hi+2
	}
	if e.opts.SaltPeriod != SaltDay {
		// A visit's rows live in the day it started, which may be any day
		// of its salt period before the range. An earlier hit imported
		// after its visit began joins it only within 30 minutes of its
		// last hit: on the day before the rows' at most (a negative
		// segments.DayFlags), which a range ending that day must scan too.
		lo = periodStart(lo, e.opts.SaltPeriod)
		if p.ByDay {
			hi++
		}
	}
	return lo, hi
}

// scanPlans scans the days of the plans' ranges into them, each day read
// once for all of them (scanSegs over the days any of them reads) and
// passed to each plan whose range holds it.
func (e *Engine) scanPlans(ctx context.Context, s *site, ps []*segments.Plan) error {
	spansOf := make([][2]buckets.Date, len(ps))
	lo, hi := buckets.Date(1<<31-1), buckets.Date(-1<<31)
	for i, p := range ps {
		p.Intern, p.GidBits = e.interns(), segments.GidPageBits
		p.DimBytes = &e.counters.dimMemos
		p.Daily = e.opts.SaltPeriod == SaltDay
		l, h := e.planDays(p)
		spansOf[i] = [2]buckets.Date{l, h}
		lo, hi = min(lo, l), max(hi, h)
	}
	// Days passed locked (open days, chunks) are scanned at once; the
	// others, which never change, on every core (segments.ScanParallel).
	var later []*segments.Day
	var dates []buckets.Date // later's days
	var spans [][2]int32     // the salt periods of the days scanned at once
	var failed error
	var others map[int32]bool // the periods of the days before the chunks
	err := e.scanSegs(ctx, s, lo, hi, func(date buckets.Date, sd *segments.Day, locked bool) {
		switch {
		case sd.Hits() == 0 || failed != nil:
		case locked:
			plo, phi := segments.PeriodSpan(sd)
			// A chunk of the only day read in chunks, all of whose visits
			// are of a salt period no other day holds, is counted as a
			// day of its own period: the chunks' visitors are disjoint
			// (segstream.go), and every other day was passed before.
			var solo map[*segments.Day]bool
			if sd.Lone && e.opts.SaltPeriod == SaltDay && plo == phi {
				if others == nil {
					others = segments.PeriodsOf(later, spans)
				}
				if !others[plo] && !others[math.MinInt32] {
					solo = map[*segments.Day]bool{sd: true}
				}
			}
			spans = append(spans, [2]int32{plo, phi})
			for i, p := range ps {
				if date >= spansOf[i][0] && date <= spansOf[i][1] {
					p.SoloDays = solo
					p.ScanDay(sd, date, false)
					p.SoloDays = nil // a chunk is garbage once scanned
					if p.Err != nil {
						failed = p.Err
						return
					}
				}
			}
		default:
			later = append(later, sd)
			dates = append(dates, date)
		}
	})
	if err != nil {
		return err
	}
	if failed != nil {
		return failed
	}
	solo := segments.SoloDays(later, spans)
	for _, p := range ps {
		p.SoloDays = solo
	}
	return segments.ScanParallel(ctx, ps, spansOf, later, dates, runtime.GOMAXPROCS(0))
}

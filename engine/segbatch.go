package engine

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

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
	var plans []*plan
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
func (e *Engine) planDays(p *plan) (lo, hi buckets.Date) {
	lo, hi = p.r.FirstDay, p.r.LastDay
	if !p.byDay {
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
		if p.byDay {
			hi++
		}
	}
	return lo, hi
}

// scanPlans scans the days of the plans' ranges into them, each day read
// once for all of them (scanSegs over the days any of them reads) and
// passed to each plan whose range holds it.
func (e *Engine) scanPlans(ctx context.Context, s *site, ps []*plan) error {
	spansOf := make([][2]buckets.Date, len(ps))
	lo, hi := buckets.Date(1<<31-1), buckets.Date(-1<<31)
	for i, p := range ps {
		p.intern, p.gidBits = e.interns(), segments.GidPageBits
		p.dimBytes = &e.counters.dimMemos
		p.daily = e.opts.SaltPeriod == SaltDay
		l, h := e.planDays(p)
		spansOf[i] = [2]buckets.Date{l, h}
		lo, hi = min(lo, l), max(hi, h)
	}
	// Days passed locked (open days, chunks) are scanned at once; the
	// others, which never change, on every core (scanParallel).
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
					others = periodsOf(later, spans)
				}
				if !others[plo] && !others[math.MinInt32] {
					solo = map[*segments.Day]bool{sd: true}
				}
			}
			spans = append(spans, [2]int32{plo, phi})
			for i, p := range ps {
				if date >= spansOf[i][0] && date <= spansOf[i][1] {
					p.soloDays = solo
					p.scanDay(sd, date, false)
					p.soloDays = nil // a chunk is garbage once scanned
					if p.err != nil {
						failed = p.err
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
	solo := soloDays(later, spans)
	for _, p := range ps {
		p.soloDays = solo
	}
	return scanParallel(ctx, ps, spansOf, later, dates, runtime.GOMAXPROCS(0))
}

// scanParallel scans days into the plans ps (each the days of its span)
// with up to workers goroutines, each into plans of its own, merged into
// ps at the end. The days (of dates) are only read.
func scanParallel(ctx context.Context, ps []*plan, spansOf [][2]buckets.Date, days []*segments.Day, dates []buckets.Date, workers int) error {
	workers = min(workers, len(days))
	scan := func(subs []*plan, i int) error {
		for j, p := range subs {
			if d := dates[i]; d >= spansOf[j][0] && d <= spansOf[j][1] {
				if p.scanDay(days[i], d, true); p.err != nil {
					return p.err
				}
			}
		}
		return nil
	}
	if workers <= 1 {
		for i := range days {
			if i%16 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if err := scan(ps, i); err != nil {
				return err
			}
		}
		return nil
	}
	subs := make([][]*plan, workers)
	shared := make([]*scanShared, len(ps))
	for j := range ps {
		shared[j] = new(scanShared)
	}
	for w := range subs {
		for j, p := range ps {
			sub, err := newPlan(p.r, p.goals)
			if err != nil {
				return err
			}
			sub.shared, sub.soloDays, sub.intern, sub.gidBits, sub.daily = shared[j], p.soloDays, p.intern, p.gidBits, p.daily
			sub.dimBytes = p.dimBytes
			subs[w] = append(subs[w], sub)
		}
	}
	var next atomic.Int64
	var stop atomic.Bool
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range subs {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					errs[w] = fmt.Errorf("engine: query: %v", r)
				}
				if errs[w] != nil {
					stop.Store(true) // the others stop too
				}
			}()
			for errs[w] == nil && ctx.Err() == nil && !stop.Load() {
				i := int(next.Add(1)) - 1
				if i >= len(days) {
					return
				}
				errs[w] = scan(subs[w], i)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for w := range subs {
		if errs[w] != nil {
			return errs[w]
		}
		for j, sub := range subs[w] {
			if sub.err != nil {
				return sub.err
			}
			if ps[j].merge(sub); ps[j].err != nil {
				return ps[j].err
			}
		}
	}
	return nil
}

// periodsOf returns the salt periods of the visits of days and of spans
// (first to last period); MinInt32 among them when a span is too wide to
// list.
func periodsOf(days []*segments.Day, spans [][2]int32) map[int32]bool {
	out := make(map[int32]bool)
	add := func(lo, hi int32) {
		if lo > hi {
			return // no visits
		}
		if int64(hi)-int64(lo) >= 400 {
			out[math.MinInt32] = true
			return
		}
		for per := lo; per <= hi; per++ {
			out[per] = true
		}
	}
	for _, sd := range days {
		if m := sd.Memo(); m != nil {
			add(m.Periods(sd))
		} else {
			add(segments.PeriodSpan(sd))
		}
	}
	for _, sp := range spans {
		add(sp[0], sp[1])
	}
	return out
}

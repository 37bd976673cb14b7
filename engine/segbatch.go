package engine

import (
	"context"
	"runtime"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
)

// One scan for a set of queries (issue #37: the statistics pages answer
// every card through Query). The overview asks a dozen queries of the
// same range: the totals, the chart's series and a breakdown per card.
// Asked one by one, each read the range's days again: a day too large to
// stay resident was read (or streamed: segments.Chunks) once per card.
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

// scanPlans scans the days of the plans' ranges into them, each day read
// once for all of them (scanSegs over the days any of them reads:
// segments.Batch).
func (e *Engine) scanPlans(ctx context.Context, s *site, ps []*segments.Plan) error {
	spans := make([][2]buckets.Date, len(ps))
	for i, p := range ps {
		p.Intern, p.GidBits = e.interns(), segments.GidPageBits
		p.DimBytes = &e.counters.dimMemos
		p.Daily = e.opts.SaltPeriod == SaltDay
		spans[i][0], spans[i][1] = p.Days(e.opts.SaltPeriod.Start)
	}
	b := segments.NewBatch(ps, spans)
	lo, hi := b.Range()
	if err := e.scanSegs(ctx, s, lo, hi, b.Day); err != nil {
		return err
	}
	return b.Finish(ctx, runtime.GOMAXPROCS(0))
}

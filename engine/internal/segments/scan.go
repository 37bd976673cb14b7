package segments

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/webstats/webstats/buckets"
)

// ScanParallel scans days into the plans ps (each the days of its span)
// with up to workers goroutines, each into plans of its own, merged into
// ps at the end. The days (of dates) are only read.
func ScanParallel(ctx context.Context, ps []*Plan, spansOf [][2]buckets.Date, days []*Day, dates []buckets.Date, workers int) error {
	workers = min(workers, len(days))
	scan := func(subs []*Plan, i int) error {
		for j, p := range subs {
			if d := dates[i]; d >= spansOf[j][0] && d <= spansOf[j][1] {
				if p.ScanDay(days[i], d, true); p.Err != nil {
					return p.Err
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
	subs, err := workerPlans(ps, workers)
	if err != nil {
		return err
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
			if sub.Err != nil {
				return sub.Err
			}
			if ps[j].merge(sub); ps[j].Err != nil {
				return ps[j].Err
			}
		}
	}
	return nil
}

// workerPlans returns, for each of workers, its plans: one for each of
// ps, sharing its groups' bound (scanShared) with the other workers'.
func workerPlans(ps []*Plan, workers int) ([][]*Plan, error) {
	subs := make([][]*Plan, workers)
	shared := make([]*scanShared, len(ps))
	for j := range ps {
		shared[j] = new(scanShared)
	}
	for w := range subs {
		for j, p := range ps {
			sub, err := NewPlan(p.Query, p.Goals)
			if err != nil {
				return nil, err
			}
			sub.shared, sub.SoloDays, sub.Intern, sub.GidBits, sub.Daily = shared[j], p.SoloDays, p.Intern, p.GidBits, p.Daily
			sub.DimBytes = p.DimBytes
			subs[w] = append(subs[w], sub)
		}
	}
	return subs, nil
}

// PeriodsOf returns the salt periods of the visits of days and of spans
// (first to last period); MinInt32 among them when a span is too wide to
// list.
func PeriodsOf(days []*Day, spans [][2]int32) map[int32]bool {
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
			add(PeriodSpan(sd))
		}
	}
	for _, sp := range spans {
		add(sp[0], sp[1])
	}
	return out
}

// SoloDays returns the days of days whose visits are all of one salt
// period that no other day holds, neither of days nor of spans (the
// periods of other days scanned, first to last). With daily salts (the
// default) that is every day: their visitors are counted per day, not
// merged in bitmaps across days.
func SoloDays(days []*Day, spans [][2]int32) map[*Day]bool {
	if len(days) == 0 {
		return nil
	}
	periods := make([]int32, len(days))
	once := make(map[int32]int, len(days)) // days of each period
	for i, sd := range days {
		var plo, phi int32
		if m := sd.Memo(); m != nil {
			plo, phi = m.Periods(sd)
		} else {
			plo, phi = PeriodSpan(sd)
		}
		if plo == phi {
			periods[i] = plo
			once[plo]++
		} else {
			periods[i] = math.MinInt32
			spans = append(spans, [2]int32{plo, phi})
		}
	}
	solo := make(map[*Day]bool, len(days))
	for i, sd := range days {
		per := periods[i]
		if per == math.MinInt32 || once[per] != 1 {
			continue
		}
		solo[sd] = !slices.ContainsFunc(spans, func(sp [2]int32) bool { return per >= sp[0] && per <= sp[1] })
	}
	return solo
}

// scanShared is what the workers of one scan share: the groups they made
// together (a key two workers made counts twice, so the bound on it is
// twice MaxQueryGroups; merge checks the exact one), and a stop flag any
// worker's error sets.
type scanShared struct {
	groups atomic.Int64
	stop   atomic.Bool
}

// merge adds the totals of sub's groups, scanned from other days, to p's.
// The groups' per-day state is empty between days.
func (p *Plan) merge(sub *Plan) {
	for _, sg := range sub.order {
		g, ok := p.groups[sg.key]
		if !ok {
			if len(p.groups) >= p.groupLimit {
				p.Err = groupsError(p.groupLimit)
				return
			}
			sg.id = int32(len(p.order) + 1)
			p.groups[sg.key] = sg
			p.order = append(p.order, sg)
			continue
		}
		g.pageviews += sg.pageviews
		g.events += sg.events
		g.visits += sg.visits
		g.solo += sg.solo
		for per, bm := range sg.visitors {
			if g.visitors == nil {
				g.visitors = make(map[int32]*roaring.Bitmap)
			}
			if cur := g.visitors[per]; cur != nil {
				cur.Or(bm)
			} else {
				g.visitors[per] = bm
			}
		}
		g.sess.N += sg.sess.N
		g.sess.BounceN += sg.sess.BounceN
		g.sess.Bounced += sg.sess.Bounced
		g.sess.Duration += sg.sess.Duration
		g.sess.Pageviews += sg.sess.Pageviews
		g.revenue = addMicros(g.revenue, sg.revenue)
		g.revenueN += sg.revenueN
		if sg.revCurrency != "" {
			g.revCurrency = sg.revCurrency
		}
		g.engMs += sg.engMs
		g.engN += sg.engN
		g.scrollSum += sg.scrollSum
		g.scrollN += sg.scrollN
		g.hasRows = g.hasRows || sg.hasRows
	}
}

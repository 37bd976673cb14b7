package engine

// The one query call (SPEC §10.2): a resolved Query is compiled into a plan
// that scans the segments store of the range's days once, day by day:
// filters are evaluated on dictionary ids with a memo per day, hits are
// grouped by their dimension values, and each group keeps what its metrics
// need (counts, distinct visitors per salt period as roaring bitmaps, the
// day's visit rows). The rules are /docs/design.md's "Segments".

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/ua"
	"github.com/webstats/webstats/engine/query"
	"github.com/webstats/webstats/snapshot"
)

// maxGoalMemo bounds the bytes a plan memoises of pageview goal matches a
// day (a byte per goal and string of the day).
const maxGoalMemo = 16 << 20

// MaxQueryGroups bounds the groups (distinct dimension values) one query
// may build: beyond it the query fails with a *QueryError (Limit
// "MaxQueryGroups") instead of growing without bound.
const MaxQueryGroups = 1_000_000

// queryRuns counts the queries run on the segments (for tests).
var queryRuns atomic.Int64

// queryGroupLimit is MaxQueryGroups, lowered by tests, never while a query
// runs: each plan reads it when made (newPlan, groupLimit), a scan's
// workers' plans when the scan starts them.
var queryGroupLimit = MaxQueryGroups

// groupsError is the error of a query that groups more than limit rows.
func groupsError(limit int) *QueryError {
	return &QueryError{Msg: fmt.Sprintf("The query groups more than %d rows; add filters or fewer dimensions.", limit), Limit: "MaxQueryGroups"}
}

func (o Owner) query(ctx context.Context, website uint32, q Query) (QueryResult, error) {
	far, done, err := o.elsewhere(website)
	if err != nil {
		return QueryResult{}, err
	}
	if far {
		body, err := q.MarshalJSON()
		if err != nil {
			return QueryResult{}, err
		}
		rep, err := o.ask(ctx, website, askRequest{Op: askQuery, Query: body})
		return rep.Result, err
	}
	defer done()
	qc, err := o.queryContext(website)
	if err != nil {
		return QueryResult{}, err
	}
	pq, err := qc.prepare(ctx, o, q)
	if err != nil || pq.plan == nil {
		return pq.res, err
	}
	if err := o.e.scanPlan(ctx, qc.s, pq.plan); err != nil {
		return QueryResult{}, err
	}
	return qc.finish(ctx, o.e, pq)
}

// queryCtx is what the queries of one website resolve against: the
// website, its goals, and its data version (the answer cache's key).
type queryCtx struct {
	s        *site
	cfg      *siteConfig
	goals    *goalSet
	goalsKey *goalSet // nil for none: what the cached answers are checked with
	version  string
	site     QuerySite
}

// queryContext returns the query context of website, local to this node.
func (o Owner) queryContext(website uint32) (*queryCtx, error) {
	e := o.e
	s, err := o.site(website)
	if err != nil {
		return nil, err
	}
	e.regMu.RLock()
	goals := s.goals
	e.regMu.RUnlock()
	qc := &queryCtx{s: s, goals: goals, goalsKey: goals}
	if goals == nil {
		qc.goals = &goalSet{}
	}
	cfg := s.cfg.Load()
	qc.cfg = cfg
	sh := e.shardOf(cfg.id)
	sh.mu.Lock()
	start := Date(math.MaxInt32)
	for d := range s.state.dates {
		start = min(start, d)
	}
	st := s.state
	qc.version = fmt.Sprintf("%d|%d|%d|%d|%d|%t|%d|", cfg.id, st.lastSeq, st.evictGen, st.rollGen, st.cut, st.cutPending, len(st.dates))
	sh.mu.Unlock()
	if start == math.MaxInt32 {
		start = 0
	}
	qc.site = QuerySite{Domain: cfg.domain, Location: cfg.loc, Now: e.now(), StatsStart: start}
	for _, g := range qc.goals.Goals {
		qc.site.Goals = append(qc.site.Goals, g.DisplayName)
	}
	return qc, nil
}

// preparedQuery is a query resolved: answered already (res; plan nil:
// from the day buckets or the answer cache), or a plan to scan.
type preparedQuery struct {
	r    ResolvedQuery
	key  string // its answer cache key
	plan *plan
	res  QueryResult
}

// prepare resolves q and answers it when the day buckets or the answer
// cache can; else it returns the plan to scan.
func (qc *queryCtx) prepare(ctx context.Context, o Owner, q Query) (*preparedQuery, error) {
	pq := &preparedQuery{}
	r, err := q.Resolve(qc.site)
	if err != nil {
		return pq, err
	}
	if ctx.Value(allRowsKey{}) != nil {
		r.Pagination = Pagination{Limit: math.MaxInt} // its own cache key (the echo)
	}
	pq.r = r
	if bucketsCanAnswer(&pq.r, o.e.opts.SaltPeriod) {
		pq.res, err = o.totalsQuery(ctx, qc.cfg.id, &pq.r)
		return pq, err
	}
	echo, err := json.Marshal(r.Echo())
	if err != nil {
		return pq, err
	}
	pq.key = qc.version + strconv.FormatInt(r.From.Unix(), 10) + "|" + strconv.FormatInt(r.To.Unix(), 10) + "|" + string(echo)
	if res, ok := o.e.results.get(pq.key, qc.cfg, qc.goalsKey); ok {
		res.Query = r.Echo()
		pq.res = res
		return pq, nil
	}
	pq.plan, err = newPlan(&pq.r, qc.goals)
	return pq, err
}

// finish answers a scanned prepared query and keeps its answer.
func (qc *queryCtx) finish(ctx context.Context, e *Engine, pq *preparedQuery) (QueryResult, error) {
	res, err := e.answer(ctx, qc.s, pq.plan)
	if err != nil {
		return QueryResult{}, err
	}
	e.results.put(pq.key, qc.cfg.id, qc.cfg, qc.goalsKey, res)
	return res, nil
}

// bucketsCanAnswer reports whether the day buckets answer r exactly as
// the segments would (SPEC §10.2: "one truth"): an aggregate of pageviews
// and events over whole local days (a hit's stored day, as in the
// buckets), unfiltered. Visitors and visits are not: the buckets count
// them by §2.2's rule (pageviews only), the segments by Plausible's
// (§10.1: custom events start and extend visits too).
func bucketsCanAnswer(r *ResolvedQuery, salt SaltPeriod) bool {
	if salt != SaltDay || len(r.Dimensions) > 0 || len(r.Filters) > 0 || r.Include.TimeLabels ||
		!r.DateRange.From.IsZero() || r.DateRange.Period == "day" || r.DateRange.Period == "24h" {
		return false
	}
	for _, m := range r.Metrics {
		switch m {
		case "pageviews", "events":
		default:
			return false
		}
	}
	return true
}

// totalsQuery answers a query bucketsCanAnswer accepts from Totals.
func (o Owner) totalsQuery(ctx context.Context, website uint32, r *ResolvedQuery) (QueryResult, error) {
	t, err := o.Totals(ctx, website, r.FirstDay, r.LastDay)
	if err != nil {
		return QueryResult{}, err
	}
	row := QueryRow{Dimensions: []any{}}
	for _, m := range r.Metrics {
		var v uint64
		switch m {
		case "visitors":
			v = t.Visitors
		case "visits":
			v = t.Visits
		case "pageviews":
			v = t.Pageviews
		case "events":
			v = t.Pageviews + t.Events
		}
		row.Metrics = append(row.Metrics, int64(v))
	}
	res := QueryResult{Query: r.Echo(), Results: []QueryRow{row}}
	if r.Include.TotalRows {
		n := 1
		res.Meta.TotalRows = &n
	}
	if r.Include.Imports {
		f := false
		res.Meta.ImportsIncluded, res.Meta.ImportsSkipReason = &f, "no_imported_data"
	}
	return res, nil
}

// answer returns the answer of scanned plan p, running the related
// queries its metrics need.
func (e *Engine) answer(ctx context.Context, s *site, p *plan) (QueryResult, error) {
	queryRuns.Add(1)
	r, goals := p.r, p.goals
	rows := p.rows()
	if len(r.Dimensions) == 0 && len(rows) == 0 {
		rows = append(rows, p.row(&group{dims: []any{}})) // an aggregate is always one row
	}
	// Metrics that need the answer of a related query.
	if slices.Contains(r.Metrics, "percentage") {
		total, err := e.relatedVisitors(ctx, s, r, goals, false, nil)
		if err != nil {
			return QueryResult{}, err
		}
		i := slices.Index(r.Metrics, "percentage")
		for _, row := range rows {
			row.metrics[i] = percent(row.visitors, total[""], 1, true)
		}
	}
	for _, m := range []string{"conversion_rate", "group_conversion_rate"} {
		i := slices.Index(r.Metrics, m)
		if i < 0 {
			continue
		}
		var keep []int
		if m == "group_conversion_rate" {
			for j, d := range r.Dimensions {
				if d != "event:goal" {
					keep = append(keep, j)
				}
			}
		}
		denom, err := e.relatedVisitors(ctx, s, r, goals, true, keep)
		if err != nil {
			return QueryResult{}, err
		}
		for _, row := range rows {
			row.metrics[i] = percent(row.visitors, denom[row.keyOf(keep)], 2, false)
		}
	}
	off := min(r.Pagination.Offset, len(rows))
	end := min(off+r.Pagination.Limit, len(rows))
	if len(r.Dimensions) == 0 {
		off, end = 0, len(rows) // an aggregate is one row, whatever the page
	}
	p.sortRows(rows, end)
	res := QueryResult{Query: r.Echo(), Results: []QueryRow{}}
	if r.Include.TotalRows {
		n := len(rows)
		if len(r.Dimensions) == 0 {
			n = 1 // an aggregate is always one row
		}
		res.Meta.TotalRows = &n
	}
	if r.Include.TimeLabels {
		res.Meta.TimeLabels = r.TimeLabels()
	}
	if r.Include.Imports {
		f := false
		res.Meta.ImportsIncluded, res.Meta.ImportsSkipReason = &f, "no_imported_data"
	}
	if len(p.warnings) > 0 {
		res.Meta.MetricWarnings = p.warnings
	}
	for _, row := range rows[off:end] {
		res.Results = append(res.Results, QueryRow{Dimensions: row.dims, Metrics: row.metrics})
	}
	return res, nil
}

// scanPlan scans the days of p's range into p.
func (e *Engine) scanPlan(ctx context.Context, s *site, p *plan) error {
	return e.scanPlans(ctx, s, []*plan{p})
}

// soloDays returns the days of days whose visits are all of one salt
// period that no other day holds, neither of days nor of spans (the
// periods of other days scanned, first to last). With daily salts (the
// default) that is every day: their visitors are counted per day, not
// merged in bitmaps across days.
func soloDays(days []*segments.Day, spans [][2]int32) map[*segments.Day]bool {
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
			plo, phi = segments.PeriodSpan(sd)
		}
		if plo == phi {
			periods[i] = plo
			once[plo]++
		} else {
			periods[i] = math.MinInt32
			spans = append(spans, [2]int32{plo, phi})
		}
	}
	solo := make(map[*segments.Day]bool, len(days))
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
func (p *plan) merge(sub *plan) {
	for _, sg := range sub.order {
		g, ok := p.groups[sg.key]
		if !ok {
			if len(p.groups) >= p.groupLimit {
				p.err = groupsError(p.groupLimit)
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

// scanSegs calls fn with the whole segments of every day of [from, to] that
// has data, in no particular order. A day with sealed parts is made whole
// after the shard lock is released, reading its parts (an open day's rows
// are copied under the lock first); a closed one made whole stays resident
// so, until evicted. A day whose rows made whole would be more than
// wholeLimit (a quarter of the memory budget) is read in chunks instead
// (segstream.go), each passed to fn as a day of its own, with locked set.
// locked: fn must read sd at once and not keep it: an open day without
// parts (fn is called under the shard lock), or a chunk.
func (e *Engine) scanSegs(ctx context.Context, s *site, from, to buckets.Date, fn func(date buckets.Date, sd *segments.Day, locked bool)) error {
	type sealedDay struct {
		date   buckets.Date
		seg    *segments.Day
		frozen bool
		// Of an open day: its live segments and their rows, for e.wholes.
		live             *segments.Day
		nv, nh, rowBytes int
		chunks           int // > 1: read in chunks, never made whole
	}
	var sealed []sealedDay
	type cachedDay struct {
		date buckets.Date
		seg  *segments.Day
	}
	var cached []cachedDay
	id := s.cfg.Load().id
	err := e.scanDays(ctx, s, from, to, true, nil, func(date buckets.Date, d storedDay) {
		switch n := chunks(e.wholeEstimate(d.seg), e.wholeLimit); {
		case d.seg.Parts == 0 || d.seg.Tail != nil:
			fn(date, d.seg, d.open)
		case n > 1 && d.open:
			sealed = append(sealed, sealedDay{date: date, seg: d.seg.Clone(), chunks: n})
		case n > 1:
			sealed = append(sealed, sealedDay{date: date, seg: d.seg, chunks: n})
		case d.open:
			if w := e.wholes.Get(id, date, d.seg); w != nil {
				cached = append(cached, cachedDay{date, w})
				return
			}
			sealed = append(sealed, sealedDay{date: date, seg: d.seg.Clone(), live: d.seg, nv: d.seg.Visits(), nh: d.seg.Hits(), rowBytes: d.seg.RowBytes()})
		default:
			sealed = append(sealed, sealedDay{date: date, seg: d.seg, frozen: true})
		}
	})
	if err != nil {
		return err
	}
	for _, c := range cached {
		fn(c.date, c.seg, false)
	}
	// Days read in chunks come last, so that a query knows every other
	// day of its scan before the first chunk (soloChunk).
	slices.SortStableFunc(sealed, func(a, b sealedDay) int { return cmp.Compare(min(a.chunks, 2), min(b.chunks, 2)) })
	streamed := 0
	for _, sd := range sealed {
		if sd.chunks > 1 {
			streamed++
		}
	}
	installed := false
	for _, sd := range sealed {
		if err := ctx.Err(); err != nil {
			return err
		}
		found := false
		err := e.store.DaysWithParts(id, int32(sd.date), int32(sd.date), nil, func(_ int32, _ []byte, parts [][]byte) error {
			found = true
			if sd.chunks > 1 {
				return e.streamDay(ctx, sd.date, sd.seg, parts, sd.chunks, streamed == 1, fn)
			}
			w, err := sd.seg.Whole(parts, e.parts)
			if err != nil {
				return err
			}
			if sd.frozen {
				e.installWhole(s, sd.date, sd.seg, w)
				installed = true
			} else {
				e.wholes.Put(id, sd.date, sd.live, sd.nv, sd.nh, sd.rowBytes, w)
			}
			fn(sd.date, w, false)
			return nil
		})
		if err == nil && !found {
			err = snapshot.ErrNotFound
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if err != nil {
			if !e.listed(s, sd.date) {
				continue // dropped meanwhile (retention, delete): no data
			}
			return fmt.Errorf("engine: website %d day %v: sealed segments: %w", id, sd.date, err)
		}
	}
	if installed {
		e.maybeEvict() // what installWhole added
	}
	return nil
}

// streamDay passes the n chunks of day d (with sealed parts, read from
// parts) to fn, one at a time, locked: read at once, never kept.
func (e *Engine) streamDay(ctx context.Context, date buckets.Date, d *segments.Day, parts [][]byte, n int, lone bool, fn func(buckets.Date, *segments.Day, bool)) error {
	remap := make([]uint32, int(d.OffV)+d.Visits())
	for k := range n {
		if err := e.streamChunk(ctx, func() error {
			c, err := d.ChunkOf(parts, e.parts, k, n, remap)
			if err != nil {
				return err
			}
			e.streamed.Add(1)
			c.Lone = lone
			fn(date, c, true)
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// streamChunk runs read, which builds and scans one chunk, in the
// engine's one streaming slot: the queries streaming days at once (the
// overview's batches run side by side, and so do requests) hold one
// chunk, about wholeLimit, between them, not one each.
func (e *Engine) streamChunk(ctx context.Context, read func() error) error {
	select {
	case e.streamSlot <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-e.streamSlot }()
	return read()
}

// listed reports whether website s still has data on date.
func (e *Engine) listed(s *site, date buckets.Date) bool {
	sh := e.shardOf(s.cfg.Load().id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	_, ok := s.state.dates[date]
	return ok && !s.state.deleted
}

// installWhole replaces the segments of a resident closed day, tail, by
// the whole form read for a query, unless the day changed meanwhile.
func (e *Engine) installWhole(s *site, date buckets.Date, tail, w *segments.Day) {
	sh := e.shardOf(s.cfg.Load().id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ent, ok := s.state.days[date]
	if !ok || !ent.frozen || ent.seg != tail {
		return
	}
	ent.seg = w
	size := ent.day.SizeBytes() + w.Size
	e.counters.resident.Add(int64(size - ent.size))
	ent.size = size
}

// relatedVisitors answers the visitors of r with its dimensions reduced to
// keep (none when nil) and, when noGoals, without its top-level event:goal
// and event:props filters: the denominators of percentage and conversion
// rates, by the row key of the kept dimensions. The filters are r's
// effective ones (EffectiveFilters), those its dimensions imply included:
// the denominator counts the visitors the rows could have (an event-only
// visit has no entry hostname, SPEC §10.1).
func (e *Engine) relatedVisitors(ctx context.Context, s *site, r *ResolvedQuery, goals *goalSet, noGoals bool, keep []int) (map[string]int64, error) {
	rq := *r
	rq.Filters = r.EffectiveFilters()
	rq.Metrics = []string{"visitors"}
	rq.Dimensions = nil
	for _, j := range keep {
		rq.Dimensions = append(rq.Dimensions, r.Dimensions[j])
	}
	rq.OrderBy = nil
	rq.Include = Include{}
	rq.Pagination = Pagination{Limit: math.MaxInt}
	if noGoals {
		all := rq.Filters
		rq.Filters = nil
		for _, f := range all {
			if f.Dimension == "event:goal" || strings.HasPrefix(f.Dimension, "event:props:") {
				continue
			}
			rq.Filters = append(rq.Filters, f)
		}
	}
	p, err := newPlan(&rq, goals)
	if err != nil {
		return nil, err
	}
	if err := e.scanPlan(ctx, s, p); err != nil {
		return nil, err
	}
	out := make(map[string]int64)
	all := make([]int, len(keep))
	for i := range all {
		all[i] = i
	}
	for _, row := range p.rows() {
		out[row.keyOf(all)] = row.visitors
	}
	return out, nil
}

// percent is 100·n/d rounded to dp decimals; 0 (or nil when nullOnZero)
// when d is 0.
func percent(n, d int64, dp int, nullOnZero bool) any {
	if d == 0 {
		if nullOnZero {
			return nil
		}
		return 0.0
	}
	return round(100*float64(n)/float64(d), dp)
}

// round rounds half away from zero to dp decimals.
func round(f float64, dp int) float64 {
	p := math.Pow10(dp)
	return math.Round(f*p) / p
}

// ---------------------------------------------------------------------------
// The plan

// dimKind says where a dimension's value comes from.
type dimKind uint8

const (
	dkHitName dimKind = iota
	dkHitPage
	dkHitHost
	dkGoal
	dkProp
	dkTime
	dkVisitAttr
	dkEntry
	dkExit
	dkEntryHost
	dkExitHost
	dkCity
	dkCountryName
)

type dimSpec struct {
	name string
	kind dimKind
	attr int    // dkVisitAttr: the vAttr column
	prop string // dkProp: the key
}

// Special values of a group key position.
const (
	keyNone = ^uint32(0) - 1 // a missing prop: "(none)"
)

// visitDims maps visit:* dimensions to visit row columns.
var visitDims = map[string]dimSpec{
	"visit:source":              {kind: dkVisitAttr, attr: segments.AttrSource},
	"visit:referrer":            {kind: dkVisitAttr, attr: segments.AttrReferrer},
	"visit:channel":             {kind: dkVisitAttr, attr: segments.AttrChannel},
	"visit:utm_medium":          {kind: dkVisitAttr, attr: segments.AttrUTMMedium},
	"visit:utm_source":          {kind: dkVisitAttr, attr: segments.AttrUTMSource},
	"visit:utm_campaign":        {kind: dkVisitAttr, attr: segments.AttrUTMCampaign},
	"visit:utm_content":         {kind: dkVisitAttr, attr: segments.AttrUTMContent},
	"visit:utm_term":            {kind: dkVisitAttr, attr: segments.AttrUTMTerm},
	"visit:screen":              {kind: dkVisitAttr, attr: segments.AttrDevice},
	"visit:device":              {kind: dkVisitAttr, attr: segments.AttrDevice},
	"visit:browser":             {kind: dkVisitAttr, attr: segments.AttrBrowser},
	"visit:browser_version":     {kind: dkVisitAttr, attr: segments.AttrBrowserVer},
	"visit:os":                  {kind: dkVisitAttr, attr: segments.AttrOS},
	"visit:os_version":          {kind: dkVisitAttr, attr: segments.AttrOSVer},
	"visit:country":             {kind: dkVisitAttr, attr: segments.AttrCountry},
	"visit:region":              {kind: dkVisitAttr, attr: segments.AttrRegion},
	"visit:city_name":           {kind: dkVisitAttr, attr: segments.AttrCity},
	"visit:region_name":         {kind: dkVisitAttr, attr: segments.AttrRegionName},
	"visit:country_name":        {kind: dkCountryName, attr: segments.AttrCountry},
	"visit:city":                {kind: dkCity},
	"visit:entry_page":          {kind: dkEntry},
	"visit:exit_page":           {kind: dkExit},
	"visit:entry_page_hostname": {kind: dkEntryHost},
	"visit:exit_page_hostname":  {kind: dkExitHost},
}

func specOf(dim string) dimSpec {
	var s dimSpec
	switch {
	case dim == "event:name":
		s.kind = dkHitName
	case dim == "event:page":
		s.kind = dkHitPage
	case dim == "event:hostname":
		s.kind = dkHitHost
	case dim == "event:goal":
		s.kind = dkGoal
	case strings.HasPrefix(dim, "event:props:"):
		s.kind, s.prop = dkProp, strings.TrimPrefix(dim, "event:props:")
	case strings.HasPrefix(dim, "time"):
		s.kind = dkTime
	default:
		s = visitDims[dim]
	}
	s.name = dim
	return s
}

// isVisitKind reports whether a dimension's value is the hit's visit's.
func (s dimSpec) isVisit() bool { return s.kind >= dkVisitAttr }

// display is the value of dimension s as the API shows it, for the stored
// string v (the empty string when unknown).
func (s dimSpec) display(v string) string {
	switch s.kind {
	case dkHitName:
		if v == "" {
			return "pageview"
		}
	case dkHitHost:
		if v == "" {
			return "(none)"
		}
	case dkCountryName:
		return geo.CountryName(v)
	case dkVisitAttr:
		switch s.attr {
		case segments.AttrSource, segments.AttrReferrer:
			if v == "" {
				return "Direct / None"
			}
		case segments.AttrChannel:
			if v == "" {
				return "Direct"
			}
		case segments.AttrUTMMedium, segments.AttrUTMSource, segments.AttrUTMCampaign, segments.AttrUTMContent, segments.AttrUTMTerm,
			segments.AttrBrowserVer, segments.AttrOSVer:
			if v == "" {
				return "(not set)"
			}
		case segments.AttrBrowser, segments.AttrOS, segments.AttrDevice:
			// Plausible's names ("Microsoft Edge", "GNU/Linux",
			// "Desktop"): ua's table (plausible.go).
			if v == "" {
				return "(not set)"
			}
			return plausibleName(s.attr, v)
		}
	}
	return v
}

// blankLabel is how the API shows a dimension's blank value when it has a
// label for it ("Direct / None", "(not set)", "(none)"); "" otherwise.
// Filters test the stored value, so contains and matches never see the
// label, while an is/is_not clause equal to it matches the blank
// (plausible-api.md §4).
func (s dimSpec) blankLabel() string {
	switch s.kind {
	case dkHitHost:
		return "(none)"
	case dkVisitAttr:
		switch s.attr {
		case segments.AttrSource, segments.AttrReferrer:
			return "Direct / None"
		case segments.AttrUTMMedium, segments.AttrUTMSource, segments.AttrUTMCampaign, segments.AttrUTMContent, segments.AttrUTMTerm,
			segments.AttrDevice, segments.AttrBrowser, segments.AttrBrowserVer, segments.AttrOS, segments.AttrOSVer:
			return "(not set)"
		}
	}
	return ""
}

// filterValue is the value a filter tests for the stored string v: the
// shown value, except that a blank with a label stays "", and a browser,
// OS or device stays webstats' name (the leaf tests both names: see
// twoNames).
func (s dimSpec) filterValue(v string) string {
	if v == "" && s.blankLabel() != "" || s.twoNames() {
		return v
	}
	return s.display(v)
}

// twoNames reports whether a dimension's values have two spellings,
// webstats' (stored, and the phpAnalytics API's) and Plausible's (shown):
// visit:browser, visit:os and visit:device. A filter matches either.
func (s dimSpec) twoNames() bool {
	return s.kind == dkVisitAttr && (s.attr == segments.AttrBrowser || s.attr == segments.AttrOS || s.attr == segments.AttrDevice)
}

// plausibleName is Plausible's name of a browser, OS or device v (not
// blank).
func plausibleName(attr int, v string) string {
	switch attr {
	case segments.AttrBrowser:
		return ua.PlausibleBrowser(v)
	case segments.AttrOS:
		return ua.PlausibleOS(v)
	}
	return ua.PlausibleDevice(v)
}

// plan is a query compiled for scanning.
type plan struct {
	r     *ResolvedQuery
	goals *goalSet
	dims  []dimSpec
	page  int // position of the event:page dimension, or -1

	filter *fnode // nil: none
	// pageFilters are the top-level event:page leaves (bounce rate is
	// limited to visits that entered on a matching page).
	pageFilters []*fnode
	// The top-level filters split: those that depend only on the hit's
	// visit (tested once per visit and day, the answer kept in vpass) and
	// the others (tested per hit).
	visitConj, hitConj []*fnode
	vpass              []uint8 // by visit row: 0 unknown, 1 passes, 2 fails
	settled            bool    // a 0 in vpass passes (settle)
	// memoKey names the simple visit-level filters (their leaves' keys),
	// "" for none; allSimple: every visit-level filter is one.
	memoKey   string
	allSimple bool
	// hitLeaves: every hit-level filter is a leaf on a column of hit rows
	// (hitCol), tested with its memo alone (countVisitHits).
	hitLeaves  bool
	hitCols    [][]uint32 // the current day's columns of hitConj's leaves
	orphanPass uint8

	needSess bool // bounce_rate, visit_duration or views_per_visit asked
	needEng  bool // time_on_page or scroll_depth asked
	needRev  bool

	from, to int64 // Unix seconds, inclusive
	// byDay: the range is whole local days [firstDay, lastDay], and a hit
	// is in it by the local day it was counted under (SPEC §10.1), not by
	// its time; only sub-day ranges compare times (inRange).
	byDay             bool
	firstDay, lastDay buckets.Date
	// date is the day of the segments being scanned, nextMid the instant
	// (Unix ms) its next day starts, for hits without a day (hitDay).
	date      buckets.Date
	nextMid   int64
	daily     bool                    // the engine's salt period is one day (hitDay)
	dayLabels map[buckets.Date]uint32 // time label ids by day (byDay)

	groups map[string]*group
	order  []*group
	// groupLimit is the most groups the query may make (queryGroupLimit).
	groupLimit int
	keyBuf     []byte // globalGroup's
	// groupSlab and dimSlab are globalGroup's chunks of new groups and
	// of their values.
	groupSlab []group
	dimSlab   []any

	// visitOnly: every dimension is the visit's (none of the hit, time
	// or goal), so a visit's hits fall in one group.
	visitOnly bool

	// Per-day state.
	day     int      // counts the days scanned
	touched []*group // groups with rows in the current day
	scratch []uint32
	passing []uint32 // scanDay's list of the passing visits
	vgroup  []*group // scanDay's groups by visit row
	mark    []int32  // by visit row: the id of the group that last counted it
	dense   []uint64
	sd      *segments.Day
	// soloDays are the days of the scan whose visits are all of one salt
	// period that no other day of the scan holds (scanPlan; read only,
	// shared with the workers' plans). solo says the current day is one:
	// a group's visitors of the day are then counted, not kept in a
	// bitmap, with stamp (by visitor id, the stampGen of the last group
	// that counted it).
	soloDays  map[*segments.Day]bool
	solo      bool
	stamp     []uint32
	stampGen  uint32
	dayGroups map[gkey]*group // the groups of the day's keys
	// dayGroup0 is the day's one group of a query without dimensions;
	// dayGroup1 the day's groups of a query of one dimension by its id,
	// for ids below maxDenseKey (dictionary ids, time labels, goals): a
	// slice instead of hashing a gkey per hit.
	dayGroup0 *group
	dayGroup1 []*group
	// bases are the totals of p.touched before the current day, kept
	// while keepBases (the day's breakdown goes to its memo).
	bases     []segments.Totals
	keepBases bool
	// memoDimKey is dimMemoKey's answer, once asked.
	memoDimKey *string
	// intern is the engine's table of values (scanPlan); gids the
	// current day's ids in it, nil when the day has none or the plan's
	// dimensions are not one of dictionary values; gidGroups the groups
	// by those ids, in pages of 1<<gidBits (valueGroup).
	intern *segments.Interns
	// dimBytes counts what the days' memos keep of breakdowns
	// (Engine.counters.dimMemos); nil: keep none.
	dimBytes  *atomic.Int64
	gids      *segments.Gids
	gidGroups [][]*group
	gidFound  int64 // groups found by id, this day (segments.InternStats.Found)
	gidBits   int   // segments.GidPageBits when the plan started
	// slots memoises timeLabel by 15-minute slot, direct-mapped: a day's
	// 96-odd consecutive slots never collide, and a lookup is an index,
	// not a hash.
	slots    *[slotCacheSize]slotEntry
	labels   []string
	labelIDs map[string]uint32
	key      []uint32

	warnings map[string]MetricWarning
	revGoals []int // revenue goals in scope
	// dimGoals are the goals an event:goal dimension lists: those every
	// top-level event:goal filter selects (all goals without one).
	dimGoals []int
	// regexps counts the compiled size of the filters' regular
	// expressions (MaxRegexpProgram).
	regexps regexpBudget
	// goalMemo caches, for the current day, whether a page converts a
	// pageview goal: by goal, by string id, 0 unknown, 1 yes, 2 no. A
	// goal's is sized to the day's dictionary the first time the day
	// tests it (empty until then), so each goal's regular expression runs
	// once per distinct page and day, not once per hit.
	goalMemo [][]uint8
	err      error
	// shared is the scan a worker's plan is part of (scanParallel); nil
	// for the query's own plan.
	shared *scanShared
}

// group is one row under construction.
type group struct {
	// What countHits writes for each hit comes first, together: 56 bytes,
	// one or two cache lines (they were spread over four).
	day               int    // the plan's day counter when last touched
	lastV             uint32 // 1 + the visit row countHits last counted, this day (0: none)
	hasRows           bool
	dups              bool // rows may repeat a visit this day
	pageviews, events int64
	rows              []uint32 // visit rows of the current day's visitor rows (repeats)

	key      string
	dims     []any
	visitors map[int32]*roaring.Bitmap
	// solo counts the visitors of salt periods that one day of the scan
	// holds alone (plan.soloDays): exact without a bitmap.
	solo     int64
	visits   int64
	id       int32    // 1 + its index in plan.order
	sessRows []uint32 // visit rows of the current day, session grouping (repeats)
	sess     segments.Sess
	// revenue is the sum in millionths of the currency unit: integers,
	// so that the sum does not depend on the order days are added in
	// (scanParallel's workers take days in any order).
	revenue     int64
	revenueN    int64
	revCurrency string
	engVisits   *roaring.Bitmap // visit rows with engagement, this day
	engMs       int64
	engN        int64
	scroll      map[uint32]int8 // visit row → max scroll, this day
	scrollSum   int64
	scrollN     int64
}

// outRow is a finished row.
type outRow struct {
	dims     []any
	metrics  []any
	visitors int64
	g        *group
	pos      int // the row's place before sortRows: its last key
}

func (o *outRow) keyOf(pos []int) string {
	var b strings.Builder
	for _, j := range pos {
		fmt.Fprintf(&b, "%v\x00", o.dims[j])
	}
	return b.String()
}

func newPlan(r *ResolvedQuery, goals *goalSet) (*plan, error) {
	p := &plan{r: r, goals: goals, page: -1, groups: make(map[string]*group), labelIDs: make(map[string]uint32), groupLimit: queryGroupLimit}
	p.from, p.to = r.From.Unix(), r.To.Unix()
	p.byDay = r.DateRange.From.IsZero() && r.DateRange.Period != "24h"
	p.firstDay, p.lastDay = r.FirstDay, r.LastDay
	for i, d := range r.Dimensions {
		s := specOf(d)
		p.dims = append(p.dims, s)
		if s.kind == dkHitPage {
			p.page = i
		}
	}
	p.key = make([]uint32, len(p.dims))
	p.visitOnly = !slices.ContainsFunc(p.dims, func(s dimSpec) bool { return !s.isVisit() })
	filters := r.EffectiveFilters()
	if len(filters) > 0 {
		root := Filter{Op: "and", Children: filters}
		n, err := p.compile(&root)
		if err != nil {
			return nil, err
		}
		p.filter = n
		for _, c := range n.kids {
			if c.leaf && c.spec.kind == dkHitPage {
				p.pageFilters = append(p.pageFilters, c)
			}
			if c.visitLevel() {
				p.visitConj = append(p.visitConj, c)
			} else {
				p.hitConj = append(p.hitConj, c)
			}
		}
		p.hitLeaves = !slices.ContainsFunc(p.hitConj, func(c *fnode) bool {
			return !c.leaf || !c.spec.onHitColumn()
		})
		// The simple visit-level filters name what a day memo keeps.
		p.allSimple = true
		for _, c := range p.visitConj {
			if c.simpleVisitLeaf() {
				p.memoKey += c.key
			} else {
				p.allSimple = false
			}
		}
	}
	for _, m := range r.Metrics {
		switch m {
		case "bounce_rate", "visit_duration", "views_per_visit":
			p.needSess = true
		case "time_on_page", "scroll_depth":
			p.needEng = true
		case "total_revenue", "average_revenue":
			p.needRev = true
		}
	}
	if p.needRev {
		p.revenueScope()
	}
	for i, g := range goals.Goals {
		ok := true
		for _, f := range r.Filters {
			if f.Dimension == "event:goal" && !matchGoalFilter(&f, g.DisplayName) {
				ok = false
			}
		}
		if ok {
			p.dimGoals = append(p.dimGoals, i)
		}
	}
	return p, nil
}

// revenueScope picks the revenue goals the revenue metrics sum: those the
// top-level event:goal filters name (all when none), with a currency.
func (p *plan) revenueScope() {
	var goalFilters []Filter
	for _, f := range p.r.Filters {
		if f.Dimension == "event:goal" {
			goalFilters = append(goalFilters, f)
		}
	}
	currencies := map[string]bool{}
	for i, g := range p.goals.Goals {
		if g.Currency == "" {
			continue
		}
		ok := true
		for _, f := range goalFilters {
			if !matchGoalFilter(&f, g.DisplayName) {
				ok = false
			}
		}
		if ok {
			p.revGoals = append(p.revGoals, i)
			currencies[g.Currency] = true
		}
	}
	goalDim := slices.ContainsFunc(p.dims, func(s dimSpec) bool { return s.kind == dkGoal })
	code := ""
	switch {
	case len(p.revGoals) == 0:
		code = "no_revenue_goals_matching"
	case len(currencies) > 1 && !goalDim:
		code = "no_single_revenue_currency"
	}
	if code != "" {
		p.warnings = map[string]MetricWarning{}
		for _, m := range p.r.Metrics {
			if m == "total_revenue" || m == "average_revenue" {
				p.warnings[m] = MetricWarning{Code: code, Warning: revenueWarnings[code]}
			}
		}
		p.revGoals = nil
	}
}

var revenueWarnings = map[string]string{
	"no_revenue_goals_matching":  "Revenue metrics are null as there are no matching revenue goals.",
	"no_single_revenue_currency": "Revenue metrics are null as there are multiple currencies for the selected event:goals.",
}

func matchGoalFilter(f *Filter, name string) bool {
	if f.CaseInsensitive {
		name = strings.ToLower(name)
	}
	for _, c := range f.Clauses {
		if f.CaseInsensitive {
			c = strings.ToLower(c)
		}
		switch f.Op {
		case "is":
			if name == c {
				return true
			}
		case "contains":
			if strings.Contains(name, c) {
				return true
			}
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Filters

// fnode is a compiled filter node.
type fnode struct {
	op   string
	leaf bool
	spec dimSpec
	kids []*fnode
	// A leaf's test on the displayed value.
	test func(string) bool
	// memo caches a leaf's test by dictionary id for the current day: 0
	// unknown, 1 true, 2 false.
	memo []uint8
	// A has_done/has_not_done node's visits of the current day, and
	// whether orphans (no visit) match.
	done *roaring.Bitmap
	// goal leaves: which goals (indices) the clauses select.
	goalSet []int
	// prop leaves: the key id of the current day (noKey if absent).
	keyID uint32
	// key names a leaf's test (operator, dimension, clauses, modifier),
	// for segments.Memo.
	key string
}

const noKey = ^uint32(0)

func (p *plan) compile(f *Filter) (*fnode, error) {
	n := &fnode{op: f.Op}
	switch f.Op {
	case "and", "or", "not", "has_done", "has_not_done":
		for i := range f.Children {
			k, err := p.compile(&f.Children[i])
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, k)
		}
		return n, nil
	}
	n.leaf = true
	n.spec = specOf(f.Dimension)
	if n.simpleVisitLeaf() {
		n.key = fmt.Sprintf("%q %q %q %t;", f.Op, f.Dimension, f.Clauses, f.CaseInsensitive)
	}
	clauses := f.Clauses
	fold := f.CaseInsensitive
	label := n.spec.blankLabel()
	if fold || label != "" {
		clauses = make([]string, len(f.Clauses))
		for i, c := range f.Clauses {
			if fold {
				c = strings.ToLower(c)
			}
			if label != "" && (f.Op == "is" || f.Op == "is_not") && (c == label || fold && c == strings.ToLower(label)) {
				c = "" // the label names the blank
			}
			clauses[i] = c
		}
	}
	var res []*regexp.Regexp
	if f.Op == "matches" || f.Op == "matches_not" {
		for _, c := range clauses {
			re, err := p.regexps.compile(c)
			if err != nil {
				return nil, err
			}
			res = append(res, re)
		}
	}
	any := func(v string) bool {
		if fold {
			v = strings.ToLower(v)
		}
		switch f.Op {
		case "is", "is_not":
			return slices.Contains(clauses, v)
		case "contains", "contains_not":
			for _, c := range clauses {
				if strings.Contains(v, c) {
					return true
				}
			}
		default:
			for _, re := range res {
				if re.MatchString(v) {
					return true
				}
			}
		}
		return false
	}
	neg := strings.HasSuffix(f.Op, "_not")
	n.test = func(v string) bool { return any(v) != neg }
	if n.spec.twoNames() {
		// v is webstats' name: a clause may name it either way
		// ("Edge" or "Microsoft Edge"); a blank has no second name.
		attr := n.spec.attr
		n.test = func(v string) bool { return (any(v) || v != "" && any(plausibleName(attr, v))) != neg }
	}
	if n.spec.kind == dkGoal {
		for i, g := range p.goals.Goals {
			if matchGoalFilter(f, g.DisplayName) {
				n.goalSet = append(n.goalSet, i)
			}
		}
	}
	if n.spec.kind == dkProp {
		// A missing key is "(none)": is/is_not test it; contains and
		// matches need the key (plausible-api.md §4).
		needKey := f.Op != "is" && f.Op != "is_not"
		inner := n.test
		n.test = func(v string) bool {
			if v == "\x00none" {
				if needKey {
					return false
				}
				return inner("(none)")
			}
			return inner(v)
		}
	}
	return n, nil
}

// startDay resets the per-day memos of the filter tree.
func (n *fnode) startDay(p *plan, sd *segments.Day) {
	if n == nil {
		return
	}
	if n.leaf {
		n.memo = make([]uint8, len(sd.Strs))
		if n.spec.kind == dkProp {
			n.keyID = noKey
			for i, s := range sd.Strs {
				if s == n.spec.prop {
					n.keyID = uint32(i)
					break
				}
			}
		}
		return
	}
	for _, k := range n.kids {
		k.startDay(p, sd)
	}
	if n.op == "has_done" || n.op == "has_not_done" {
		n.done = roaring.New()
		for i := range sd.Hits() {
			if sd.HKind[i] == segments.KindEngagement || sd.HVisit[i] == segments.NoVisit || !p.inRange(sd, i) {
				continue
			}
			if n.kids[0].match(p, sd, i) {
				n.done.Add(sd.HVisit[i])
			}
		}
	}
}

// visitLevel reports whether the node's answer depends only on the hit's
// visit: every leaf is a visit dimension, or it is a has_done/has_not_done.
func (n *fnode) visitLevel() bool {
	switch {
	case n.op == "has_done" || n.op == "has_not_done":
		return true
	case n.leaf:
		return n.spec.isVisit()
	}
	for _, k := range n.kids {
		if !k.visitLevel() {
			return false
		}
	}
	return true
}

// visitLeaves settles vpass for the simple visit-level filters (a leaf on
// a visit column) in one pass over the day's visits: a tight loop over the
// column and the leaf's memo, instead of a tree walk per visit. memo (sd's,
// if frozen) keeps the visits they exclude for the next query with the
// same filters: a dashboard asks a dozen of the same days.
func (p *plan) visitLeaves(sd *segments.Day, memo *segments.Memo) {
	if memo != nil && p.memoKey != "" && memo.Excluded(p.memoKey, p.vpass) {
		p.settle(p.allSimple)
		return
	}
	for _, n := range p.visitConj {
		s := n.spec
		if !n.simpleVisitLeaf() {
			continue
		}
		// Without a branch on the answer (1 passes, 2 fails; vpass is 0
		// or 2 here): whether a visit passes is as likely as not, and a
		// mispredicted branch costs more than the store.
		seen, col := n.memo, visitCol(sd, s)
		for v := range p.vpass {
			id := col[v]
			m := seen[id]
			if m == 0 {
				n.memoTest(sd, id, s.filterValue)
				m = seen[id]
			}
			p.vpass[v] |= m & 2
		}
	}
	if memo != nil && p.memoKey != "" {
		memo.KeepExcluded(p.memoKey, p.vpass)
	}
	p.settle(p.allSimple)
}

// visitCol returns the column of sd that holds visit dimension s by visit
// row (visitValue's), nil for a dimension found otherwise (keysOf).
func visitCol(sd *segments.Day, s dimSpec) []uint32 {
	switch s.kind {
	case dkEntry:
		return sd.VEntry
	case dkExit:
		return sd.VExit
	case dkEntryHost:
		return sd.VEntryHost
	case dkExitHost:
		return sd.VExitHost
	case dkVisitAttr, dkCountryName:
		return sd.VAttr[s.attr]
	}
	return nil
}

// onHitColumn reports whether s is held by a column of hit rows (hitCol).
func (s dimSpec) onHitColumn() bool {
	return s.kind == dkHitName || s.kind == dkHitPage || s.kind == dkHitHost
}

// hitCol returns the column of sd that holds hit dimension s by hit row,
// nil for a dimension found otherwise (keysOf).
func hitCol(sd *segments.Day, s dimSpec) []uint32 {
	switch s.kind {
	case dkHitName:
		return sd.HName
	case dkHitPage:
		return sd.HPage
	case dkHitHost:
		return sd.HHost
	}
	return nil
}

// group1 returns the group of value id of the plan's one dimension (a
// column's: hitCol, visitCol) on the current day, nil on error (p.err).
func (p *plan) group1(sd *segments.Day, id uint32) *group {
	if int(id) < len(p.dayGroup1) {
		if g := p.dayGroup1[id]; g != nil {
			return g
		}
	}
	p.key[0] = id
	return p.group(sd)
}

// settle records that vpass settled every visit (a 0 passes), when every
// visit-level filter was a simple one (all).
func (p *plan) settle(all bool) { p.settled = all }

// simpleVisitLeaf reports whether n is a leaf on a visit column that
// visitLeaves tests in its loop.
func (n *fnode) simpleVisitLeaf() bool {
	s := n.spec
	return n.leaf && s.kind >= dkVisitAttr && s.kind != dkCity && s.kind != dkCountryName
}

// visitPasses evaluates the visit-level filters for the visit of hit i,
// once per visit and day.
func (p *plan) visitPasses(sd *segments.Day, i int) bool {
	if v := sd.HVisit[i]; v != segments.NoVisit {
		if st := p.vpass[v]; st != 0 || p.settled {
			return st != 2
		}
	}
	return p.visitTest(sd, i)
}

// visitTest evaluates the visit-level filters for the visit of hit i
// and keeps the answer in vpass (orphanPass for an orphan).
func (p *plan) visitTest(sd *segments.Day, i int) bool {
	v := sd.HVisit[i]
	st := &p.orphanPass
	if v != segments.NoVisit {
		st = &p.vpass[v]
	}
	if *st == 0 {
		*st = 1
		for _, n := range p.visitConj {
			if !n.match(p, sd, i) {
				*st = 2
				break
			}
		}
	}
	return *st == 1
}

// passes evaluates the plan's filters on hit i: the visit-level ones once
// per visit and day.
func (p *plan) passes(sd *segments.Day, i int) bool {
	if len(p.visitConj) > 0 && !p.visitPasses(sd, i) {
		return false
	}
	for _, n := range p.hitConj {
		if !n.match(p, sd, i) {
			return false
		}
	}
	return true
}

// memoTest tests a string id with the leaf's memo.
func (n *fnode) memoTest(sd *segments.Day, id uint32, display func(string) string) bool {
	if int(id) < len(n.memo) {
		switch n.memo[id] {
		case 1:
			return true
		case 2:
			return false
		}
		ok := n.test(display(sd.Strs[id]))
		n.memo[id] = 2
		if ok {
			n.memo[id] = 1
		}
		return ok
	}
	return n.test(display(""))
}

// match evaluates the node on hit i of sd.
func (n *fnode) match(p *plan, sd *segments.Day, i int) bool {
	switch n.op {
	case "and":
		for _, k := range n.kids {
			if !k.match(p, sd, i) {
				return false
			}
		}
		return true
	case "or":
		for _, k := range n.kids {
			if k.match(p, sd, i) {
				return true
			}
		}
		return false
	case "not":
		return !n.kids[0].match(p, sd, i)
	case "has_done":
		v := sd.HVisit[i]
		return v != segments.NoVisit && n.done.Contains(v)
	case "has_not_done":
		v := sd.HVisit[i]
		return v == segments.NoVisit || !n.done.Contains(v)
	}
	s := n.spec
	v := sd.HVisit[i]
	switch s.kind {
	case dkHitName:
		return n.memoTest(sd, sd.HName[i], s.filterValue)
	case dkHitPage:
		return n.memoTest(sd, sd.HPage[i], s.filterValue)
	case dkHitHost:
		return n.memoTest(sd, sd.HHost[i], s.filterValue)
	case dkGoal:
		for _, g := range n.goalSet {
			if p.hitMatchesGoal(sd, i, g) {
				return true
			}
		}
		return false
	case dkProp:
		return n.test(p.propValue(sd, i, n.keyID))
	case dkCity:
		city := uint32(0)
		if v != segments.NoVisit {
			city = sd.VCityID[v]
		}
		return n.test(strconv.FormatUint(uint64(city), 10))
	}
	if v == segments.NoVisit {
		return n.test(s.filterValue(""))
	}
	return n.memoTest(sd, p.visitValue(sd, v, s), s.filterValue)
}

// propValue is the value of a hit's prop of key id, or "\x00none".
func (p *plan) propValue(sd *segments.Day, i int, key uint32) string {
	if key != noKey {
		kv := sd.PropsOf(i)
		for j := 0; j < len(kv); j += 2 {
			if kv[j] == key {
				return sd.Strs[kv[j+1]]
			}
		}
	}
	return "\x00none"
}

// visitValue is the string id of a visit dimension of visit row v.
func (p *plan) visitValue(sd *segments.Day, v uint32, s dimSpec) uint32 {
	return visitCol(sd, s)[v]
}

// hitMatchesGoal reports whether hit i converts goal g.
func (p *plan) hitMatchesGoal(sd *segments.Day, i int, g int) bool {
	goal := &p.goals.Goals[g]
	switch sd.HKind[i] {
	case segments.KindEvent:
		return goal.EventName != "" && sd.Strs[sd.HName[i]] == goal.EventName
	case segments.KindPageview:
		re := p.goals.pages[g]
		if re == nil {
			return false
		}
		if p.goalMemo == nil {
			p.goalMemo = make([][]uint8, len(p.goals.Goals))
		}
		memo := p.goalMemo[g]
		if len(memo) == 0 && len(sd.Strs)*len(p.goals.Goals) > maxGoalMemo {
			return re.MatchString(sd.Strs[sd.HPage[i]]) // too many to memoise
		}
		if len(memo) == 0 {
			memo = slices.Grow(memo[:0], len(sd.Strs))[:len(sd.Strs)]
			clear(memo)
			p.goalMemo[g] = memo
		}
		page := sd.HPage[i]
		if int(page) >= len(memo) {
			return re.MatchString(sd.Strs[page])
		}
		switch memo[page] {
		case 1:
			return true
		case 2:
			return false
		}
		ok := re.MatchString(sd.Strs[page])
		memo[page] = 2
		if ok {
			memo[page] = 1
		}
		return ok
	}
	return false
}

// ---------------------------------------------------------------------------
// Scanning

// scanDay adds one day's segments to the groups. frozen: sd no longer
// changes (it is not an open day read under the shard lock), so what the
// query finds of it may be kept on it for the next (segments.Memo).
func (p *plan) scanDay(sd *segments.Day, date buckets.Date, frozen bool) {
	if sd.Hits() == 0 {
		return
	}
	p.sd = sd
	defer p.leaveDay()
	if p.date != date || p.nextMid == 0 {
		p.date = date
		p.nextMid = query.LocalDayStart(date+1, p.r.Location).UnixMilli()
	}
	p.day++
	p.solo = p.soloDays[sd]
	for g := range p.goalMemo {
		p.goalMemo[g] = p.goalMemo[g][:0] // the ids are the new day's
	}
	p.touched = p.touched[:0]
	p.dayGroups = make(map[gkey]*group)
	p.dayGroup0 = nil
	clear(p.dayGroup1)
	p.filter.startDay(p, sd)
	// When every dimension is the visit's, a visit's hits all fall in one
	// group: it is found once per visit.
	var memo *segments.Memo
	if frozen {
		memo = sd.Memo()
	}
	p.gids = nil
	if memo != nil && p.intern != nil && len(p.dims) == 1 && p.dims[0].dictValue() {
		if p.gids = memo.Gids(p.intern, len(sd.Strs)); p.gids != nil {
			p.intern.Stats.Days.Add(1)
		}
	}
	whole := p.wholeDay(sd, memo)
	// byDim: the day's breakdown by the one dimension is its memo's, or
	// is kept there once counted (segmemodim.go).
	byDim := p.dimMemoable(memo, whole)
	p.bases = p.bases[:0]
	p.keepBases = false
	if byDim {
		if en := memo.DimEntryOf(p.dimMemoKey(), p.needSess); en != nil {
			p.addDimMemo(en)
			return
		}
		p.keepBases = true
	}
	// plain: the day's contribution is its unfiltered totals, which its
	// memo keeps once a query with every total has scanned it.
	plain := memo != nil && whole && p.solo && p.filter == nil && len(p.dims) == 0 && !p.needRev && !p.needEng
	var base segments.Totals
	if plain {
		if t := memo.Totals.Load(); t != nil {
			if g := p.group(sd); g != nil {
				g.addTotals(t)
			}
			return
		}
		if g := p.groups[""]; g != nil {
			base = g.totals()
		}
	}
	// byVisit: every hit of a visit counts in its group, found once.
	byVisit := sd.Grouped && whole && p.visitOnly && len(p.hitConj) == 0 && !p.needRev && !p.needEng
	var vgroup []*group
	var orphans *group
	if p.visitOnly && !byVisit {
		p.vgroup = slices.Grow(p.vgroup[:0], sd.Visits())[:sd.Visits()]
		clear(p.vgroup)
		vgroup = p.vgroup
	}
	p.mark = slices.Grow(p.mark[:0], sd.Visits())[:sd.Visits()]
	clear(p.mark)
	p.vpass = slices.Grow(p.vpass[:0], sd.Visits())[:sd.Visits()]
	clear(p.vpass)
	p.orphanPass, p.settled = 0, false
	if segments.UseFilterMemo.Load() {
		p.visitLeaves(sd, memo)
	} else {
		p.visitLeaves(sd, nil)
	}
	// With one dimension on a column of hit rows, a hit's group is found
	// by the column's id (group1), without keysOf.
	var hcol []uint32
	if len(p.dims) == 1 {
		hcol = hitCol(sd, p.dims[0])
	}
	// fast: a hit needs no test beyond its visit's, and its one group is
	// found by the column's id (countHits).
	fast := whole && hcol != nil && len(p.hitConj) == 0 && !p.needEng && !p.needRev && !(p.needSess && p.page >= 0)
	// visitHits: a visit's hits fall in one group (vgroup), and a hit's
	// only test beyond its visit's is its hit filters' memos
	// (countVisitHits).
	visitHits := whole && p.visitOnly && !byVisit && len(p.hitConj) > 0 && p.hitLeaves && !p.needEng && !p.needRev
	if visitHits {
		p.hitCols = p.hitCols[:0]
		for _, n := range p.hitConj {
			p.hitCols = append(p.hitCols, hitCol(sd, n.spec))
		}
	}
	visitChecked := false
	hit := func(i int) {
		kind := sd.HKind[i]
		if !whole && !p.inRange(sd, i) {
			return
		}
		if kind == segments.KindEngagement {
			if p.needEng {
				p.engagement(sd, i)
			}
			return
		}
		if p.filter != nil {
			if visitChecked {
				for _, n := range p.hitConj {
					if !n.match(p, sd, i) {
						return
					}
				}
			} else if !p.passes(sd, i) {
				return
			}
		}
		v := sd.HVisit[i]
		if p.visitOnly {
			var g *group
			switch {
			case v == segments.NoVisit && orphans != nil:
				g = orphans
			case v != segments.NoVisit && vgroup[v] != nil:
				g = vgroup[v]
			default:
				p.keysOf(sd, i, false, 0, func(x *group) { g = x })
				if g == nil {
					return // p.err
				}
				if v == segments.NoVisit {
					orphans = g
				} else {
					vgroup[v] = g
				}
			}
			p.count(g, sd, i, kind, v)
			return
		}
		if hcol != nil {
			if g := p.group1(sd, hcol[i]); g != nil {
				p.count(g, sd, i, kind, v)
			}
		} else {
			p.keysOf(sd, i, false, 0, func(g *group) { p.count(g, sd, i, kind, v) })
		}
		if p.needSess && p.page >= 0 && v != segments.NoVisit {
			p.keysOf(sd, i, true, 0, func(g *group) {
				p.touch(g)
				g.sessRows = append(g.sessRows, v)
			})
		}
	}
	if byVisit {
		// Every hit of a visit counts in its one group: a visit at a time.
		// With one dimension on a visit column, its group is found by the
		// column's id (group's dayGroup1), without keysOf.
		var col []uint32
		if len(p.dims) == 1 {
			col = visitCol(sd, p.dims[0])
		}
		test := len(p.visitConj) > 0 && !p.settled
		lo := 0
		for v, end := range sd.HitEnd {
			hi := int(end)
			if lo == hi {
				continue
			}
			if st := p.vpass[v]; st == 2 || st == 0 && test && !p.visitTest(sd, lo) {
				lo = hi
				continue
			}
			var g *group
			if col != nil {
				g = p.group1(sd, col[v])
			} else {
				p.keysOf(sd, lo, false, 0, func(x *group) { g = x })
			}
			if g == nil {
				return // p.err
			}
			p.countVisit(g, sd, uint32(v), lo, hi)
			lo = hi
		}
		for i := lo; i < sd.Hits() && p.err == nil; i++ {
			hit(i) // orphans
		}
	} else if sd.Grouped && (len(p.visitConj) > 0 || visitHits) {
		// A visit its visit-level filters exclude is skipped whole.
		lo := 0
		visitChecked = true
		test := !p.settled
		if (fast || visitHits) && !test {
			if lo = p.countPassing(sd, hcol, visitHits, vgroup); p.err != nil {
				return
			}
		} else {
			for v, end := range sd.HitEnd {
				hi := int(end)
				if st := p.vpass[v]; lo < hi && st != 2 && (st == 1 || !test || p.visitTest(sd, lo)) {
					switch {
					case fast:
						if p.countHits(sd, hcol, uint32(v), lo, hi); p.err != nil {
							return
						}
					case visitHits:
						if p.countVisitHits(sd, vgroup, uint32(v), lo, hi); p.err != nil {
							return
						}
					default:
						for i := lo; i < hi && p.err == nil; i++ {
							hit(i)
						}
					}
				}
				lo = hi
			}
		}
		visitChecked = false
		for i := lo; i < sd.Hits() && p.err == nil; i++ {
			hit(i) // orphans
		}
	} else {
		for i := range sd.Hits() {
			if hit(i); p.err != nil {
				return
			}
		}
	}
	if p.err != nil {
		return
	}
	for _, g := range p.touched {
		p.finishDay(sd, g)
	}
	if p.gidFound > 0 {
		p.intern.Stats.Found.Add(p.gidFound)
		p.gidFound = 0
	}
	if byDim {
		p.keepDimMemo(memo, sd.Visits())
		p.keepBases = false
	}
	if plain && p.needSess {
		t := &segments.Totals{}
		if g := p.groups[""]; g != nil {
			*t = g.totals()
			t.Sub(&base)
		}
		memo.Totals.CompareAndSwap(nil, t)
	}
}

// totals returns g's totals, its visitors those counted without a bitmap.
func (g *group) totals() segments.Totals {
	return segments.Totals{Visits: g.visits, Pageviews: g.pageviews, Events: g.events, Visitors: g.solo, Sess: g.sess, Rows: g.hasRows}
}

// addTotals adds a day's totals to g.
func (g *group) addTotals(t *segments.Totals) {
	g.visits += t.Visits
	g.pageviews += t.Pageviews
	g.events += t.Events
	g.solo += t.Visitors
	g.sess.N += t.Sess.N
	g.sess.BounceN += t.Sess.BounceN
	g.sess.Bounced += t.Sess.Bounced
	g.sess.Duration += t.Sess.Duration
	g.sess.Pageviews += t.Sess.Pageviews
	g.hasRows = g.hasRows || t.Rows
}

// leaveDay drops what the plan held of the day scanDay scanned: a chunk
// of a streamed day (segstream.go) must be garbage once scanned, not
// held by every plan of a batch while the next chunk is built (which
// had two chunks resident at once: 70 MB for a 500,000-visit day).
func (p *plan) leaveDay() {
	p.sd = nil
	clear(p.hitCols)
	p.hitCols = p.hitCols[:0]
}

// touch marks g as having rows in the current day.
func (p *plan) touch(g *group) {
	if g.day != p.day {
		g.day, g.lastV = p.day, 0
		p.touched = append(p.touched, g)
		if p.keepBases {
			p.bases = append(p.bases, g.totals())
		}
	}
}

// count adds matching hit i (of visit v) to group g.
func (p *plan) count(g *group, sd *segments.Day, i int, kind uint8, v uint32) {
	p.touch(g)
	g.hasRows = true
	g.events++
	if kind == segments.KindPageview {
		g.pageviews++
	}
	if p.needRev && kind == segments.KindEvent {
		p.addRevenue(g, sd, i)
	}
	if v == segments.NoVisit {
		return // an orphan event has no visitor and no visit
	}
	switch m := p.mark[v]; m {
	case g.id: // counted already (the common case: a visit's next hit)
	case 0:
		p.mark[v] = g.id
		g.rows = append(g.rows, v)
	default: // counted in another group: may come back here
		p.mark[v] = g.id
		g.rows = append(g.rows, v)
		g.dups = true
		p.groupByID(m).dups = true
	}
}

// countPassing adds the hits of every visit of sd that vpass settled as
// passing with countHits (countVisitHits if visitHits), and returns the
// first orphan hit. The passing visits are listed first without a branch
// on each: whether a visit passes is as likely as not, and a mispredicted
// branch a visit cost more than the list.
func (p *plan) countPassing(sd *segments.Day, col []uint32, visitHits bool, vgroup []*group) int {
	nv := len(sd.HitEnd)
	pass := slices.Grow(p.passing[:0], nv)[:nv]
	n := 0
	for v := range nv {
		st := p.vpass[v]
		pass[n] = uint32(v)
		n += int(^st >> 1 & 1) // 0 and 1 pass, 2 fails
	}
	p.passing = pass
	for _, v := range pass[:n] {
		lo := 0
		if v > 0 {
			lo = int(sd.HitEnd[v-1])
		}
		if visitHits {
			p.countVisitHits(sd, vgroup, v, lo, int(sd.HitEnd[v]))
		} else {
			p.countHits(sd, col, v, lo, int(sd.HitEnd[v]))
		}
		if p.err != nil {
			return 0
		}
	}
	if nv == 0 {
		return 0
	}
	return int(sd.HitEnd[nv-1])
}

// countHits adds the hits [lo, hi) of visit v, all in range and all
// matching, each to the group of its id in col (the plan's one
// dimension's column): count without scanDay's per-hit tests. The day's
// visits come to it in order, each once, so a group has counted visit v
// this day only if it was the last it counted (lastV): a group's rows
// never repeat a visit, and mark is not needed. (Orphans, which count
// no visit, go through count after the visits.)
func (p *plan) countHits(sd *segments.Day, col []uint32, v uint32, lo, hi int) {
	for i := lo; i < hi; i++ {
		kind := sd.HKind[i]
		if kind == segments.KindEngagement {
			continue
		}
		id := col[i]
		var g *group
		if int(id) < len(p.dayGroup1) {
			g = p.dayGroup1[id]
		}
		if g == nil {
			if g = p.group1(sd, id); g == nil {
				return // p.err
			}
		}
		p.touch(g)
		g.hasRows = true
		g.events++
		if kind == segments.KindPageview {
			g.pageviews++
		}
		if g.lastV != v+1 {
			g.lastV = v + 1
			g.rows = append(g.rows, v)
		}
	}
}

// countVisitHits adds the hits [lo, hi) of visit v, all in range, that
// pass the plan's hit filters to the visit's one group (vgroup[v]; the
// plan's dimensions are all the visit's): scanDay's hit without a call
// and a walk of the filter tree per hit. Each hit filter is a leaf on a
// column of hit rows (hitLeaves, the columns in hitCols), tested with
// its memo of the day's values.
func (p *plan) countVisitHits(sd *segments.Day, vgroup []*group, v uint32, lo, hi int) {
	var g *group
hits:
	for i := lo; i < hi; i++ {
		kind := sd.HKind[i]
		if kind == segments.KindEngagement {
			continue
		}
		for k, n := range p.hitConj {
			id := p.hitCols[k][i]
			if int(id) < len(n.memo) && n.memo[id] != 0 {
				if n.memo[id] == 2 {
					continue hits
				}
			} else if !n.memoTest(sd, id, n.spec.filterValue) {
				continue hits
			}
		}
		if g != nil { // the visit's group, counted once already
			g.events++
			if kind == segments.KindPageview {
				g.pageviews++
			}
			continue
		}
		if g = vgroup[v]; g == nil {
			p.keysOf(sd, i, false, 0, func(x *group) { g = x })
			if g == nil {
				return // p.err
			}
			vgroup[v] = g
		}
		p.count(g, sd, i, kind, v)
	}
}

// countVisit adds the hits [lo, hi) of visit v, all in range and all
// matching, to g: count for a whole visit.
func (p *plan) countVisit(g *group, sd *segments.Day, v uint32, lo, hi int) {
	p.touch(g)
	g.hasRows = true
	g.pageviews += int64(sd.VPageviews[v])
	for _, k := range sd.HKind[lo:hi] {
		if k != segments.KindEngagement {
			g.events++
		}
	}
	p.mark[v] = g.id
	g.rows = append(g.rows, v)
}

// groupByID returns the group of id.
func (p *plan) groupByID(id int32) *group { return p.order[id-1] }

// eachKey calls fn with each group hit i belongs to (several for a hit
// converting several goals; none for a hit converting no goal when
// grouping by goal).
func (p *plan) eachKey(sd *segments.Day, i int, fn func(*group)) {
	p.keysOf(sd, i, false, 0, fn)
}

func (p *plan) keysOf(sd *segments.Day, i int, sess bool, pos int, fn func(*group)) {
	if pos == len(p.dims) {
		if g := p.group(sd); g != nil {
			fn(g)
		}
		return
	}
	s := p.dims[pos]
	v := sd.HVisit[i]
	switch s.kind {
	case dkHitName:
		p.key[pos] = sd.HName[i]
	case dkHitPage:
		p.key[pos] = sd.HPage[i]
		if sess {
			p.key[pos] = sd.VEntry[v]
		}
	case dkHitHost:
		p.key[pos] = sd.HHost[i]
	case dkProp:
		p.key[pos] = keyNone
		kv := sd.PropsOf(i)
		for j := 0; j < len(kv); j += 2 {
			if sd.Strs[kv[j]] == s.prop {
				p.key[pos] = kv[j+1]
				break
			}
		}
	case dkTime:
		if p.byDay && p.r.TimeDimension() != "time:hour" {
			p.key[pos] = p.dayLabel(p.hitDay(sd, i))
		} else {
			p.key[pos] = p.timeLabel(sd.HMs[i])
		}
	case dkGoal:
		for _, g := range p.dimGoals {
			if p.hitMatchesGoal(sd, i, g) {
				p.key[pos] = uint32(g)
				p.keysOf(sd, i, sess, pos+1, fn)
			}
		}
		return
	case dkCity:
		p.key[pos] = 0
		if v != segments.NoVisit {
			p.key[pos] = sd.VCityID[v]
		}
	default:
		p.key[pos] = 0
		if v != segments.NoVisit {
			p.key[pos] = p.visitValue(sd, v, s)
		}
	}
	p.keysOf(sd, i, sess, pos+1, fn)
}

// timeLabel returns the id of the time label of a hit at ms, memoised by
// 15-minute slot (every time zone offset is a multiple of 15 minutes, so
// a slot never spans two local hours).
func (p *plan) timeLabel(ms int64) uint32 {
	slot := segments.FloorDiv(ms, 15*60*1000)
	if p.slots == nil {
		p.slots = new([slotCacheSize]slotEntry)
	}
	e := &p.slots[uint64(slot)%slotCacheSize]
	if e.set && e.slot == slot {
		return e.id
	}
	label := p.r.TimeBucket(time.UnixMilli(ms))
	id, ok := p.labelIDs[label]
	if !ok {
		id = uint32(len(p.labels))
		p.labels = append(p.labels, label)
		p.labelIDs[label] = id
	}
	*e = slotEntry{slot: slot, id: id, set: true}
	return id
}

// slotCacheSize is the size of plan.slots: 256 slots of 15 minutes, more
// than two days.
const slotCacheSize = 256

// slotEntry is the time label id of a 15-minute slot.
type slotEntry struct {
	slot int64
	id   uint32
	set  bool
}

// gkey is a group key of day-local ids (MaxQueryDimensions at most).
type gkey [query.MaxQueryDimensions]uint32

// maxDenseKey bounds the ids plan.dayGroup1 holds (a slice of at most
// 1 MiB of pointers per plan).
const maxDenseKey = 1 << 17

// group returns the group of the current key, creating it.
func (p *plan) group(sd *segments.Day) *group {
	switch {
	case len(p.dims) == 0:
		if p.dayGroup0 == nil {
			p.dayGroup0 = p.globalGroup(sd)
		}
		return p.dayGroup0
	case len(p.dims) == 1 && p.key[0] < maxDenseKey && p.dims[0].kind != dkCity:
		id := int(p.key[0])
		if id < len(p.dayGroup1) {
			if g := p.dayGroup1[id]; g != nil {
				return g
			}
		}
		var g *group
		if p.dims[0].dictValue() {
			g = p.valueGroup(sd, uint32(id))
		} else {
			g = p.globalGroup(sd)
		}
		if g != nil {
			if id >= len(p.dayGroup1) {
				p.dayGroup1 = slices.Grow(p.dayGroup1, id+1-len(p.dayGroup1))[:id+1]
			}
			p.dayGroup1[id] = g
		}
		return g
	}
	var k gkey
	copy(k[:], p.key)
	if g, ok := p.dayGroups[k]; ok {
		return g
	}
	g := p.globalGroup(sd)
	if g != nil {
		p.dayGroups[k] = g
	}
	return g
}

// globalGroup returns the group of the current key's values, creating it.
// Its key is each value length-prefixed (a city's id in decimal), built in
// a reused buffer: only a new group allocates.
func (p *plan) globalGroup(sd *segments.Day) *group {
	b := p.keyBuf[:0]
	for j, s := range p.dims {
		if s.kind == dkCity {
			b = strconv.AppendUint(append(b, 'c'), uint64(p.key[j]), 10)
			b = append(b, 0)
			continue
		}
		v := p.dimString(sd, s, p.key[j])
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	p.keyBuf = b
	if g, ok := p.groups[string(b)]; ok {
		return g
	}
	return p.newGroup(string(b), func(dims []any) {
		for j, s := range p.dims {
			if s.kind == dkCity {
				dims[j] = int64(p.key[j])
			} else {
				dims[j] = p.dimString(sd, s, p.key[j])
			}
		}
	})
}

// newGroup makes the group of key, its values set by fill.
func (p *plan) newGroup(key string, fill func(dims []any)) *group {
	if len(p.groups) >= p.groupLimit || p.shared != nil && p.shared.groups.Add(1) > 2*int64(p.groupLimit) {
		p.err = groupsError(p.groupLimit)
		return nil
	}
	// Groups and their values come from chunks: a query by page makes
	// tens of thousands.
	n := len(p.dims)
	// A chunk as large as the groups made so far (4 to groupSlab): a
	// query of a few groups allocates a few.
	size := min(groupSlab, max(4, len(p.order)))
	if p.dimSlab == nil || len(p.dimSlab) < n {
		p.dimSlab = make([]any, n*size) // never nil, even empty
	}
	dims := p.dimSlab[:n:n] // never nil: an answer shows [], not null
	p.dimSlab = p.dimSlab[n:]
	fill(dims)
	if len(p.groupSlab) == 0 {
		p.groupSlab = make([]group, size)
	}
	g := &p.groupSlab[0]
	p.groupSlab = p.groupSlab[1:]
	*g = group{key: key, dims: dims, id: int32(len(p.order) + 1)}
	p.groups[g.key] = g
	p.order = append(p.order, g)
	return g
}

// groupSlab is the most groups globalGroup allocates at once.
const groupSlab = 64

// dimString is the value shown for id of dimension s (any but a city).
func (p *plan) dimString(sd *segments.Day, s dimSpec, id uint32) string {
	switch s.kind {
	case dkTime:
		return p.labels[id]
	case dkGoal:
		return p.goals.Goals[id].DisplayName
	case dkProp:
		if id == keyNone {
			return "(none)"
		}
		return sd.Strs[id]
	}
	return s.display(sd.Strs[id])
}

// engagement adds engagement report i to its groups.
func (p *plan) engagement(sd *segments.Day, i int) {
	v := sd.HVisit[i]
	if v == segments.NoVisit {
		return
	}
	// Tested like a hit, with its own page and its visit's values (the
	// query model refuses event:name, goal and props filters beside
	// these metrics only where Plausible does; such leaves see an
	// engagement report as a "pageview"-less hit).
	if p.filter != nil && !p.filter.match(p, sd, i) {
		return
	}
	for _, s := range p.dims {
		if s.kind == dkHitName || s.kind == dkGoal || s.kind == dkProp || s.kind == dkHitHost {
			return
		}
	}
	p.eachKey(sd, i, func(g *group) {
		p.touch(g)
		if g.engVisits == nil {
			g.engVisits = roaring.New()
			g.scroll = make(map[uint32]int8)
		}
		g.engMs += int64(sd.HEngaged[i])
		g.engVisits.Add(v)
		if sc := sd.HScroll[i]; sc >= 0 {
			if old, ok := g.scroll[v]; !ok || sc > old {
				g.scroll[v] = sc
			}
		}
	})
}

// addRevenue adds custom event i's revenue to g for the goals in scope it
// converts (one goal per group when grouping by goal).
func (p *plan) addRevenue(g *group, sd *segments.Day, i int) {
	unit := sd.Strs[sd.HUnit[i]]
	amount, err := strconv.ParseFloat(sd.Strs[sd.HValue[i]], 64)
	if err != nil {
		return
	}
	for _, gi := range p.revGoals {
		goal := &p.goals.Goals[gi]
		if goal.Currency != unit || !p.hitMatchesGoal(sd, i, gi) {
			continue
		}
		if slices.ContainsFunc(p.dims, func(s dimSpec) bool { return s.kind == dkGoal }) && !slices.Contains(g.dims, any(goal.DisplayName)) {
			continue
		}
		g.revenue = addMicros(g.revenue, int64(math.Round(max(-9e12, min(amount, 9e12))*1e6)))
		g.revenueN++
		g.revCurrency = goal.Currency
		return
	}
}

// addMicros adds two sums of millionths, saturating instead of wrapping
// (9.2 trillion units of a currency in one group).
func addMicros(a, b int64) int64 {
	switch c := a + b; {
	case a > 0 && b > 0 && c < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && c >= 0:
		return math.MinInt64
	default:
		return c
	}
}

// finishDay folds the current day's visit rows of g into its totals: a
// visit lives in one day, so the day's distinct rows are exact.
func (p *plan) finishDay(sd *segments.Day, g *group) {
	rows := g.rows
	if g.dups {
		rows = sortedUnique(rows)
	}
	g.dups = false
	g.visits += int64(len(rows))
	if len(rows) > 0 && p.solo {
		g.solo += p.distinctVisitors(sd, rows)
	} else if len(rows) > 0 {
		if g.visitors == nil {
			g.visitors = make(map[int32]*roaring.Bitmap)
		}
		// Visitors by salt period, added sorted (roaring appends).
		ids := p.scratch[:0]
		per := sd.VPeriod[rows[0]]
		flush := func() {
			add := p.visitorBitmap(ids)
			if bm := g.visitors[per]; bm != nil {
				bm.Or(add)
			} else {
				g.visitors[per] = add
			}
			ids = ids[:0]
		}
		for _, v := range rows {
			if sd.VPeriod[v] != per {
				flush()
				per = sd.VPeriod[v]
			}
			ids = append(ids, sd.VVisitor[v])
		}
		flush()
		p.scratch = ids
	}
	if p.needSess {
		sess := rows
		if p.page >= 0 {
			sess = sortedUnique(g.sessRows)
		}
		for _, v := range sess {
			g.sess.N++
			pv := int64(sd.VPageviews[v])
			// SPEC §10.1: a bounce has at most one pageview and no
			// interactive hit after its first; the duration runs from the
			// first hit to the last, whatever their interactivity.
			bounce := pv <= 1 && sd.VFlags[v]&segments.VisitInteractive == 0
			g.sess.Duration += segments.FloorDiv(sd.VEnd[v]-sd.VFirst[v], 1000)
			g.sess.Pageviews += pv
			entryOK := true
			for _, n := range p.pageFilters {
				if !n.test(sd.Strs[sd.VEntry[v]]) {
					entryOK = false
				}
			}
			if entryOK {
				g.sess.BounceN++
				if bounce {
					g.sess.Bounced++
				}
			}
		}
	}
	g.rows, g.sessRows = g.rows[:0], g.sessRows[:0]
	if g.engVisits != nil {
		g.engN += int64(g.engVisits.GetCardinality())
		for _, sc := range g.scroll {
			g.scrollSum += int64(sc)
			g.scrollN++
		}
		g.engVisits, g.scroll = nil, nil
	}
}

// distinctVisitors counts the visitors of the visit rows of sd, which are
// all of one salt period. Visitor ids are dense within a period, so they
// are stamped in an array by id; ids far above the rows' number (which
// the store's decoding does not rule out) are sorted instead, as
// visitorBitmap does, so that the array stays within a few words a row.
func (p *plan) distinctVisitors(sd *segments.Day, rows []uint32) int64 {
	hi := uint32(0)
	for _, v := range rows {
		hi = max(hi, sd.VVisitor[v])
	}
	if uint64(hi) >= uint64(max(len(p.stamp), 8*len(rows)+1024)) {
		ids := p.scratch[:0]
		for _, v := range rows {
			ids = append(ids, sd.VVisitor[v])
		}
		slices.Sort(ids)
		p.scratch = ids
		return int64(len(slices.Compact(ids)))
	}
	if int(hi) >= len(p.stamp) {
		p.stamp = slices.Grow(p.stamp, int(hi)+1-len(p.stamp))[:hi+1]
	}
	if p.stampGen++; p.stampGen == 0 { // wrapped: forget every stamp
		clear(p.stamp)
		p.stampGen = 1
	}
	gen, n := p.stampGen, int64(0)
	for _, v := range rows {
		if id := sd.VVisitor[v]; p.stamp[id] != gen {
			p.stamp[id] = gen
			n++
		}
	}
	return n
}

// visitorBitmap returns a new bitmap of ids (which may repeat and come in
// any order). Visitor ids are dense within a salt period, so it usually
// sets the bits of a plain bitset and converts it; sparse ids are sorted.
func (p *plan) visitorBitmap(ids []uint32) *roaring.Bitmap {
	hi := uint32(0)
	for _, id := range ids {
		hi = max(hi, id)
	}
	words := int(hi/64) + 1
	if words > 8*len(ids)+64 {
		slices.Sort(ids)
		return roaring.BitmapOf(slices.Compact(ids)...)
	}
	dense := slices.Grow(p.dense[:0], words)[:words]
	clear(dense)
	for _, id := range ids {
		dense[id/64] |= 1 << (id % 64)
	}
	p.dense = dense
	return roaring.FromDense(dense, true)
}

// sortedUnique sorts rows and drops repeats, in place.
func sortedUnique(rows []uint32) []uint32 {
	slices.Sort(rows)
	return slices.Compact(rows)
}

// ---------------------------------------------------------------------------
// Rows

func (p *plan) rows() []*outRow {
	out := make([]*outRow, 0, len(p.order))
	for _, g := range p.order {
		if !g.hasRows {
			continue
		}
		out = append(out, p.row(g))
	}
	return out
}

func (p *plan) row(g *group) *outRow {
	visitors := g.solo
	for _, bm := range g.visitors {
		visitors += int64(bm.GetCardinality())
	}
	o := &outRow{dims: g.dims, visitors: visitors, g: g, metrics: make([]any, len(p.r.Metrics))}
	for i, m := range p.r.Metrics {
		o.metrics[i] = p.metric(m, g, visitors)
	}
	return o
}

func (p *plan) metric(m string, g *group, visitors int64) any {
	switch m {
	case "visitors":
		return visitors
	case "visits":
		return g.visits
	case "pageviews":
		return g.pageviews
	case "events":
		return g.events
	case "views_per_visit":
		if g.sess.N == 0 {
			return 0.0
		}
		return round(float64(g.sess.Pageviews)/float64(g.sess.N), 2)
	case "bounce_rate":
		if g.sess.BounceN == 0 {
			return int64(0)
		}
		return int64(math.Round(100 * float64(g.sess.Bounced) / float64(g.sess.BounceN)))
	case "visit_duration":
		if g.sess.N == 0 {
			return nil
		}
		return int64(math.Round(float64(g.sess.Duration) / float64(g.sess.N)))
	case "time_on_page":
		if g.engN == 0 {
			return nil
		}
		return int64(math.Round(float64(g.engMs) / 1000 / float64(g.engN)))
	case "scroll_depth":
		if g.scrollN == 0 {
			return nil
		}
		return int64(math.Round(float64(g.scrollSum) / float64(g.scrollN)))
	case "total_revenue", "average_revenue":
		if _, warned := p.warnings[m]; warned {
			return nil
		}
		if gi := p.goalDimIndex(); gi >= 0 && g.dims != nil && !p.isRevenueGoal(g.dims[gi]) {
			return nil // the row's goal has no currency
		}
		cur := g.revCurrency
		if gi := p.goalDimIndex(); gi >= 0 && g.dims != nil {
			for _, i := range p.revGoals {
				if p.goals.Goals[i].DisplayName == g.dims[gi] {
					cur = p.goals.Goals[i].Currency
				}
			}
		}
		if cur == "" && len(p.revGoals) > 0 {
			cur = p.goals.Goals[p.revGoals[0]].Currency
		}
		v := float64(g.revenue) / 1e6
		if m == "average_revenue" {
			v = 0
			if g.revenueN > 0 {
				v = float64(g.revenue) / 1e6 / float64(g.revenueN)
			}
		}
		return formatRevenue(round(v, 3), cur)
	}
	return nil // percentage and conversion rates: filled in by runQuery
}

// goalDimIndex is the position of the event:goal dimension, or -1.
func (p *plan) goalDimIndex() int {
	return slices.IndexFunc(p.dims, func(s dimSpec) bool { return s.kind == dkGoal })
}

// isRevenueGoal reports whether the goal of display name v is in the
// revenue scope.
func (p *plan) isRevenueGoal(v any) bool {
	for _, gi := range p.revGoals {
		if p.goals.Goals[gi].DisplayName == v {
			return true
		}
	}
	return false
}

// sortRows orders rows by the query's order_by, then by the dimension
// values ascending, then by their order before (as a stable sort would);
// only the first n need to be in their final place: a page of the top
// rows of a query by page is chosen among tens of thousands.
func (p *plan) sortRows(rows []*outRow, n int) {
	type key struct {
		metric int // index in metrics, or -1
		dim    int
		desc   bool
	}
	var keys []key
	for _, o := range p.r.OrderBy {
		k := key{metric: slices.Index(p.r.Metrics, o.Key), dim: slices.Index(p.r.Dimensions, o.Key), desc: o.Desc}
		keys = append(keys, k)
	}
	for j := range p.r.Dimensions {
		keys = append(keys, key{metric: -1, dim: j})
	}
	for i, o := range rows {
		o.pos = i
	}
	cmpRow := func(a, b *outRow) int {
		for _, k := range keys {
			var c int
			if k.metric >= 0 {
				c = compareValues(a.metrics[k.metric], b.metrics[k.metric])
			} else if k.dim >= 0 {
				c = compareValues(a.dims[k.dim], b.dims[k.dim])
			}
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return cmp.Compare(a.pos, b.pos)
	}
	sortFirst(rows, n, cmpRow)
}

// compareValues orders row values: nil first, numbers numerically,
// strings bytewise, revenue by value.
func compareValues(a, b any) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		}
		return 1
	}
	num := func(v any) (float64, bool) {
		switch x := v.(type) {
		case int64:
			return float64(x), true
		case float64:
			return x, true
		case *Revenue:
			return x.Value, true
		}
		return 0, false
	}
	if x, ok := num(a); ok {
		if y, ok := num(b); ok {
			return cmp.Compare(x, y)
		}
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			return strings.Compare(x, y) // the common case, without fmt
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// formatRevenue is a revenue metric's value: the amount with Plausible's
// short ("$96.3M") and long ("$96,336,315.00") forms.
func formatRevenue(v float64, currency string) *Revenue {
	sym, ok := currencySymbols[currency]
	if !ok {
		sym = currency + " "
	}
	long := sym + groupThousands(strconv.FormatFloat(v, 'f', 2, 64))
	short := long
	abs := math.Abs(v)
	for _, u := range []struct {
		n float64
		s string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if abs >= u.n {
			short = sym + strconv.FormatFloat(round(v/u.n, 1), 'f', -1, 64) + u.s
			break
		}
	}
	return &Revenue{Value: v, Currency: currency, Short: short, Long: long}
}

var currencySymbols = map[string]string{"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹", "CNY": "CN¥", "CAD": "CA$", "AUD": "A$", "BRL": "R$", "KRW": "₩", "CHF": "CHF "}

// groupThousands puts commas in the integer part of a decimal string.
func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}

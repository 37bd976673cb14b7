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
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/snapshot"
)

// MaxQueryGroups bounds the groups (distinct dimension values) one query
// may build: beyond it the query fails with a *QueryError (Limit
// "MaxQueryGroups") instead of growing without bound.
const MaxQueryGroups = segments.MaxGroups

// queryRuns counts the queries run on the segments (for tests).
var queryRuns atomic.Int64

// askQuery asks q of the node that holds website's partition.
func (o Owner) askQuery(ctx context.Context, website uint32, q Query) (QueryResult, error) {
	body, err := q.MarshalJSON()
	if err != nil {
		return QueryResult{}, err
	}
	rep, err := o.ask(ctx, website, askRequest{Op: askQuery, Query: body})
	return rep.Result, err
}

func (o Owner) query(ctx context.Context, website uint32, q Query) (QueryResult, error) {
	far, done, err := o.elsewhere(website)
	if err != nil {
		return QueryResult{}, err
	}
	if far {
		return o.askQuery(ctx, website, q)
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
	goals    *segments.GoalSet
	goalsKey *segments.GoalSet // nil for none: what the cached answers are checked with
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
		qc.goals = &segments.GoalSet{}
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

// tag is what the answers cached for qc are used with only: its
// configuration and goals objects.
func (qc *queryCtx) tag() segments.Tag { return segments.Tag{Config: qc.cfg, Goals: qc.goalsKey} }

// preparedQuery is a query resolved: answered already (res; plan nil:
// from the day buckets or the answer cache), or a plan to scan.
type preparedQuery struct {
	r    ResolvedQuery
	key  string // its answer cache key
	plan *segments.Plan
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
	if o.e.opts.SaltPeriod == SaltDay && pq.r.CountsOnly() {
		pq.res, err = o.totalsQuery(ctx, qc.cfg.id, &pq.r)
		return pq, err
	}
	echo, err := json.Marshal(r.Echo())
	if err != nil {
		return pq, err
	}
	pq.key = qc.version + strconv.FormatInt(r.From.Unix(), 10) + "|" + strconv.FormatInt(r.To.Unix(), 10) + "|" + string(echo)
	if res, ok := o.e.results.Get(pq.key, qc.tag()); ok {
		res.Query = r.Echo()
		pq.res = res
		return pq, nil
	}
	pq.plan, err = segments.NewPlan(&pq.r, qc.goals)
	return pq, err
}

// finish answers a scanned prepared query and keeps its answer.
func (qc *queryCtx) finish(ctx context.Context, e *Engine, pq *preparedQuery) (QueryResult, error) {
	res, err := e.answer(ctx, qc.s, pq.plan)
	if err != nil {
		return QueryResult{}, err
	}
	e.results.Put(pq.key, qc.cfg.id, qc.tag(), res)
	return res, nil
}

// totalsQuery answers a query the day buckets can (CountsOnly, daily
// salts) from Totals.
func (o Owner) totalsQuery(ctx context.Context, website uint32, r *ResolvedQuery) (QueryResult, error) {
	t, err := o.Totals(ctx, website, r.FirstDay, r.LastDay)
	if err != nil {
		return QueryResult{}, err
	}
	row := QueryRow{Dimensions: []any{}}
	for _, m := range r.Metrics {
		v := t.Pageviews // "pageviews"
		if m == "events" {
			v += t.Events
		}
		row.Metrics = append(row.Metrics, int64(v))
	}
	return r.Answer([]QueryRow{row}, 1), nil
}

// answer returns the answer of scanned plan p, scanning the related
// queries its metrics need.
func (e *Engine) answer(ctx context.Context, s *site, p *segments.Plan) (QueryResult, error) {
	queryRuns.Add(1)
	return p.Answer(func(rp *segments.Plan) error { return e.scanPlan(ctx, s, rp) })
}

// scanPlan scans the days of p's range into p.
func (e *Engine) scanPlan(ctx context.Context, s *site, p *segments.Plan) error {
	return e.scanPlans(ctx, s, []*segments.Plan{p})
}

// scanSegs calls fn with the whole segments of every day of [from, to] that
// has data, in no particular order. A day with sealed parts is made whole
// after the shard lock is released, reading its parts (an open day's rows
// are copied under the lock first); a closed one made whole stays resident
// so, until evicted. A day whose rows made whole would be more than
// wholeLimit (a quarter of the memory budget) is read in chunks instead
// (segments.Chunks), each passed to fn as a day of its own, with locked set.
// locked: fn must read sd at once and not keep it: an open day without
// parts (fn is called under the shard lock), or a chunk.
func (e *Engine) scanSegs(ctx context.Context, s *site, from, to buckets.Date, fn func(date buckets.Date, sd *segments.Day, locked bool)) error {
	var sealed []sealedDay
	type cachedDay struct {
		date buckets.Date
		seg  *segments.Day
	}
	var cached []cachedDay
	id := s.cfg.Load().id
	err := e.scanDays(ctx, s, from, to, true, nil, func(date buckets.Date, d storedDay) {
		switch n := segments.Chunks(d.seg, e.wholeLimit); {
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
		in, err := e.readSealed(ctx, s, id, sd, streamed == 1, fn)
		if err != nil {
			return err
		}
		installed = installed || in
	}
	if installed {
		e.maybeEvict() // what installWhole added
	}
	return nil
}

// sealedDay is a day with sealed parts that scanSegs reads from the store.
type sealedDay struct {
	date   buckets.Date
	seg    *segments.Day
	frozen bool
	// Of an open day: its live segments and their rows, for e.wholes.
	live             *segments.Day
	nv, nh, rowBytes int
	chunks           int // > 1: read in chunks, never made whole
}

// readSealed passes sd, of website s (id), to fn: made whole from its
// parts in the store, or in chunks (lone: the only day of the scan read
// so). installed reports that it kept the whole day on its entry
// (installWhole). A day dropped meanwhile is skipped.
func (e *Engine) readSealed(ctx context.Context, s *site, id uint32, sd sealedDay, lone bool, fn func(date buckets.Date, sd *segments.Day, locked bool)) (installed bool, err error) {
	found := false
	err = e.store.DaysWithParts(id, int32(sd.date), int32(sd.date), nil, func(_ int32, _ []byte, parts [][]byte) error {
		found = true
		if sd.chunks > 1 {
			return e.streamDay(ctx, sd.date, sd.seg, parts, sd.chunks, lone, fn)
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
		return installed, err
	}
	if err != nil {
		if !e.listed(s, sd.date) {
			return installed, nil // dropped meanwhile (retention, delete): no data
		}
		return installed, fmt.Errorf("engine: website %d day %v: sealed segments: %w", id, sd.date, err)
	}
	return installed, nil
}

// streamDay passes the n chunks of day d (with sealed parts, read from
// parts) to fn, one at a time, locked: read at once, never kept. The
// parts are read once, split into the chunks (segments.Day.Split).
func (e *Engine) streamDay(ctx context.Context, date buckets.Date, d *segments.Day, parts [][]byte, n int, lone bool, fn func(buckets.Date, *segments.Day, bool)) error {
	var split *segments.Chunked
	if err := e.streamChunk(ctx, func() (err error) {
		split, err = d.Split(ctx, parts, e.parts, n)
		return err
	}); err != nil {
		return err
	}
	for k := range n {
		if err := e.streamChunk(ctx, func() error {
			c, err := split.Chunk(k)
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

// Bounds of a query's regular expressions (matches and matches_not
// filters). RE2 runs in time linear in the input, but its compiled program
// grows with the pattern's repetitions: x{0,1000} is 2,000 instructions,
// some 80 bytes each, so 50 patterns of a few hundred bytes could hold
// hundreds of megabytes for one query. Beyond a bound the query fails with
// a *QueryError whose Limit names it.
const (
	// MaxRegexpLength bounds one pattern, in bytes: 2,000 (as a goal's
	// page path).
	MaxRegexpLength = segments.MaxRegexpLength
	// MaxRegexpProgram bounds the compiled programs of all the patterns of
	// one query, in instructions (regexp/syntax.Prog.Inst): 100,000, some
	// 8 MB.
	MaxRegexpProgram = segments.MaxRegexpProgram
)

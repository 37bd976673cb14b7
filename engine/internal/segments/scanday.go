package segments

import (
	"slices"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/query"
)

// ScanDay adds one day's segments to the groups. frozen: sd no longer
// changes (it is not an open day read under the shard lock), so what the
// query finds of it may be kept on it for the next (Memo).
func (p *Plan) ScanDay(sd *Day, date buckets.Date, frozen bool) {
	if sd.Hits() == 0 {
		return
	}
	p.sd = sd
	defer p.leaveDay()
	p.enterDay(sd, date)
	var memo *Memo
	if frozen {
		memo = sd.Memo()
	}
	p.gids = nil
	if memo != nil && p.Intern != nil && len(p.dims) == 1 && p.dims[0].dictValue() {
		if p.gids = memo.Gids(p.Intern, len(sd.Strs)); p.gids != nil {
			p.Intern.Stats.Days.Add(1)
		}
	}
	whole := p.wholeDay(sd, memo)
	// byDim: the day's breakdown by the one dimension is its memo's, or
	// is kept there once counted (dimmemo.go).
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
	var base Totals
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
	if p.scanRows(sd, memo, whole); p.Err != nil {
		return
	}
	p.endDay(sd, memo, byDim, plain, &base)
}

// enterDay starts the scan of sd, of local day date: the day's midnight,
// its groups and its filters' state.
func (p *Plan) enterDay(sd *Day, date buckets.Date) {
	if p.date != date || p.nextMid == 0 {
		p.date = date
		p.nextMid = query.LocalDayStart(date+1, p.Query.Location).UnixMilli()
	}
	p.day++
	p.solo = p.SoloDays[sd]
	for g := range p.goalMemo {
		p.goalMemo[g] = p.goalMemo[g][:0] // the ids are the new day's
	}
	p.touched = p.touched[:0]
	p.dayGroups = make(map[gkey]*Group)
	p.dayGroup0 = nil
	clear(p.dayGroup1)
	p.filter.startDay(p, sd)
}

// endDay finishes the scan of sd: its groups' day, and what the memo
// keeps of it (byDim: the breakdown by the one dimension; plain: the
// totals, the groups' then less base, theirs before the day).
func (p *Plan) endDay(sd *Day, memo *Memo, byDim, plain bool, base *Totals) {
	for _, g := range p.touched {
		p.finishDay(sd, g)
	}
	if p.gidFound > 0 {
		p.Intern.Stats.Found.Add(p.gidFound)
		p.gidFound = 0
	}
	if byDim {
		p.keepDimMemo(memo, sd.Visits())
		p.keepBases = false
	}
	if plain && p.needSess {
		t := &Totals{}
		if g := p.groups[""]; g != nil {
			*t = g.totals()
			t.Sub(base)
		}
		memo.Totals.CompareAndSwap(nil, t)
	}
}

// dayScan is the scan of one day's rows (Plan.scanRows) and how it counts
// a hit.
type dayScan struct {
	p  *Plan
	sd *Day
	// whole: every hit of the day is in the query's range.
	whole bool
	// byVisit: every hit of a visit counts in its group, found once.
	byVisit bool
	// fast: a hit needs no test beyond its visit's, and its one group is
	// found by the column's id (countHits).
	fast bool
	// visitHits: a visit's hits fall in one group (vgroup), and a hit's
	// only test beyond its visit's is its hit filters' memos
	// (countVisitHits).
	visitHits bool
	// visitChecked: the hit's visit passed its visit-level filters.
	visitChecked bool
	// hcol: with one dimension on a column of hit rows, a hit's group is
	// found by the column's id (group1), without keysOf.
	hcol    []uint32
	vgroup  []*Group // by visit row, its group (visitOnly)
	orphans *Group   // the orphan events' group (visitOnly)
}

// scanRows counts the rows of sd (whole: all of them in the query's
// range), after the filters' visit-level tests.
func (p *Plan) scanRows(sd *Day, memo *Memo, whole bool) {
	// When every dimension is the visit's, a visit's hits all fall in one
	// group: it is found once per visit.
	s := &dayScan{p: p, sd: sd, whole: whole}
	s.byVisit = sd.Grouped && whole && p.visitOnly && len(p.hitConj) == 0 && !p.needRev && !p.needEng
	if p.visitOnly && !s.byVisit {
		p.vgroup = slices.Grow(p.vgroup[:0], sd.Visits())[:sd.Visits()]
		clear(p.vgroup)
		s.vgroup = p.vgroup
	}
	p.mark = slices.Grow(p.mark[:0], sd.Visits())[:sd.Visits()]
	clear(p.mark)
	p.vpass = slices.Grow(p.vpass[:0], sd.Visits())[:sd.Visits()]
	clear(p.vpass)
	p.orphanPass, p.settled = 0, false
	if UseFilterMemo.Load() {
		p.visitLeaves(sd, memo)
	} else {
		p.visitLeaves(sd, nil)
	}
	if len(p.dims) == 1 {
		s.hcol = hitCol(sd, p.dims[0])
	}
	s.fast = whole && s.hcol != nil && len(p.hitConj) == 0 && !p.needEng && !p.needRev && !(p.needSess && p.page >= 0)
	s.visitHits = whole && p.visitOnly && !s.byVisit && len(p.hitConj) > 0 && p.hitLeaves && !p.needEng && !p.needRev
	if s.visitHits {
		p.hitCols = p.hitCols[:0]
		for _, n := range p.hitConj {
			p.hitCols = append(p.hitCols, hitCol(sd, n.spec))
		}
	}
	switch {
	case s.byVisit:
		s.scanByVisit()
	case sd.Grouped && (len(p.visitConj) > 0 || s.visitHits):
		s.scanVisits()
	default:
		for i := range sd.Hits() {
			if s.hit(i); p.Err != nil {
				return
			}
		}
	}
}

// hit counts hit row i, if it passes the filters.
func (s *dayScan) hit(i int) {
	p, sd := s.p, s.sd
	kind := sd.HKind[i]
	if !s.whole && !p.inRange(sd, i) {
		return
	}
	if kind == KindEngagement {
		if p.needEng {
			p.engagement(sd, i)
		}
		return
	}
	if p.filter != nil {
		if s.visitChecked {
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
		s.visitHit(i, kind, v)
		return
	}
	if s.hcol != nil {
		if g := p.group1(sd, s.hcol[i]); g != nil {
			p.count(g, sd, i, kind, v)
		}
	} else {
		p.keysOf(sd, i, false, 0, func(g *Group) { p.count(g, sd, i, kind, v) })
	}
	if p.needSess && p.page >= 0 && v != NoVisit {
		p.keysOf(sd, i, true, 0, func(g *Group) {
			p.touch(g)
			g.sessRows = append(g.sessRows, v)
		})
	}
}

// visitHit counts hit row i, of visit row v, in its visit's group (every
// dimension is the visit's), found once per visit.
func (s *dayScan) visitHit(i int, kind uint8, v uint32) {
	p, sd := s.p, s.sd
	var g *Group
	switch {
	case v == NoVisit && s.orphans != nil:
		g = s.orphans
	case v != NoVisit && s.vgroup[v] != nil:
		g = s.vgroup[v]
	default:
		p.keysOf(sd, i, false, 0, func(x *Group) { g = x })
		if g == nil {
			return // p.Err
		}
		if v == NoVisit {
			s.orphans = g
		} else {
			s.vgroup[v] = g
		}
	}
	p.count(g, sd, i, kind, v)
}

// scanByVisit counts every hit of a visit in its one group: a visit at a
// time. With one dimension on a visit column, its group is found by the
// column's id (group's dayGroup1), without keysOf.
func (s *dayScan) scanByVisit() {
	p, sd := s.p, s.sd
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
		var g *Group
		if col != nil {
			g = p.group1(sd, col[v])
		} else {
			p.keysOf(sd, lo, false, 0, func(x *Group) { g = x })
		}
		if g == nil {
			return // p.Err
		}
		p.countVisit(g, sd, uint32(v), lo, hi)
		lo = hi
	}
	for i := lo; i < sd.Hits() && p.Err == nil; i++ {
		s.hit(i) // orphans
	}
}

// scanVisits counts the hits of a grouped day a visit at a time: a visit
// its visit-level filters exclude is skipped whole.
func (s *dayScan) scanVisits() {
	p, sd := s.p, s.sd
	lo := 0
	s.visitChecked = true
	test := !p.settled
	if (s.fast || s.visitHits) && !test {
		if lo = p.countPassing(sd, s.hcol, s.visitHits, s.vgroup); p.Err != nil {
			return
		}
	} else {
		for v, end := range sd.HitEnd {
			hi := int(end)
			if st := p.vpass[v]; lo < hi && st != 2 && (st == 1 || !test || p.visitTest(sd, lo)) {
				if s.visitRows(uint32(v), lo, hi); p.Err != nil {
					return
				}
			}
			lo = hi
		}
	}
	s.visitChecked = false
	for i := lo; i < sd.Hits() && p.Err == nil; i++ {
		s.hit(i) // orphans
	}
}

// visitRows counts hit rows [lo, hi), those of visit row v, which passed
// its visit-level filters.
func (s *dayScan) visitRows(v uint32, lo, hi int) {
	p, sd := s.p, s.sd
	switch {
	case s.fast:
		p.countHits(sd, s.hcol, v, lo, hi)
	case s.visitHits:
		p.countVisitHits(sd, s.vgroup, v, lo, hi)
	default:
		for i := lo; i < hi && p.Err == nil; i++ {
			s.hit(i)
		}
	}
}

// totals returns g's totals, its visitors those counted without a bitmap.
func (g *Group) totals() Totals {
	return Totals{Visits: g.visits, Pageviews: g.pageviews, Events: g.events, Visitors: g.solo, Sess: g.sess, Rows: g.hasRows}
}

// addTotals adds a day's totals to g.
func (g *Group) addTotals(t *Totals) {
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
// of a streamed day (Chunked.Chunk) must be garbage once scanned, not
// held by every plan of a batch while the next chunk is built (which
// had two chunks resident at once: 70 MB for a 500,000-visit day).
func (p *Plan) leaveDay() {
	p.sd = nil
	clear(p.hitCols)
	p.hitCols = p.hitCols[:0]
}

// touch marks g as having rows in the current day.
func (p *Plan) touch(g *Group) {
	if g.day != p.day {
		g.day, g.lastV = p.day, 0
		p.touched = append(p.touched, g)
		if p.keepBases {
			p.bases = append(p.bases, g.totals())
		}
	}
}

// count adds matching hit i (of visit v) to group g.
func (p *Plan) count(g *Group, sd *Day, i int, kind uint8, v uint32) {
	p.touch(g)
	g.hasRows = true
	g.events++
	if kind == KindPageview {
		g.pageviews++
	}
	if p.needRev && kind == KindEvent {
		p.addRevenue(g, sd, i)
	}
	if v == NoVisit {
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
func (p *Plan) countPassing(sd *Day, col []uint32, visitHits bool, vgroup []*Group) int {
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
		if p.Err != nil {
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
func (p *Plan) countHits(sd *Day, col []uint32, v uint32, lo, hi int) {
	for i := lo; i < hi; i++ {
		kind := sd.HKind[i]
		if kind == KindEngagement {
			continue
		}
		id := col[i]
		var g *Group
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
		if kind == KindPageview {
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
func (p *Plan) countVisitHits(sd *Day, vgroup []*Group, v uint32, lo, hi int) {
	var g *Group
hits:
	for i := lo; i < hi; i++ {
		kind := sd.HKind[i]
		if kind == KindEngagement {
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
			if kind == KindPageview {
				g.pageviews++
			}
			continue
		}
		if g = vgroup[v]; g == nil {
			p.keysOf(sd, i, false, 0, func(x *Group) { g = x })
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
func (p *Plan) countVisit(g *Group, sd *Day, v uint32, lo, hi int) {
	p.touch(g)
	g.hasRows = true
	g.pageviews += int64(sd.VPageviews[v])
	for _, k := range sd.HKind[lo:hi] {
		if k != KindEngagement {
			g.events++
		}
	}
	p.mark[v] = g.id
	g.rows = append(g.rows, v)
}

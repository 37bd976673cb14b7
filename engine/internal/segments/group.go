package segments

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/webstats/webstats/engine/query"
)

// groupByID returns the group of id.
func (p *Plan) groupByID(id int32) *Group { return p.order[id-1] }

// eachKey calls fn with each group hit i belongs to (several for a hit
// converting several goals; none for a hit converting no goal when
// grouping by goal).
func (p *Plan) eachKey(sd *Day, i int, fn func(*Group)) {
	p.keysOf(sd, i, false, 0, fn)
}

func (p *Plan) keysOf(sd *Day, i int, sess bool, pos int, fn func(*Group)) {
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
		if p.ByDay && p.Query.TimeDimension() != "time:hour" {
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
		if v != NoVisit {
			p.key[pos] = sd.VCityID[v]
		}
	default:
		p.key[pos] = 0
		if v != NoVisit {
			p.key[pos] = p.visitValue(sd, v, s)
		}
	}
	p.keysOf(sd, i, sess, pos+1, fn)
}

// timeLabel returns the id of the time label of a hit at ms, memoised by
// 15-minute slot (every time zone offset is a multiple of 15 minutes, so
// a slot never spans two local hours).
func (p *Plan) timeLabel(ms int64) uint32 {
	slot := FloorDiv(ms, 15*60*1000)
	if p.slots == nil {
		p.slots = new([slotCacheSize]slotEntry)
	}
	e := &p.slots[uint64(slot)%slotCacheSize]
	if e.set && e.slot == slot {
		return e.id
	}
	label := p.Query.TimeBucket(time.UnixMilli(ms))
	id, ok := p.labelIDs[label]
	if !ok {
		id = uint32(len(p.labels))
		p.labels = append(p.labels, label)
		p.labelIDs[label] = id
	}
	*e = slotEntry{slot: slot, id: id, set: true}
	return id
}

// slotCacheSize is the size of Plan.slots: 256 slots of 15 minutes, more
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

// maxDenseKey bounds the ids Plan.dayGroup1 holds (a slice of at most
// 1 MiB of pointers per plan).
const maxDenseKey = 1 << 17

// group returns the group of the current key, creating it.
func (p *Plan) group(sd *Day) *Group {
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
		var g *Group
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
func (p *Plan) globalGroup(sd *Day) *Group {
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
func (p *Plan) newGroup(key string, fill func(dims []any)) *Group {
	if len(p.groups) >= p.groupLimit || p.shared != nil && p.shared.groups.Add(1) > 2*int64(p.groupLimit) {
		p.Err = groupsError(p.groupLimit)
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
		p.groupSlab = make([]Group, size)
	}
	g := &p.groupSlab[0]
	p.groupSlab = p.groupSlab[1:]
	*g = Group{key: key, Dims: dims, id: int32(len(p.order) + 1)}
	p.groups[g.key] = g
	p.order = append(p.order, g)
	return g
}

// groupSlab is the most groups globalGroup allocates at once.
const groupSlab = 64

// dimString is the value shown for id of dimension s (any but a city).
func (p *Plan) dimString(sd *Day, s dimSpec, id uint32) string {
	switch s.kind {
	case dkTime:
		return p.labels[id]
	case dkGoal:
		return p.Goals.Goals[id].DisplayName
	case dkProp:
		if id == keyNone {
			return "(none)"
		}
		return sd.Strs[id]
	}
	return s.display(sd.Strs[id])
}

// engagement adds engagement report i to its groups.
func (p *Plan) engagement(sd *Day, i int) {
	v := sd.HVisit[i]
	if v == NoVisit {
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
	p.eachKey(sd, i, func(g *Group) {
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
func (p *Plan) addRevenue(g *Group, sd *Day, i int) {
	unit := sd.Strs[sd.HUnit[i]]
	amount, err := strconv.ParseFloat(sd.Strs[sd.HValue[i]], 64)
	if err != nil {
		return
	}
	for _, gi := range p.revGoals {
		goal := &p.Goals.Goals[gi]
		if goal.Currency != unit || !p.hitMatchesGoal(sd, i, gi) {
			continue
		}
		if slices.ContainsFunc(p.dims, func(s dimSpec) bool { return s.kind == dkGoal }) && !slices.Contains(g.Dims, any(goal.DisplayName)) {
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
func (p *Plan) finishDay(sd *Day, g *Group) {
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
			bounce := pv <= 1 && sd.VFlags[v]&VisitInteractive == 0
			g.sess.Duration += FloorDiv(sd.VEnd[v]-sd.VFirst[v], 1000)
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
func (p *Plan) distinctVisitors(sd *Day, rows []uint32) int64 {
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
func (p *Plan) visitorBitmap(ids []uint32) *roaring.Bitmap {
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

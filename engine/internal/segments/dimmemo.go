package segments

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
)

// The unfiltered breakdowns of a closed day (issue #37, "where the day
// buckets answer faster, they must answer the same thing"). The cards of
// the dashboard ask, without filters, a breakdown by one dimension of
// every day of the range; a closed day's answer to each never changes. A
// day's memo keeps, per dimension, what scanDay added for the day to each
// of its values' groups (the values' Totals), once a scan has counted
// them; the next query of the dimension adds those instead of scanning
// the day. Like the memo's totals (scanDay's plain), only for a day of a
// salt period of its own (Plan.solo), whose visitors add up across days
// without a bitmap; a day of a salt period shared with another day of the
// range is scanned.
//
// The memo is the day's: a day that changes (a late import, retention, a
// hit of a day reopened) is a new Day, without a memo (clone), so what
// it keeps is never stale.
//
// Bounded: at most dimMemoKeys dimensions, and their values' totals at
// most DimMemoBytes(nv) for a day of nv visits; the least recently used
// dimension gives way to a new one, and a breakdown larger than the bound
// is not kept. What a memo keeps is counted as kept (dimAcct), in the
// engine's memory budget (Engine.counters.dimMemos), not reserved with
// the day: reserving the bound for every day with a memo doubled a closed
// day's share of the budget, and evicted days a budget had room for. A
// memo's bytes leave the count when its day is evicted (release) or, for
// a day that left memory any other way (replaced, deleted, a query's own
// copy), when the memo is garbage (a cleanup).

// UseDimMemo is off only in the tests that compare answers with and
// without it (SetDimMemo in export_test.go).
var UseDimMemo atomic.Bool

func init() { UseDimMemo.Store(true) }

// DimMemoHits counts the days a query added from their memo's breakdown
// (for tests).
var DimMemoHits atomic.Int64

// dimMemoable reports whether the current day's answer may come from, or
// go to, its memo: a whole day of its own salt period, no revenue nor
// engagement metric, and a key (dimMemoKey).
func (p *Plan) dimMemoable(memo *Memo, whole bool) bool {
	if memo == nil || !whole || !p.solo || p.needRev || p.needEng || !UseDimMemo.Load() {
		return false
	}
	if p.dayTime() && !memo.OnDay(p.sd) {
		return false
	}
	return p.dimMemoKey() != ""
}

// dayTime reports whether the plan's one dimension is a time label of a
// day or longer, found by the day a hit was counted under (keysOf): on a
// day whose hits are all counted under it (Memo.OnDay) the day's
// answer is its totals under the label of the day, those of the plan
// without the dimension.
func (p *Plan) dayTime() bool {
	return len(p.dims) == 1 && p.dims[0].kind == dkTime && p.ByDay && p.Query.TimeDimension() != "time:hour"
}

// dimMemoKey returns the key of the plan's breakdowns in a day's memo:
// its dimensions and filters, "" when the answer of a day depends on more
// than the day (a goal, as dimension or filter; a time label but dayTime)
// or the key is longer than maxDayMemoKey. A dayTime plan's key is that
// of its totals: no dimensions.
func (p *Plan) dimMemoKey() string {
	if p.memoDimKey != nil {
		return *p.memoDimKey
	}
	key := ""
	dims := p.Query.Dimensions
	if p.dayTime() {
		dims = nil
	}
	ok := p.dayTime() || !slices.ContainsFunc(p.dims, func(s dimSpec) bool { return s.kind == dkTime || s.kind == dkGoal })
	if f, err := json.Marshal(p.Query.Filters); ok && err == nil && !bytes.Contains(f, []byte(`"event:goal"`)) {
		key = strings.Join(dims, "\x00") + "\x01" + string(f)
	}
	if len(key) > maxDayMemoKey {
		key = ""
	}
	p.memoDimKey = &key
	return key
}

// addDimMemo adds the day's breakdown en to the plan's groups.
func (p *Plan) addDimMemo(en *dimEntry) {
	if p.dayTime() {
		for i := range en.Vals { // one at most: the day's totals
			p.key[0] = p.dayLabel(p.date)
			g := p.group(p.sd)
			if g == nil {
				return // p.err
			}
			g.addTotals(&en.Vals[i].T)
		}
		DimMemoHits.Add(1)
		return
	}
	for i := range en.Vals {
		v := &en.Vals[i]
		g := p.groups[v.Key]
		if g == nil {
			if g = p.newGroup(v.Key, func(dims []any) { copy(dims, v.Dims) }); g == nil {
				return // p.err
			}
		}
		g.addTotals(&v.T)
	}
	DimMemoHits.Add(1)
}

// keepDimMemo keeps in memo what the day just scanned added to the groups
// it touched (p.touched, their totals before in p.bases).
func (p *Plan) keepDimMemo(memo *Memo, nv int) {
	en := &dimEntry{Key: p.dimMemoKey(), Bytes: len(p.dimMemoKey()), Sess: p.needSess, Vals: make([]dimValue, 0, len(p.touched))}
	limit := DimMemoBytes(nv)
	if p.dayTime() && len(p.touched) > 1 {
		return // never: every hit is under the day's label
	}
	for i, g := range p.touched {
		t := g.totals()
		t.Sub(&p.bases[i])
		if p.dayTime() {
			en.Vals = append(en.Vals, dimValue{Key: "", Dims: []any{}, T: t}) // as without the dimension
			break
		}
		// The values copied: g.dims is a window on the plan's slab of
		// groupSlab groups' values, which kept so would hold every other
		// value of the slab (other days' among them) alive uncounted.
		en.Vals = append(en.Vals, dimValue{Key: g.key, Dims: slices.Clone(g.Dims), T: t})
		en.Bytes += dimValueBytes + len(g.key)
		for _, d := range g.Dims {
			en.Bytes += 16
			if s, ok := d.(string); ok {
				en.Bytes += len(s)
			}
		}
		if en.Bytes > limit {
			return
		}
	}
	memo.KeepDim(en, limit, p.DimBytes)
}

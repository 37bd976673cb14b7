package engine

import (
	"bytes"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The unfiltered breakdowns of a closed day (issue #37, "where the day
// buckets answer faster, they must answer the same thing"). The cards of
// the dashboard ask, without filters, a breakdown by one dimension of
// every day of the range; a closed day's answer to each never changes. A
// day's memo keeps, per dimension, what scanDay added for the day to each
// of its values' groups (the values' dayTotals), once a scan has counted
// them; the next query of the dimension adds those instead of scanning
// the day. Like the memo's totals (scanDay's plain), only for a day of a
// salt period of its own (plan.solo), whose visitors add up across days
// without a bitmap; a day of a salt period shared with another day of the
// range is scanned.
//
// The memo is the day's: a day that changes (a late import, retention, a
// hit of a day reopened) is a new segDay, without a memo (clone), so what
// it keeps is never stale.
//
// Bounded: at most dimMemoKeys dimensions, and their values' totals at
// most dimMemoBytes(nv) for a day of nv visits; the least recently used
// dimension gives way to a new one, and a breakdown larger than the bound
// is not kept. What a memo keeps is counted as kept (dimAcct), in the
// engine's memory budget (Engine.counters.dimMemos), not reserved with
// the day: reserving the bound for every day with a memo doubled a closed
// day's share of the budget, and evicted days a budget had room for. A
// memo's bytes leave the count when its day is evicted (release) or, for
// a day that left memory any other way (replaced, deleted, a query's own
// copy), when the memo is garbage (a cleanup).

// dimMemoKeys is the most dimensions a day's memo keeps.
const dimMemoKeys = 32

// dimMemoBytes is the most a day of nv visits keeps of its breakdowns.
func dimMemoBytes(nv int) int { return 160 * nv }

// useDimMemo is off only in the tests that compare answers with and
// without it (SetDimMemo in export_test.go).
var useDimMemo atomic.Bool

func init() { useDimMemo.Store(true) }

// dimMemoHits counts the days a query added from their memo's breakdown
// (for tests).
var dimMemoHits atomic.Int64

// dimValue is one value's totals for a day.
type dimValue struct {
	key  string // the group's key (globalGroup)
	dims []any  // the group's values (shared, never written)
	t    dayTotals
}

// dimAcct is what a day's memo counts of its breakdowns in an engine's
// budget: held bytes in *to, until gone. It is apart from the memo so
// that the memo's cleanup can reach it.
type dimAcct struct {
	mu   sync.Mutex
	to   *atomic.Int64
	held int64
	gone bool
}

// set counts n bytes held in place of the last count; false once gone.
func (a *dimAcct) set(to *atomic.Int64, n int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.gone {
		return false
	}
	if a.to == nil {
		a.to = to
	}
	a.to.Add(n - a.held)
	a.held = n
	return true
}

// release takes the bytes out of the count for good.
func (a *dimAcct) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.gone && a.to != nil {
		a.to.Add(-a.held)
	}
	a.gone, a.held = true, 0
}

// releaseDims drops what m keeps of its breakdowns and its count (its day
// left memory): a query still reading the day keeps none again.
func (m *dayMemo) releaseDims() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.acct != nil {
		m.acct.release()
	}
	clear(m.dims)
	m.dims = nil
}

// dimEntry is a day's breakdown by one dimension.
type dimEntry struct {
	key   string // dimMemoKey
	sess  bool   // the session totals were counted
	vals  []dimValue
	bytes int
	used  uint64
}

// dimValueBytes is the memory of one dimValue, its strings' bytes apart.
const dimValueBytes = int(unsafe.Sizeof(dimValue{})) + 16

// dimEntryOf returns the day's breakdown by dim, with its session totals
// if sess, or nil.
func (m *dayMemo) dimEntryOf(key string, sess bool) *dimEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, en := range m.dims {
		if en.key == key && (en.sess || !sess) {
			m.tick++
			en.used = m.tick
			return en
		}
	}
	return nil
}

// keepDim keeps en, in place of the dimension's older entry and of the
// least recently used ones while the bytes are over limit.
func (m *dayMemo) keepDim(en *dimEntry, limit int, to *atomic.Int64) {
	if en.bytes > limit || to == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.acct == nil {
		m.acct = new(dimAcct)
		runtime.AddCleanup(m, func(a *dimAcct) { a.release() }, m.acct)
	}
	kept := m.dims[:0]
	total := en.bytes
	for _, o := range m.dims {
		if o.key != en.key {
			kept = append(kept, o)
			total += o.bytes
		}
	}
	for len(kept) >= dimMemoKeys || total > limit {
		lru := 0
		for i, o := range kept {
			if o.used < kept[lru].used {
				lru = i
			}
		}
		total -= kept[lru].bytes
		kept = append(kept[:lru], kept[lru+1:]...)
	}
	if !m.acct.set(to, int64(total)) {
		return // released: its day left memory
	}
	m.tick++
	en.used = m.tick
	clear(m.dims[len(kept):])
	m.dims = append(kept, en)
}

// dimMemoable reports whether the current day's answer may come from, or
// go to, its memo: a whole day of its own salt period, no revenue nor
// engagement metric, and a key (dimMemoKey).
func (p *plan) dimMemoable(memo *dayMemo, whole bool) bool {
	if memo == nil || !whole || !p.solo || p.needRev || p.needEng || !useDimMemo.Load() {
		return false
	}
	if p.dayTime() && !memo.onDay(p.sd) {
		return false
	}
	return p.dimMemoKey() != ""
}

// dayTime reports whether the plan's one dimension is a time label of a
// day or longer, found by the day a hit was counted under (keysOf): on a
// day whose hits are all counted under it (dayMemo.onDay) the day's
// answer is its totals under the label of the day, those of the plan
// without the dimension.
func (p *plan) dayTime() bool {
	return len(p.dims) == 1 && p.dims[0].kind == dkTime && p.byDay && p.r.TimeDimension() != "time:hour"
}

// dimMemoKey returns the key of the plan's breakdowns in a day's memo:
// its dimensions and filters, "" when the answer of a day depends on more
// than the day (a goal, as dimension or filter; a time label but dayTime)
// or the key is longer than maxDayMemoKey. A dayTime plan's key is that
// of its totals: no dimensions.
func (p *plan) dimMemoKey() string {
	if p.memoDimKey != nil {
		return *p.memoDimKey
	}
	key := ""
	dims := p.r.Dimensions
	if p.dayTime() {
		dims = nil
	}
	ok := p.dayTime() || !slices.ContainsFunc(p.dims, func(s dimSpec) bool { return s.kind == dkTime || s.kind == dkGoal })
	if f, err := json.Marshal(p.r.Filters); ok && err == nil && !bytes.Contains(f, []byte(`"event:goal"`)) {
		key = strings.Join(dims, "\x00") + "\x01" + string(f)
	}
	if len(key) > maxDayMemoKey {
		key = ""
	}
	p.memoDimKey = &key
	return key
}

// addDimMemo adds the day's breakdown en to the plan's groups.
func (p *plan) addDimMemo(en *dimEntry) {
	if p.dayTime() {
		for i := range en.vals { // one at most: the day's totals
			p.key[0] = p.dayLabel(p.date)
			g := p.group(p.sd)
			if g == nil {
				return // p.err
			}
			g.addTotals(&en.vals[i].t)
		}
		dimMemoHits.Add(1)
		return
	}
	for i := range en.vals {
		v := &en.vals[i]
		g := p.groups[v.key]
		if g == nil {
			if g = p.newGroup(v.key, func(dims []any) { copy(dims, v.dims) }); g == nil {
				return // p.err
			}
		}
		g.addTotals(&v.t)
	}
	dimMemoHits.Add(1)
}

// keepDimMemo keeps in memo what the day just scanned added to the groups
// it touched (p.touched, their totals before in p.bases).
func (p *plan) keepDimMemo(memo *dayMemo, nv int) {
	en := &dimEntry{key: p.dimMemoKey(), bytes: len(p.dimMemoKey()), sess: p.needSess, vals: make([]dimValue, 0, len(p.touched))}
	limit := dimMemoBytes(nv)
	if p.dayTime() && len(p.touched) > 1 {
		return // never: every hit is under the day's label
	}
	for i, g := range p.touched {
		t := g.totals()
		t.sub(&p.bases[i])
		if p.dayTime() {
			en.vals = append(en.vals, dimValue{key: "", dims: []any{}, t: t}) // as without the dimension
			break
		}
		// The values copied: g.dims is a window on the plan's slab of
		// groupSlab groups' values, which kept so would hold every other
		// value of the slab (other days' among them) alive uncounted.
		en.vals = append(en.vals, dimValue{key: g.key, dims: slices.Clone(g.dims), t: t})
		en.bytes += dimValueBytes + len(g.key)
		for _, d := range g.dims {
			en.bytes += 16
			if s, ok := d.(string); ok {
				en.bytes += len(s)
			}
		}
		if en.bytes > limit {
			return
		}
	}
	memo.keepDim(en, limit, p.dimBytes)
}

// onDay reports whether every hit of sd is counted under its day (the
// flag wholeDay tests), computed once.
func (m *dayMemo) onDay(sd *segDay) bool {
	m.onDayOnce.Do(func() {
		m.allOnDay = !slices.ContainsFunc(sd.hFlags, func(f uint8) bool { return f|hfInteractive != hfDay|hfInteractive })
	})
	return m.allOnDay
}

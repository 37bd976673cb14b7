package segments

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Memo keeps, on a day that no longer changes, what queries found of it
// that the next query may use again: the span of its hit times, and which
// visits recent queries' simple visit-level filters excluded. The cards
// of one dashboard ask the same filters of the same days a dozen times;
// this answers all but the first from a bitset.
//
// Bounded: dayMemoKeys entries of a bit a visit, keys of at most
// maxDayMemoKey bytes, counted in the day's memory estimate. Only a day
// that may be read without the shard lock gets one, when it is made: one
// decoded from the store, one made whole, and one closed (compact); and
// only with MinMemoVisits visits or more, below which a filter's pass
// over the visits costs microseconds. The field is never written once the
// day is shared: a copy for writing (clone) has none.
type Memo struct {
	spanOnce sync.Once
	lo, hi   int64
	perOnce  sync.Once
	plo, phi int32
	// totals are the day's unfiltered totals (Plan.ScanDay), once a
	// query has counted them.
	Totals atomic.Pointer[Totals]

	// gidMap is the day's dictionary in the engine's table of values
	// (Gids), once a query has looked one up.
	gidMap atomic.Pointer[Gids]

	mu      sync.Mutex
	entries [dayMemoKeys]memoEntry
	// dims are the day's breakdowns (memodim.go, dimmemo.go); allOnDay says
	// every hit is counted under the day (onDay).
	dims      []*dimEntry
	acct      *dimAcct // nil until a breakdown is kept
	onDayOnce sync.Once
	allOnDay  bool
	tick      uint64
}

// memoEntry is the visits a set of filters (key) excluded: bit v of excl
// is visit row v.
type memoEntry struct {
	key  string
	excl []uint64
	used uint64 // the memo's tick when last found
}

const (
	dayMemoKeys   = 4
	maxDayMemoKey = 512
)

// MinMemoVisits is the fewest visits of a day with a memo. A variable so
// that the tests' small days have one too (export_test.go).
var MinMemoVisits = 1024

// memoBytes is what a memo may hold for a day of nv visits and ns
// strings, at most, its breakdowns apart (counted as kept: dimAcct).
func memoBytes(nv, ns int) int {
	return 384 + dayMemoKeys*(maxDayMemoKey+(nv+63)/64*8) + gidsBytes(ns) // 384: the struct and its totals
}

// newMemo returns a memo for a day of nv visits, nil for a small day.
func newMemo(nv int) *Memo {
	if nv < MinMemoVisits {
		return nil
	}
	return new(Memo)
}

// Memo returns d's memo: nil for a day without one.
func (d *Day) Memo() *Memo {
	if !UseDayMemo.Load() {
		return nil
	}
	return d.dm
}

// UseDayMemo is off only in benchmarks that measure a query on its own
// (SetDayMemo in export_test.go).
var UseDayMemo atomic.Bool

// UseFilterMemo is off only in benchmarks of a query whose filters were
// just chosen (SetFilterMemo in export_test.go): the visits its filters
// exclude are found again, what the memo keeps of the day itself is used.
var UseFilterMemo atomic.Bool

func init() {
	UseDayMemo.Store(true)
	UseFilterMemo.Store(true)
}

// DayMemoHits counts the times a memo knew a query's filters (for tests).
var DayMemoHits atomic.Int64

// Span returns the first and last hit times of sd (hitSpan), computed once.
func (m *Memo) Span(sd *Day) (lo, hi int64) {
	m.spanOnce.Do(func() { m.lo, m.hi = hitSpan(sd) })
	return m.lo, m.hi
}

// Periods returns the first and last salt periods of sd's visits
// (PeriodSpan), computed once.
func (m *Memo) Periods(sd *Day) (lo, hi int32) {
	m.perOnce.Do(func() { m.plo, m.phi = PeriodSpan(sd) })
	return m.plo, m.phi
}

// Excluded marks in vpass (2) the visits the filters named key excluded,
// and reports whether the memo knew them. vpass has a byte a visit, all 0.
func (m *Memo) Excluded(key string, vpass []uint8) bool {
	if m == nil || len(key) > maxDayMemoKey {
		return false
	}
	var excl []uint64
	m.mu.Lock()
	for i := range m.entries {
		if en := &m.entries[i]; en.excl != nil && en.key == key {
			m.tick++
			en.used, excl = m.tick, en.excl
			break
		}
	}
	m.mu.Unlock()
	// An entry's bitset never changes once kept: read without the lock.
	if excl == nil || len(excl) != (len(vpass)+63)/64 {
		return false // the length: never, but not assumed
	}
	for w, word := range excl {
		for word != 0 {
			vpass[w*64+bits.TrailingZeros64(word)] = 2
			word &= word - 1
		}
	}
	DayMemoHits.Add(1)
	return true
}

// KeepExcluded keeps which visits vpass excludes (2) under key, in place
// of the least recently used entry.
func (m *Memo) KeepExcluded(key string, vpass []uint8) {
	if m == nil || len(key) > maxDayMemoKey {
		return
	}
	excl := make([]uint64, (len(vpass)+63)/64)
	for v, st := range vpass {
		if st == 2 {
			excl[v/64] |= 1 << (v % 64)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	victim := -1
	for i := range m.entries {
		if en := &m.entries[i]; en.key == key && en.excl != nil {
			if len(en.excl) == len(excl) {
				return // another query kept it meanwhile
			}
			victim = i // of other rows: never, but not assumed
			break
		}
	}
	if victim < 0 {
		victim = 0
		for i := range m.entries {
			if m.entries[i].used < m.entries[victim].used {
				victim = i
			}
		}
	}
	m.tick++
	m.entries[victim] = memoEntry{key: key, excl: excl, used: m.tick}
}

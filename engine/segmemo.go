package engine

import (
	"math/bits"
	"slices"
	"sync"
)

// dayMemo keeps, on a day that no longer changes, what queries found of it
// that the next query may use again: the span of its hit times, and which
// visits recent queries' simple visit-level filters excluded. The cards
// of one dashboard ask the same filters of the same days a dozen times;
// this answers all but the first from a bitset.
//
// Bounded: dayMemoKeys entries of a bit a visit, keys of at most
// maxDayMemoKey bytes, counted in the day's memory estimate (segMemoBytes).
// A day gets its memo when it is made (newSegDay, decoding, whole, clone),
// and the field is never written once the day is shared: a copy of the
// day (clone) gets a memo of its own.
type dayMemo struct {
	spanOnce sync.Once
	lo, hi   int64

	mu   sync.Mutex
	keys [dayMemoKeys]string
	excl [dayMemoKeys][]uint64 // bit v: visit row v excluded
	next int                   // the entry to replace next
}

const (
	dayMemoKeys   = 4
	maxDayMemoKey = 512
	// segMemoBytes is the memo's share of a day's memory estimate: the
	// struct and its keys at most, then dayMemoKeys bits a visit.
	segMemoBytes = 256 + dayMemoKeys*maxDayMemoKey
)

// memo returns d's memo: nil for a day without one.
func (d *segDay) memo() *dayMemo {
	if !useDayMemo {
		return nil
	}
	return d.dm
}

// useDayMemo is off only in benchmarks that measure a query on its own
// (SetDayMemo in export_test.go).
var useDayMemo = true

// span returns the first and last hit times of sd (hitSpan), computed once.
func (m *dayMemo) span(sd *segDay) (lo, hi int64) {
	m.spanOnce.Do(func() { m.lo, m.hi = hitSpan(sd) })
	return m.lo, m.hi
}

// excluded marks in vpass (2) the visits the filters named key excluded,
// and reports whether the memo knew them. vpass has a byte a visit, all 0.
func (m *dayMemo) excluded(key string, vpass []uint8) bool {
	if m == nil || len(key) > maxDayMemoKey {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range m.keys {
		if k != key || m.excl[i] == nil {
			continue
		}
		if len(m.excl[i]) != (len(vpass)+63)/64 {
			return false // not this day's visits: never, but not assumed
		}
		for w, word := range m.excl[i] {
			for word != 0 {
				vpass[w*64+bits.TrailingZeros64(word)] = 2
				word &= word - 1
			}
		}
		return true
	}
	return false
}

// keepExcluded keeps which visits vpass excludes (2) under key.
func (m *dayMemo) keepExcluded(key string, vpass []uint8) {
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
	if i := slices.Index(m.keys[:], key); i >= 0 && m.excl[i] != nil {
		return // another query kept it meanwhile
	}
	m.keys[m.next], m.excl[m.next] = key, excl
	m.next = (m.next + 1) % dayMemoKeys
}

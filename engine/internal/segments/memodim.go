package segments

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// dimMemoKeys is the most dimensions a day's memo keeps.
const dimMemoKeys = 32

// DimMemoBytes is the most a day of nv visits keeps of its breakdowns.
func DimMemoBytes(nv int) int { return 160 * nv }

// dimValue is one value's totals for a day.
type dimValue struct {
	Key  string // the group's key (globalGroup)
	Dims []any  // the group's values (shared, never written)
	T    Totals
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

// ReleaseDims takes what d's memo keeps of breakdowns out of the budget:
// the day left memory (evicted, dropped).
func (d *Day) ReleaseDims() {
	if d.dm != nil {
		d.dm.ReleaseDims()
	}
}

// ReleaseDims drops what m keeps of its breakdowns and its count (its day
// left memory): a query still reading the day keeps none again.
func (m *Memo) ReleaseDims() {
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
	Key   string // dimMemoKey
	Sess  bool   // the session totals were counted
	Vals  []dimValue
	Bytes int
	used  uint64
}

// dimValueBytes is the memory of one dimValue, its strings' bytes apart.
const dimValueBytes = int(unsafe.Sizeof(dimValue{})) + 16

// DimEntryOf returns the day's breakdown by dim, with its session totals
// if sess, or nil.
func (m *Memo) DimEntryOf(key string, sess bool) *dimEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, en := range m.dims {
		if en.Key == key && (en.Sess || !sess) {
			m.tick++
			en.used = m.tick
			return en
		}
	}
	return nil
}

// KeepDim keeps en, in place of the dimension's older entry and of the
// least recently used ones while the bytes are over limit.
func (m *Memo) KeepDim(en *dimEntry, limit int, to *atomic.Int64) {
	if en.Bytes > limit || to == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.acct == nil {
		m.acct = new(dimAcct)
		runtime.AddCleanup(m, func(a *dimAcct) { a.release() }, m.acct)
	}
	kept := m.dims[:0]
	total := en.Bytes
	for _, o := range m.dims {
		if o.Key != en.Key {
			kept = append(kept, o)
			total += o.Bytes
		}
	}
	for len(kept) >= dimMemoKeys || total > limit {
		lru := 0
		for i, o := range kept {
			if o.used < kept[lru].used {
				lru = i
			}
		}
		total -= kept[lru].Bytes
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

// OnDay reports whether every hit of sd is counted under its day (the
// flag wholeDay tests), computed once.
func (m *Memo) OnDay(sd *Day) bool {
	m.onDayOnce.Do(func() {
		m.allOnDay = !slices.ContainsFunc(sd.HFlags, func(f uint8) bool { return f|HitInteractive != HitDay|HitInteractive })
	})
	return m.allOnDay
}

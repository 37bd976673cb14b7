package realtime

import (
	"cmp"
	"slices"

	"github.com/webstats/webstats/buckets"
)

// Window is the realtime window of a website. The zero Window is empty
// and ready to use.
type Window struct {
	pv  [30]minute
	vis [5]slot
	// dropped is the last Unix minute whose 5-minute visitors miss a key
	// that Add dropped because its slot held a later minute (an imported
	// time ahead of now). Read reports the window over until then.
	dropped int64
}

type minute struct {
	minute    int64 // Unix minute
	pageviews uint32
}

type slot struct {
	minute int64    // Unix minute
	keys   []uint64 // visitor keys (Key) of the minute's pageviews
	over   bool     // more than SlotKeys distinct keys came: keys is partial
}

// SlotKeys is the most distinct visitor keys a minute's slot keeps: 32
// KiB, 160 KiB a window in all.
const SlotKeys = 4096

// Key is the key a visitor has in the window: its salt period and dense
// id, which the segments' visit rows keep too (its hash they do not).
func Key(period buckets.Date, id uint32) uint64 {
	return uint64(uint32(period))<<32 | uint64(id)
}

// Add counts a pageview of visitor key at ms (Unix). It returns the bytes
// the slots grew by.
func (w *Window) Add(ms int64, key uint64) int64 {
	m := ms / 60000
	if m < 0 {
		return 0
	}
	p := &w.pv[m%30]
	if p.minute != m {
		if p.minute > m {
			w.dropped = max(w.dropped, m+4)
			return 0 // older than the window
		}
		*p = minute{minute: m}
	}
	p.pageviews++
	v := &w.vis[m%5]
	if v.minute != m {
		if v.minute > m {
			w.dropped = max(w.dropped, m+4)
			return 0 // older than the visitors' window
		}
		v.minute, v.keys, v.over = m, v.keys[:0], false
	}
	if v.over || len(v.keys) > 0 && v.keys[len(v.keys)-1] == key {
		return 0
	}
	if len(v.keys) == SlotKeys {
		// Full: keep each key once; still 3/4 full, the minute has too
		// many visitors to keep.
		slices.Sort(v.keys)
		v.keys = slices.Compact(v.keys)
		if len(v.keys) >= SlotKeys*3/4 {
			v.over = true
			return 0
		}
	}
	before := cap(v.keys)
	v.keys = append(v.keys, key)
	return int64(cap(v.keys)-before) * 8
}

// Reset empties w and returns the bytes it held.
func (w *Window) Reset() int64 {
	var n int64
	for i := range w.vis {
		n += int64(cap(w.vis[i].keys)) * 8
	}
	*w = Window{}
	return n
}

// Pageview is a pageview the window counts: its time (Unix
// milliseconds) and its visitor's Key.
type Pageview struct {
	Ms  int64
	Key uint64
}

// SortPageviews sorts pvs by time, as Rebuild needs them (stably: a
// website's rows in their order). A caller sorts before it takes the lock
// that guards the window.
func SortPageviews(pvs []Pageview) {
	slices.SortStableFunc(pvs, func(a, b Pageview) int { return cmp.Compare(a.Ms, b.Ms) })
}

// Rebuild empties w and counts pvs, which SortPageviews sorted. It returns
// the bytes the slots grew by (negative when they shrank).
func (w *Window) Rebuild(pvs []Pageview) int64 {
	n := -w.Reset()
	for _, p := range pvs {
		n += w.Add(p.Ms, p.Key)
	}
	return n
}

// Read returns the pageviews of each of the 30 minutes up to Unix minute
// now (oldest first) and the distinct visitors of the last 5; over
// reports that a slot of the last 5 minutes is over (visitors is then a
// lower bound).
func (w *Window) Read(now int64) (pageviews [30]uint64, visitors int, over bool) {
	seen := make(map[uint64]struct{})
	for i := range 30 {
		m := now - 29 + int64(i)
		if m < 0 {
			continue
		}
		if p := &w.pv[m%30]; p.minute == m {
			pageviews[i] = uint64(p.pageviews)
		}
		if v := &w.vis[m%5]; i >= 25 && v.minute == m {
			over = over || v.over
			for _, k := range v.keys {
				seen[k] = struct{}{}
			}
		}
	}
	return pageviews, len(seen), over || now <= w.dropped
}

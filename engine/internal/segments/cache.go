package segments

import (
	"hash/maphash"
	"sync"

	"github.com/webstats/webstats/buckets"
)

// PartCache keeps decoded sealed parts (SPEC §13), so that queries of a
// day with sealed parts (today, on a busy website) do not decode them
// again: decoding was about 70% of such a query. A part never changes
// once written, and the cache is addressed by the part's bytes (their
// length and a 64-bit maphash), so it needs no invalidation: a day dropped
// and sealed again has other bytes. Entries are read-only. The cache holds
// at most max bytes of decoded parts (their estimate), evicting the least
// recently used.
type PartCache struct {
	mu   sync.Mutex
	seed maphash.Seed
	max  int
	lru  *LRU[partKey, cachedPart]
}

type partKey struct {
	n    int
	hash uint64
}

type cachedPart struct {
	d     *Day
	maxID int // the largest string id d refers to; -1 for none
}

// NewPartCache returns an empty cache of at most max bytes of parts.
func NewPartCache(max int) *PartCache {
	return &PartCache{seed: maphash.MakeSeed(), max: max, lru: NewLRU[partKey, cachedPart](0, max)}
}

// Decode returns part b decoded (see DecodePart), from the cache when it
// has it; a nil c decodes. ns is the size of the day's dictionary now: a part checked
// against a smaller one is valid against it, as dictionaries only grow.
func (c *PartCache) Decode(b []byte, ns int) (*Day, error) {
	if c == nil {
		return DecodePart(b, ns)
	}
	k := partKey{len(b), maphash.Bytes(c.seed, b)}
	c.mu.Lock()
	p, ok := c.lru.Get(k, func(p cachedPart) bool { return p.maxID < ns })
	c.mu.Unlock()
	if ok {
		return p.d, nil
	}
	d, err := DecodePart(b, ns)
	if err != nil {
		return nil, err
	}
	size := d.Estimate()
	if size > c.max {
		return d, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Has(k) {
		return d, nil // decoded meanwhile by another query
	}
	c.lru.Put(k, cachedPart{d: d, maxID: d.maxStrID()}, size)
	return d, nil
}

// Hits returns how many decodes c answered from its parts, for tests.
func (c *PartCache) Hits() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Hits()
}

// WholeCache keeps open days made whole (Day.Whole) for queries: an
// open day with sealed parts is made whole again by every query that reads
// it, which copies and sorts all of its rows (tens of milliseconds for a
// busy website's today). An entry is keyed by the website and the day, and
// is valid while the day's live segments are the same object with the same
// row counts: every write to an open day's segments adds a hit to them
// (the engine's segHitLocked, segEventLocked: a visit's columns change only with a
// hit of that visit in the same segments), and whatever replaces them
// (a seal's DropSealed, copy on write, retention, a restart) makes another
// object. So an entry answers until the day is written to again. At most
// max bytes (the whole days' estimates) are kept, the least recently used
// evicted. Entries are read-only.
type WholeCache struct {
	mu  sync.Mutex
	lru *LRU[wholeKey, cachedWhole]
}

type wholeKey struct {
	site uint32
	date buckets.Date
}

type cachedWhole struct {
	live   *Day // the day's segments when w was made
	nv, nh int  // and their rows then
	w      *Day
}

// NewWholeCache returns an empty cache of at most max bytes.
func NewWholeCache(max int) *WholeCache {
	return &WholeCache{lru: NewLRU[wholeKey, cachedWhole](0, max)}
}

// Get returns the whole day of live, the segments of website site's open
// day date, if cached and still valid. Call it under the shard lock.
func (c *WholeCache) Get(site uint32, date buckets.Date, live *Day) *Day {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _ := c.lru.Get(wholeKey{site, date}, func(e cachedWhole) bool {
		return e.live == live && e.nv == live.Visits() && e.nh == live.Hits()
	})
	return e.w
}

// Put keeps w, made whole from live when live had nv visits, nh hits and
// rowBytes of rows. The entry counts those rows too (w's and live's): it
// keeps live.
func (c *WholeCache) Put(site uint32, date buckets.Date, live *Day, nv, nh, rowBytes int, w *Day) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Put(wholeKey{site, date}, cachedWhole{live: live, nv: nv, nh: nh, w: w}, w.Size+rowBytes)
}

// Drop forgets website site's days (deleted).
func (c *WholeCache) Drop(site uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.DeleteFunc(func(k wholeKey, _ cachedWhole) bool { return k.site == site })
}

// Hits returns how many Gets found a valid day, for tests.
func (c *WholeCache) Hits() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Hits()
}

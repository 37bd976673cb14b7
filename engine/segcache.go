package engine

import (
	"maps"
	"slices"
	"sync"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
)

// wholeCache keeps open days made whole (segments.Day.Whole) for queries: an
// open day with sealed parts is made whole again by every query that reads
// it, which copies and sorts all of its rows (tens of milliseconds for a
// busy website's today). An entry is keyed by the website and the day, and
// is valid while the day's live segments are the same object with the same
// row counts: every write to an open day's segments adds a hit to them
// (segPageviewLocked, segEventLocked: a visit's columns change only with a
// hit of that visit in the same segments), and whatever replaces them
// (a seal's dropSealed, copy on write, retention, a restart) makes another
// object. So an entry answers until the day is written to again. At most
// max bytes (the whole days' estimates) are kept, the least recently used
// evicted. Entries are read-only.
type wholeCache struct {
	mu   sync.Mutex
	max  int
	size int
	tick uint64
	days map[wholeKey]*cachedWhole
	hits uint64 // for tests
}

type wholeKey struct {
	site uint32
	date buckets.Date
}

type cachedWhole struct {
	live   *segments.Day // the day's segments when w was made
	nv, nh int           // and their rows then
	w      *segments.Day
	size   int // w's and live's rows
	used   uint64
}

func newWholeCache(max int) *wholeCache {
	return &wholeCache{max: max, days: make(map[wholeKey]*cachedWhole)}
}

// get returns the whole day of live, the segments of website site's open
// day date, if cached and still valid. Call it under the shard lock.
func (c *wholeCache) get(site uint32, date buckets.Date, live *segments.Day) *segments.Day {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.days[wholeKey{site, date}]
	if !ok || e.live != live || e.nv != live.Visits() || e.nh != live.Hits() {
		return nil
	}
	c.tick++
	e.used = c.tick
	c.hits++
	return e.w
}

// put keeps w, made whole from live when live had nv visits, nh hits and
// rowBytes of rows. The entry counts those rows too: it keeps live.
func (c *wholeCache) put(site uint32, date buckets.Date, live *segments.Day, nv, nh, rowBytes int, w *segments.Day) {
	size := w.Size + rowBytes
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := wholeKey{site, date}
	if old, ok := c.days[k]; ok {
		c.size -= old.size
		delete(c.days, k)
	}
	for c.size+size > c.max {
		var oldest wholeKey
		var used uint64 = 1<<64 - 1
		for k, e := range c.days {
			if e.used < used {
				oldest, used = k, e.used
			}
		}
		c.size -= c.days[oldest].size
		delete(c.days, oldest)
	}
	c.tick++
	c.days[k] = &cachedWhole{live: live, nv: nv, nh: nh, w: w, size: size, used: c.tick}
	c.size += size
}

// drop forgets website site's days (deleted).
func (c *wholeCache) drop(site uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.days {
		if k.site == site {
			c.size -= e.size
			delete(c.days, k)
		}
	}
}

// resultCache keeps the answers of recent queries (Owner.Query) that the
// segments answered, so that a dashboard shown again, or a query repeated,
// while its website got no new data costs a lookup. An answer is found by
// the website, the resolved query and the website's data version: the last
// log record applied, the generations of eviction and retention
// (evictGen) and of frozen days' changes (rollGen), the retention cut and
// the number of dates. Every change of a website's data changes one of
// them (a hit is a log record; retention drops bump evictGen) and none
// goes back. The entry also holds the website's configuration and goals
// objects it was answered with (any change of them stores new ones) and is
// used only with the same: held by the entry, they cannot be freed and
// their addresses reused. So an answer is never served after its data
// changed; a query that raced a change is stored under the version it
// read first, which no later query has.
//
// The cache is bounded by Options.QueryCache answers and by maxBytes of
// their estimated size (an answer over maxBytes/8 is not kept), the least
// recently used evicted; answers are copied in and out. A nil cache keeps
// nothing.
type resultCache struct {
	mu       sync.Mutex
	max      int
	maxBytes int
	size     int
	tick     uint64
	entries  map[string]*cachedResult
	hits     uint64 // for tests
}

type cachedResult struct {
	site  uint32
	cfg   *siteConfig
	goals *goalSet
	res   QueryResult
	size  int
	used  uint64
}

const defaultResults = 256

// newResultCache returns a cache of n answers (defaultResults for 0, none,
// nil, for a negative n) and maxBytes.
func newResultCache(n, maxBytes int) *resultCache {
	switch {
	case n < 0:
		return nil
	case n == 0:
		n = defaultResults
	}
	return &resultCache{max: n, maxBytes: maxBytes, entries: make(map[string]*cachedResult)}
}

// get returns a copy of the answer under key, if it was answered with cfg
// and goals.
func (c *resultCache) get(key string, cfg *siteConfig, goals *goalSet) (QueryResult, bool) {
	if c == nil {
		return QueryResult{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.cfg != cfg || e.goals != goals {
		return QueryResult{}, false
	}
	c.tick++
	e.used = c.tick
	c.hits++
	return e.res.clone(), true
}

// put keeps a copy of res, the answer of website site with cfg and goals,
// under key, if it is small enough.
func (c *resultCache) put(key string, site uint32, cfg *siteConfig, goals *goalSet, res QueryResult) {
	if c == nil {
		return
	}
	size := len(key) + res.estimate()
	if size > c.maxBytes/8 {
		return
	}
	res = res.clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		c.size -= old.size
		delete(c.entries, key)
	}
	for len(c.entries) > 0 && (len(c.entries) >= c.max || c.size+size > c.maxBytes) {
		var oldest string
		var used uint64 = 1<<64 - 1
		for k, e := range c.entries {
			if e.used < used {
				oldest, used = k, e.used
			}
		}
		c.size -= c.entries[oldest].size
		delete(c.entries, oldest)
	}
	c.tick++
	c.entries[key] = &cachedResult{site: site, cfg: cfg, goals: goals, res: res, size: size, used: c.tick}
	c.size += size
}

// drop forgets website site's answers (deleted).
func (c *resultCache) drop(site uint32) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if e.site == site {
			c.size -= e.size
			delete(c.entries, k)
		}
	}
}

// estimate returns about how many bytes r holds: its rows' values and the
// meta's time labels.
func (r QueryResult) estimate() int {
	n := 64
	for _, row := range r.Results {
		n += 48 + 16*(len(row.Dimensions)+len(row.Metrics))
		for _, d := range row.Dimensions {
			if s, ok := d.(string); ok {
				n += len(s)
			}
		}
		for _, m := range row.Metrics {
			if rv, ok := m.(*Revenue); ok && rv != nil {
				n += 64 + len(rv.Currency) + len(rv.Short) + len(rv.Long)
			}
		}
	}
	for _, l := range r.Meta.TimeLabels {
		n += 16 + len(l)
	}
	return n
}

// clone copies r's rows and meta deeply enough that neither copy's
// changes reach the other (rows, their value slices, *Revenue values, the
// meta's slices and maps), without the echoed query.
func (r QueryResult) clone() QueryResult {
	c := r
	c.Results = make([]QueryRow, len(r.Results))
	for i, row := range r.Results {
		ms := slices.Clone(row.Metrics)
		for j, m := range ms {
			if rv, ok := m.(*Revenue); ok && rv != nil {
				x := *rv
				ms[j] = &x
			}
		}
		c.Results[i] = QueryRow{Dimensions: slices.Clone(row.Dimensions), Metrics: ms}
	}
	if r.Meta.ImportsIncluded != nil {
		b := *r.Meta.ImportsIncluded
		c.Meta.ImportsIncluded = &b
	}
	if r.Meta.TotalRows != nil {
		n := *r.Meta.TotalRows
		c.Meta.TotalRows = &n
	}
	c.Meta.TimeLabels = slices.Clone(r.Meta.TimeLabels)
	c.Meta.MetricWarnings = maps.Clone(r.Meta.MetricWarnings)
	c.Query = QueryEcho{} // the caller's Echo is set on the way out
	return c
}

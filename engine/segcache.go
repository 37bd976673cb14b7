package engine

import (
	"maps"
	"slices"
	"sync"

	"github.com/webstats/webstats/engine/internal/segments"
)

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
	maxBytes int
	lru      *segments.LRU[string, cachedResult]
}

type cachedResult struct {
	site  uint32
	cfg   *siteConfig
	goals *segments.GoalSet
	res   QueryResult
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
	return &resultCache{maxBytes: maxBytes, lru: segments.NewLRU[string, cachedResult](n, maxBytes)}
}

// get returns a copy of the answer under key, if it was answered with cfg
// and goals.
func (c *resultCache) get(key string, cfg *siteConfig, goals *segments.GoalSet) (QueryResult, bool) {
	if c == nil {
		return QueryResult{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(key, func(e cachedResult) bool { return e.cfg == cfg && e.goals == goals })
	if !ok {
		return QueryResult{}, false
	}
	return e.res.clone(), true
}

// put keeps a copy of res, the answer of website site with cfg and goals,
// under key, if it is small enough.
func (c *resultCache) put(key string, site uint32, cfg *siteConfig, goals *segments.GoalSet, res QueryResult) {
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
	c.lru.Put(key, cachedResult{site: site, cfg: cfg, goals: goals, res: res}, size)
}

// drop forgets website site's answers (deleted).
func (c *resultCache) drop(site uint32) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.DeleteFunc(func(_ string, e cachedResult) bool { return e.site == site })
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

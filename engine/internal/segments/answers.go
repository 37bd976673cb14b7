package segments

import (
	"maps"
	"slices"
	"sync"

	"github.com/webstats/webstats/engine/query"
)

// Answers keeps the answers of recent queries that the segments answered,
// so that a dashboard shown again, or a query repeated, while its website
// got no new data costs a lookup. The engine finds an answer by a key
// naming the website, the resolved query and the website's data version:
// the last log record applied, the generations of eviction and retention
// and of frozen days' changes, the retention cut and the number of dates.
// Every change of a website's data changes one of them and none goes
// back. An answer also holds the website's configuration and goals objects
// it was answered with (Tag; any change of them stores new ones) and is
// used only with the same: held by the entry, they cannot be freed and
// their addresses reused. So an answer is never served after its data
// changed; a query that raced a change is stored under the version it
// read first, which no later query has.
//
// Answers are bounded by a number and by maxBytes of their estimated size
// (an answer over maxBytes/8 is not kept), the least recently used
// evicted; answers are copied in and out. A nil *Answers keeps nothing.
// It is safe for concurrent use.
type Answers struct {
	mu       sync.Mutex
	maxBytes int
	lru      *LRU[string, answer]
}

// Tag is what an answer may be used with only: the objects (pointers,
// compared by identity) it was answered with.
type Tag struct{ Config, Goals any }

type answer struct {
	site uint32
	tag  Tag
	res  query.Result
}

const defaultAnswers = 256

// NewAnswers returns a cache of n answers (256 for 0, none, nil, for a
// negative n) and maxBytes.
func NewAnswers(n, maxBytes int) *Answers {
	switch {
	case n < 0:
		return nil
	case n == 0:
		n = defaultAnswers
	}
	return &Answers{maxBytes: maxBytes, lru: NewLRU[string, answer](n, maxBytes)}
}

// Get returns a copy of the answer under key, if it was answered with tag.
func (c *Answers) Get(key string, tag Tag) (query.Result, bool) {
	if c == nil {
		return query.Result{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(key, func(e answer) bool { return e.tag == tag })
	if !ok {
		return query.Result{}, false
	}
	return clone(e.res), true
}

// Put keeps a copy of res, the answer of website site with tag, under
// key, if it is small enough.
func (c *Answers) Put(key string, site uint32, tag Tag, res query.Result) {
	if c == nil {
		return
	}
	size := len(key) + estimate(res)
	if size > c.maxBytes/8 {
		return
	}
	res = clone(res)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Put(key, answer{site: site, tag: tag, res: res}, size)
}

// Drop forgets website site's answers (deleted).
func (c *Answers) Drop(site uint32) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.DeleteFunc(func(_ string, e answer) bool { return e.site == site })
}

// Hits returns how many Gets found an answer (for tests).
func (c *Answers) Hits() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Hits()
}

// estimate returns about how many bytes r holds: its rows' values and the
// meta's time labels.
func estimate(r query.Result) int {
	n := 64
	for _, row := range r.Results {
		n += 48 + 16*(len(row.Dimensions)+len(row.Metrics))
		for _, d := range row.Dimensions {
			if s, ok := d.(string); ok {
				n += len(s)
			}
		}
		for _, m := range row.Metrics {
			if rv, ok := m.(*query.Revenue); ok && rv != nil {
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
func clone(r query.Result) query.Result {
	c := r
	c.Results = make([]query.Row, len(r.Results))
	for i, row := range r.Results {
		ms := slices.Clone(row.Metrics)
		for j, m := range ms {
			if rv, ok := m.(*query.Revenue); ok && rv != nil {
				x := *rv
				ms[j] = &x
			}
		}
		c.Results[i] = query.Row{Dimensions: slices.Clone(row.Dimensions), Metrics: ms}
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
	c.Query = query.QueryEcho{} // the caller sets its own echo
	return c
}

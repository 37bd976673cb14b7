package segments

import (
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
	return e.res.Clone(), true
}

// Put keeps a copy of res, the answer of website site with tag, under
// key, if it is small enough.
func (c *Answers) Put(key string, site uint32, tag Tag, res query.Result) {
	if c == nil {
		return
	}
	size := len(key) + res.Estimate()
	if size > c.maxBytes/8 {
		return
	}
	res = res.Clone()
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

package segments

// LRU is a map bounded by its entries' total size (and, when maxN is
// positive, by their number), evicting the least recently used entry to
// make room. It is not synchronised: its owner locks it. The queries'
// caches (PartCache, WholeCache, the engine's answers) are LRUs.
type LRU[K comparable, V any] struct {
	maxN, maxSize int
	size          int
	tick          uint64 // the clock of uses: each Get that finds and each Put ticks it
	m             map[K]*lruEntry[V]
	hits          uint64 // Gets that found an entry, for tests
}

type lruEntry[V any] struct {
	v    V
	size int
	used uint64
}

// NewLRU returns an empty LRU of at most maxSize in total and, when maxN
// is positive, at most maxN entries.
func NewLRU[K comparable, V any](maxN, maxSize int) *LRU[K, V] {
	return &LRU[K, V]{maxN: maxN, maxSize: maxSize, m: make(map[K]*lruEntry[V])}
}

// Get returns the value under k, if there is one and valid (when not nil)
// accepts it, and marks it used.
func (c *LRU[K, V]) Get(k K, valid func(V) bool) (V, bool) {
	e, ok := c.m[k]
	if !ok || valid != nil && !valid(e.v) {
		var zero V
		return zero, false
	}
	c.tick++
	e.used = c.tick
	c.hits++
	return e.v, true
}

// Has reports whether there is a value under k, without using it.
func (c *LRU[K, V]) Has(k K) bool {
	_, ok := c.m[k]
	return ok
}

// Put keeps v of size under k, replacing what was there, and evicts the
// least recently used entries until the bounds hold. A value larger than
// the bound on the size is not kept (and replaces nothing).
func (c *LRU[K, V]) Put(k K, v V, size int) {
	if size > c.maxSize {
		return
	}
	c.Delete(k)
	for len(c.m) > 0 && (c.maxN > 0 && len(c.m) >= c.maxN || c.size+size > c.maxSize) {
		var oldest K
		var used uint64 = 1<<64 - 1
		for k, e := range c.m {
			if e.used < used {
				oldest, used = k, e.used
			}
		}
		c.Delete(oldest)
	}
	c.tick++
	c.m[k] = &lruEntry[V]{v: v, size: size, used: c.tick}
	c.size += size
}

// Delete forgets the value under k.
func (c *LRU[K, V]) Delete(k K) {
	if e, ok := c.m[k]; ok {
		c.size -= e.size
		delete(c.m, k)
	}
}

// DeleteFunc forgets the values for which del returns true.
func (c *LRU[K, V]) DeleteFunc(del func(K, V) bool) {
	for k, e := range c.m {
		if del(k, e.v) {
			c.size -= e.size
			delete(c.m, k)
		}
	}
}

// Len returns the number of entries, Size their total size.
func (c *LRU[K, V]) Len() int { return len(c.m) }

// Size returns the entries' total size.
func (c *LRU[K, V]) Size() int { return c.size }

// Hits returns how many Gets found a value.
func (c *LRU[K, V]) Hits() uint64 { return c.hits }

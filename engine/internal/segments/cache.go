package segments

import (
	"hash/maphash"
	"sync"
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
	mu    sync.Mutex
	seed  maphash.Seed
	max   int
	size  int
	tick  uint64
	parts map[partKey]*cachedPart
	hits  uint64 // decodes answered from the cache, for tests
}

type partKey struct {
	n    int
	hash uint64
}

type cachedPart struct {
	d     *Day
	size  int
	used  uint64
	maxID int // the largest string id d refers to; -1 for none
}

// NewPartCache returns an empty cache of at most max bytes of parts.
func NewPartCache(max int) *PartCache {
	return &PartCache{seed: maphash.MakeSeed(), max: max, parts: make(map[partKey]*cachedPart)}
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
	if p, ok := c.parts[k]; ok && p.maxID < ns {
		c.tick++
		p.used = c.tick
		c.hits++
		c.mu.Unlock()
		return p.d, nil
	}
	c.mu.Unlock()
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
	if _, ok := c.parts[k]; ok {
		return d, nil // decoded meanwhile by another query
	}
	for c.size+size > c.max {
		var oldest partKey
		var used uint64 = 1<<64 - 1
		for k, p := range c.parts {
			if p.used < used {
				oldest, used = k, p.used
			}
		}
		c.size -= c.parts[oldest].size
		delete(c.parts, oldest)
	}
	c.tick++
	c.parts[k] = &cachedPart{d: d, size: size, used: c.tick, maxID: d.maxStrID()}
	c.size += size
	return d, nil
}

// Hits returns how many decodes c answered from its parts, for tests.
func (c *PartCache) Hits() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits
}

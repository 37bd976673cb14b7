package imported

// Cache holds the imports of the websites loaded lately, bounded by an
// estimate of their bytes: the website just set is kept whatever its size
// (MaxRows bounds it), the least recently used others are dropped (and
// read again from the store by their next query). It is not synchronised:
// its owner locks it. The zero Cache is empty and ready to use.
type Cache struct {
	sites map[uint32][]*Data // replaced, never modified
	// The bytes of each loaded website's imports and their sum, and when
	// each was last used (a tick of the cache).
	bytes map[uint32]int64
	used  map[uint32]uint64
	total int64
	tick  uint64
	// last is the last import id given of each loaded website (the
	// store's record of it, or the largest id loaded).
	last map[uint32]uint32
}

// Get returns website's imports, if they are loaded, and marks them used.
// The list is shared: never modify it.
func (c *Cache) Get(website uint32) ([]*Data, bool) {
	list, ok := c.sites[website]
	if ok {
		c.touch(website)
	}
	return list, ok
}

// Last returns the last import id given of website, if it is loaded.
func (c *Cache) Last(website uint32) uint32 { return c.last[website] }

// Set caches list as website's imports, with last the last id given (or
// 0: the largest of the one known and list's ids), and drops the least
// recently used other websites' until the cache holds at most limit
// bytes. The cache keeps list: never modify it after.
func (c *Cache) Set(website uint32, list []*Data, last uint32, limit int64) {
	if c.sites == nil {
		c.sites, c.bytes, c.used = map[uint32][]*Data{}, map[uint32]int64{}, map[uint32]uint64{}
		c.last = map[uint32]uint32{}
	}
	last = max(last, c.last[website])
	c.Drop(website)
	n := int64(0)
	for _, d := range list {
		last = max(last, d.ID)
		n += d.bytes
	}
	c.last[website] = last
	c.sites[website], c.bytes[website] = list, n
	c.total += n
	c.touch(website)
	for c.total > limit && len(c.sites) > 1 {
		oldest, at := website, c.tick
		for id, t := range c.used {
			if id != website && t < at {
				oldest, at = id, t
			}
		}
		c.Drop(oldest)
	}
}

func (c *Cache) touch(website uint32) {
	c.tick++
	c.used[website] = c.tick
}

// Drop forgets website's loaded imports.
func (c *Cache) Drop(website uint32) {
	c.total -= c.bytes[website]
	delete(c.sites, website)
	delete(c.bytes, website)
	delete(c.used, website)
	delete(c.last, website)
}

// Resident returns the websites whose imports are loaded and the rows
// they hold, counted from the loaded lists themselves.
func (c *Cache) Resident() (sites, rows int) {
	for _, list := range c.sites {
		sites++
		for _, d := range list {
			for _, t := range d.tables {
				rows += len(t)
			}
		}
	}
	return sites, rows
}

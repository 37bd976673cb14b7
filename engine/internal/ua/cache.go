package ua

import (
	"hash/maphash"
	"strings"
	"sync"
)

// DefaultCacheSize is the number of user agents a Parser remembers when New
// is given a size <= 0.
const DefaultCacheSize = 4096

// MaxCachedLen is the length in bytes above which a user agent is parsed
// without being cached. Real browsers send 100–300 bytes; longer strings are
// mostly junk that would only evict useful entries. They are parsed in full
// (not cut), so the result never depends on the cache.
const MaxCachedLen = 512

// maxShards is the number of shards of a large cache.
const maxShards = 16

// Parser parses user agents through a bounded LRU cache. Safe for concurrent
// use. The zero value is not usable: call New.
type Parser struct {
	seed   maphash.Seed
	shards []shard
}

// New returns a Parser that remembers the results of at most cacheSize user
// agents (least recently used first out). cacheSize <= 0 means
// DefaultCacheSize.
func New(cacheSize int) *Parser {
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	n := maxShards
	if cacheSize < n*4 {
		n = 1
	}
	p := &Parser{seed: maphash.MakeSeed(), shards: make([]shard, n)}
	for i := range p.shards {
		c := cacheSize / n
		if i < cacheSize%n {
			c++
		}
		p.shards[i].init(c)
	}
	return p
}

// Parse returns what the user agent s says about its client. The result is a
// value; it shares no memory with s.
func (p *Parser) Parse(s string) Agent {
	if len(s) > MaxCachedLen {
		return parse(s)
	}
	sh := &p.shards[0]
	if len(p.shards) > 1 {
		sh = &p.shards[maphash.String(p.seed, s)%uint64(len(p.shards))]
	}
	if a, ok := sh.get(s); ok {
		return a
	}
	a := parse(s)
	// Clone: s may be a slice of a large request buffer the cache must not
	// keep alive.
	sh.add(strings.Clone(s), a)
	return a
}

// len returns the number of cached entries (for tests).
func (p *Parser) len() int {
	n := 0
	for i := range p.shards {
		sh := &p.shards[i]
		sh.mu.Lock()
		n += len(sh.index)
		sh.mu.Unlock()
	}
	return n
}

// shard is one LRU list. Entries live in a slice allocated once; the list
// links are slice indexes, so a full cache allocates nothing but the map key
// of each new entry.
type shard struct {
	mu      sync.Mutex       // guards everything below
	index   map[string]int32 // key → position in entries
	entries []entry          // len grows to cap, then slots are reused
	head    int32            // most recently used, -1 when empty
	tail    int32            // least recently used, -1 when empty
}

type entry struct {
	key        string
	val        Agent
	prev, next int32 // neighbours towards head and tail, -1 at the ends
}

func (s *shard) init(capacity int) {
	s.index = make(map[string]int32, capacity)
	s.entries = make([]entry, 0, capacity)
	s.head, s.tail = -1, -1
}

func (s *shard) get(key string) (Agent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.index[key]
	if !ok {
		return Agent{}, false
	}
	s.moveToFrontLocked(i)
	return s.entries[i].val, true
}

func (s *shard) add(key string, val Agent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[key]; ok { // another goroutine added it meanwhile
		s.entries[i].val = val
		s.moveToFrontLocked(i)
		return
	}
	var i int32
	if len(s.entries) < cap(s.entries) {
		i = int32(len(s.entries))
		s.entries = append(s.entries, entry{prev: -1, next: -1})
	} else {
		// Reuse the least recently used slot.
		i = s.tail
		s.unlinkLocked(i)
		delete(s.index, s.entries[i].key)
	}
	s.entries[i].key, s.entries[i].val = key, val
	s.index[key] = i
	s.pushFrontLocked(i)
}

func (s *shard) moveToFrontLocked(i int32) {
	if s.head == i {
		return
	}
	s.unlinkLocked(i)
	s.pushFrontLocked(i)
}

func (s *shard) unlinkLocked(i int32) {
	e := &s.entries[i]
	if e.prev >= 0 {
		s.entries[e.prev].next = e.next
	} else {
		s.head = e.next
	}
	if e.next >= 0 {
		s.entries[e.next].prev = e.prev
	} else {
		s.tail = e.prev
	}
	e.prev, e.next = -1, -1
}

func (s *shard) pushFrontLocked(i int32) {
	e := &s.entries[i]
	e.prev, e.next = -1, s.head
	if s.head >= 0 {
		s.entries[s.head].prev = i
	}
	s.head = i
	if s.tail < 0 {
		s.tail = i
	}
}

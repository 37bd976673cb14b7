package visitors

import (
	"fmt"

	"github.com/webstats/webstats/buckets"
)

// NewPaged returns a period of n visitors from id first, saved in the
// store, whose first indexed the store indexes by hash, none of them
// resident: its chunks are read when their visitors come (LoadChunk). The
// caller loads, before it looks a visitor up, the chunks of the visitors
// not indexed (ChunkOfID(first, first+indexed) on), and the last one
// before it numbers a visitor (Visitor appends to it).
func NewPaged(first uint32, n, indexed int) Period {
	nc := (n + chunkVisitors - 1) / chunkVisitors
	return Period{first: first, n: n, chunks: make([]*chunk, nc), paged: nc, indexed: min(indexed, n)}
}

// Paged reports whether some chunk of p is only in the store: a hash p
// does not Find may then be a visitor it numbered.
func (p *Period) Paged() bool { return p.paged > 0 }

// Evictions counts the chunks evicted from p so far: a caller that looked
// a hash up knows it is still resident (or still new) while the count has
// not moved.
func (p *Period) Evictions() uint32 { return p.evicted }

// Indexed is how many visitors of p, from the first, the store indexes by
// hash: a chunk may be evicted only when all of its visitors are.
func (p *Period) Indexed() int { return p.indexed }

// SetIndexed records that the store indexes the first n visitors of p.
func (p *Period) SetIndexed(n int) { p.indexed = max(p.indexed, min(n, p.n)) }

// First is the id of the first visitor of p.
func (p *Period) First() uint32 { return p.first }

// Entry is a visitor's hash and id, for the store's index of a period.
type Entry struct {
	Hash uint64
	ID   uint32
}

// Unindexed returns the hashes and ids of at most limit visitors from the
// first one the store does not index yet, in id order. They are resident:
// a chunk is evicted only once indexed, and read back paged with them.
func (p *Period) Unindexed(limit int) []Entry {
	hi := min(p.n, p.indexed+limit)
	out := make([]Entry, 0, max(hi-p.indexed, 0))
	for i := p.indexed; i < hi; i++ {
		c := p.chunks[i/chunkVisitors]
		out = append(out, Entry{Hash: c.hashes[i%chunkVisitors], ID: p.first + uint32(i)})
	}
	return out
}

// Resident reports whether chunk c is in memory.
func (p *Period) Resident(c uint32) bool { return int(c) < len(p.chunks) && p.chunks[c] != nil }

// Evictable calls fn with each chunk of p that may leave memory, and the
// clock of its last use: resident, saved since its last change, all of
// its visitors indexed, and not the last chunk (new visitors are numbered
// into it).
func (p *Period) Evictable(fn func(c uint32, used int64)) {
	full := min(p.indexed, p.n-1) / chunkVisitors // chunks wholly indexed, the last one excepted
	for c := range full {
		if ch := p.chunks[c]; ch != nil && !p.isDirty(c) {
			fn(uint32(c), ch.used)
		}
	}
}

// EvictChunk drops chunk c from memory if it may still go (Evictable),
// and reports whether it did.
func (p *Period) EvictChunk(c uint32) bool {
	i := int(c)
	if i >= len(p.chunks) || p.chunks[i] == nil || p.isDirty(i) || (i+1)*chunkVisitors > p.indexed || i == len(p.chunks)-1 {
		return false
	}
	ch := p.chunks[i]
	for _, h := range ch.hashes {
		delete(p.index, h)
	}
	p.chunks[i] = nil
	p.paged++
	p.evicted++
	p.resident -= len(ch.hashes)
	if len(p.index) < p.peak/2 {
		// A Go map keeps its peak size: made again at half of it.
		m := make(map[uint64]uint32, len(p.index))
		for h, id := range p.index {
			m[h] = id
		}
		p.index, p.peak = m, len(m)
	}
	return true
}

// LoadChunk reads saved chunk c of p back into memory, forgetting the
// rows of visits in days before cut (ForgetRowsBefore), as used at clock
// tick. A chunk already resident is left as it is.
func (p *Period) LoadChunk(c uint32, b []byte, cut buckets.Date, tick int64) error {
	i := int(c)
	if i >= len(p.chunks) {
		return fmt.Errorf("visitor chunk %d: beyond the period's %d", c, len(p.chunks))
	}
	if p.chunks[i] != nil {
		return nil
	}
	hdr, err := ChunkHeader(b)
	if err != nil {
		return fmt.Errorf("visitor chunk %d: %w", c, err)
	}
	want := min(chunkVisitors, p.n-i*chunkVisitors)
	if hdr.First != p.first || hdr.N != want {
		return fmt.Errorf("visitor chunk %d: first %d, %d visitors; want %d, %d", c, hdr.First, hdr.N, p.first, want)
	}
	ch, err := decodeChunk(c, b)
	if err != nil {
		return err
	}
	for _, h := range ch.hashes {
		if _, dup := p.index[h]; dup {
			return fmt.Errorf("visitor chunk %d: visitor repeated", c)
		}
	}
	forgetRows(ch.visits, cut)
	for j, h := range ch.hashes {
		p.add(h, p.first+uint32(i*chunkVisitors+j))
	}
	ch.used = tick
	p.chunks[i] = ch
	p.paged--
	p.resident += len(ch.hashes)
	return nil
}

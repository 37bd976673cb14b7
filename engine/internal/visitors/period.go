package visitors

import (
	"hash/fnv"
	"math/bits"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
)

// Gap is how long a visitor may stay without a pageview (without a hit,
// in the segments) before the next one starts a new visit, in ms.
const Gap = 30 * 60 * 1000

// Period is the visitor state of one salt period: the dense numbering of
// visitor hashes and each visitor's current visit. Its chunks of
// chunkVisitors visitors are saved apart, so that a snapshot writes only
// the chunks that changed since the last one (TakeDirty). The zero Period
// is empty and ready to use.
type Period struct {
	first  uint32            // id of the first visitor numbered here
	index  map[uint64]uint32 // visitor hash → dense id
	hashes []uint64          // dense id - first → visitor hash
	visits []Visit           // dense id - first → current visit

	dirty  []uint64 // bitset of chunks changed since the last TakeDirty
	nDirty int      // chunks set in dirty
}

// Visit is a visitor's current visits: the phpAnalytics visit of the day
// buckets (SPEC §2.2: pageviews only) and the segments' visit (§10.1:
// Plausible's rule, every pageview and custom event), which part ways
// when a custom event comes more than Gap after the last pageview.
type Visit struct {
	Last int64  // Unix ms of the last pageview; 0 with no pageview yet
	Host uint64 // HostKey of the (www-less) host that started it; 0: direct or internal
	// SegLast and SegHost are Last and Host of the segments' visit: the
	// Unix ms of its last pageview or custom event (0: none yet) and the
	// external referrer host of the hit that started it.
	SegLast int64
	SegHost uint64
	// Day and Row locate the segments' visit's row: the local day it
	// started and its row there; Row is segments.NoVisit when unknown
	// (state migrated from before the segments store, or a day retention
	// dropped).
	Day buckets.Date
	Row uint32
}

// Pageview applies the day buckets' visit rule (SPEC §2.2) to a pageview
// at ms from the external referrer host (HostKey; 0: direct or internal):
// it starts a visit after Gap without a pageview (either way in time: an
// import may come before), or when it comes from another external host
// than the one that started the visit. It records the pageview in v and
// reports whether it started a visit.
func (v *Visit) Pageview(ms int64, host uint64) (started bool) {
	started = v.Last == 0 || ms-v.Last > Gap || ms < v.Last-Gap || (host != 0 && host != v.Host)
	if started {
		v.Host = host
	}
	v.Last = max(v.Last, ms)
	return started
}

// chunkVisitors is how many visitors a saved chunk of a period holds.
const chunkVisitors = 256

// visitorBytes estimates the memory of one visitor of a period: its hash
// and visit in the slices, and its entry in the index map.
const visitorBytes = 8 + 40 + 40

// Bytes estimates the memory p takes.
func (p *Period) Bytes() int { return len(p.hashes)*visitorBytes + len(p.dirty)*8 + 96 }

// Len is how many visitors p numbered.
func (p *Period) Len() int { return len(p.hashes) }

// HostKey identifies a referring host in a visit without interning it: a
// 64-bit FNV-1a hash, never 0 (0 means direct).
func HostKey(host string) uint64 {
	if host == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(host))
	return max(h.Sum64(), 1)
}

// Visitor returns the dense id of hash, numbering it if new; added reports
// whether it was new. ok is false when the period has no id left (2^32).
func (p *Period) Visitor(hash uint64) (id uint32, added, ok bool) {
	if id, ok := p.index[hash]; ok {
		return id, false, true
	}
	if uint64(p.first)+uint64(len(p.hashes)) >= 1<<32-1 {
		return 0, false, false
	}
	id = p.first + uint32(len(p.hashes))
	p.number(hash, Visit{Row: segments.NoVisit})
	return id, true, true
}

// number gives hash the next id, with visit v.
func (p *Period) number(hash uint64, v Visit) {
	if p.index == nil {
		p.index = make(map[uint64]uint32)
	}
	p.index[hash] = p.first + uint32(len(p.hashes))
	p.hashes = append(p.hashes, hash)
	p.visits = append(p.visits, v)
}

// Find returns the id and current visit of hash, if p numbered it. The
// visit is p's: it may be changed (then MarkDirty its id).
func (p *Period) Find(hash uint64) (id uint32, v *Visit, ok bool) {
	id, ok = p.index[hash]
	if !ok {
		return 0, nil, false
	}
	return id, &p.visits[id-p.first], true
}

// Visit returns the current visit of id, a visitor p numbered.
func (p *Period) Visit(id uint32) *Visit { return &p.visits[id-p.first] }

// ForgetRowsBefore forgets the segments row of every visit whose row is in
// a day before cut, which retention dropped: the visit goes on (its last
// hit and host stay), and its next hit starts a row. Left set, the row
// number would name a row of the day made again by a later import —
// another visitor's visit, or another of this visitor's. The chunks are
// not marked changed: read back, they are forgotten again.
func (p *Period) ForgetRowsBefore(cut buckets.Date) {
	for i := range p.visits {
		if v := &p.visits[i]; v.Row != segments.NoVisit && v.Day < cut {
			v.Row = segments.NoVisit
		}
	}
}

// MarkDirty records that the chunk of visitor id changed.
func (p *Period) MarkDirty(id uint32) { p.markChunk(int(id-p.first) / chunkVisitors) }

// MarkChunkDirty records that chunk c changed (or was not saved after
// all: a snapshot that failed).
func (p *Period) MarkChunkDirty(c uint32) { p.markChunk(int(c)) }

func (p *Period) markChunk(c int) {
	w, b := c/64, uint(c%64)
	for len(p.dirty) <= w {
		p.dirty = append(p.dirty, 0)
	}
	if p.dirty[w]&(1<<b) == 0 {
		p.dirty[w] |= 1 << b
		p.nDirty++
	}
}

// Dirty is how many chunks changed since the last TakeDirty.
func (p *Period) Dirty() int { return p.nDirty }

// markAllDirty marks every chunk changed.
func (p *Period) markAllDirty() {
	for i := 0; i < len(p.hashes); i += chunkVisitors {
		p.markChunk(i / chunkVisitors)
	}
}

// TakeDirty copies the changed chunks, to be encoded without p's lock, and
// marks them clean.
func (p *Period) TakeDirty() []Chunk {
	if p.nDirty == 0 {
		return nil
	}
	out := make([]Chunk, 0, p.nDirty)
	for w, word := range p.dirty {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			c := w*64 + b
			lo := c * chunkVisitors
			hi := min(lo+chunkVisitors, len(p.hashes))
			if lo < hi {
				out = append(out, Chunk{
					Index:  uint32(c),
					first:  p.first,
					hashes: append([]uint64(nil), p.hashes[lo:hi]...),
					visits: append([]Visit(nil), p.visits[lo:hi]...),
				})
			}
		}
		p.dirty[w] = 0
	}
	p.nDirty = 0
	return out
}

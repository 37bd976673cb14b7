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
// visitor hashes and each visitor's current visit, in chunks of
// chunkVisitors visitors saved apart, so that a snapshot writes only the
// chunks that changed since the last one (TakeDirty).
//
// A period may be paged (SPEC §13: the current salt period's visitor state
// is paged like the rest): a chunk that is saved, whose visitors the store
// also indexes by hash (Indexed), may leave memory (EvictChunk) and be read
// back (LoadChunk) when one of its visitors comes again. Its visitors then
// are in neither the chunks nor the index map: the caller looks a hash up
// in the store before it numbers it (Paged). The zero Period is empty and
// ready to use.
type Period struct {
	first  uint32            // id of the first visitor numbered here
	n      int               // visitors numbered
	index  map[uint64]uint32 // visitor hash → dense id, of the resident chunks
	peak   int               // len(index) at its largest since it was made: a Go map never shrinks
	chunks []*chunk          // by chunk number; nil: in the store only
	paged  int               // chunks not resident

	dirty  []uint64 // bitset of chunks changed since the last TakeDirty
	nDirty int      // chunks set in dirty

	indexed  int    // visitors, from the first, whose hash the store indexes
	evicted  uint32 // chunks evicted so far: a generation for callers
	resident int    // visitors resident
}

// chunk is chunkVisitors visitors of a period (fewer in the last one):
// their hashes and current visits, by id - first - number*chunkVisitors.
type chunk struct {
	hashes []uint64
	visits []Visit
	used   int64 // LRU clock of the last hit (Touch)
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

// chunkVisitors is how many visitors a saved chunk of a period holds: 256
// (a variable for tests only, SetChunkVisitors; stored chunks are numbered
// by it).
var chunkVisitors = 256

// SetChunkVisitors sets how many visitors a chunk holds and returns the
// old count: for tests that page a period of a few visitors. A store
// written with one count is read with the same.
func SetChunkVisitors(n int) int {
	old := chunkVisitors
	chunkVisitors = n
	return old
}

// ChunkOfID is the number of the chunk that holds visitor id of a period
// whose first visitor is idFirst (id ≥ idFirst).
func ChunkOfID(idFirst, id uint32) uint32 { return (id - idFirst) / uint32(chunkVisitors) }

// End is the count of visitors of a period whose last chunk is number c,
// with header h.
func (h Header) End(c uint32) int { return int(c)*chunkVisitors + h.N }

// The memory estimates of a period: a resident visitor's hash and visit
// in its chunk, an entry of the index map (counted at the map's peak), and
// a chunk's slot and header.
const (
	visitorBytes = 8 + 40
	entryBytes   = 40
	chunkBytes   = 8 + 72
)

// Bytes estimates the memory p takes. Every chunk but the last holds
// exactly its visitors; the last one's room to grow counts too.
func (p *Period) Bytes() int {
	n := p.resident*visitorBytes + p.peak*entryBytes + (len(p.chunks)-p.paged)*chunkBytes + len(p.chunks)*8 + len(p.dirty)*8 + 96
	if k := len(p.chunks); k > 0 && p.chunks[k-1] != nil {
		c := p.chunks[k-1]
		n += (cap(c.hashes)-len(c.hashes))*8 + (cap(c.visits)-len(c.visits))*40
	}
	return n
}

// Len is how many visitors p numbered.
func (p *Period) Len() int { return p.n }

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
// When p is Paged, the caller must know that hash is not in a chunk that
// is out of memory (it would be numbered twice).
func (p *Period) Visitor(hash uint64) (id uint32, added, ok bool) {
	if id, ok := p.index[hash]; ok {
		return id, false, true
	}
	if uint64(p.first)+uint64(p.n) >= 1<<32-1 {
		return 0, false, false
	}
	id = p.first + uint32(p.n)
	p.number(hash, Visit{Row: segments.NoVisit})
	return id, true, true
}

// number gives hash the next id, with visit v, in the last chunk (which
// is resident: it is never evicted).
func (p *Period) number(hash uint64, v Visit) {
	if p.n%chunkVisitors == 0 {
		p.chunks = append(p.chunks, &chunk{}) // grown by append: most periods hold a few visitors
	}
	c := p.chunks[len(p.chunks)-1]
	p.add(hash, p.first+uint32(p.n))
	c.hashes = append(c.hashes, hash)
	c.visits = append(c.visits, v)
	p.n++
	p.resident++
}

// add enters hash → id into the index map.
func (p *Period) add(hash uint64, id uint32) {
	if p.index == nil {
		p.index = make(map[uint64]uint32)
	}
	p.index[hash] = id
	p.peak = max(p.peak, len(p.index))
}

// Find returns the id and current visit of hash, if p numbered it and it
// is resident. The visit is p's: it may be changed (then MarkDirty its id).
func (p *Period) Find(hash uint64) (id uint32, v *Visit, ok bool) {
	id, ok = p.index[hash]
	if !ok {
		return 0, nil, false
	}
	return id, p.Visit(id), true
}

// Visit returns the current visit of id, a resident visitor p numbered.
func (p *Period) Visit(id uint32) *Visit {
	i := int(id - p.first)
	return &p.chunks[i/chunkVisitors].visits[i%chunkVisitors]
}

// Touch records that visitor id, resident, was used at clock tick (the
// chunks least recently used are evicted first).
func (p *Period) Touch(id uint32, tick int64) {
	p.chunks[int(id-p.first)/chunkVisitors].used = tick
}

// ForgetRowsBefore forgets the segments row of every resident visit whose
// row is in a day before cut, which retention dropped: the visit goes on
// (its last hit and host stay), and its next hit starts a row. Left set,
// the row number would name a row of the day made again by a later
// import — another visitor's visit, or another of this visitor's. The
// chunks are not marked changed: read back (LoadChunk, AddChunk), they
// are forgotten again.
func (p *Period) ForgetRowsBefore(cut buckets.Date) {
	for _, c := range p.chunks {
		if c != nil {
			forgetRows(c.visits, cut)
		}
	}
}

func forgetRows(visits []Visit, cut buckets.Date) {
	for i := range visits {
		if v := &visits[i]; v.Row != segments.NoVisit && v.Day < cut {
			v.Row = segments.NoVisit
		}
	}
}

// MarkDirty records that the chunk of visitor id changed.
func (p *Period) MarkDirty(id uint32) { p.markChunk(int(id-p.first) / chunkVisitors) }

// MarkChunkDirty records that chunk c changed (or was not saved after
// all: a snapshot that failed). It is resident: a dirty chunk is never
// evicted.
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

// isDirty reports whether chunk c changed since the last TakeDirty.
func (p *Period) isDirty(c int) bool {
	w := c / 64
	return w < len(p.dirty) && p.dirty[w]&(1<<uint(c%64)) != 0
}

// Dirty is how many chunks changed since the last TakeDirty.
func (p *Period) Dirty() int { return p.nDirty }

// markAllDirty marks every chunk changed.
func (p *Period) markAllDirty() {
	for c := range p.chunks {
		p.markChunk(c)
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
			if c < len(p.chunks) && p.chunks[c] != nil {
				ch := p.chunks[c]
				out = append(out, Chunk{
					Index:  uint32(c),
					first:  p.first,
					hashes: append([]uint64(nil), ch.hashes...),
					visits: append([]Visit(nil), ch.visits...),
				})
			}
		}
		p.dirty[w] = 0
	}
	p.nDirty = 0
	return out
}

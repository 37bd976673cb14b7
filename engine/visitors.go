package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/bits"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/wire"
)

// period is the visitor state of one salt period of one website: the dense
// numbering of visitor hashes and each visitor's current visit. Every field
// is guarded by the shard lock of the website.
//
// It is persisted in chunks of chunkVisitors visitors, so a snapshot writes
// only the chunks that changed since the previous one (a month-long salt
// period of a large site holds millions of visitors, of whom a snapshot
// interval touches a few hundred). A period leaves memory only when every
// chunk is saved and no logged hit waits for it (pins), and it is read back
// when a hit of the period comes again, so a returning visitor keeps their id
// however long ago the period was last written (SPEC §2.2).
type period struct {
	first  uint32            // id of the first visitor numbered here
	index  map[uint64]uint32 // visitor hash → dense id
	hashes []uint64          // dense id - first → visitor hash
	visits []visit           // dense id - first → current visit

	dirty    []uint64 // bitset of chunks changed since the last snapshot
	nDirty   int      // chunks set in dirty
	pins     int      // logged hits waiting to be applied to this period
	used     int64    // LRU clock of the last use
	idle     int      // snapshots since the period was last used
	size     int      // bytes counted in Engine.counters.state
	isStored bool     // has chunks in the store
	gone     bool     // dropped by retention: its size counts no more
}

// visit is a visitor's current visits: the phpAnalytics visit of the day
// buckets (SPEC §2.2: pageviews only) and the segments' visit (§10.1:
// Plausible's rule, every pageview and custom event), which part ways when
// a custom event comes more than 30 minutes after the last pageview.
type visit struct {
	last int64  // Unix ms of the last pageview; 0 with no pageview yet
	host uint64 // hostKey of the (www-less) host that started it; 0: direct or internal
	// sLast and sHost are last and host of the segments' visit: the Unix
	// ms of its last pageview or custom event (0: none yet) and the
	// external referrer host of the hit that started it.
	sLast int64
	sHost uint64
	// day and row locate the segments' visit's row: the local day it
	// started and its row there; row is segments.NoVisit when unknown (state
	// migrated from before the segments store).
	day buckets.Date
	row uint32
}

// chunkVisitors is how many visitors a persisted chunk of a period holds.
const chunkVisitors = 256

// visitorBytes estimates the memory of one visitor of a period: its hash
// and visit in the slices, and its entry in the index map.
const visitorBytes = 8 + 40 + 40

func newPeriod(first uint32) *period {
	return &period{index: make(map[uint64]uint32), first: first}
}

// hostKey identifies a referring host in a visit without interning it: a
// 64-bit FNV-1a hash, never 0 (0 means direct).
func hostKey(host string) uint64 {
	if host == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(host))
	return max(h.Sum64(), 1)
}

// errVisitorIDs: a salt period numbered 2^32 visitors.
var errVisitorIDs = errors.New("engine: visitor ids of the salt period exhausted")

// visitor returns the dense id of hash, numbering it if new; added reports
// whether it was new. ok is false when the period has no id left (2^32).
func (p *period) visitor(hash uint64) (id uint32, added, ok bool) {
	if id, ok := p.index[hash]; ok {
		return id, false, true
	}
	if uint64(p.first)+uint64(len(p.hashes)) >= 1<<32-1 {
		return 0, false, false
	}
	id = p.first + uint32(len(p.hashes))
	p.index[hash] = id
	p.hashes = append(p.hashes, hash)
	p.visits = append(p.visits, visit{row: segments.NoVisit})
	return id, true, true
}

// forgetRowsBefore forgets the segments row of every visit whose row is in
// a day before cut, which retention dropped: the visit goes on (its last
// hit and host stay), and its next hit starts a row (segHitLocked). Left
// set, the row number would name a row of the day made again by a later
// import — another visitor's visit, or another of this visitor's. The
// chunks are not marked changed: read back, they are forgotten again.
func (p *period) forgetRowsBefore(cut buckets.Date) {
	for i := range p.visits {
		if v := &p.visits[i]; v.row != segments.NoVisit && v.day < cut {
			v.row = segments.NoVisit
		}
	}
}

// markDirty records that the chunk of visitor id changed.
func (p *period) markDirty(id uint32) {
	c := int(id-p.first) / chunkVisitors
	w, b := c/64, uint(c%64)
	for len(p.dirty) <= w {
		p.dirty = append(p.dirty, 0)
	}
	if p.dirty[w]&(1<<b) == 0 {
		p.dirty[w] |= 1 << b
		p.nDirty++
	}
}

// markAllDirty marks every chunk changed (a period migrated from the old
// whole-period format).
func (p *period) markAllDirty() {
	for i := 0; i < len(p.hashes); i += chunkVisitors {
		p.markDirty(p.first + uint32(i))
	}
}

// chunkCopy is one changed chunk of a period, copied under the lock and
// encoded after it is released.
type chunkCopy struct {
	chunk  uint32
	first  uint32
	hashes []uint64
	visits []visit
}

// takeDirty copies the changed chunks and marks them clean.
func (p *period) takeDirty() []chunkCopy {
	if p.nDirty == 0 {
		return nil
	}
	out := make([]chunkCopy, 0, p.nDirty)
	for w, word := range p.dirty {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			c := w*64 + b
			lo := c * chunkVisitors
			hi := min(lo+chunkVisitors, len(p.hashes))
			if lo < hi {
				out = append(out, chunkCopy{
					chunk:  uint32(c),
					first:  p.first,
					hashes: append([]uint64(nil), p.hashes[lo:hi]...),
					visits: append([]visit(nil), p.visits[lo:hi]...),
				})
			}
		}
		p.dirty[w] = 0
	}
	p.nDirty = 0
	return out
}

// chunkVersion is the version of the encoding of a chunk of visitor state.
// (Version 1 was the whole period in one value, before chunks; version 2
// had no segments row; version 3 no segments visit of its own: its last
// hit and host were those of the phpAnalytics visit, which they default
// to when read.)
const chunkVersion = 4

// appendBinary encodes a chunk: version, the period's first id, the count,
// then each visitor's hash, last pageview, visit host, segments row, and
// the segments' visit's last hit and host.
func (c *chunkCopy) appendBinary(b []byte) []byte {
	b = append(b, chunkVersion)
	b = binary.AppendUvarint(b, uint64(c.first))
	b = binary.AppendUvarint(b, uint64(len(c.hashes)))
	for i, h := range c.hashes {
		b = binary.LittleEndian.AppendUint64(b, h)
		b = binary.AppendVarint(b, c.visits[i].last)
		b = binary.LittleEndian.AppendUint64(b, c.visits[i].host)
		b = binary.AppendVarint(b, int64(c.visits[i].day))
		b = binary.AppendUvarint(b, uint64(c.visits[i].row+1)) // segments.NoVisit+1 is 0
		b = binary.AppendVarint(b, c.visits[i].sLast)
		b = binary.LittleEndian.AppendUint64(b, c.visits[i].sHost)
	}
	return b
}

// addChunk decodes chunk number c into p. Chunks must come in order, each
// full but the last.
func (p *period) addChunk(c uint32, b []byte) error {
	d := wire.Decoder{B: b}
	v := d.Byte()
	if v < 2 || v > chunkVersion {
		return fmt.Errorf("visitor chunk %d: unknown version %d", c, v)
	}
	first, n := d.Uvarint(), d.Uvarint()
	if d.Bad || first > 1<<32-1 || n == 0 || n > chunkVisitors {
		return fmt.Errorf("visitor chunk %d: bad header", c)
	}
	if len(p.hashes) == 0 {
		p.first = uint32(first)
	}
	if uint32(first) != p.first || uint64(len(p.hashes)) != uint64(c)*chunkVisitors || first+uint64(c)*chunkVisitors+n > 1<<32 {
		return fmt.Errorf("visitor chunk %d: out of order", c)
	}
	for range n {
		h := d.Uint64()
		last := d.Varint()
		host := d.Uint64()
		day, row := int64(0), uint64(0)
		if v >= 3 {
			day, row = d.Varint(), d.Uvarint()
		}
		// Before version 4 the segments' visit was the phpAnalytics one.
		sLast, sHost := last, host
		if v >= 4 {
			sLast, sHost = d.Varint(), d.Uint64()
		}
		if d.Bad || day < -1<<31 || day > 1<<31-1 || row > 1<<32-1 {
			return fmt.Errorf("visitor chunk %d: truncated", c)
		}
		if _, dup := p.index[h]; dup {
			return fmt.Errorf("visitor chunk %d: visitor repeated", c)
		}
		p.index[h] = p.first + uint32(len(p.hashes))
		p.hashes = append(p.hashes, h)
		p.visits = append(p.visits, visit{last: last, host: host, sLast: sLast, sHost: sHost, day: buckets.Date(day), row: uint32(row) - 1})
	}
	if len(d.B) != 0 {
		return fmt.Errorf("visitor chunk %d: %d trailing bytes", c, len(d.B))
	}
	return nil
}

// decodeLegacyPeriod decodes a whole period in the format of version 1,
// whose visit hosts were ids of the website's old string table; host maps
// such an id (1 + string id) to the host.
func decodeLegacyPeriod(b []byte, host func(id uint32) string) (*period, error) {
	d := wire.Decoder{B: b}
	if v := d.Byte(); v != 1 {
		return nil, fmt.Errorf("engine: visitor state: unknown version %d", v)
	}
	first, n := d.Uvarint(), d.Uvarint()
	if d.Bad || first > 1<<32-1 || n > uint64(len(d.B))/10+1 || first+n > 1<<32 {
		return nil, fmt.Errorf("engine: visitor state: bad header")
	}
	p := newPeriod(uint32(first))
	for i := range n {
		h := d.Uint64()
		last := d.Varint()
		hid := d.Uvarint()
		if d.Bad || hid > 1<<32-1 {
			return nil, fmt.Errorf("engine: visitor state: truncated at visitor %d", i)
		}
		var hk uint64
		if hid != 0 {
			hk = hostKey(host(uint32(hid - 1)))
		}
		p.index[h] = p.first + uint32(len(p.hashes))
		p.hashes = append(p.hashes, h)
		p.visits = append(p.visits, visit{last: last, host: hk, sLast: last, sHost: hk, row: segments.NoVisit})
	}
	if len(d.B) != 0 {
		return nil, fmt.Errorf("engine: visitor state: %d trailing bytes", len(d.B))
	}
	p.markAllDirty()
	return p, nil
}

// setSizeLocked recomputes p's memory estimate and moves the difference
// into the engine's count of resident visitor state.
func (e *Engine) setSizeLocked(p *period) {
	n := len(p.hashes)*visitorBytes + len(p.dirty)*8 + 96
	if !p.gone {
		e.counters.state.Add(int64(n - p.size))
	}
	p.size = n
}

// loadPeriod reads the visitor state of the salt period starting on first
// from the store: nil, nil when it has none there.
func (e *Engine) loadPeriod(website uint32, first buckets.Date) (*period, error) {
	var p *period
	err := e.store.ScanStateChunks(website, int32(first), func(c uint32, data []byte) error {
		if p == nil {
			p = newPeriod(0)
		}
		return p.addChunk(c, data)
	})
	if err != nil {
		return nil, fmt.Errorf("engine: website %d period %v: %w", website, first, err)
	}
	if p != nil {
		p.isStored = true
	}
	return p, nil
}

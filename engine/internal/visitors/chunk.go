package visitors

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/wire"
)

// Chunk is a copy of one changed chunk of a period (TakeDirty), to be
// encoded with AppendBinary and saved as chunk number Index.
type Chunk struct {
	Index  uint32
	first  uint32
	hashes []uint64
	visits []Visit
}

// chunkVersion is the version of the encoding of a chunk of visitor state.
// (Version 1 was the whole period in one value, before chunks; version 2
// had no segments row; version 3 no segments visit of its own: its last
// hit and host were those of the phpAnalytics visit, which they default
// to when read.)
const chunkVersion = 4

// AppendBinary encodes a chunk: version, the period's first id, the
// count, then each visitor's hash, last pageview, visit host, segments
// row, and the segments' visit's last hit and host.
func (c *Chunk) AppendBinary(b []byte) []byte {
	b = append(b, chunkVersion)
	b = binary.AppendUvarint(b, uint64(c.first))
	b = binary.AppendUvarint(b, uint64(len(c.hashes)))
	for i, h := range c.hashes {
		v := &c.visits[i]
		b = binary.LittleEndian.AppendUint64(b, h)
		b = binary.AppendVarint(b, v.Last)
		b = binary.LittleEndian.AppendUint64(b, v.Host)
		b = binary.AppendVarint(b, int64(v.Day))
		b = binary.AppendUvarint(b, uint64(v.Row+1)) // segments.NoVisit+1 is 0
		b = binary.AppendVarint(b, v.SegLast)
		b = binary.LittleEndian.AppendUint64(b, v.SegHost)
	}
	return b
}

// AddChunk decodes chunk number c into p. Chunks must come in order, each
// full but the last, starting with chunk 0 into an empty p.
func (p *Period) AddChunk(c uint32, b []byte) error {
	if p.paged > 0 || uint64(p.n) != uint64(c)*uint64(chunkVisitors) {
		return fmt.Errorf("visitor chunk %d: out of order", c)
	}
	hdr, err := ChunkHeader(b)
	if err != nil {
		return fmt.Errorf("visitor chunk %d: %w", c, err)
	}
	if p.n == 0 {
		p.first = hdr.First
	}
	if hdr.First != p.first || uint64(p.first)+uint64(c)*uint64(chunkVisitors)+uint64(hdr.N) > 1<<32 {
		return fmt.Errorf("visitor chunk %d: out of order", c)
	}
	// A chunk in the store only, read back.
	p.n += hdr.N
	p.chunks = append(p.chunks, nil)
	p.paged++
	if err := p.LoadChunk(c, b, math.MinInt32, 0); err != nil {
		p.n -= hdr.N
		p.chunks = p.chunks[:len(p.chunks)-1]
		p.paged--
		return err
	}
	return nil
}

// Header is what the start of a saved chunk says: its period's first id
// and its count of visitors.
type Header struct {
	First uint32
	N     int
}

// ChunkHeader decodes the header of a saved chunk.
func ChunkHeader(b []byte) (Header, error) {
	d := wire.Decoder{B: b}
	v := d.Byte()
	if v < 2 || v > chunkVersion {
		return Header{}, fmt.Errorf("unknown version %d", v)
	}
	first, n := d.Uvarint(), d.Uvarint()
	if d.Bad || first > 1<<32-1 || n == 0 || n > uint64(chunkVisitors) {
		return Header{}, fmt.Errorf("bad header")
	}
	return Header{First: uint32(first), N: int(n)}, nil
}

// decodeChunk decodes saved chunk number c.
func decodeChunk(c uint32, b []byte) (*chunk, error) {
	d := wire.Decoder{B: b}
	v := d.Byte()
	if v < 2 || v > chunkVersion {
		return nil, fmt.Errorf("visitor chunk %d: unknown version %d", c, v)
	}
	first, n := d.Uvarint(), d.Uvarint()
	if d.Bad || first > 1<<32-1 || n == 0 || n > uint64(chunkVisitors) {
		return nil, fmt.Errorf("visitor chunk %d: bad header", c)
	}
	ch := &chunk{hashes: make([]uint64, 0, n), visits: make([]Visit, 0, n)}
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
			return nil, fmt.Errorf("visitor chunk %d: truncated", c)
		}
		ch.hashes = append(ch.hashes, h)
		ch.visits = append(ch.visits, Visit{Last: last, Host: host, SegLast: sLast, SegHost: sHost, Day: buckets.Date(day), Row: uint32(row) - 1})
	}
	if len(d.B) != 0 {
		return nil, fmt.Errorf("visitor chunk %d: %d trailing bytes", c, len(d.B))
	}
	return ch, nil
}

// DecodeLegacy decodes a whole period in the format of version 1, whose
// visit hosts were ids of the website's old string table; host maps such
// an id (1 + string id) to the host. Every chunk of it is dirty.
func DecodeLegacy(b []byte, host func(id uint32) string) (*Period, error) {
	d := wire.Decoder{B: b}
	if v := d.Byte(); v != 1 {
		return nil, fmt.Errorf("engine: visitor state: unknown version %d", v)
	}
	first, n := d.Uvarint(), d.Uvarint()
	if d.Bad || first > 1<<32-1 || n > uint64(len(d.B))/10+1 || first+n > 1<<32 {
		return nil, fmt.Errorf("engine: visitor state: bad header")
	}
	p := &Period{first: uint32(first)}
	for i := range n {
		h := d.Uint64()
		last := d.Varint()
		hid := d.Uvarint()
		if d.Bad || hid > 1<<32-1 {
			return nil, fmt.Errorf("engine: visitor state: truncated at visitor %d", i)
		}
		var hk uint64
		if hid != 0 {
			hk = HostKey(host(uint32(hid - 1)))
		}
		p.number(h, Visit{Last: last, Host: hk, SegLast: last, SegHost: hk, Row: segments.NoVisit})
	}
	if len(d.B) != 0 {
		return nil, fmt.Errorf("engine: visitor state: %d trailing bytes", len(d.B))
	}
	p.markAllDirty()
	return p, nil
}

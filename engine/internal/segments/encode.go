package segments

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/webstats/webstats/engine/internal/wire"
)

// Version is the version of the encoding of a Day. Version 1 (still
// read) had no sealed parts and no hit flags.
const Version = 2

var (
	zEnc    *zstd.Encoder
	zOnce   sync.Once
	segBufs = sync.Pool{New: func() any { return new([]byte) }}
	// zDecs holds stream decoders: read through one, a value cannot
	// expand past the length it announces (no decompression bomb).
	zDecs = sync.Pool{New: func() any {
		d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		return d
	}}
)

func ZstdEncoder() *zstd.Encoder {
	zOnce.Do(func() {
		zEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true),
			// A 1 MiB window, not the level's 8 MiB: the encoder keeps its
			// history for good (issue #38 row 7).
			zstd.WithWindowSize(1<<20))
	})
	return zEnc
}

// maxSegColumns bounds the announced length of a day's uncompressed
// columns (2 GiB: some 80 million hits of one website in one day). The
// bound is absolute, not a ratio to the compressed size: a closed day of
// many alike hits compresses far better than 64:1, and must read back.
const maxSegColumns = 1<<31 - 1

// Unzstd decompresses b, which must expand to exactly n bytes. It
// allocates as the data decompresses, not n up front, so a corrupt length
// cannot make it allocate more than b really expands to.
func Unzstd(b []byte, n int) ([]byte, error) {
	d := zDecs.Get().(*zstd.Decoder)
	defer zDecs.Put(d)
	if err := d.Reset(bytes.NewReader(b)); err != nil {
		return nil, err
	}
	// Enough for the usual ratios at once; more grows as it comes.
	buf := bytes.NewBuffer(make([]byte, 0, min(n, 32*len(b)+4096)))
	if _, err := buf.ReadFrom(io.LimitReader(d, int64(n)+1)); err != nil {
		return nil, err
	}
	switch {
	case buf.Len() < n:
		return nil, errors.New("shorter than announced")
	case buf.Len() > n:
		return nil, errors.New("longer than announced")
	}
	return buf.Bytes(), nil
}

// AppendBinary appends the encoding of d as its day's value holds it: a
// version byte, the length of the columns, the length of their compression,
// then the columns, zstd-compressed:
//
//	strings     count, then each (length, bytes); id 0 ("") is implied
//	counts      the values added, by kind
//	parts       how many parts are sealed in the store
//	rows        (see appendRows)
//
// A day with sealed parts holds only the rows since the last seal; a day
// made whole from its parts is encoded as the day it was made from.
func (d *Day) AppendBinary(b []byte) []byte {
	if d.Tail != nil {
		return d.Tail.AppendBinary(b)
	}
	return d.encode(b, true)
}

// AppendPart appends the encoding of d's rows as a sealed part: the same
// envelope, its columns only the rows (its strings are its day's).
func (d *Day) AppendPart(b []byte) []byte { return d.encode(b, false) }

func (d *Day) encode(b []byte, day bool) []byte {
	bp := segBufs.Get().(*[]byte)
	c := (*bp)[:0]
	if day {
		c = binary.AppendUvarint(c, uint64(len(d.Strs)))
		for _, x := range d.Strs[1:] {
			c = binary.AppendUvarint(c, uint64(len(x)))
			c = append(c, x...)
		}
		for _, n := range d.counts {
			c = binary.AppendUvarint(c, uint64(n))
		}
		c = binary.AppendUvarint(c, uint64(d.Parts))
	}
	c = d.appendRows(c)
	enc := ZstdEncoder()
	b = append(b, Version)
	b = binary.AppendUvarint(b, uint64(len(c)))
	z := enc.EncodeAll(c, nil)
	b = binary.AppendUvarint(b, uint64(len(z)))
	b = append(b, z...)
	*bp = c
	segBufs.Put(bp)
	return b
}

// appendRows appends d's rows:
//
//	first       the numbers of the first visit and hit rows (rows before
//	            them are sealed in parts)
//	visits      count; period and visitor id deltas; grouped flag;
//	            [ungrouped: start, end and last-pageview times, pageviews,
//	            entry, exit, entry host, exit host]; city id; flags;
//	            the NumAttrs attribute columns
//	hits        count; [grouped: hits per visit | ungrouped: visit row
//	            deltas]; times; kind, name, page, host, value, unit,
//	            engaged ms, scroll, flags; props per hit; the props
//	milliseconds of every time above, in order
//
// Times are varint deltas in seconds, their milliseconds in the last
// column (all zeros: segments keep whole seconds, but the format does not
// depend on it). A grouped day (closed: hits ordered by visit) leaves out
// what its hits determine: a visit's start, end, last pageview, pageviews,
// entry and exit come from its hits; a hit's time is a delta from the
// previous hit of its visit, a visit's first from the previous visit's.
// Only rows from row 0 are written grouped.
func (d *Day) appendRows(c []byte) []byte {
	w := &rowWriter{c: c}
	w.u(uint64(d.OffV))
	w.u(uint64(d.OffH))
	grouped := d.Grouped && d.OffV == 0 && d.OffH == 0
	d.appendVisits(w, grouped)
	d.appendHitTimes(w, grouped)
	w.c = append(w.c, d.HKind...)
	for _, col := range [][]uint32{d.HName, d.HPage, d.HHost, d.HValue, d.HUnit, d.HEngaged} {
		w.u32(col)
	}
	for _, v := range d.HScroll {
		w.c = append(w.c, byte(v))
	}
	w.c = append(w.c, d.HFlags...)
	var pe uint32
	for _, v := range d.hPropEnd {
		w.u(uint64(v - pe))
		pe = v
	}
	w.u32(d.Props)
	for _, r := range w.rems {
		w.u(uint64(r))
	}
	return w.c
}

// rowWriter appends appendRows' columns to c.
type rowWriter struct {
	c []byte
	// rems are the milliseconds of the times written as whole seconds,
	// appended at the end.
	rems []int64
}

func (w *rowWriter) u(v uint64) { w.c = binary.AppendUvarint(w.c, v) }
func (w *rowWriter) s(v int64)  { w.c = binary.AppendVarint(w.c, v) }

func (w *rowWriter) u32(col []uint32) {
	for _, v := range col {
		w.u(uint64(v))
	}
}

// ms writes a time delta's whole seconds, keeping its milliseconds for
// the end.
func (w *rowWriter) ms(delta int64) {
	sec := FloorDiv(delta, 1000)
	w.s(sec)
	w.rems = append(w.rems, delta-sec*1000)
}

// appendVisits writes the visit columns (grouped: without those derived
// from the hits).
func (d *Day) appendVisits(w *rowWriter, grouped bool) {
	nv := len(d.vStart)
	w.u(uint64(nv))
	var prev int64
	for _, v := range d.VPeriod {
		w.s(int64(v) - prev)
		prev = int64(v)
	}
	prev = 0
	for _, v := range d.VVisitor {
		w.s(int64(v) - prev) // new visitors come in order: mostly 1
		prev = int64(v)
	}
	if grouped {
		w.c = append(w.c, 1)
	} else {
		w.c = append(w.c, 0)
		prev = 0
		for i, v := range d.vStart {
			w.ms(v - prev)
			prev = v
			w.ms(d.VEnd[i] - v)
			w.ms(d.VLastPV[i] - v)
		}
		for _, col := range [][]uint32{d.VPageviews, d.VEntry, d.VExit, d.VEntryHost, d.VExitHost} {
			w.u32(col)
		}
	}
	w.u32(d.VCityID)
	w.c = append(w.c, d.VFlags...)
	for a := range NumAttrs {
		for _, id := range d.VAttr[a][:nv] {
			w.u(uint64(id))
		}
	}
}

// appendHitTimes writes the hits' visits (grouped: each visit's number of
// hits) and times (grouped: by visit).
func (d *Day) appendHitTimes(w *rowWriter, grouped bool) {
	nh := len(d.HMs)
	w.u(uint64(nh))
	var prev int64
	if grouped {
		lo := 0
		for v := range len(d.vStart) {
			_, hi := d.VisitHits(uint32(v))
			w.u(uint64(hi - lo))
			lo = hi
		}
		for i, t := range d.HMs {
			if i > 0 && d.HVisit[i-1] == d.HVisit[i] {
				w.ms(t - d.HMs[i-1])
			} else {
				w.ms(t - prev) // a visit's first hit (or the first orphan)
				prev = t
			}
		}
		return
	}
	for _, v := range d.HVisit {
		w.s(int64(v+1) - prev) // NoVisit+1 is 0
		prev = int64(v + 1)
	}
	prev = 0
	for _, t := range d.HMs {
		w.ms(t - prev)
		prev = t
	}
}

// segColumns checks the envelope of an encoded value and decompresses its
// columns. It returns the encoding's version.
func segColumns(b []byte) ([]byte, byte, error) {
	bad := func(what string) ([]byte, byte, error) {
		return nil, 0, fmt.Errorf("segments: %s: %w", what, wire.ErrRecord)
	}
	if len(b) == 0 || b[0] < 1 || b[0] > Version {
		return bad("version")
	}
	raw, n := binary.Uvarint(b[1:])
	if n <= 0 || raw > maxSegColumns {
		return bad("length")
	}
	zl, k := binary.Uvarint(b[1+n:])
	if k <= 0 || zl != uint64(len(b)-1-n-k) {
		return bad("compressed length") // truncated, or trailing bytes
	}
	c, err := Unzstd(b[1+n+k:], int(raw))
	if err != nil {
		return bad("compressed columns")
	}
	return c, b[0], nil
}

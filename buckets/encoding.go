package buckets

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// dayVersion is the format version written by Day.MarshalBinary.
const dayVersion = 1

// Day format, version 1:
//
//	byte     version (1)
//	varint   Period (zigzag)
//	uvarint  Visits, Events
//	uvarint  Hours[0..23]
//	uvarint  number of dimensions k (≤ NumDims)
//	k times: uvarint n; n uvarint ids (the first, then gaps: id - previous - 1);
//	         n uvarint counts (> 0)
//	uvarint  length of the day bitmap, then its bytes (0: no visitor)
//	uvarint  mask of the hours with a bitmap (bit h for hour h)
//	per hour in the mask: uvarint length > 0 and the bitmap's bytes
//
// Bitmaps use roaring's portable format
// (https://github.com/RoaringBitmap/RoaringFormatSpec), run-optimized.

// MarshalBinary implements [encoding.BinaryMarshaler]. The first byte of the
// encoding is the format version (1). It does not change d; on a day that
// is not compacted it encodes run-optimized copies of the bitmaps.
func (d *Day) MarshalBinary() ([]byte, error) {
	return d.AppendBinary(nil)
}

// AppendBinary implements [encoding.BinaryAppender]: it appends the encoding
// of [Day.MarshalBinary] to b. It fails only if roaring fails to serialize a
// bitmap, which writing to memory does not.
func (d *Day) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, dayVersion)
	b = binary.AppendVarint(b, int64(d.Period))
	b = binary.AppendUvarint(b, d.Visits)
	b = binary.AppendUvarint(b, d.Events)
	for _, v := range d.Hours {
		b = binary.AppendUvarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(NumDims))
	var scratch []uint32
	for dim := range NumDims {
		c := &d.cols[dim]
		var ids []uint32
		if c.m != nil {
			scratch = scratch[:0]
			for id := range c.m {
				scratch = append(scratch, id)
			}
			slices.Sort(scratch)
			ids = scratch
		} else {
			ids, _ = c.split()
		}
		b = slices.Grow(b, binary.MaxVarintLen32+len(ids)*4)
		b = binary.AppendUvarint(b, uint64(len(ids)))
		prev := uint32(0)
		for i, id := range ids {
			gap := id
			if i > 0 {
				gap = id - prev - 1
			}
			b = binary.AppendUvarint(b, uint64(gap))
			prev = id
		}
		for _, id := range ids {
			b = binary.AppendUvarint(b, d.Count(dim, id))
		}
	}
	var err error
	if b, err = d.appendBitmap(b, d.visitors); err != nil {
		return b, err
	}
	var mask uint64
	for h, bm := range d.hourVisitors {
		if bm != nil && !bm.IsEmpty() {
			mask |= 1 << h
		}
	}
	b = binary.AppendUvarint(b, mask)
	for _, bm := range d.hourVisitors {
		if bm != nil && !bm.IsEmpty() {
			if b, err = d.appendBitmap(b, bm); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}

// appendBitmap appends the length of bm's portable serialization and the
// serialization itself (length 0 for nil or empty).
func (d *Day) appendBitmap(b []byte, bm *roaring.Bitmap) ([]byte, error) {
	if bm == nil || bm.IsEmpty() {
		return append(b, 0), nil
	}
	if !d.optimized {
		bm = bm.Clone()
		bm.RunOptimize()
	}
	n := bm.GetSerializedSizeInBytes()
	b = binary.AppendUvarint(b, n)
	w := appendWriter{b: slices.Grow(b, int(n))}
	if m, err := bm.WriteTo(&w); err != nil || uint64(m) != n {
		return b, fmt.Errorf("buckets: serialize bitmap: wrote %d of %d bytes: %v", m, n, err)
	}
	return w.b, nil
}

type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// UnmarshalBinary implements [encoding.BinaryUnmarshaler]: it replaces d
// with the day encoded in b. b may come from anywhere: malformed input gives
// an error wrapping [ErrCorrupt] (or [ErrVersion] for a format newer than
// this build), never a panic, and leaves d unchanged. The decoded day is
// compacted and does not retain b.
func (d *Day) UnmarshalBinary(b []byte) error {
	var n Day
	dec := dayDecoder{b: b}
	if err := dec.decode(&n); err != nil {
		return err
	}
	*d = n
	return nil
}

type dayDecoder struct {
	b []byte // the bytes left
}

func (r *dayDecoder) err(format string, args ...any) error {
	return decodeErr(ErrCorrupt, "day", format, args...)
}

// uvarint reads a uvarint; what names it in errors.
func (r *dayDecoder) uvarint(what string) (uint64, error) {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		if n == 0 {
			return 0, r.err("truncated %s", what)
		}
		return 0, r.err("overflowing %s", what)
	}
	r.b = r.b[n:]
	return v, nil
}

func (r *dayDecoder) decode(d *Day) error {
	if len(r.b) == 0 {
		return r.err("empty input")
	}
	switch v := r.b[0]; {
	case v > dayVersion:
		return decodeErr(ErrVersion, "day", "unknown format version %d (this build reads %d)", v, dayVersion)
	case v != dayVersion:
		return r.err("bad format version %d", v)
	}
	r.b = r.b[1:]
	p, n := binary.Varint(r.b)
	if n <= 0 {
		return r.err("truncated period")
	}
	if p < math.MinInt32 || p > math.MaxInt32 {
		return r.err("period %d out of range", p)
	}
	r.b = r.b[n:]
	d.Period = Date(p)
	var err error
	if d.Visits, err = r.uvarint("visits"); err != nil {
		return err
	}
	if d.Events, err = r.uvarint("events"); err != nil {
		return err
	}
	for h := range d.Hours {
		if d.Hours[h], err = r.uvarint("hours"); err != nil {
			return err
		}
	}
	k, err := r.uvarint("number of dimensions")
	if err != nil {
		return err
	}
	if k > uint64(NumDims) {
		return decodeErr(ErrVersion, "day", "%d dimensions, this build knows %d", k, NumDims)
	}
	for dim := range Dim(k) {
		if err := r.column(d, dim); err != nil {
			return err
		}
	}
	if d.visitors, err = r.bitmap(-1); err != nil {
		return err
	}
	if d.visitors == nil {
		d.visitors = roaring.New()
	}
	mask, err := r.uvarint("hour mask")
	if err != nil {
		return err
	}
	if mask >= 1<<24 {
		return r.err("hour mask %#x has hours beyond 23", mask)
	}
	for mask != 0 {
		h := bits.TrailingZeros64(mask)
		mask &= mask - 1
		if d.hourVisitors[h], err = r.bitmap(h); err != nil {
			return err
		}
	}
	if len(r.b) != 0 {
		return r.err("%d trailing bytes", len(r.b))
	}
	d.optimized = true
	return nil
}

func (r *dayDecoder) column(d *Day, dim Dim) error {
	n, m := binary.Uvarint(r.b)
	if m <= 0 {
		return r.err("truncated length of dim %s", dim)
	}
	r.b = r.b[m:]
	if n == 0 {
		return nil
	}
	// Each value takes at least one byte of id and one of count: check
	// before allocating in proportion to n.
	if n > uint64(len(r.b))/2 {
		return r.err("truncated counts of dim %s", dim)
	}
	col := make([]uint32, 2*n)
	ids, counts := col[:n:n], col[n:]
	var prev uint64
	for i := range ids {
		v, m := binary.Uvarint(r.b)
		if m <= 0 {
			return r.err("truncated ids of dim %s", dim)
		}
		r.b = r.b[m:]
		if i > 0 {
			v += prev + 1
			if v <= prev { // wrapped around
				v = math.MaxUint64
			}
		}
		if v > math.MaxUint32 {
			return r.err("id out of range in dim %s", dim)
		}
		ids[i] = uint32(v)
		prev = v
	}
	for i := range counts {
		v, m := binary.Uvarint(r.b)
		if m <= 0 {
			return r.err("truncated counts of dim %s", dim)
		}
		r.b = r.b[m:]
		if v == 0 {
			return r.err("zero count in dim %s", dim)
		}
		counts[i] = uint32(v)
		if h := uint32(v >> 32); h != 0 {
			d.setHigh(dim, ids[i], h)
		}
	}
	d.cols[dim].c = col
	return nil
}

// bitmap reads a length-prefixed bitmap: the day's for hour < 0, else the
// one of hour, which must not be empty. Length 0 gives nil.
func (r *dayDecoder) bitmap(hour int) (*roaring.Bitmap, error) {
	what := func() string {
		if hour < 0 {
			return "visitors"
		}
		return fmt.Sprintf("visitors of hour %d", hour)
	}
	n, m := binary.Uvarint(r.b)
	if m <= 0 {
		return nil, r.err("truncated length of %s", what())
	}
	r.b = r.b[m:]
	if n > uint64(len(r.b)) {
		return nil, r.err("truncated %s", what())
	}
	if n == 0 {
		if hour >= 0 {
			return nil, r.err("empty %s", what())
		}
		return nil, nil
	}
	bm, err := decodeBitmap(r.b[:n])
	if err != nil {
		return nil, r.err("%s: %v", what(), err)
	}
	r.b = r.b[n:]
	return bm, nil
}

// decodeBitmap decodes one roaring bitmap in portable format that must fill
// b exactly. The structure is checked first, so that roaring's decoder only
// sees well-formed input (it trusts the lengths it reads); a panic inside it
// is turned into an error all the same. The bitmap does not retain b.
func decodeBitmap(b []byte) (bm *roaring.Bitmap, err error) {
	if err := checkRoaring(b); err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			bm, err = nil, fmt.Errorf("roaring: %v", p)
		}
	}()
	bm = roaring.New()
	// ReadFrom on a bytes.Reader copies every container out of b (unlike
	// FromBuffer or FromUnsafeBytes, which alias it).
	n, err := bm.ReadFrom(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	if n != int64(len(b)) {
		return nil, fmt.Errorf("read %d of %d bytes", n, len(b))
	}
	return bm, nil
}

// Constants of the portable roaring format.
const (
	roaringCookie      = 12347 // with run containers; the high 16 bits hold size-1
	roaringCookieNoRun = 12346 // arrays and bitmaps only, followed by uint32 size
	roaringNoOffsets   = 4     // with runs, fewer containers than this have no offsets
	roaringMaxArray    = 4096  // larger containers are bitmaps of 8 KiB
)

// checkRoaring verifies that b holds exactly one well-formed roaring bitmap
// in portable format: every length within b, keys ascending, containers
// non-empty, arrays ascending, bitmaps matching their cardinality, runs
// ascending and disjoint. It allocates nothing.
func checkRoaring(b []byte) error {
	le16 := binary.LittleEndian.Uint16
	le32 := binary.LittleEndian.Uint32
	if len(b) < 4 {
		return fmt.Errorf("truncated cookie")
	}
	cookie := le32(b)
	p := b[4:]
	var size int
	var runs []byte
	switch {
	case cookie&0xFFFF == roaringCookie:
		size = int(cookie>>16) + 1
		nr := (size + 7) / 8
		if len(p) < nr {
			return fmt.Errorf("truncated run flags")
		}
		runs, p = p[:nr], p[nr:]
	case cookie == roaringCookieNoRun:
		if len(p) < 4 {
			return fmt.Errorf("truncated size")
		}
		s := le32(p)
		if s > 1<<16 {
			return fmt.Errorf("%d containers", s)
		}
		size, p = int(s), p[4:]
	default:
		return fmt.Errorf("bad cookie %#x", cookie)
	}
	if len(p) < 4*size {
		return fmt.Errorf("truncated header")
	}
	header, p := p[:4*size], p[4*size:]
	if runs == nil || size >= roaringNoOffsets {
		if len(p) < 4*size {
			return fmt.Errorf("truncated offsets")
		}
		p = p[4*size:]
	}
	prevKey := -1
	for i := range size {
		key := int(le16(header[4*i:]))
		card := int(le16(header[4*i+2:])) + 1
		if key <= prevKey {
			return fmt.Errorf("keys out of order")
		}
		prevKey = key
		switch {
		case runs != nil && runs[i/8]&(1<<(i%8)) != 0:
			if len(p) < 2 {
				return fmt.Errorf("truncated run container")
			}
			nr := int(le16(p))
			p = p[2:]
			if nr == 0 {
				return fmt.Errorf("empty run container")
			}
			if len(p) < 4*nr {
				return fmt.Errorf("truncated run container")
			}
			next := 0 // the smallest start allowed for the next run
			for j := range nr {
				start, length := int(le16(p[4*j:])), int(le16(p[4*j+2:]))
				if start < next || start+length > math.MaxUint16 {
					return fmt.Errorf("runs out of order or range")
				}
				next = start + length + 1
			}
			p = p[4*nr:]
		case card > roaringMaxArray:
			if len(p) < 8192 {
				return fmt.Errorf("truncated bitmap container")
			}
			ones := 0
			for j := 0; j < 8192; j += 8 {
				ones += bits.OnesCount64(binary.LittleEndian.Uint64(p[j:]))
			}
			if ones != card {
				return fmt.Errorf("bitmap container of %d values claims %d", ones, card)
			}
			p = p[8192:]
		default:
			if len(p) < 2*card {
				return fmt.Errorf("truncated array container")
			}
			prev := -1
			for j := range card {
				v := int(le16(p[2*j:]))
				if v <= prev {
					return fmt.Errorf("array container out of order")
				}
				prev = v
			}
			p = p[2*card:]
		}
	}
	if len(p) != 0 {
		return fmt.Errorf("%d trailing bytes", len(p))
	}
	return nil
}

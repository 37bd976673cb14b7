package buckets

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// Versions of the day format. Version 1 counted ids into its website's
// [Strings] table; version 2 is self-contained.
const (
	dayVersion1 = 1
	dayVersion  = 2 // written by Day.MarshalBinary
)

// Day format, version 2:
//
//	byte     version (2)
//	varint   Period (zigzag)
//	uvarint  Visits, Events
//	uvarint  Hours[0..23]
//	uvarint  number of strings s
//	s times: uvarint length, bytes; strictly ascending (bytewise)
//	uvarint  number of dimensions k (≤ NumDims)
//	k times: uvarint n; n uvarint ids (the first, then gaps: id - previous - 1);
//	         n uvarint counts (> 0)
//	uvarint  length of the day bitmap, then its bytes (0: no visitor)
//	uvarint  mask of the hours with a bitmap (bit h for hour h)
//	per hour in the mask: uvarint length > 0 and the bitmap's bytes
//
// Ids are indexes into the strings; every string is counted in at least one
// dimension. Strings are written whole, not front-coded: a decoder then
// allocates at most the size of its input for them (front coding lets a few
// bytes stand for a long repeated prefix), and the store compresses its
// blocks anyway. Bitmaps use roaring's portable format
// (https://github.com/RoaringBitmap/RoaringFormatSpec), run-optimized.
//
// Version 1 is the same without the strings: its ids are those of the
// website's [Strings] table.

// MarshalBinary implements [encoding.BinaryMarshaler]. The first byte of the
// encoding is the format version (2). It does not change d; on a day that
// is not compacted it encodes a sorted copy of the dictionary and
// run-optimized copies of the bitmaps. The encoding of a day does not
// depend on its representation (open, compacted or decoded).
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

	// The dictionary in ascending order: perm maps the day's ids to their
	// rank when the dictionary is open (nil when sealed, already sorted).
	values := d.dict.values
	var perm []uint32
	if d.dict.index != nil {
		order := make([]uint32, len(values))
		for i := range order {
			order[i] = uint32(i)
		}
		slices.SortFunc(order, func(a, b uint32) int { return strings.Compare(values[a], values[b]) })
		perm = make([]uint32, len(values))
		for rank, id := range order {
			perm[id] = uint32(rank)
		}
		b = slices.Grow(b, binary.MaxVarintLen32+d.dict.bytes+2*len(values))
		b = binary.AppendUvarint(b, uint64(len(values)))
		for _, id := range order {
			b = binary.AppendUvarint(b, uint64(len(values[id])))
			b = append(b, values[id]...)
		}
	} else {
		b = slices.Grow(b, binary.MaxVarintLen32+d.dict.bytes+2*len(values))
		b = binary.AppendUvarint(b, uint64(len(values)))
		for _, v := range values {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}

	b = binary.AppendUvarint(b, uint64(NumDims))
	var pairs []uint64
	for dim := range NumDims {
		c := &d.cols[dim]
		var ids []uint32
		if c.m != nil || perm != nil {
			// id<<32|old id, sorted: the new ids ascending, with the old
			// ones to read the counts by.
			pairs = pairs[:0]
			for old := range d.cols[dim].ids() {
				pairs = append(pairs, uint64(remap(perm, old))<<32|uint64(old))
			}
			slices.Sort(pairs)
			b = appendIDs(b, len(pairs), func(i int) uint32 { return uint32(pairs[i] >> 32) })
			for _, p := range pairs {
				b = binary.AppendUvarint(b, d.countOf(dim, uint32(p)))
			}
			continue
		}
		ids, counts := c.split()
		b = appendIDs(b, len(ids), func(i int) uint32 { return ids[i] })
		for i, id := range ids {
			b = binary.AppendUvarint(b, d.full(dim, id, counts[i]))
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

// appendIDs appends n, then the n ascending ids id(0..n-1): the first, then
// the gaps.
func appendIDs(b []byte, n int, id func(int) uint32) []byte {
	b = slices.Grow(b, binary.MaxVarintLen32+n*4)
	b = binary.AppendUvarint(b, uint64(n))
	prev := uint32(0)
	for i := range n {
		v := id(i)
		gap := v
		if i > 0 {
			gap = v - prev - 1
		}
		b = binary.AppendUvarint(b, uint64(gap))
		prev = v
	}
	return b
}

// ids returns an iterator over the ids of the column.
func (c *column) ids() iter.Seq[uint32] {
	return func(yield func(uint32) bool) {
		if c.m != nil {
			for id := range c.m {
				if !yield(id) {
					return
				}
			}
			return
		}
		ids, _ := c.split()
		for _, id := range ids {
			if !yield(id) {
				return
			}
		}
	}
}

// countOf returns the count of value id in dim.
func (d *Day) countOf(dim Dim, id uint32) uint64 {
	c := &d.cols[dim]
	if c.m != nil {
		return d.full(dim, id, c.m[id])
	}
	ids, counts := c.split()
	if i, ok := slices.BinarySearch(ids, id); ok {
		return d.full(dim, id, counts[i])
	}
	return 0
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
// this build, [ErrVersion1] for the old format that needs its website's
// strings), never a panic, and leaves d unchanged. The decoded day is
// compacted and does not retain b.
func (d *Day) UnmarshalBinary(b []byte) error {
	return d.unmarshal(b, nil)
}

// UnmarshalBinaryV1 is [Day.UnmarshalBinary] for the days of stores written
// before days had their own dictionary, for their migration: it also
// decodes format version 1, whose ids are those of the website's [Strings]
// table, and value returns the string of such an id (false if there is
// none: the error then wraps [ErrCorrupt]). value is called only for
// version 1 and the day does not retain its strings. Two ids with the same
// string have their counts added.
func (d *Day) UnmarshalBinaryV1(data []byte, value func(id uint32) (string, bool)) error {
	if value == nil {
		value = func(uint32) (string, bool) { return "", false }
	}
	return d.unmarshal(data, value)
}

// unmarshal decodes b into d; value, if not nil, resolves the ids of
// version 1.
func (d *Day) unmarshal(b []byte, value func(uint32) (string, bool)) error {
	var n Day
	dec := dayDecoder{b: b}
	if err := dec.decode(&n, value); err != nil {
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

func (r *dayDecoder) decode(d *Day, value func(uint32) (string, bool)) error {
	if len(r.b) == 0 {
		return r.err("empty input")
	}
	version := r.b[0]
	switch {
	case version > dayVersion:
		return decodeErr(ErrVersion, "day", "unknown format version %d (this build reads %d)", version, dayVersion)
	case version == dayVersion1 && value == nil:
		return decodeErr(ErrVersion1, "day", "format version 1 needs its website's strings")
	case version != dayVersion && version != dayVersion1:
		return r.err("bad format version %d", version)
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
	if version == dayVersion {
		if err := r.dict(&d.dict); err != nil {
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
	// For version 1, the columns of website ids go to v1 first.
	cols := d
	var v1 Day
	if version == dayVersion1 {
		cols = &v1
	}
	for dim := range Dim(k) {
		if err := r.column(cols, dim); err != nil {
			return err
		}
	}
	if version == dayVersion {
		if err := r.checkDict(d); err != nil {
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
	if version == dayVersion1 {
		for dim := range NumDims {
			for id, n := range v1.idCounts(dim) {
				v, ok := value(id)
				if !ok {
					return r.err("unknown string id %d in dim %s", id, dim)
				}
				_, _ = d.add(dim, v, n, 0, false) // Compact copies the strings
			}
		}
		d.Compact()
	}
	return nil
}

// dict reads the strings of a version 2 day into t, sealed: strictly
// ascending, in one allocation.
func (r *dayDecoder) dict(t *dict) error {
	s, err := r.uvarint("number of strings")
	if err != nil {
		return err
	}
	// Every string takes at least its one-byte length: check before
	// allocating in proportion to s.
	if s > uint64(len(r.b)) {
		return r.err("%d strings in %d bytes", s, len(r.b))
	}
	if s > math.MaxUint32 {
		return r.err("%d strings", s)
	}
	// First pass: lengths and order, on the input itself.
	p := r.b
	total := 0
	var prev []byte
	for i := range s {
		l, n := binary.Uvarint(p)
		if n <= 0 {
			return r.err("truncated length of string %d", i)
		}
		p = p[n:]
		if l > uint64(len(p)) {
			return r.err("truncated string %d", i)
		}
		v := p[:l]
		if i > 0 && bytes.Compare(prev, v) >= 0 {
			return r.err("string %d out of order", i)
		}
		prev, p = v, p[l:]
		total += int(l)
	}
	// Second pass: copy them into one allocation.
	var sb strings.Builder
	sb.Grow(total)
	t.values = make([]string, s)
	lens := r.b
	for range t.values {
		l, n := binary.Uvarint(lens)
		sb.Write(lens[n : n+int(l)])
		lens = lens[n+int(l):]
	}
	arena := sb.String()
	off := 0
	lens = r.b
	for i := range t.values {
		l, n := binary.Uvarint(lens)
		lens = lens[n+int(l):]
		t.values[i] = arena[off : off+int(l)]
		off += int(l)
	}
	r.b = p
	t.bytes, t.packed = total, int(s)
	return nil
}

// checkDict verifies that the ids of d's columns are strings of its
// dictionary, each counted somewhere.
func (r *dayDecoder) checkDict(d *Day) error {
	used := make([]uint64, (len(d.dict.values)+63)/64)
	for dim := range NumDims {
		ids, _ := d.cols[dim].split()
		if len(ids) > 0 && int64(ids[len(ids)-1]) >= int64(len(d.dict.values)) {
			return r.err("id %d beyond the %d strings in dim %s", ids[len(ids)-1], len(d.dict.values), dim)
		}
		for _, id := range ids {
			used[id/64] |= 1 << (id % 64)
		}
	}
	for i, w := range used {
		if n := min(64, len(d.dict.values)-64*i); w != 1<<n-1 {
			return r.err("string %d counted nowhere", 64*i+bits.TrailingZeros64(^w))
		}
	}
	return nil
}

// idCounts returns an iterator over the (id, count) pairs of dim.
func (d *Day) idCounts(dim Dim) iter.Seq2[uint32, uint64] {
	return func(yield func(uint32, uint64) bool) {
		for id := range d.cols[dim].ids() {
			if !yield(id, d.countOf(dim, id)) {
				return
			}
		}
	}
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

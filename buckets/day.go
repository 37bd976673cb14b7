package buckets

import (
	"iter"
	"maps"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
)

// Other is the value under which a dimension counts the new values that
// arrive once it holds its limit of distinct values (see [Day.Add]). It
// does not count against the limit.
const Other = "(other)"

// Day is one website's aggregates for one local day: a count column per
// [Dim], pageviews per hour, visits, events, and roaring bitmaps of the
// visitor ids seen in the day and in each of its hours.
//
// A day is self-contained: the strings its columns count are held in the
// day's own dictionary, each stored once even when several dimensions count
// it, so they are reclaimed with the day and counted by [Day.SizeBytes].
//
// Visitor ids are only meaningful inside one salt period: Period is the
// first local day of the period the day's visitor ids belong to (with daily
// salts, the day itself).
//
// The zero value is not meant to be used; create days with [NewDay]. A Day
// is not safe for concurrent use; its read-only methods (Count, Counts, Len,
// Visitors, MarshalBinary, ...) may run concurrently with each other.
//
// Invalid arguments never panic: a Dim out of range is ignored by updates and
// reads as empty, an hour out of 0..23 is clamped into it by updates and reads
// as zero.
type Day struct {
	Period Date       // first local day of the salt period of the visitor ids
	Visits uint64     // visits started this day
	Events uint64     // events counted this day
	Hours  [24]uint64 // pageviews per local hour 0..23

	dict dict // the values counted in cols
	cols [NumDims]column
	// high holds the high 32 bits of the counts that do not fit the uint32
	// of their column, keyed by highKey(dim, id). Nil almost always.
	high         map[uint64]uint32
	visitors     *roaring.Bitmap     // visitor ids of the day
	hourVisitors [24]*roaring.Bitmap // visitor ids per hour, allocated on first use
	// optimized reports that the bitmaps are run-optimized and tight, as
	// after Compact or decoding; updates clear it.
	optimized bool
}

// column counts the values of one dimension of a day by their id in the
// day's dictionary. It is in one of three states:
//
//   - empty: m == nil && c == nil;
//   - open: m != nil, value id → low 32 bits of the count;
//   - compacted: m == nil && c != nil, c[:n] the ids ascending and c[n:] the
//     low 32 bits of their counts, n = len(c)/2.
//
// Every id present has a (full) count > 0.
type column struct {
	m map[uint32]uint32
	c []uint32
}

func (c *column) len() int {
	if c.m != nil {
		return len(c.m)
	}
	return len(c.c) / 2
}

// split returns the ids and low counts of a compacted column, of equal
// length.
func (c *column) split() (ids, counts []uint32) {
	n := len(c.c) / 2
	return c.c[:n:n], c.c[n : 2*n : 2*n]
}

// has reports whether the column counts id.
func (c *column) has(id uint32) bool {
	if c.m != nil {
		_, ok := c.m[id]
		return ok
	}
	ids, _ := c.split()
	_, ok := slices.BinarySearch(ids, id)
	return ok
}

func highKey(dim Dim, id uint32) uint64 { return uint64(dim)<<32 | uint64(id) }

// NewDay returns an empty day whose visitor ids belong to the salt period
// starting on period.
func NewDay(period Date) *Day {
	return &Day{Period: period, visitors: roaring.New()}
}

// full returns the full count of id in dim given its low 32 bits.
func (d *Day) full(dim Dim, id uint32, low uint32) uint64 {
	if d.high == nil {
		return uint64(low)
	}
	return uint64(low) | uint64(d.high[highKey(dim, id)])<<32
}

// setHigh records the high 32 bits of the count of id in dim.
func (d *Day) setHigh(dim Dim, id uint32, h uint32) {
	switch {
	case h != 0:
		if d.high == nil {
			d.high = make(map[uint64]uint32)
		}
		d.high[highKey(dim, id)] = h
	case d.high != nil:
		delete(d.high, highKey(dim, id))
	}
}

func addSat(a, b uint64) uint64 {
	s := a + b
	if s < a {
		return math.MaxUint64
	}
	return s
}

// Add counts n more of value in dim and reports whether it counted them
// under [Other] instead. Counts saturate at the largest uint64.
//
// limit bounds the distinct values of dim (limit <= 0: no bound). When dim
// already holds limit distinct values, not counting Other, a value new to
// dim is counted as Other and Add returns true; values already counted keep
// counting. The value Other itself is never refused.
//
// The day keeps its own copy of a new value, never the caller's memory (the
// caller's string may be a slice of a larger buffer). On a compacted day,
// adding to a value already present updates it in place; a new value turns
// the column back into a map.
func (d *Day) Add(dim Dim, value string, n uint64, limit int) (other bool) {
	_, other = d.add(dim, value, n, limit, true)
	return other
}

// AddKept is Add, and returns the day's own copy of value (Other when it
// counted value under Other) when that copy is an allocation of its own,
// added since the day was last compacted: a caller that keeps the value
// elsewhere can keep this one instead of its own, so that one copy is in
// memory, not two. Otherwise (a value of the compacted part, a slice of
// the day's one allocation of values, which would keep all of them alive;
// nothing added) it returns value itself.
func (d *Day) AddKept(dim Dim, value string, n uint64, limit int) (kept string, other bool) {
	id, other := d.add(dim, value, n, limit, true)
	if id < int64(d.dict.packed) {
		return value, other
	}
	return d.dict.values[id], other
}

// add is Add, and returns value's id (-1 for nothing added); clone false
// keeps value as it is, for callers that own it or that seal the
// dictionary (which copies every new value) before returning.
func (d *Day) add(dim Dim, value string, n uint64, limit int, clone bool) (vid int64, other bool) {
	if dim >= NumDims || n == 0 {
		return -1, false
	}
	c := &d.cols[dim]
	id, ok := d.dict.lookup(value)
	if ok && c.m != nil {
		if low, present := c.m[id]; present {
			if d.high == nil && uint64(low)+n <= math.MaxUint32 {
				c.m[id] = low + uint32(n) // the fast path
				return int64(id), false
			}
			d.addID(dim, id, n)
			return int64(id), false
		}
	}
	if !(ok && c.has(id)) { // new to dim
		if limit > 0 && value != Other && d.distinct(dim) >= limit {
			value, other = Other, true
			id, ok = d.dict.lookup(Other)
		}
		if !ok {
			if clone {
				value = strings.Clone(value)
			}
			id = d.dict.add(value)
		}
	}
	d.addID(dim, id, n)
	return int64(id), other
}

// distinct returns the number of values of dim, not counting Other.
func (d *Day) distinct(dim Dim) int {
	c := &d.cols[dim]
	n := c.len()
	if id, ok := d.dict.lookup(Other); ok && c.has(id) {
		n--
	}
	return n
}

// addID counts n more of value id in dim.
func (d *Day) addID(dim Dim, id uint32, n uint64) {
	c := &d.cols[dim]
	if c.m == nil {
		if c.c != nil {
			ids, counts := c.split()
			if i, ok := slices.BinarySearch(ids, id); ok {
				v := addSat(d.full(dim, id, counts[i]), n)
				counts[i] = uint32(v)
				d.setHigh(dim, id, uint32(v>>32))
				return
			}
			c.thaw(1)
		} else {
			c.m = make(map[uint32]uint32)
		}
	}
	low := c.m[id]
	if d.high == nil && uint64(low)+n <= math.MaxUint32 {
		c.m[id] = low + uint32(n)
		return
	}
	v := addSat(d.full(dim, id, low), n)
	c.m[id] = uint32(v)
	d.setHigh(dim, id, uint32(v>>32))
}

// thaw turns a compacted column back into a map with room for extra more
// values.
func (c *column) thaw(extra int) {
	ids, counts := c.split()
	m := make(map[uint32]uint32, len(ids)+extra)
	for i, id := range ids {
		m[id] = counts[i]
	}
	c.m, c.c = m, nil
}

// Count returns the count of value in dim, 0 if none.
func (d *Day) Count(dim Dim, value string) uint64 {
	if dim >= NumDims {
		return 0
	}
	id, ok := d.dict.lookup(value)
	if !ok {
		return 0
	}
	c := &d.cols[dim]
	if c.m != nil {
		low, ok := c.m[id]
		if !ok {
			return 0
		}
		return d.full(dim, id, low)
	}
	ids, counts := c.split()
	if i, ok := slices.BinarySearch(ids, id); ok {
		return d.full(dim, id, counts[i])
	}
	return 0
}

// Counts returns an iterator over the (value, count) pairs of dim, all
// counts > 0, in no particular order (ascending values once compacted). The
// strings are the day's own and immutable: they may be kept (keeping one
// keeps the day's strings in memory). The day must not be changed during the
// iteration.
func (d *Day) Counts(dim Dim) iter.Seq2[string, uint64] {
	return func(yield func(string, uint64) bool) {
		if dim >= NumDims {
			return
		}
		values := d.dict.values
		c := &d.cols[dim]
		if c.m != nil {
			for id, low := range c.m {
				if !yield(values[id], d.full(dim, id, low)) {
					return
				}
			}
			return
		}
		ids, counts := c.split()
		for i, id := range ids {
			if !yield(values[id], d.full(dim, id, counts[i])) {
				return
			}
		}
	}
}

// Len returns the number of distinct values counted in dim, [Other]
// included.
func (d *Day) Len(dim Dim) int {
	if dim >= NumDims {
		return 0
	}
	return d.cols[dim].len()
}

func clampHour(hour int) int {
	return min(max(hour, 0), 23)
}

// AddPageview counts one pageview in hour (0..23; out of range is clamped).
func (d *Day) AddPageview(hour int) {
	d.Hours[clampHour(hour)]++
}

// Pageviews returns the pageviews of the day, the sum of Hours.
func (d *Day) Pageviews() uint64 {
	var n uint64
	for _, v := range d.Hours {
		n += v
	}
	return n
}

// AddVisitor records visitor id in the day's bitmap and in the bitmap of
// hour (0..23; out of range is clamped). It reports whether the visitor is
// new to the day (the caller then counts the per-visitor dimensions) and
// whether it is new to the hour.
func (d *Day) AddVisitor(hour int, id uint32) (newToDay, newToHour bool) {
	if d.visitors == nil {
		d.visitors = roaring.New()
	}
	h := clampHour(hour)
	hb := d.hourVisitors[h]
	if hb == nil {
		hb = roaring.New()
		d.hourVisitors[h] = hb
	}
	newToDay = d.visitors.CheckedAdd(id)
	newToHour = hb.CheckedAdd(id)
	if newToDay || newToHour {
		d.optimized = false
	}
	return newToDay, newToHour
}

// HasVisitor reports whether visitor id was seen this day.
func (d *Day) HasVisitor(id uint32) bool {
	return d.visitors != nil && d.visitors.Contains(id)
}

// Visitors returns the number of unique visitors of the day.
func (d *Day) Visitors() uint64 {
	if d.visitors == nil {
		return 0
	}
	return d.visitors.GetCardinality()
}

// HourVisitors returns the number of unique visitors of hour (0..23; 0 for
// an hour out of range).
func (d *Day) HourVisitors(hour int) uint64 {
	if hour < 0 || hour > 23 || d.hourVisitors[hour] == nil {
		return 0
	}
	return d.hourVisitors[hour].GetCardinality()
}

// VisitorBitmap returns the bitmap of the day's visitor ids. It is owned by
// the day and valid until the day's next update: callers must not modify it
// (clone it to keep or change it).
func (d *Day) VisitorBitmap() *roaring.Bitmap {
	if d.visitors == nil {
		return roaring.New()
	}
	return d.visitors
}

// MaxVisitor returns the largest visitor id of the day, and false if the day
// has no visitor.
func (d *Day) MaxVisitor() (uint32, bool) {
	if d.visitors == nil || d.visitors.IsEmpty() {
		return 0, false
	}
	return d.visitors.Maximum(), true
}

// Compact shrinks a day that is (probably) closed: the dictionary is sorted
// and packed into one allocation (dropping its hash index), the count maps
// become sorted id and count slices, the bitmaps are run-optimized and
// trimmed, and empty hour bitmaps are dropped. Results are identical before
// and after, and the day still accepts updates (a column given a new value
// becomes a map again). Compacting a compacted day does nothing.
func (d *Day) Compact() {
	perm := d.dict.seal()
	for i := range d.cols {
		d.cols[i].compact(perm)
	}
	if len(d.high) == 0 {
		d.high = nil
	} else if perm != nil {
		high := make(map[uint64]uint32, len(d.high))
		for key, h := range d.high {
			high[highKey(Dim(key>>32), perm[uint32(key)])] = h
		}
		d.high = high
	}
	if d.optimized {
		return
	}
	d.visitors = tighten(d.visitors)
	if d.visitors == nil {
		d.visitors = roaring.New()
	}
	for h, bm := range d.hourVisitors {
		d.hourVisitors[h] = tighten(bm)
	}
	d.optimized = true
}

// tighten returns bm run-optimized and without spare capacity, or nil if it
// is empty.
func tighten(bm *roaring.Bitmap) *roaring.Bitmap {
	if bm == nil || bm.IsEmpty() {
		return nil
	}
	bm.RunOptimize()
	return bm.Clone() // Clone allocates every container at its exact size
}

// compact turns the column into sorted slices, renumbering its ids by perm
// (old id → new id) if perm is not nil.
func (c *column) compact(perm []uint32) {
	if c.m == nil && (c.c == nil || perm == nil) {
		return
	}
	// Sort id<<32|count pairs: one slice, one sort.
	var pairs []uint64
	if c.m != nil {
		pairs = make([]uint64, 0, len(c.m))
		for id, low := range c.m {
			pairs = append(pairs, uint64(remap(perm, id))<<32|uint64(low))
		}
	} else {
		ids, counts := c.split()
		pairs = make([]uint64, len(ids))
		for i, id := range ids {
			pairs[i] = uint64(remap(perm, id))<<32 | uint64(counts[i])
		}
	}
	c.m, c.c = nil, nil
	n := len(pairs)
	if n == 0 {
		return
	}
	slices.Sort(pairs)
	col := make([]uint32, 2*n)
	for i, p := range pairs {
		col[i], col[n+i] = uint32(p>>32), uint32(p)
	}
	c.c = col
}

func remap(perm []uint32, id uint32) uint32 {
	if perm == nil {
		return id
	}
	return perm[id]
}

// Clone returns a deep copy of d. The copy shares d's strings, which are
// immutable.
func (d *Day) Clone() *Day {
	n := *d
	n.dict = d.dict.clone()
	for i := range n.cols {
		c := &n.cols[i]
		if c.m != nil {
			c.m = maps.Clone(c.m)
		}
		c.c = slices.Clone(c.c)
	}
	if d.high != nil {
		n.high = maps.Clone(d.high)
	}
	if d.visitors != nil {
		n.visitors = d.visitors.Clone()
	}
	for h, bm := range d.hourVisitors {
		if bm != nil {
			n.hourVisitors[h] = bm.Clone()
		}
	}
	return &n
}

// Merge adds o's counts, hours, visits and events into d and adds o's
// visitors to d's bitmaps. No limit applies: d may end up with as many
// values per dimension as d and o together. d keeps its Period: merging
// bitmaps is only meaningful when both days belong to the same salt period
// (with other periods, counts and sums stay right but unique visitors do
// not). o is not changed; o may be d.
func (d *Day) Merge(o *Day) {
	if o == nil {
		return
	}
	if o == d {
		o = o.Clone()
	}
	d.Visits = addSat(d.Visits, o.Visits)
	d.Events = addSat(d.Events, o.Events)
	for h, v := range o.Hours {
		d.Hours[h] = addSat(d.Hours[h], v)
	}
	for dim := range NumDims {
		if c := &d.cols[dim]; c.m == nil && c.c != nil && o.cols[dim].len() > 0 {
			c.thaw(o.cols[dim].len())
		}
		for v, n := range o.Counts(dim) {
			d.Add(dim, v, n, 0)
		}
	}
	if o.visitors != nil && !o.visitors.IsEmpty() {
		if d.visitors == nil {
			d.visitors = roaring.New()
		}
		d.visitors.Or(o.visitors)
		d.optimized = false
	}
	for h, ob := range o.hourVisitors {
		if ob == nil || ob.IsEmpty() {
			continue
		}
		if d.hourVisitors[h] == nil {
			d.hourVisitors[h] = ob.Clone()
		} else {
			d.hourVisitors[h].Or(ob)
		}
		d.optimized = false
	}
}

// Equal reports whether d and o have the same contents: period, visits,
// events, hours, counts and visitor ids, whatever their representation
// (open, compacted or decoded).
func (d *Day) Equal(o *Day) bool {
	if d == o {
		return true
	}
	if d == nil || o == nil {
		return false
	}
	if d.Period != o.Period || d.Visits != o.Visits || d.Events != o.Events || d.Hours != o.Hours {
		return false
	}
	for dim := range NumDims {
		if d.Len(dim) != o.Len(dim) {
			return false
		}
		for v, n := range d.Counts(dim) {
			if o.Count(dim, v) != n {
				return false
			}
		}
	}
	if !bitmapsEqual(d.visitors, o.visitors) {
		return false
	}
	for h := range d.hourVisitors {
		if !bitmapsEqual(d.hourVisitors[h], o.hourVisitors[h]) {
			return false
		}
	}
	return true
}

// bitmapsEqual compares the sets of a and b, nil being empty, whatever their
// containers (roaring's Equals compares run containers run by run).
func bitmapsEqual(a, b *roaring.Bitmap) bool {
	var na, nb uint64
	if a != nil {
		na = a.GetCardinality()
	}
	if b != nil {
		nb = b.GetCardinality()
	}
	if na != nb {
		return false
	}
	return na == 0 || a.AndCardinality(b) == na
}

// SizeBytes returns the approximate heap size of d in bytes, for memory
// budgets: its dictionary (the strings and their index), columns and
// bitmaps. A clone counts the strings it shares with d again.
func (d *Day) SizeBytes() int {
	n := int(unsafe.Sizeof(*d)) + d.dict.sizeBytes()
	for i := range d.cols {
		c := &d.cols[i]
		if c.m != nil {
			n += mapBytes(len(c.m), 8)
		}
		n += 4 * cap(c.c)
	}
	if d.high != nil {
		n += mapBytes(len(d.high), 12)
	}
	n += bitmapBytes(d.visitors)
	for _, bm := range d.hourVisitors {
		n += bitmapBytes(bm)
	}
	return n
}

// mapBytes estimates the heap size of a map of n entries of slot bytes:
// groups of 8 slots with a control word, at a load factor of about 7/8.
func mapBytes(n, slot int) int {
	return 48 + (n*8/7+1)*(slot+1)
}

func bitmapBytes(bm *roaring.Bitmap) int {
	if bm == nil {
		return 0
	}
	// The Bitmap and its three slices, plus per container an interface,
	// a key, a copy-on-write flag and the container header.
	stats := bm.Stats()
	return 96 + int(bm.GetSizeInBytes()) + int(stats.Containers)*(16+1+24)
}

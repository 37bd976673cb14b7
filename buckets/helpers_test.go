package buckets

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/google/go-cmp/cmp"
)

// dayDump is the observable content of a Day, for cmp.Diff.
type dayDump struct {
	Period       Date
	Visits       uint64
	Events       uint64
	Hours        [24]uint64
	Counts       map[Dim]map[string]uint64 // only non-empty dims
	Visitors     []uint32
	HourVisitors map[int][]uint32 // only non-empty hours
}

func dump(d *Day) dayDump {
	out := dayDump{
		Period:       d.Period,
		Visits:       d.Visits,
		Events:       d.Events,
		Hours:        d.Hours,
		Counts:       map[Dim]map[string]uint64{},
		HourVisitors: map[int][]uint32{},
	}
	for dim := range NumDims {
		if d.Len(dim) == 0 {
			continue
		}
		m := map[string]uint64{}
		for v, n := range d.Counts(dim) {
			m[v] = n
		}
		out.Counts[dim] = m
	}
	out.Visitors = d.VisitorBitmap().ToArray()
	for h := range 24 {
		if bm := d.hourVisitors[h]; bm != nil && !bm.IsEmpty() {
			out.HourVisitors[h] = bm.ToArray()
		}
	}
	return out
}

// model is a naive Day.
type model struct {
	dayDump
	visitors     map[uint32]bool
	hourVisitors [24]map[uint32]bool
}

func newModel(period Date) *model {
	m := &model{visitors: map[uint32]bool{}}
	m.Period = period
	m.Counts = map[Dim]map[string]uint64{}
	for h := range m.hourVisitors {
		m.hourVisitors[h] = map[uint32]bool{}
	}
	return m
}

// add is Day.Add, as SPEC §13 words it.
func (m *model) add(dim Dim, v string, n uint64, limit int) (other bool) {
	if dim >= NumDims || n == 0 {
		return false
	}
	c := m.Counts[dim]
	if c == nil {
		c = map[string]uint64{}
		m.Counts[dim] = c
	}
	if _, seen := c[v]; !seen && limit > 0 && v != Other {
		distinct := len(c)
		if _, ok := c[Other]; ok {
			distinct--
		}
		if distinct >= limit {
			v, other = Other, true
		}
	}
	c[v] = addSat(c[v], n)
	return other
}

func (m *model) addVisitor(hour int, id uint32) (bool, bool) {
	h := clampHour(hour)
	newDay, newHour := !m.visitors[id], !m.hourVisitors[h][id]
	m.visitors[id] = true
	m.hourVisitors[h][id] = true
	return newDay, newHour
}

func (m *model) dump() dayDump {
	out := m.dayDump
	out.Counts = map[Dim]map[string]uint64{}
	for dim, c := range m.Counts {
		if len(c) > 0 {
			out.Counts[dim] = c
		}
	}
	out.Visitors = sortedKeys(m.visitors)
	out.HourVisitors = map[int][]uint32{}
	for h, s := range m.hourVisitors {
		if len(s) > 0 {
			out.HourVisitors[h] = sortedKeys(s)
		}
	}
	return out
}

func sortedKeys(s map[uint32]bool) []uint32 {
	out := []uint32{}
	for k := range s {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// val returns the value numbered i of the tests' vocabulary: "" for 0,
// Other for 1, paths sharing prefixes for the others.
func val(i uint32) string {
	switch i {
	case 0:
		return ""
	case 1:
		return Other
	}
	return "/" + strings.Repeat("a", int(i%5)) + "/" + strconv.FormatUint(uint64(i), 10)
}

// randomOps applies n random operations to d and m alike, with values
// val(0..maxID-1), visitor ids below 4*maxID, and now and then a limit on
// the values of a dimension.
func randomOps(t *testing.T, r *rand.Rand, d *Day, m *model, n int, maxID uint32) {
	t.Helper()
	for range n {
		switch op := r.IntN(100); {
		case op < 50:
			dim := Dim(r.IntN(int(NumDims)))
			v := val(r.Uint32N(maxID))
			n := uint64(1 + r.IntN(3))
			if r.IntN(500) == 0 {
				n = 1<<32 + uint64(r.IntN(10)) // a count beyond uint32
			}
			limit := 0
			if r.IntN(4) == 0 {
				limit = r.IntN(20) - 2
			}
			got := d.Add(dim, v, n, limit)
			if want := m.add(dim, v, n, limit); got != want {
				t.Fatalf("Add(%v, %q, %d, %d) = %v, want %v", dim, v, n, limit, got, want)
			}
		case op < 70:
			h := r.IntN(26) - 1 // includes out-of-range hours
			d.AddPageview(h)
			m.Hours[clampHour(h)]++
		case op < 90:
			h, id := r.IntN(26)-1, r.Uint32N(maxID*4)
			gotDay, gotHour := d.AddVisitor(h, id)
			wantDay, wantHour := m.addVisitor(h, id)
			if gotDay != wantDay || gotHour != wantHour {
				t.Fatalf("AddVisitor(%d, %d) = %v, %v, want %v, %v", h, id, gotDay, gotHour, wantDay, wantHour)
			}
		case op < 95:
			d.Visits++
			m.Visits++
		case op < 97:
			d.Events++
			m.Events++
		case op < 98:
			d.Compact()
		default:
			b, err := d.MarshalBinary()
			if err != nil {
				t.Fatalf("MarshalBinary: %v", err)
			}
			nd := &Day{}
			if err := nd.UnmarshalBinary(b); err != nil {
				t.Fatalf("UnmarshalBinary: %v", err)
			}
			*d = *nd
		}
	}
}

func checkDay(t *testing.T, want dayDump, d *Day) {
	t.Helper()
	if diff := cmp.Diff(want, dump(d)); diff != "" {
		t.Fatalf("mismatch (-want +got):\n%s", diff)
	}
}

func bitmapOf(ids ...uint32) *roaring.Bitmap { return roaring.BitmapOf(ids...) }

// intern returns the id of v in s, adding it if it is new: how version 1
// stores built their tables.
func (s *Strings) intern(v string) uint32 {
	if id, ok := s.ids[v]; ok {
		return id
	}
	return s.add(strings.Clone(v))
}

// appendChunk appends the version 1 chunk of the strings [from, Len()).
func (s *Strings) appendChunk(b []byte, from uint32) []byte {
	b = append(b, stringsVersion)
	b = binary.AppendUvarint(b, uint64(from))
	b = binary.AppendUvarint(b, uint64(len(s.values)-int(from)))
	for _, v := range s.values[from:] {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// appendV1 appends d in day format version 1, interning its values in s as
// stores did before days had their own dictionary.
func appendV1(b []byte, d *Day, s *Strings) []byte {
	b = append(b, dayVersion1)
	b = binary.AppendVarint(b, int64(d.Period))
	b = binary.AppendUvarint(b, d.Visits)
	b = binary.AppendUvarint(b, d.Events)
	for _, v := range d.Hours {
		b = binary.AppendUvarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(NumDims))
	for dim := range NumDims {
		counts := map[uint32]uint64{}
		for v, n := range d.Counts(dim) {
			counts[s.intern(v)] = n
		}
		ids := slices.Sorted(maps.Keys(counts))
		b = appendIDs(b, len(ids), func(i int) uint32 { return ids[i] })
		for _, id := range ids {
			b = binary.AppendUvarint(b, counts[id])
		}
	}
	// The bitmaps are encoded as in version 2: take them from there.
	v2, err := d.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return append(b, v2[bitmapsOffset(v2):]...)
}

// bitmapsOffset returns the offset of the day bitmap in a version 2
// encoding.
func bitmapsOffset(b []byte) int {
	r := dayDecoder{b: b[1:]}
	var d Day
	_, n := binary.Varint(r.b)
	r.b = r.b[n:]
	for range 2 + 24 {
		if _, err := r.uvarint("header"); err != nil {
			panic(err)
		}
	}
	if err := r.dict(&d.dict); err != nil {
		panic(err)
	}
	k, _ := r.uvarint("dims")
	for dim := range Dim(k) {
		if err := r.column(&d, dim); err != nil {
			panic(err)
		}
	}
	return len(b) - len(r.b)
}

package buckets

import (
	"math/rand/v2"
	"slices"
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
	Counts       map[Dim]map[uint32]uint64 // only non-empty dims
	Visitors     []uint32
	HourVisitors map[int][]uint32 // only non-empty hours
}

func dump(d *Day) dayDump {
	out := dayDump{
		Period:       d.Period,
		Visits:       d.Visits,
		Events:       d.Events,
		Hours:        d.Hours,
		Counts:       map[Dim]map[uint32]uint64{},
		HourVisitors: map[int][]uint32{},
	}
	for dim := range NumDims {
		if d.Len(dim) == 0 {
			continue
		}
		m := map[uint32]uint64{}
		for id, v := range d.Counts(dim) {
			m[id] = v
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
	m.Counts = map[Dim]map[uint32]uint64{}
	for h := range m.hourVisitors {
		m.hourVisitors[h] = map[uint32]bool{}
	}
	return m
}

func (m *model) add(dim Dim, id uint32, n uint64) {
	if dim >= NumDims || n == 0 {
		return
	}
	if m.Counts[dim] == nil {
		m.Counts[dim] = map[uint32]uint64{}
	}
	m.Counts[dim][id] = addSat(m.Counts[dim][id], n)
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
	out.Counts = map[Dim]map[uint32]uint64{}
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

// randomOps applies n random operations to d and m alike, with ids below
// maxID, and returns the results of AddVisitor that disagree (none
// expected).
func randomOps(t *testing.T, r *rand.Rand, d *Day, m *model, n int, maxID uint32) {
	t.Helper()
	for range n {
		switch op := r.IntN(100); {
		case op < 50:
			dim := Dim(r.IntN(int(NumDims)))
			id := r.Uint32N(maxID)
			v := uint64(1 + r.IntN(3))
			if r.IntN(500) == 0 {
				v = 1<<32 + uint64(r.IntN(10)) // a count beyond uint32
			}
			d.Add(dim, id, v)
			m.add(dim, id, v)
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

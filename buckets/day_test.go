package buckets

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDayAddCount(t *testing.T) {
	type add struct {
		dim Dim
		id  uint32
		n   uint64
	}
	tests := []struct {
		name string
		adds []add
		want map[Dim]map[uint32]uint64
	}{
		{name: "empty", want: map[Dim]map[uint32]uint64{}},
		{
			name: "one dim",
			adds: []add{{Page, 3, 1}, {Page, 1, 2}, {Page, 3, 4}},
			want: map[Dim]map[uint32]uint64{Page: {1: 2, 3: 5}},
		},
		{
			name: "dims are separate",
			adds: []add{{Page, 7, 1}, {Referrer, 7, 2}, {City, 7, 3}},
			want: map[Dim]map[uint32]uint64{Page: {7: 1}, Referrer: {7: 2}, City: {7: 3}},
		},
		{
			name: "zero adds nothing",
			adds: []add{{Page, 1, 0}, {Country, 2, 1}, {Country, 2, 0}},
			want: map[Dim]map[uint32]uint64{Country: {2: 1}},
		},
		{
			name: "invalid dim ignored",
			adds: []add{{NumDims, 1, 1}, {255, 1, 1}},
			want: map[Dim]map[uint32]uint64{},
		},
		{
			name: "extreme ids",
			adds: []add{{Event, 0, 1}, {Event, math.MaxUint32, 1}},
			want: map[Dim]map[uint32]uint64{Event: {0: 1, math.MaxUint32: 1}},
		},
		{
			name: "counts beyond uint32",
			adds: []add{{Page, 1, math.MaxUint32}, {Page, 1, 1}, {Page, 2, 1 << 40}, {Page, 3, math.MaxUint32}},
			want: map[Dim]map[uint32]uint64{Page: {1: 1 << 32, 2: 1 << 40, 3: math.MaxUint32}},
		},
		{
			name: "saturates",
			adds: []add{{Page, 1, math.MaxUint64 - 1}, {Page, 1, 5}},
			want: map[Dim]map[uint32]uint64{Page: {1: math.MaxUint64}},
		},
	}
	for _, tt := range tests {
		for _, mode := range []string{"open", "compacted", "compacted midway", "decoded"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				d := NewDay(0)
				for i, a := range tt.adds {
					if mode == "compacted midway" && i == len(tt.adds)/2 {
						d.Compact()
					}
					d.Add(a.dim, a.id, a.n)
				}
				switch mode {
				case "compacted":
					d.Compact()
				case "decoded":
					d = roundTrip(t, d)
				}
				if diff := cmp.Diff(tt.want, dump(d).Counts); diff != "" {
					t.Errorf("Counts mismatch (-want +got):\n%s", diff)
				}
				for dim := range NumDims + 1 {
					if got, want := d.Len(dim), len(tt.want[dim]); got != want {
						t.Errorf("Len(%v) = %d, want %d", dim, got, want)
					}
					for id, want := range tt.want[dim] {
						if got := d.Count(dim, id); got != want {
							t.Errorf("Count(%v, %d) = %d, want %d", dim, id, got, want)
						}
					}
					if got := d.Count(dim, 12345); got != 0 {
						t.Errorf("Count(%v, 12345) = %d, want 0", dim, got)
					}
				}
			})
		}
	}
}

func TestDayCountsStop(t *testing.T) {
	d := NewDay(0)
	for id := range uint32(10) {
		d.Add(Page, id, 1)
	}
	for _, compact := range []bool{false, true} {
		if compact {
			d.Compact()
		}
		n := 0
		for range d.Counts(Page) {
			n++
			if n == 3 {
				break
			}
		}
		if n != 3 {
			t.Errorf("compact=%v: iterated %d times after break at 3", compact, n)
		}
	}
}

func TestDayPageviews(t *testing.T) {
	d := NewDay(0)
	for _, h := range []int{0, 0, 5, 23, -1, 24, 1000, math.MinInt} {
		d.AddPageview(h)
	}
	want := [24]uint64{0: 4, 5: 1, 23: 3}
	if diff := cmp.Diff(want, d.Hours); diff != "" {
		t.Errorf("Hours mismatch (-want +got):\n%s", diff)
	}
	if got := d.Pageviews(); got != 8 {
		t.Errorf("Pageviews() = %d, want 8", got)
	}
}

func TestDayAddVisitor(t *testing.T) {
	type call struct {
		hour              int
		id                uint32
		newToDay, newHour bool
	}
	d := NewDay(0)
	calls := []call{
		{hour: 10, id: 5, newToDay: true, newHour: true},
		{hour: 10, id: 5},
		{hour: 11, id: 5, newHour: true},
		{hour: 11, id: 6, newToDay: true, newHour: true},
		{hour: -3, id: 6, newHour: true}, // clamped to hour 0
		{hour: 0, id: 6},
		{hour: 99, id: 7, newToDay: true, newHour: true}, // clamped to 23
		{hour: 23, id: 7},
		{hour: 1, id: math.MaxUint32, newToDay: true, newHour: true},
	}
	for i, c := range calls {
		if i == 5 {
			d.Compact() // still works after compaction
		}
		newToDay, newHour := d.AddVisitor(c.hour, c.id)
		if newToDay != c.newToDay || newHour != c.newHour {
			t.Errorf("call %d: AddVisitor(%d, %d) = %v, %v; want %v, %v", i, c.hour, c.id, newToDay, newHour, c.newToDay, c.newHour)
		}
	}
	if got := d.Visitors(); got != 4 {
		t.Errorf("Visitors() = %d, want 4", got)
	}
	wantHours := map[int]uint64{0: 1, 1: 1, 10: 1, 11: 2, 23: 1}
	for h := -1; h <= 24; h++ {
		if got := d.HourVisitors(h); got != wantHours[h] {
			t.Errorf("HourVisitors(%d) = %d, want %d", h, got, wantHours[h])
		}
	}
	for id, want := range map[uint32]bool{5: true, 6: true, 7: true, math.MaxUint32: true, 0: false, 8: false} {
		if got := d.HasVisitor(id); got != want {
			t.Errorf("HasVisitor(%d) = %v, want %v", id, got, want)
		}
	}
	if max, ok := d.MaxVisitor(); !ok || max != math.MaxUint32 {
		t.Errorf("MaxVisitor() = %d, %v; want %d, true", max, ok, uint32(math.MaxUint32))
	}
	if got := d.VisitorBitmap().GetCardinality(); got != 4 {
		t.Errorf("VisitorBitmap().GetCardinality() = %d, want 4", got)
	}

	empty := NewDay(0)
	if _, ok := empty.MaxVisitor(); ok {
		t.Error("MaxVisitor() of an empty day: ok = true")
	}
	var zero Day // not the intended use, but must not panic
	if zero.Visitors() != 0 || zero.HasVisitor(1) || zero.VisitorBitmap().GetCardinality() != 0 {
		t.Error("zero Day has visitors")
	}
	if newToDay, _ := zero.AddVisitor(3, 1); !newToDay || zero.Visitors() != 1 {
		t.Error("zero Day: AddVisitor did not record")
	}
}

// TestDayCompactEquivalence applies the same random operations to a day that
// stays open, one compacted (and re-thawed) along the way, one round-tripped
// through its encoding along the way, and a naive model: all must agree.
func TestDayCompactEquivalence(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 42))
		maxID := uint32(1 + r.IntN(2000))
		n := 1 + r.IntN(5000)

		m := newModel(Date(seed))
		d := NewDay(Date(seed))
		randomOps(t, r, d, m, n, maxID) // includes Compact and encode/decode
		want := m.dump()
		checkDay(t, want, d)

		open := d.Clone()
		d.Compact()
		checkDay(t, want, d)
		if !d.Equal(open) || !open.Equal(d) {
			t.Fatalf("seed %d: compacted day not Equal to the open one", seed)
		}
		d.Compact() // twice is harmless
		checkDay(t, want, d)

		dec := roundTrip(t, open)
		checkDay(t, want, dec)
		if !dec.Equal(d) {
			t.Fatalf("seed %d: decoded day not Equal", seed)
		}

		// Both encodings are identical whatever the representation.
		a, _ := open.MarshalBinary()
		b, _ := d.MarshalBinary()
		c, _ := dec.MarshalBinary()
		if string(a) != string(b) || string(b) != string(c) {
			t.Fatalf("seed %d: encodings of the open, compacted and decoded day differ", seed)
		}

		// More updates after compaction keep them equivalent.
		r2 := rand.New(rand.NewPCG(seed, 43))
		randomOps(t, r2, d, m, 500, maxID)
		checkDay(t, m.dump(), d)
	}
}

func TestDayClone(t *testing.T) {
	d := NewDay(3)
	d.Add(Page, 1, 1)
	d.AddVisitor(2, 9)
	d.AddPageview(2)
	d.Visits = 1
	for _, compact := range []bool{false, true} {
		if compact {
			d.Compact()
		}
		want := dump(d)
		c := d.Clone()
		checkDay(t, want, c)
		c.Add(Page, 1, 5)
		c.Add(Page, 2, 5)
		c.AddVisitor(2, 10)
		c.AddVisitor(3, 11)
		c.AddPageview(4)
		c.Visits++
		checkDay(t, want, d) // the original is untouched
	}
}

func TestDayMerge(t *testing.T) {
	build := func(period Date, base uint32) *Day {
		d := NewDay(period)
		for i := range uint32(50) {
			d.Add(Page, base+i, uint64(i+1))
			d.Add(Browser, i%3, 1)
			d.AddVisitor(int(i%24), base+i)
			d.AddPageview(int(i % 24))
		}
		d.Add(Event, base, 1<<33)
		d.Visits, d.Events = uint64(base), 1
		return d
	}
	for _, tt := range []struct {
		name            string
		compactA, compB bool
	}{
		{name: "open+open"},
		{name: "compacted+compacted", compactA: true, compB: true},
		{name: "open+compacted", compB: true},
		{name: "compacted+open", compactA: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := build(7, 0), build(7, 25)
			m := newModel(7)
			for _, d := range []*Day{a, b} {
				for dim := range NumDims {
					for id, v := range d.Counts(dim) {
						m.add(dim, id, v)
					}
				}
				for h := range 24 {
					m.Hours[h] += d.Hours[h]
					if bm := d.hourVisitors[h]; bm != nil {
						for _, id := range bm.ToArray() {
							m.addVisitor(h, id)
						}
					}
				}
				m.Visits += d.Visits
				m.Events += d.Events
			}
			if tt.compactA {
				a.Compact()
			}
			if tt.compB {
				b.Compact()
			}
			wantB := dump(b)
			a.Merge(b)
			checkDay(t, m.dump(), a)
			checkDay(t, wantB, b) // o is unchanged
			a.Merge(nil)
			checkDay(t, m.dump(), a)
			a.Compact()
			checkDay(t, m.dump(), a)
		})
	}
	t.Run("self", func(t *testing.T) {
		a := build(1, 0)
		want := dump(a)
		for dim, c := range want.Counts {
			for id := range c {
				want.Counts[dim][id] *= 2
			}
		}
		for h := range want.Hours {
			want.Hours[h] *= 2
		}
		want.Visits *= 2
		want.Events *= 2
		a.Merge(a)
		checkDay(t, want, a)
	})
}

func TestDaySizeBytes(t *testing.T) {
	d := NewDay(0)
	empty := d.SizeBytes()
	for i := range uint32(10000) {
		d.Add(Page, i, 1)
		d.AddVisitor(int(i%24), i*3)
	}
	open := d.SizeBytes()
	d.Compact()
	compacted := d.SizeBytes()
	t.Logf("SizeBytes: empty %d, open %d, compacted %d", empty, open, compacted)
	if !(empty < compacted && compacted < open) {
		t.Errorf("SizeBytes: empty %d, open %d, compacted %d; want empty < compacted < open", empty, open, compacted)
	}
}

func roundTrip(t testing.TB, d *Day) *Day {
	t.Helper()
	b, err := d.MarshalBinary()
	if err != nil {
		t.Fatalf("MarshalBinary: %v", err)
	}
	var out Day
	if err := out.UnmarshalBinary(b); err != nil {
		t.Fatalf("UnmarshalBinary: %v", err)
	}
	return &out
}

// TestViews covers view.go (Strings.Values, Day.VisitorsOnly).
func TestViews(t *testing.T) {
	var s Strings
	s.Intern("a")
	s.Intern("b")
	view := s.Values()
	s.Intern("c")
	if diff := cmp.Diff([]string{"a", "b"}, view); diff != "" {
		t.Errorf("Values() view mismatch (-want +got):\n%s", diff)
	}

	d := NewDay(4)
	d.Add(Page, 1, 1)
	d.AddVisitor(3, 9)
	v := d.VisitorsOnly()
	d.AddVisitor(3, 10)
	if got := UniqueVisitors(v); got != 1 || v.Period != 4 || v.Len(Page) != 0 {
		t.Errorf("VisitorsOnly: %d visitors, period %v, %d pages; want 1, 4, 0", got, v.Period, v.Len(Page))
	}
}

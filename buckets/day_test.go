package buckets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func TestDayAddCount(t *testing.T) {
	type add struct {
		dim   Dim
		value string
		n     uint64
	}
	tests := []struct {
		name string
		adds []add
		want map[Dim]map[string]uint64
	}{
		{name: "empty", want: map[Dim]map[string]uint64{}},
		{
			name: "one dim",
			adds: []add{{Page, "/b", 1}, {Page, "/a", 2}, {Page, "/b", 4}},
			want: map[Dim]map[string]uint64{Page: {"/a": 2, "/b": 5}},
		},
		{
			name: "dims are separate",
			adds: []add{{Page, "x", 1}, {Referrer, "x", 2}, {City, "x", 3}},
			want: map[Dim]map[string]uint64{Page: {"x": 1}, Referrer: {"x": 2}, City: {"x": 3}},
		},
		{
			name: "zero adds nothing",
			adds: []add{{Page, "/", 0}, {Country, "DE", 1}, {Country, "DE", 0}},
			want: map[Dim]map[string]uint64{Country: {"DE": 1}},
		},
		{
			name: "invalid dim ignored",
			adds: []add{{NumDims, "/", 1}, {255, "/", 1}},
			want: map[Dim]map[string]uint64{},
		},
		{
			name: "empty and odd strings",
			adds: []add{{Referrer, "", 1}, {Event, "\x00\xff", 1}, {Event, "é", 2}, {Referrer, "", 1}},
			want: map[Dim]map[string]uint64{Referrer: {"": 2}, Event: {"\x00\xff": 1, "é": 2}},
		},
		{
			name: "counts beyond uint32",
			adds: []add{{Page, "1", math.MaxUint32}, {Page, "1", 1}, {Page, "2", 1 << 40}, {Page, "3", math.MaxUint32}},
			want: map[Dim]map[string]uint64{Page: {"1": 1 << 32, "2": 1 << 40, "3": math.MaxUint32}},
		},
		{
			name: "saturates",
			adds: []add{{Page, "1", math.MaxUint64 - 1}, {Page, "1", 5}},
			want: map[Dim]map[string]uint64{Page: {"1": math.MaxUint64}},
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
					if other := d.Add(a.dim, a.value, a.n, 0); other {
						t.Errorf("Add(%v, %q, %d, 0) = true, want false", a.dim, a.value, a.n)
					}
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
					for v, want := range tt.want[dim] {
						if got := d.Count(dim, v); got != want {
							t.Errorf("Count(%v, %q) = %d, want %d", dim, v, got, want)
						}
					}
					if got := d.Count(dim, "/missing"); got != 0 {
						t.Errorf("Count(%v, /missing) = %d, want 0", dim, got)
					}
				}
			})
		}
	}
}

func TestDayLimit(t *testing.T) {
	type add struct {
		dim       Dim
		value     string
		n         uint64
		limit     int
		wantOther bool
	}
	tests := []struct {
		name string
		adds []add
		want map[Dim]map[string]uint64
	}{
		{
			name: "limit reached exactly",
			adds: []add{
				{dim: Page, value: "/a", n: 1, limit: 2},
				{dim: Page, value: "/b", n: 1, limit: 2}, // the second value: still counted
				{dim: Page, value: "/c", n: 4, limit: 2, wantOther: true},
				{dim: Page, value: "/a", n: 2, limit: 2}, // known values keep counting
				{dim: Page, value: "/d", n: 1, limit: 2, wantOther: true},
			},
			want: map[Dim]map[string]uint64{Page: {"/a": 3, "/b": 1, Other: 5}},
		},
		{
			name: "Other not counted against the limit",
			adds: []add{
				{dim: Page, value: "/a", n: 1, limit: 1},
				{dim: Page, value: "/b", n: 1, limit: 1, wantOther: true}, // Other now present
				{dim: Page, value: "/a", n: 1, limit: 1},
				{dim: Page, value: "/c", n: 1, limit: 2}, // a larger limit: room for one more
				{dim: Page, value: "/d", n: 1, limit: 2, wantOther: true},
			},
			want: map[Dim]map[string]uint64{Page: {"/a": 2, "/c": 1, Other: 2}},
		},
		{
			name: "Other given by the caller is never refused",
			adds: []add{
				{dim: Referrer, value: "a.example", n: 1, limit: 1},
				{dim: Referrer, value: Other, n: 3, limit: 1},
				{dim: Referrer, value: "b.example", n: 1, limit: 1, wantOther: true},
			},
			want: map[Dim]map[string]uint64{Referrer: {"a.example": 1, Other: 4}},
		},
		{
			name: "limits are per dimension",
			adds: []add{
				{dim: Page, value: "x", n: 1, limit: 1},
				{dim: LandingPage, value: "y", n: 1, limit: 1},
				{dim: LandingPage, value: "x", n: 1, limit: 1, wantOther: true}, // x is in the dictionary, new to the dim
				{dim: Page, value: "y", n: 1, limit: 1, wantOther: true},
			},
			want: map[Dim]map[string]uint64{Page: {"x": 1, Other: 1}, LandingPage: {"y": 1, Other: 1}},
		},
		{
			name: "no limit",
			adds: []add{
				{dim: City, value: "a", n: 1, limit: 0},
				{dim: City, value: "b", n: 1, limit: -1},
				{dim: City, value: "c", n: 1, limit: 0},
			},
			want: map[Dim]map[string]uint64{City: {"a": 1, "b": 1, "c": 1}},
		},
		{
			name: "zero count at the limit is no drop",
			adds: []add{
				{dim: Page, value: "/a", n: 1, limit: 1},
				{dim: Page, value: "/b", n: 0, limit: 1},
			},
			want: map[Dim]map[string]uint64{Page: {"/a": 1}},
		},
	}
	for _, tt := range tests {
		for _, mode := range []string{"open", "compacted", "decoded"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				d := NewDay(0)
				for i, a := range tt.adds {
					if i == 1 {
						switch mode {
						case "compacted":
							d.Compact()
						case "decoded":
							d = roundTrip(t, d)
						}
					}
					if got := d.Add(a.dim, a.value, a.n, a.limit); got != a.wantOther {
						t.Errorf("add %d: Add(%v, %q, %d, %d) = %v, want %v", i, a.dim, a.value, a.n, a.limit, got, a.wantOther)
					}
				}
				if diff := cmp.Diff(tt.want, dump(d).Counts); diff != "" {
					t.Errorf("Counts mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestDayValueNotRetained checks that a day copies the values it keeps: a
// caller's value sliced out of a large buffer (a request body) must not
// keep the buffer alive.
func TestDayValueNotRetained(t *testing.T) {
	buf := strings.Repeat("/page-", 10000)
	base := uintptr(unsafe.Pointer(unsafe.StringData(buf)))
	inBuf := func(v string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(v)))
		return len(v) > 0 && p >= base && p < base+uintptr(len(buf))
	}
	check := func(when string, days ...*Day) {
		t.Helper()
		for _, day := range days {
			for dim := range NumDims {
				for v := range day.Counts(dim) {
					if inBuf(v) {
						t.Errorf("%s: dim %v: value %q points into the caller's buffer", when, dim, v)
					}
				}
			}
		}
	}
	d := NewDay(0)
	d.Add(Page, buf[6:12], 1, 0)
	d.Add(Referrer, buf[0:5], 1, 10)
	d.Add(Page, buf[6:12], 1, 0) // known: nothing new kept
	check("open", d)
	d.Compact()
	d.Add(City, buf[1:9], 1, 0) // new to a compacted day
	check("compacted", d, d.Clone())
	if diff := cmp.Diff(map[Dim]map[string]uint64{Page: {"/page-": 2}, Referrer: {"/page": 1}, City: {"page-/pa": 1}}, dump(d).Counts); diff != "" {
		t.Errorf("Counts mismatch (-want +got):\n%s", diff)
	}
}

// TestDayStringsShared checks that a string counted in several dimensions
// is stored once.
func TestDayStringsShared(t *testing.T) {
	d := NewDay(0)
	d.Add(Page, "/landing", 3, 0)
	d.Add(LandingPage, "/landing", 1, 0)
	d.Add(Event, "/landing", 1, 0)
	if got := len(d.dict.values); got != 1 {
		t.Errorf("dictionary holds %d strings, want 1", got)
	}
	d.Compact()
	if got := len(d.dict.values); got != 1 {
		t.Errorf("compacted dictionary holds %d strings, want 1", got)
	}
	if got := d.Count(LandingPage, "/landing"); got != 1 {
		t.Errorf("Count(LandingPage) = %d, want 1", got)
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
	d.Add(Page, "/", 1, 0)
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
		c.Add(Page, "/", 5, 0)
		c.Add(Page, "/new", 5, 0)
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
			d.Add(Page, val(base+i), uint64(i+1), 0)
			d.Add(Browser, val(i%3), 1, 0)
			d.AddVisitor(int(i%24), base+i)
			d.AddPageview(int(i % 24))
		}
		d.Add(Event, val(base), 1<<33, 0)
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
					for v, n := range d.Counts(dim) {
						m.add(dim, v, n, 0)
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
			for v := range c {
				want.Counts[dim][v] *= 2
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
		d.Add(Page, val(i), 1, 0)
		d.AddVisitor(int(i%24), i*3)
	}
	open := d.SizeBytes()
	d.Compact()
	compacted := d.SizeBytes()
	t.Logf("SizeBytes: empty %d, open %d, compacted %d", empty, open, compacted)
	if !(empty < compacted && compacted < open) {
		t.Errorf("SizeBytes: empty %d, open %d, compacted %d; want empty < compacted < open", empty, open, compacted)
	}

	// The strings count: longer values, larger day.
	long := NewDay(0)
	for i := range uint32(10000) {
		long.Add(Page, val(i)+strings.Repeat("x", 100), 1, 0)
		long.AddVisitor(int(i%24), i*3)
	}
	long.Compact()
	if got, min := long.SizeBytes()-compacted, 100*10000; got < min {
		t.Errorf("100 more bytes in each of 10,000 values: SizeBytes grew by %d, want at least %d", got, min)
	}
}

// TestDayMemoryReclaimed measures the heap a day holds, strings included,
// against SizeBytes, and checks that it is all given back when the day is
// dropped: a day's strings live and die with the day.
func TestDayMemoryReclaimed(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	const n = 50000
	// The values, built first, sliced out of one buffer that stays alive.
	body := strings.Repeat("/some/rather/long/path/of/a/page?with=query", n/10)
	var values []string
	for i := range n {
		values = append(values, body[i%1000:i%1000+30]+strconv.Itoa(i))
	}
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted=%v", compact), func(t *testing.T) {
			before := heap()
			d := NewDay(0)
			for i, v := range values {
				d.Add(Page, v, 1, 0)
				if i%2 == 0 {
					d.Add(Referrer, v, 1, 0)
				}
			}
			if compact {
				d.Compact()
			}
			held := heap() - before
			size := d.SizeBytes()
			runtime.KeepAlive(d)
			d = nil
			after := heap()
			t.Logf("day of %d values: heap %d bytes, SizeBytes %d, %d bytes left after dropping it", n, held, size, int64(after)-int64(before))
			if float64(size) < 0.7*float64(held) || float64(size) > 1.5*float64(held) {
				t.Errorf("SizeBytes = %d, heap held %d: want within [0.7, 1.5] of it", size, held)
			}
			if after > before+held/10 {
				t.Errorf("after dropping the day the heap is %d bytes above where it started, want ≤ %d", after-before, held/10)
			}
		})
	}
	runtime.KeepAlive(values)
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

// TestVisitorsOnly covers view.go.
func TestVisitorsOnly(t *testing.T) {
	d := NewDay(4)
	d.Add(Page, "/", 1, 0)
	d.AddVisitor(3, 9)
	v := d.VisitorsOnly()
	d.AddVisitor(3, 10)
	if got := UniqueVisitors(v); got != 1 || v.Period != 4 || v.Len(Page) != 0 {
		t.Errorf("VisitorsOnly: %d visitors, period %v, %d pages; want 1, 4, 0", got, v.Period, v.Len(Page))
	}
}

package buckets

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// randomDays returns n days of random counts and visitors over the given
// periods (day i belongs to periods[i%len(periods)]), a third of them
// compacted and a third decoded.
func randomDays(r *rand.Rand, n int, periods []Date) []*Day {
	days := make([]*Day, n)
	for i := range days {
		d := NewDay(periods[i%len(periods)])
		for range r.IntN(300) {
			d.Add(Dim(r.IntN(int(NumDims))), val(r.Uint32N(500)), uint64(1+r.IntN(5)), 0)
		}
		if r.IntN(10) == 0 {
			d.Add(Page, val(r.Uint32N(500)), 1<<32+7, 0)
		}
		for range r.IntN(200) {
			d.AddVisitor(r.IntN(24), r.Uint32N(1000))
		}
		switch i % 3 {
		case 1:
			d.Compact()
		case 2:
			var dec Day
			b, _ := d.MarshalBinary()
			if err := dec.UnmarshalBinary(b); err != nil {
				panic(err)
			}
			d = &dec
		}
		days[i] = d
	}
	return days
}

// sumRows returns the rows of s as a map, for cmp.Diff.
func sumRows(s *Sum) map[string]uint64 {
	out := map[string]uint64{}
	for _, r := range s.Rows() {
		if _, dup := out[r.Value]; dup {
			panic("duplicate row " + r.Value)
		}
		out[r.Value] = r.Count
	}
	return out
}

func TestSum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	days := randomDays(r, 40, []Date{0})
	days = append(days, nil, NewDay(0)) // nil and empty days are fine
	var s Sum
	for dim := range NumDims {
		want := map[string]uint64{}
		for _, d := range days {
			if d == nil {
				continue
			}
			for v, n := range d.Counts(dim) {
				want[v] += n
			}
		}
		s.Reset() // a reused Sum starts empty
		s.Add(dim, days...)
		if diff := gocmp.Diff(want, sumRows(&s)); diff != "" {
			t.Errorf("Sum of %v mismatch (-want +got):\n%s", dim, diff)
		}
		if s.Len() != len(want) {
			t.Errorf("Len() = %d, want %d", s.Len(), len(want))
		}
		if !slices.IsSortedFunc(s.Rows(), func(a, b Row) int { return cmp.Compare(a.Value, b.Value) }) {
			t.Errorf("Rows of %v not in ascending order of value", dim)
		}
		// Day by day adds up the same.
		var one Sum
		for _, d := range days {
			one.Add(dim, d)
		}
		if diff := gocmp.Diff(want, sumRows(&one)); diff != "" {
			t.Errorf("Sum of %v day by day mismatch (-want +got):\n%s", dim, diff)
		}
		for v, n := range want {
			if got := s.Count(v); got != n {
				t.Errorf("Count(%q) = %d, want %d", v, got, n)
			}
		}
	}
	s.Reset()
	s.Add(NumDims, days...)
	if s.Len() != 0 {
		t.Errorf("Sum of an invalid dim has %d rows", s.Len())
	}
	if got := s.Count("/missing"); got != 0 {
		t.Errorf("Count(/missing) = %d", got)
	}
}

// TestSumReorderedRows checks that a caller may sort the rows and keep
// adding.
func TestSumReorderedRows(t *testing.T) {
	a, b := NewDay(0), NewDay(1)
	for i := range uint32(20) {
		a.Add(Page, val(i), uint64(i+1), 0)
		b.Add(Page, val(i+10), 1, 0)
	}
	b.Compact()
	var s Sum
	s.Add(Page, a)
	rows := s.Rows()
	slices.SortFunc(rows, func(x, y Row) int { return cmp.Compare(y.Count, x.Count) })
	if rows[0].Count != 20 {
		t.Fatalf("sorted rows start with %v", rows[0])
	}
	s.Add(Page, b)
	want := map[string]uint64{}
	for i := range uint32(30) {
		switch {
		case i < 10:
			want[val(i)] = uint64(i + 1)
		case i < 20:
			want[val(i)] = uint64(i + 2)
		default:
			want[val(i)] = 1
		}
	}
	if diff := gocmp.Diff(want, sumRows(&s)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestSumSaturates(t *testing.T) {
	a, b := NewDay(0), NewDay(0)
	a.Add(Page, "/", math.MaxUint64-1, 0)
	b.Add(Page, "/", 5, 0)
	var s Sum
	s.Add(Page, a, b)
	if got := s.Count("/"); got != math.MaxUint64 {
		t.Errorf("Count(/) = %d, want MaxUint64", got)
	}
}

func TestUniqueVisitors(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		name    string
		periods []Date
		n       int
	}{
		{name: "no days", periods: []Date{0}, n: 0},
		{name: "one day", periods: []Date{0}, n: 1},
		{name: "two days one period", periods: []Date{0}, n: 2},
		{name: "many days one period", periods: []Date{0}, n: 30},
		{name: "daily periods", periods: []Date{1, 2, 3, 4, 5}, n: 5},
		{name: "interleaved periods", periods: []Date{7, 14, 7, 21, 14}, n: 40},
		{name: "negative periods", periods: []Date{-10, -3}, n: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			days := randomDays(r, tt.n, tt.periods)
			days = append(days, nil, NewDay(tt.periods[0]))
			naive := map[string]bool{}
			for _, d := range days {
				if d == nil {
					continue
				}
				for _, id := range d.VisitorBitmap().ToArray() {
					naive[fmt.Sprint(d.Period, "/", id)] = true
				}
			}
			if got, want := UniqueVisitors(days...), uint64(len(naive)); got != want {
				t.Errorf("UniqueVisitors = %d, want %d", got, want)
			}
			// Order does not matter; the days are not changed.
			before := make([]dayDump, len(days))
			for i, d := range days {
				if d != nil {
					before[i] = dump(d)
				}
			}
			r.Shuffle(len(days), func(i, j int) {
				days[i], days[j] = days[j], days[i]
				before[i], before[j] = before[j], before[i]
			})
			if got, want := UniqueVisitors(days...), uint64(len(naive)); got != want {
				t.Errorf("UniqueVisitors of shuffled days = %d, want %d", got, want)
			}
			for i, d := range days {
				if d != nil {
					checkDay(t, before[i], d)
				}
			}
		})
	}
}

// TestSumUnordered: Unordered gives the rows Rows gives (as a set), for one
// open day (left unsorted) and for several days; Rows after Unordered, and
// an Add after it, are still right.
func TestSumUnordered(t *testing.T) {
	day := func(vals ...string) *Day {
		d := NewDay(0)
		for i, v := range vals {
			d.Add(Page, v, uint64(i+1), 0)
		}
		return d
	}
	a, b := day("/z", "/a", "/m", "/b"), day("/a", "/q")
	sorted := func(r []Row) []Row {
		r = slices.Clone(r)
		slices.SortFunc(r, func(x, y Row) int { return strings.Compare(x.Value, y.Value) })
		return r
	}
	var s1 Sum
	s1.Add(Page, a)
	want1 := []Row{{"/a", 2}, {"/b", 4}, {"/m", 3}, {"/z", 1}}
	if diff := gocmp.Diff(want1, sorted(s1.Unordered())); diff != "" {
		t.Errorf("one day: mismatch (-want +got):\n%s", diff)
	}
	if diff := gocmp.Diff(want1, s1.Rows()); diff != "" {
		t.Errorf("Rows after Unordered: mismatch (-want +got):\n%s", diff)
	}
	s1.Unordered()
	s1.Add(Page, b)
	want2 := []Row{{"/a", 3}, {"/b", 4}, {"/m", 3}, {"/q", 2}, {"/z", 1}}
	if diff := gocmp.Diff(want2, s1.Rows()); diff != "" {
		t.Errorf("Add after Unordered: mismatch (-want +got):\n%s", diff)
	}
	var s2 Sum
	s2.Add(Page, a, b)
	if diff := gocmp.Diff(want2, sorted(s2.Unordered())); diff != "" {
		t.Errorf("two days: mismatch (-want +got):\n%s", diff)
	}
}

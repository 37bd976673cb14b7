package buckets

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// randomDays returns n days of random counts and visitors over the given
// periods (day i belongs to periods[i%len(periods)]), a third of them
// compacted and a third decoded.
func randomDays(r *rand.Rand, n int, periods []Date) []*Day {
	days := make([]*Day, n)
	for i := range days {
		d := NewDay(periods[i%len(periods)])
		for range r.IntN(300) {
			d.Add(Dim(r.IntN(int(NumDims))), r.Uint32N(500), uint64(1+r.IntN(5)))
		}
		if r.IntN(10) == 0 {
			d.Add(Page, r.Uint32N(500), 1<<32+7)
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

func TestSumCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	days := randomDays(r, 40, []Date{0})
	days = append(days, nil, NewDay(0)) // nil and empty days are fine
	for dim := range NumDims {
		want := []uint64{}
		for _, d := range days {
			if d == nil {
				continue
			}
			for id, v := range d.Counts(dim) {
				for int(id) >= len(want) {
					want = append(want, 0)
				}
				want[id] += v
			}
		}
		got := SumCounts(nil, dim, days...)
		if diff := cmp.Diff(want, append([]uint64{}, got...)); diff != "" {
			t.Errorf("SumCounts(%v) mismatch (-want +got):\n%s", dim, diff)
		}
		// Reusing a dirty accumulator: its old contents past len are not summed.
		dirty := make([]uint64, 3, 1000)
		for i := range dirty[:cap(dirty)] {
			dirty[:cap(dirty)][i] = 99
		}
		dirty = dirty[:0]
		got = SumCounts(dirty, dim, days...)
		if diff := cmp.Diff(want, append([]uint64{}, got...)); diff != "" {
			t.Errorf("SumCounts(%v) into a reused slice mismatch (-want +got):\n%s", dim, diff)
		}
	}
	// An accumulator longer than needed keeps its length and adds.
	acc := SumCounts(make([]uint64, 10000), Page, days[:1]...)
	if len(acc) != 10000 {
		t.Errorf("len(acc) = %d, want 10000", len(acc))
	}
	if got := SumCounts([]uint64{1}, NumDims, days...); len(got) != 1 || got[0] != 1 {
		t.Errorf("SumCounts of an invalid dim changed acc: %v", got)
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

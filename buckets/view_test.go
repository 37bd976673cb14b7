package buckets

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRollup(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var days []*Day
	for range 31 {
		d := NewDay(0)
		for range 200 {
			dim := Dim(rng.IntN(int(NumDims)))
			d.Add(dim, uint32(rng.IntN(50)), uint64(1+rng.IntN(3)))
			d.AddPageview(rng.IntN(24))
		}
		d.Visits, d.Events = uint64(rng.IntN(9)), uint64(rng.IntN(9))
		if rng.IntN(2) == 0 {
			d.Compact()
		}
		days = append(days, d)
	}
	r := Rollup(days...)
	for dim := range NumDims {
		if diff := cmp.Diff(SumCounts(nil, dim, days...), SumCounts(nil, dim, r)); diff != "" && !allZero(SumCounts(nil, dim, days...)) {
			t.Errorf("%v mismatch (-days +rollup):\n%s", dim, diff)
		}
	}
	var want Day
	for _, d := range days {
		want.Visits += d.Visits
		want.Events += d.Events
		for h, n := range d.Hours {
			want.Hours[h] += n
		}
	}
	if r.Visits != want.Visits || r.Events != want.Events || r.Hours != want.Hours {
		t.Errorf("rollup totals %d %d %v, want %d %d %v", r.Visits, r.Events, r.Hours, want.Visits, want.Events, want.Hours)
	}
	if r.Visitors() != 0 {
		t.Errorf("rollup has %d visitors", r.Visitors())
	}
}

func allZero(a []uint64) bool {
	for _, n := range a {
		if n != 0 {
			return false
		}
	}
	return true
}

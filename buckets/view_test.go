package buckets

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func TestRollup(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var days []*Day
	for range 31 {
		d := NewDay(0)
		for range 200 {
			dim := Dim(rng.IntN(int(NumDims)))
			d.Add(dim, val(uint32(rng.IntN(50))), uint64(1+rng.IntN(3)), 0)
			d.AddPageview(rng.IntN(24))
			d.AddVisitor(rng.IntN(24), rng.Uint32N(100))
		}
		d.Visits, d.Events = uint64(rng.IntN(9)), uint64(rng.IntN(9))
		if rng.IntN(2) == 0 {
			d.Compact()
		}
		days = append(days, d)
	}
	days = append(days, nil)
	r := Rollup(days...)
	for dim := range NumDims {
		var want, got Sum
		want.Add(dim, days...)
		got.Add(dim, r)
		if diff := cmp.Diff(sumRows(&want), sumRows(&got)); diff != "" {
			t.Errorf("%v mismatch (-days +rollup):\n%s", dim, diff)
		}
	}
	var want Day
	for _, d := range days[:len(days)-1] {
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
	// The rollup has its own strings: none points into a day's memory.
	owned := map[*byte]bool{}
	for _, d := range days[:len(days)-1] {
		for _, v := range d.dict.values {
			owned[unsafe.StringData(v)] = true
		}
	}
	for _, v := range r.dict.values {
		if v != "" && owned[unsafe.StringData(v)] {
			t.Fatalf("rollup value %q shares memory with a day", v)
		}
	}
	// A rollup is compacted: encoding it and decoding it changes nothing.
	if dec := roundTrip(t, r); !dec.Equal(r) {
		t.Error("decoded rollup not Equal")
	}
}

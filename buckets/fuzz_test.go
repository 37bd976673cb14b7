package buckets

import (
	"errors"
	"testing"
)

func FuzzDayUnmarshal(f *testing.F) {
	// Small seeds keep the fuzzer fast (minimising a 16 KiB input takes
	// long); a bitmap container is exercised by the unit tests.
	seed := NewDay(DateOf(2024, 3, 25))
	seed.Visits, seed.Events = 2, 1
	seed.AddPageview(9)
	seed.Add(Page, 0, 2)
	seed.Add(Page, 70000, 1)
	seed.Add(City, 2, 1<<35)
	for id := range uint32(100) {
		seed.AddVisitor(int(id%3), id) // runs
	}
	seed.AddVisitor(23, 1<<20) // an array
	good, _ := seed.MarshalBinary()
	f.Add(good)
	empty, _ := NewDay(0).MarshalBinary()
	f.Add(empty)
	small := NewDay(-3)
	small.Add(Page, 1, 2)
	small.AddVisitor(4, 10)
	small.Compact()
	b, _ := small.MarshalBinary()
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, in []byte) {
		var d Day
		if err := d.UnmarshalBinary(in); err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrVersion: %v", err)
			}
			return
		}
		out, err := d.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var d2 Day
		if err := d2.UnmarshalBinary(out); err != nil {
			t.Fatalf("re-encoded day does not decode: %v", err)
		}
		if !d.Equal(&d2) {
			t.Fatal("decode(encode(decode(in))) != decode(in)")
		}
		// A decoded day is usable.
		d.Add(Page, 1, 1)
		d.AddVisitor(3, 3)
		d.Compact()
		_ = UniqueVisitors(&d, &d2)
		if m, ok := maxCountedID(&d); !ok || m < 1<<16 {
			_ = SumCounts(nil, Page, &d, &d2)
		}
	})
}

func FuzzStringsUnmarshal(f *testing.F) {
	var s Strings
	for _, v := range []string{"/", "/a?b=c", "", "Chrome", "US:United States"} {
		s.Intern(v)
	}
	whole, _ := s.MarshalBinary()
	f.Add(whole)
	f.Add(s.AppendBinary(nil, 3))
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		var s Strings
		if err := s.UnmarshalBinary(in); err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrChunkOrder) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			if s.Len() != 0 {
				t.Fatal("failed decode left strings behind")
			}
			return
		}
		out, _ := s.MarshalBinary()
		var s2 Strings
		if err := s2.UnmarshalBinary(out); err != nil {
			t.Fatalf("re-encoded table does not decode: %v", err)
		}
		if s.Len() != s2.Len() {
			t.Fatalf("Len %d != %d", s.Len(), s2.Len())
		}
		for id, v := range s.All() {
			if got, ok := s2.Value(id); !ok || got != v {
				t.Fatalf("Value(%d) = %q, want %q", id, got, v)
			}
			if got, ok := s2.Lookup(v); !ok || got != id {
				t.Fatalf("Lookup(%q) = %d, want %d", v, got, id)
			}
		}
	})
}

// FuzzDayRoundTrip reads a program of operations from its input, runs it on
// a day and a naive model, and checks the day against the model, and its
// encoding round trip, compacted or not.
func FuzzDayRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("\x00\x00\x01\x10\x02\x03\x07\x22\x01\x09\x05\x00\x06\x00"))
	f.Add([]byte("\x05\xff\xff\xff\xff\x02\x08\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, prog []byte) {
		next := func(n int) uint64 { // n little-endian bytes, 0 past the end
			var v uint64
			for i := range n {
				if len(prog) > 0 {
					v |= uint64(prog[0]) << (8 * i)
					prog = prog[1:]
				}
			}
			return v
		}
		d := NewDay(Date(int8(next(1))))
		m := newModel(d.Period)
		for len(prog) > 0 {
			switch next(1) % 8 {
			case 0, 1:
				dim, id, n := Dim(next(1)%uint64(NumDims+1)), uint32(next(2)), next(1)
				d.Add(dim, id, n)
				m.add(dim, id, n)
			case 2:
				dim, id, n := Dim(next(1)%uint64(NumDims)), uint32(next(4)), next(8)
				d.Add(dim, id, n)
				m.add(dim, id, n)
			case 3:
				h := int(int8(next(1)))
				d.AddPageview(h)
				m.Hours[clampHour(h)]++
			case 4, 5:
				h, id := int(int8(next(1))), uint32(next(3))
				gotDay, gotHour := d.AddVisitor(h, id)
				wantDay, wantHour := m.addVisitor(h, id)
				if gotDay != wantDay || gotHour != wantHour {
					t.Fatalf("AddVisitor(%d, %d) = %v, %v; want %v, %v", h, id, gotDay, gotHour, wantDay, wantHour)
				}
			case 6:
				d.Visits += next(1)
				m.Visits = d.Visits
				d.Events += next(1)
				m.Events = d.Events
			case 7:
				d.Compact()
			}
		}
		want := m.dump()
		checkDay(t, want, d)
		b, err := d.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var dec Day
		if err := dec.UnmarshalBinary(b); err != nil {
			t.Fatalf("UnmarshalBinary: %v", err)
		}
		if !dec.Equal(d) {
			t.Fatal("decoded day not Equal")
		}
		checkDay(t, want, &dec)
		d.Compact()
		checkDay(t, want, d)
		b2, _ := d.MarshalBinary()
		if string(b) != string(b2) {
			t.Fatal("encoding changed by Compact")
		}
		if got := UniqueVisitors(d, &dec); got != uint64(len(want.Visitors)) {
			t.Fatalf("UniqueVisitors = %d, want %d", got, len(want.Visitors))
		}
		if m, ok := maxCountedID(d); ok && m >= 1<<16 {
			return // a dense accumulator that large is not worth it here
		}
		var acc []uint64
		for dim := range NumDims {
			acc = SumCounts(acc[:0], dim, d)
			for id, v := range want.Counts[dim] {
				if acc[id] != v {
					t.Fatalf("SumCounts(%v)[%d] = %d, want %d", dim, id, acc[id], v)
				}
			}
		}
	})
}

func maxCountedID(d *Day) (uint32, bool) {
	var m uint32
	ok := false
	for dim := range NumDims {
		for id := range d.Counts(dim) {
			m, ok = max(m, id), true
		}
	}
	return m, ok
}

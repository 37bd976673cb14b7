package buckets

import (
	"errors"
	"os"
	"strconv"
	"testing"
)

// fuzzValue resolves the ids of version 1 days in the fuzzers: a table of
// 1<<16 strings.
func fuzzValue(id uint32) (string, bool) {
	if id >= 1<<16 {
		return "", false
	}
	return "/v" + strconv.FormatUint(uint64(id%1000), 10), true // ids 1000 apart share a string
}

func FuzzDayUnmarshal(f *testing.F) {
	// Small seeds keep the fuzzer fast (minimising a 16 KiB input takes
	// long); a bitmap container is exercised by the unit tests.
	seed := NewDay(DateOf(2024, 3, 25))
	seed.Visits, seed.Events = 2, 1
	seed.AddPageview(9)
	seed.Add(Page, "/", 2, 0)
	seed.Add(Page, "/blog", 1, 0)
	seed.Add(Referrer, "/blog", 1, 0) // shared by two dims
	seed.Add(City, "Zürich", 1<<35, 0)
	for id := range uint32(100) {
		seed.AddVisitor(int(id%3), id) // runs
	}
	seed.AddVisitor(23, 1<<20) // an array
	good, _ := seed.MarshalBinary()
	f.Add(good)
	var strs Strings
	f.Add(appendV1(nil, seed, &strs))
	empty, _ := NewDay(0).MarshalBinary()
	f.Add(empty)
	small := NewDay(-3)
	small.Add(Page, "", 2, 0)
	small.AddVisitor(4, 10)
	small.Compact()
	b, _ := small.MarshalBinary()
	f.Add(b)
	if golden, err := os.ReadFile("testdata/day-v1.bin"); err == nil {
		f.Add(golden)
	}
	f.Add([]byte{})
	f.Add([]byte{2})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, in []byte) {
		var d, d1 Day
		err := d.UnmarshalBinary(in)
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrVersion1) {
			t.Fatalf("UnmarshalBinary: error wraps no sentinel: %v", err)
		}
		err1 := d1.UnmarshalBinaryV1(in, fuzzValue)
		if err1 != nil && !errors.Is(err1, ErrCorrupt) && !errors.Is(err1, ErrVersion) {
			t.Fatalf("UnmarshalBinaryV1: error wraps neither ErrCorrupt nor ErrVersion: %v", err1)
		}
		if err == nil && (err1 != nil || !d.Equal(&d1)) {
			t.Fatalf("UnmarshalBinaryV1 of a version 2 day differs: %v", err1)
		}
		if err1 == nil {
			checkDecoded(t, &d1)
		}
	})
}

// checkDecoded checks that a decoded day encodes and decodes to itself and
// is usable.
func checkDecoded(t *testing.T, d *Day) {
	t.Helper()
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
	again, _ := d2.MarshalBinary()
	if string(again) != string(out) {
		t.Fatal("encoding not stable")
	}
	// A decoded day is usable.
	d.Add(Page, "/", 1, 0)
	d.Add(Referrer, "/new", 1, 1)
	d.AddVisitor(3, 3)
	d.Compact()
	_ = UniqueVisitors(d, &d2)
	var s Sum
	for dim := range NumDims {
		s.Add(dim, d, &d2)
	}
	_ = Rollup(d, &d2)
}

func FuzzStringsUnmarshal(f *testing.F) {
	var s Strings
	for _, v := range []string{"/", "/a?b=c", "", "Chrome", "US:United States"} {
		s.intern(v)
	}
	f.Add(s.appendChunk(nil, 0))
	f.Add(s.appendChunk(nil, 3))
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
		out := s.appendChunk(nil, 0)
		var s2 Strings
		if err := s2.UnmarshalBinary(out); err != nil {
			t.Fatalf("re-encoded table does not decode: %v", err)
		}
		if s.Len() != s2.Len() {
			t.Fatalf("Len %d != %d", s.Len(), s2.Len())
		}
		for id, v := range values(&s) {
			if got, ok := s2.Value(uint32(id)); !ok || got != v {
				t.Fatalf("Value(%d) = %q, want %q", id, got, v)
			}
		}
	})
}

// FuzzDayRoundTrip reads a program of operations from its input, runs it on
// a day and a naive model, and checks the day against the model, its
// encoding round trip (version 2, and version 1 migrated), compacted or not,
// and the sums of its dimensions.
func FuzzDayRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Add([]byte("\x00\x00\x01\x10\x02\x03\x07\x22\x01\x09\x05\x00\x06\x00"))
	f.Add([]byte("\x05\xff\xff\xff\xff\x02\x08\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Add([]byte("\x08\x00\x01\x00\x02\x08\x00\x02\x00\x02\x08\x00\x03\x00\x02\x07\x08\x00\x04\x00\x02"))
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
		add := func(dim Dim, v string, n uint64, limit int) {
			got := d.Add(dim, v, n, limit)
			if want := m.add(dim, v, n, limit); got != want {
				t.Fatalf("Add(%v, %q, %d, %d) = %v, want %v", dim, v, n, limit, got, want)
			}
		}
		for len(prog) > 0 {
			switch next(1) % 9 {
			case 0, 1:
				add(Dim(next(1)%uint64(NumDims+1)), val(uint32(next(2))), next(1), 0)
			case 2:
				add(Dim(next(1)%uint64(NumDims)), val(uint32(next(4))), next(8), 0)
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
			case 8: // a limited dimension
				add(Dim(next(1)%uint64(NumDims)), val(uint32(next(1)%16)), 1+next(1)%3, int(next(1)%6))
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
		var strs Strings
		var v1 Day
		if err := v1.UnmarshalBinaryV1(appendV1(nil, d, &strs), strs.Value); err != nil {
			t.Fatalf("UnmarshalBinaryV1: %v", err)
		}
		checkDay(t, want, &v1)
		d.Compact()
		checkDay(t, want, d)
		b2, _ := d.MarshalBinary()
		if string(b) != string(b2) {
			t.Fatal("encoding changed by Compact")
		}
		if got := UniqueVisitors(d, &dec); got != uint64(len(want.Visitors)) {
			t.Fatalf("UniqueVisitors = %d, want %d", got, len(want.Visitors))
		}
		for dim := range NumDims {
			var s Sum
			s.Add(dim, d, &dec)
			got := sumRows(&s)
			if len(got) != len(want.Counts[dim]) {
				t.Fatalf("Sum of %v has %d rows, want %d", dim, len(got), len(want.Counts[dim]))
			}
			for v, n := range want.Counts[dim] {
				if got[v] != addSat(n, n) {
					t.Fatalf("Sum of %v: %q = %d, want %d", dim, v, got[v], addSat(n, n))
				}
			}
		}
	})
}

package buckets

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func values(s *Strings) []string {
	out := []string{}
	for id, v := range s.All() {
		if int(id) != len(out) {
			panic("ids not dense")
		}
		out = append(out, v)
	}
	return out
}

func TestStringsIntern(t *testing.T) {
	var s Strings
	in := []string{"/", "/about", "", "Chrome", "/", "", "/about", "US:United States"}
	var got []uint32
	for _, v := range in {
		got = append(got, s.Intern(v))
	}
	if diff := cmp.Diff([]uint32{0, 1, 2, 3, 0, 2, 1, 4}, got); diff != "" {
		t.Errorf("Intern ids mismatch (-want +got):\n%s", diff)
	}
	if got, want := s.Len(), 5; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	tests := []struct {
		v      string
		wantID uint32
		wantOK bool
	}{
		{v: "/", wantID: 0, wantOK: true},
		{v: "", wantID: 2, wantOK: true},
		{v: "US:United States", wantID: 4, wantOK: true},
		{v: "/missing", wantOK: false},
	}
	for _, tt := range tests {
		id, ok := s.Lookup(tt.v)
		if id != tt.wantID || ok != tt.wantOK {
			t.Errorf("Lookup(%q) = %d, %v; want %d, %v", tt.v, id, ok, tt.wantID, tt.wantOK)
		}
		if ok {
			if v, ok := s.Value(id); !ok || v != tt.v {
				t.Errorf("Value(%d) = %q, %v; want %q, true", id, v, ok, tt.v)
			}
		}
	}
	for _, id := range []uint32{5, 1 << 31, 1<<32 - 1} {
		if v, ok := s.Value(id); ok {
			t.Errorf("Value(%d) = %q, true; want false", id, v)
		}
	}
	if s.SizeBytes() <= 0 {
		t.Errorf("SizeBytes() = %d", s.SizeBytes())
	}
}

// TestStringsInternCopies checks that Intern does not keep the caller's
// memory.
func TestStringsInternCopies(t *testing.T) {
	var s Strings
	buf := []byte("/page")
	s.Intern(unsafe.String(&buf[0], len(buf)))
	copy(buf, "/XXXX")
	if v, _ := s.Value(0); v != "/page" {
		t.Fatalf("Value(0) = %q after the caller reused its buffer, want /page", v)
	}
	if _, ok := s.Lookup("/page"); !ok {
		t.Fatal("Lookup(/page) = false after the caller reused its buffer")
	}
}

func TestStringsChunks(t *testing.T) {
	var s Strings
	var chunks [][]byte
	next := uint32(0)
	for round := range 5 {
		for i := range round * 3 { // round 0 adds nothing: an empty chunk
			s.Intern(fmt.Sprintf("/r%d/p%d", round, i))
		}
		s.Intern("/") // from round 1 on, already there
		chunks = append(chunks, s.AppendBinary(nil, next))
		next = uint32(s.Len())
	}

	var got Strings
	for i, c := range chunks {
		if err := got.AppendChunk(c); err != nil {
			t.Fatalf("AppendChunk(chunk %d): %v", i, err)
		}
	}
	if diff := cmp.Diff(values(&s), values(&got)); diff != "" {
		t.Fatalf("rebuilt table mismatch (-want +got):\n%s", diff)
	}
	for id, v := range s.All() {
		if gotID, ok := got.Lookup(v); !ok || gotID != id {
			t.Fatalf("Lookup(%q) = %d, %v; want %d", v, gotID, ok, id)
		}
	}

	whole, _ := s.MarshalBinary()
	var u Strings
	if err := u.UnmarshalBinary(whole); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(values(&s), values(&u)); diff != "" {
		t.Fatalf("UnmarshalBinary mismatch (-want +got):\n%s", diff)
	}
	// The decoded table does not retain its input.
	clear(whole)
	if diff := cmp.Diff(values(&s), values(&u)); diff != "" {
		t.Fatalf("after clearing the input (-want +got):\n%s", diff)
	}
	// Appending to a decoded table continues its ids.
	if id := u.Intern("/new"); int(id) != s.Len() {
		t.Fatalf("Intern after decode = %d, want %d", id, s.Len())
	}
	// from beyond Len is an empty chunk at Len.
	var e Strings
	e.Intern("a")
	if err := e.AppendChunk(s.AppendBinary(nil, 1<<30)); !errors.Is(err, ErrChunkOrder) {
		t.Fatalf("chunk from beyond Len applied at 1: %v", err)
	}
}

func TestStringsChunkErrors(t *testing.T) {
	var s Strings
	s.Intern("a")
	s.Intern("b")
	first := s.AppendBinary(nil, 0)
	s.Intern("c")
	second := s.AppendBinary(nil, 2)

	dup := slices.Clone(first)
	dup[len(dup)-1] = 'a' // "a", "a"

	tests := []struct {
		name   string
		before [][]byte // applied first, successfully
		chunk  []byte
		want   error
	}{
		{name: "empty input", chunk: nil, want: ErrCorrupt},
		{name: "newer version", chunk: append([]byte{2}, first[1:]...), want: ErrVersion},
		{name: "version zero", chunk: append([]byte{0}, first[1:]...), want: ErrCorrupt},
		{name: "gap", chunk: second, want: ErrChunkOrder},
		{name: "repeated", before: [][]byte{first}, chunk: first, want: ErrChunkOrder},
		{name: "overlapping", before: [][]byte{first, second}, chunk: second, want: ErrChunkOrder},
		{name: "truncated", chunk: first[:len(first)-1], want: ErrCorrupt},
		{name: "truncated header", chunk: first[:2], want: ErrCorrupt},
		{name: "trailing byte", chunk: append(slices.Clone(first), 0), want: ErrCorrupt},
		{name: "duplicate value in chunk", chunk: dup, want: ErrCorrupt},
		{name: "value already in table", before: [][]byte{first}, chunk: []byte{1, 2, 1, 1, 'a'}, want: ErrCorrupt},
		{name: "huge count", chunk: []byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, want: ErrCorrupt},
		{name: "huge length", chunk: []byte{1, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 'a'}, want: ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Strings
			for _, c := range tt.before {
				if err := s.AppendChunk(c); err != nil {
					t.Fatal(err)
				}
			}
			want := values(&s)
			err := s.AppendChunk(tt.chunk)
			if !errors.Is(err, tt.want) {
				t.Fatalf("AppendChunk = %v, want %v", err, tt.want)
			}
			t.Log(err)
			if diff := cmp.Diff(want, values(&s)); diff != "" {
				t.Errorf("table changed by a failed chunk (-want +got):\n%s", diff)
			}
			for _, v := range []string{"a", "b", "c"} {
				if _, ok := s.Lookup(v); ok != slices.Contains(want, v) {
					t.Errorf("Lookup(%q) = %v after a failed chunk", v, ok)
				}
			}
		})
	}
}

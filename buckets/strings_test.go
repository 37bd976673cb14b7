package buckets

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// values returns the strings of s by id.
func values(s *Strings) []string {
	out := []string{}
	for id := range uint32(s.Len()) {
		v, ok := s.Value(id)
		if !ok {
			panic("ids not dense")
		}
		out = append(out, v)
	}
	return out
}

func TestStringsChunks(t *testing.T) {
	var s Strings
	var chunks [][]byte
	next := uint32(0)
	for round := range 5 {
		for i := range round * 3 { // round 0 adds nothing: an empty chunk
			s.intern(fmt.Sprintf("/r%d/p%d", round, i))
		}
		s.intern("/") // from round 1 on, already there
		chunks = append(chunks, s.appendChunk(nil, next))
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
	for id, v := range values(&s) {
		if gotID, ok := got.ids[v]; !ok || gotID != uint32(id) {
			t.Fatalf("ids[%q] = %d, %v; want %d", v, gotID, ok, id)
		}
	}
	if v, ok := got.Value(uint32(got.Len())); ok {
		t.Errorf("Value(Len()) = %q, true; want false", v)
	}

	whole := s.appendChunk(nil, 0)
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
}

func TestStringsChunkErrors(t *testing.T) {
	var s Strings
	s.intern("a")
	s.intern("b")
	first := s.appendChunk(nil, 0)
	s.intern("c")
	second := s.appendChunk(nil, 2)

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
				if _, ok := s.ids[v]; ok != slices.Contains(want, v) {
					t.Errorf("ids[%q] = %v after a failed chunk", v, ok)
				}
			}
		})
	}
}

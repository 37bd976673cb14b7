package importlog

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var samples = []Message{
	{Op: Part, Website: 300, Token: [16]byte{1, 2, 3}, Flags: First | Last, First: 1, Record: []byte(`{"id":0}`), Chunks: [][]byte{[]byte("ab"), []byte("c")}},
	{Op: Part, Website: 7, Token: [16]byte{9}, First: 5, Chunks: [][]byte{[]byte("xyz")}},
	{Op: Delete, Website: 70000, Token: [16]byte{4}, ID: 12},
	{Op: Abort, Website: 1, Token: [16]byte{5}},
}

// TestMessageGolden: the messages are those logs already hold (written
// before the imported layer left package engine).
func TestMessageGolden(t *testing.T) {
	want := []string{
		"6970ac02010203000000000000000000000000000301087b226964223a307d020261620163",
		"697007090000000000000000000000000000000005010378797a",
		"6964f0a204040000000000000000000000000000000c",
		"69610105000000000000000000000000000000",
	}
	for i, m := range samples {
		if got := hex.EncodeToString(m.Encode()); got != want[i] {
			t.Errorf("message %c: %s, want %s", m.Op, got, want[i])
		}
		d, err := Decode(m.Encode())
		if err != nil {
			t.Fatalf("message %c: %v", m.Op, err)
		}
		if diff := cmp.Diff(m, d); diff != "" {
			t.Errorf("message %c: decoded mismatch (-want +got):\n%s", m.Op, diff)
		}
	}
}

// FuzzDecode: Decode never panics, and what it reads encodes to a
// message it reads alike.
func FuzzDecode(f *testing.F) {
	for _, m := range samples {
		f.Add(m.Encode())
	}
	f.Add([]byte("ip0000000000000000010\x01")) // a count beyond the bytes left
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(m.Encode())
		if err != nil {
			t.Fatalf("%x: its encoding %x: %v", b, m.Encode(), err)
		}
		if !bytes.Equal(again.Encode(), m.Encode()) {
			t.Fatalf("%x: read as %+v, then %+v", b, m, again)
		}
	})
}

// TestSplit: an import's messages hold its chunks in order, whole, each
// within the limit but for a chunk larger alone; the first holds the
// record, only the last is flagged Last.
func TestSplit(t *testing.T) {
	chunks := [][]byte{[]byte("record"), make([]byte, 100), make([]byte, 100), make([]byte, 300), make([]byte, 10)}
	parts := Split(3, [16]byte{1}, chunks, 250)
	var got [][]byte
	for i, p := range parts {
		if p.Website != 3 || p.Token != ([16]byte{1}) || p.Op != Part {
			t.Fatalf("part %d: %+v", i, p)
		}
		if first := i == 0; first != (p.Flags&First != 0) || first != (p.Record != nil) {
			t.Errorf("part %d: flags %d, record %q", i, p.Flags, p.Record)
		}
		if last := i == len(parts)-1; last != (p.Flags&Last != 0) {
			t.Errorf("part %d: flags %d", i, p.Flags)
		}
		if p.First != uint32(len(got)+1) {
			t.Errorf("part %d: first chunk %d, want %d", i, p.First, len(got)+1)
		}
		if n := len(p.Encode()); n > 250+64 && len(p.Chunks) > 1 {
			t.Errorf("part %d: %d bytes", i, n)
		}
		got = append(got, p.Chunks...)
	}
	if len(parts) != 4 || !cmp.Equal(chunks[1:], got) {
		t.Fatalf("%d parts holding %d chunks", len(parts), len(got))
	}
}

package visitors

import (
	"encoding/binary"
	"testing"

	"github.com/webstats/webstats/engine/internal/segments"
)

// TestVisitorChunkVersion3: visitor state written before the segments had
// a visit of their own (chunk version 3) still opens, the segments' visit
// defaulting to the phpAnalytics one (SPEC §10.1's rule then continues
// it); version 4 keeps both.
func TestVisitorChunkVersion3(t *testing.T) {
	var b []byte
	b = append(b, 3)
	b = binary.AppendUvarint(b, 10) // first id
	b = binary.AppendUvarint(b, 1)  // visitors
	b = binary.LittleEndian.AppendUint64(b, 0xabc)
	b = binary.AppendVarint(b, 1_700_000_000_000)
	b = binary.LittleEndian.AppendUint64(b, 77)
	b = binary.AppendVarint(b, 19000)
	b = binary.AppendUvarint(b, 5+1)
	var p Period
	if err := p.AddChunk(0, b); err != nil {
		t.Fatal(err)
	}
	want := Visit{Last: 1_700_000_000_000, Host: 77, SegLast: 1_700_000_000_000, SegHost: 77, Day: 19000, Row: 5}
	if *p.Visit(10) != want || p.index[0xabc] != 10 {
		t.Fatalf("version 3: %+v (id %d), want %+v (id 10)", *p.Visit(10), p.index[0xabc], want)
	}

	v := Visit{Last: 1_700_000_000_000, Host: 77, SegLast: 1_700_000_900_000, SegHost: 0, Day: 19000, Row: segments.NoVisit}
	c := Chunk{first: 10, hashes: []uint64{0xabc}, visits: []Visit{v}}
	var q Period
	if err := q.AddChunk(0, c.AppendBinary(nil)); err != nil {
		t.Fatal(err)
	}
	if *q.Visit(10) != v {
		t.Fatalf("version 4 round trip: %+v, want %+v", *q.Visit(10), v)
	}
}

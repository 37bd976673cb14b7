package engine

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
	p := newPeriod(0)
	if err := p.addChunk(0, b); err != nil {
		t.Fatal(err)
	}
	want := visit{last: 1_700_000_000_000, host: 77, sLast: 1_700_000_000_000, sHost: 77, day: 19000, row: 5}
	if p.visits[0] != want || p.index[0xabc] != 10 {
		t.Fatalf("version 3: %+v (id %d), want %+v (id 10)", p.visits[0], p.index[0xabc], want)
	}

	v := visit{last: 1_700_000_000_000, host: 77, sLast: 1_700_000_900_000, sHost: 0, day: 19000, row: segments.NoVisit}
	c := chunkCopy{first: 10, hashes: []uint64{0xabc}, visits: []visit{v}}
	q := newPeriod(0)
	if err := q.addChunk(0, c.appendBinary(nil)); err != nil {
		t.Fatal(err)
	}
	if q.visits[0] != v {
		t.Fatalf("version 4 round trip: %+v, want %+v", q.visits[0], v)
	}
}

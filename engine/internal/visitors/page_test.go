package visitors

import (
	"testing"

	"github.com/webstats/webstats/buckets"
)

// TestPaging: a saved chunk whose visitors are indexed leaves memory and
// comes back with the same ids and visits; a dirty, unindexed or last
// chunk stays; the index map is made again once it holds under half of
// its peak; a period read back paged numbers new visitors after its last.
func TestPaging(t *testing.T) {
	var p Period
	const n = 4*256 - 10
	for i := range n {
		id, _, _ := p.Visitor(uint64(5000 + i))
		p.Visit(id).Last = int64(i)
		p.MarkDirty(id)
	}
	saved := map[uint32][]byte{}
	for _, c := range p.TakeDirty() {
		saved[c.Index] = c.AppendBinary(nil)
	}
	evictable := func() (cs []uint32) {
		p.Evictable(func(c uint32, _ int64) { cs = append(cs, c) })
		return cs
	}
	if got := evictable(); len(got) != 0 || p.EvictChunk(0) {
		t.Fatalf("nothing indexed: evictable %v", got)
	}
	if u := p.Unindexed(300); len(u) != 300 || u[0] != (Entry{Hash: 5000, ID: 0}) || u[299].ID != 299 {
		t.Fatalf("Unindexed(300) = %d entries, first %+v", len(u), u[0])
	}
	p.SetIndexed(300) // chunk 0 wholly, chunk 1 in part
	if got := evictable(); len(got) != 1 || got[0] != 0 {
		t.Fatalf("300 indexed: evictable %v, want [0]", got)
	}
	p.SetIndexed(n)
	p.MarkDirty(256 + 3)
	if got := evictable(); len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Fatalf("all indexed, chunk 1 dirty: evictable %v, want [0 2] (never the last)", got)
	}
	before := p.Bytes()
	if !p.EvictChunk(0) || p.EvictChunk(1) || p.EvictChunk(3) {
		t.Fatal("EvictChunk: want chunk 0 only")
	}
	if _, _, ok := p.Find(5000); ok || !p.Paged() || p.Evictions() != 1 || p.Bytes() >= before {
		t.Fatalf("after evicting chunk 0: found %v, paged %v, evictions %d, bytes %d → %d", ok, p.Paged(), p.Evictions(), before, p.Bytes())
	}
	if !p.EvictChunk(2) {
		t.Fatal("EvictChunk(2) refused")
	}
	if p.peak != len(p.index) || len(p.index) != n-512 {
		t.Errorf("after evicting half: map of %d, peak %d; want made again at %d", len(p.index), p.peak, n-512)
	}
	if err := p.LoadChunk(0, saved[1], 0, 0); err == nil {
		t.Error("LoadChunk of chunk 1's bytes as chunk 0: no error")
	}
	if err := p.LoadChunk(0, saved[0], buckets.Date(0), 7); err != nil {
		t.Fatal(err)
	}
	if id, v, ok := p.Find(5000 + 17); !ok || id != 17 || v.Last != 17 {
		t.Fatalf("read back: Find = %d, %+v, %v", id, v, ok)
	}
	if id, added, _ := p.Visitor(5000 + 17); added || id != 17 {
		t.Errorf("Visitor of a visitor read back: %d, added %v", id, added)
	}

	// Read back paged: the last chunk only; new visitors follow it.
	q := NewPaged(0, n, n)
	if err := q.LoadChunk(3, saved[3], 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := q.Find(5000); ok || !q.Paged() {
		t.Fatal("a paged period found a visitor of a chunk it did not read")
	}
	if id, added, _ := q.Visitor(1); !added || id != n {
		t.Errorf("new visitor of a paged period: id %d, added %v; want %d", id, added, n)
	}
	if id, _, ok := q.Find(5000 + n - 1); !ok || id != n-1 {
		t.Errorf("Find of the last chunk's visitor: %d, %v", id, ok)
	}
}

// TestSmallPeriodBytes: a period of one visitor takes (and counts) a few
// hundred bytes, not a chunk's room for 256 visitors; the room the last
// chunk keeps to grow is counted.
func TestSmallPeriodBytes(t *testing.T) {
	var p Period
	p.Visitor(1)
	if b := p.Bytes(); b > 512 {
		t.Errorf("one visitor: Bytes %d, want at most 512", b)
	}
	for i := range 129 {
		p.Visitor(uint64(10 + i))
	}
	c := p.chunks[0]
	slack := (cap(c.hashes)-len(c.hashes))*8 + (cap(c.visits)-len(c.visits))*40
	if slack == 0 {
		t.Fatalf("130 visitors: no room to grow (caps %d, %d)", cap(c.hashes), cap(c.visits))
	}
	if b, least := p.Bytes(), 130*visitorBytes+slack; b < least {
		t.Errorf("130 visitors: Bytes %d, want at least %d (their room to grow counted)", b, least)
	}
}

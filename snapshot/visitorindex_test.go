package snapshot

import (
	"errors"
	"testing"
)

// TestVisitorIndex: the index of a period's visitors by hash and its count
// are written with the chunks, read back by hash, and dropped with the
// period (DropPeriods) and the website; the last chunk of a period and a
// chunk by number are read.
func TestVisitorIndex(t *testing.T) {
	s, _ := memStore(t)
	must(t, s.WriteSnapshot(&Snapshot{
		Chunks: []StateChunk{
			{Website: 1, Period: 5, Chunk: 0, Data: []byte("5.0")},
			{Website: 1, Period: 5, Chunk: 3, Data: []byte("5.3")},
			{Website: 1, Period: 6, Chunk: 0, Data: []byte("6.0")},
		},
		Index: []VisitorIndex{
			{Website: 1, Period: 5, Hash: 0xffff_ffff_ffff_ffff, ID: 1<<32 - 1},
			{Website: 1, Period: 5, Hash: 7, ID: 3},
			{Website: 1, Period: 6, Hash: 7, ID: 9},
		},
		Indexed: []PeriodIndexed{{Website: 1, Period: 5, N: 4}, {Website: 1, Period: 6, N: 10}},
	}))
	id := func(period int32, hash uint64) (uint32, bool) {
		t.Helper()
		v, ok, err := s.VisitorID(1, period, hash)
		must(t, err)
		return v, ok
	}
	if v, ok := id(5, 7); !ok || v != 3 {
		t.Errorf("VisitorID(5, 7) = %d, %v; want 3", v, ok)
	}
	if v, ok := id(5, 0xffff_ffff_ffff_ffff); !ok || v != 1<<32-1 {
		t.Errorf("VisitorID(5, max) = %d, %v", v, ok)
	}
	if v, ok := id(6, 7); !ok || v != 9 {
		t.Errorf("VisitorID(6, 7) = %d, %v; want 9", v, ok)
	}
	if _, ok := id(5, 8); ok {
		t.Error("VisitorID of a hash never indexed: found")
	}
	if n, err := s.PeriodIndexed(1, 5); err != nil || n != 4 {
		t.Errorf("PeriodIndexed(5) = %d, %v; want 4", n, err)
	}
	if n, err := s.PeriodIndexed(1, 7); err != nil || n != 0 {
		t.Errorf("PeriodIndexed of a period without index = %d, %v; want 0", n, err)
	}
	if c, data, ok, err := s.LastStateChunk(1, 5); err != nil || !ok || c != 3 || string(data) != "5.3" {
		t.Errorf("LastStateChunk(5) = %d, %q, %v, %v; want 3, 5.3", c, data, ok, err)
	}
	if _, _, ok, err := s.LastStateChunk(1, 9); err != nil || ok {
		t.Errorf("LastStateChunk of a period without chunks: ok %v, %v", ok, err)
	}
	if data, err := s.StateChunk(1, 5, 0); err != nil || string(data) != "5.0" {
		t.Errorf("StateChunk(5, 0) = %q, %v", data, err)
	}
	if _, err := s.StateChunk(1, 5, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("StateChunk of a missing chunk: %v, want ErrNotFound", err)
	}

	// Dropping period 5 drops its index and count, not period 6's; a
	// count of 0 deletes it.
	must(t, s.WriteSnapshot(&Snapshot{
		DropPeriods: []PeriodRef{{Website: 1, Period: 5}},
		Indexed:     []PeriodIndexed{{Website: 1, Period: 6, N: 0}},
	}))
	if _, ok := id(5, 7); ok {
		t.Error("after DropPeriods: the period's index kept")
	}
	if n, _ := s.PeriodIndexed(1, 5); n != 0 {
		t.Errorf("after DropPeriods: count %d kept", n)
	}
	if n, _ := s.PeriodIndexed(1, 6); n != 0 {
		t.Errorf("a count of 0: %d kept", n)
	}
	if v, ok := id(6, 7); !ok || v != 9 {
		t.Errorf("another period's index after DropPeriods: %d, %v", v, ok)
	}
	must(t, s.DeleteWebsite(1))
	if _, ok := id(6, 7); ok {
		t.Error("after DeleteWebsite: the index kept")
	}
}

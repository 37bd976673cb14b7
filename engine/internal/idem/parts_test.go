package idem

import (
	"testing"

	"github.com/webstats/webstats/engine/internal/wire"
)

// TestKeyPartsRace: the marks of two calls with one key, their parts
// interleaved in the log as two nodes of a cluster publish them (a part
// none of whose hits counted is missing, its drops carried by the next):
// each part index counts once, the first to arrive, and the key's counts
// are the call's.
func TestKeyPartsRace(t *testing.T) {
	const bot = 3 // a drop reason's index
	key := Digest("k")
	mark := func(part uint32, accepted, bots uint32) *Mark {
		m := &Mark{Website: 1, Key: key, Ms: 1000, Part: part, Parts: 4}
		m.Res.Accepted = accepted
		m.Res.Dropped[bot] = bots
		return m
	}
	// Parts: 0 = 3 accepted, 1 = 3 bots (not logged), 2 = 3 accepted
	// (carrying 1's bots), 3 = 1 accepted.
	A0, A2, A3 := mark(0, 3, 0), mark(2, 3, 3), mark(3, 1, 0)
	B0, B2, B3 := mark(0, 3, 0), mark(2, 3, 3), mark(3, 1, 0)
	for _, order := range [][]*Mark{
		{A0, A2, A3, B0, B2, B3},
		{A0, B0, B2, A2, A3, B3},
		{B0, A0, A2, B2, B3, A3},
		{A0, B2, A2, B0, A3, B3},
	} {
		var tab Table
		counted := 0
		for _, m := range order {
			if tab.Accepts(m) {
				counted += int(m.Res.Accepted)
				tab.Add(m, 100)
			}
		}
		ent, ok := tab.Lookup(key, 2000)
		if counted != 7 || !ok || ent.Partial() || ent.Res.Accepted != 7 || ent.Res.Dropped[bot] != 3 {
			t.Errorf("counted %d, entry %+v (found %v): want 7 counted, a whole entry of 7 and 3 bots", counted, ent, ok)
		}
		// The table round-trips through its encoding, parts and all.
		var half Table
		half.Add(A0, 100)
		var got Table
		b := half.AppendBinary(nil, true)
		d := wire.Decoder{B: b}
		if err := got.Decode(&d, true); err != nil || len(d.B) != 0 {
			t.Fatalf("decode: %v", err)
		}
		if e, _ := got.Lookup(key, 2000); e.Done != 1 || e.Parts != 4 || e.Res.Accepted != 3 {
			t.Errorf("decoded partial entry %+v, want done 1 of 4, 3 accepted", e)
		}
	}
}

package idem

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/wire"
)

const day = 24 * 60 * 60 * 1000 // ms

func mark(key string, ms int64) *Mark {
	return &Mark{Website: 7, Key: Digest(key), Ms: ms, Res: Result{Accepted: 3, Dropped: [Reasons]uint32{0, 1, 0, 2}}, Nonce: 9}
}

// TestTableExpiry: a key is found until TTL after its first use, counts
// as live as long, and one used again after it expired takes a new place.
func TestTableExpiry(t *testing.T) {
	var tb Table
	tb.Add(mark("a", 0), 10)
	tb.Add(mark("b", 2*day), 10)
	ttl := TTL.Milliseconds()
	if _, ok := tb.Lookup(Digest("a"), ttl-1); !ok {
		t.Error("a not found just before its TTL")
	}
	if _, ok := tb.Lookup(Digest("a"), ttl); ok {
		t.Error("a found at its TTL")
	}
	if n, oldest := tb.Live(ttl); n != 1 || oldest != 2*day {
		t.Errorf("Live(TTL) = %d, %d; want 1, %d", n, oldest, 2*day)
	}
	// a again after it expired: the expired one goes first, then a takes
	// its place after b.
	tb.Add(mark("a", ttl+day), 10)
	if tb.Len() != 2 {
		t.Fatalf("Len = %d, want 2", tb.Len())
	}
	if n, oldest := tb.Live(ttl + day); n != 2 || oldest != 2*day {
		t.Errorf("Live = %d, %d; want 2, %d", n, oldest, 2*day)
	}
	if e, ok := tb.Lookup(Digest("a"), ttl+day); !ok || e.Ms != ttl+day || e.Nonce != 9 {
		t.Errorf("Lookup(a) = %+v, %v", e, ok)
	}
	if got, want := tb.Bytes(), int64(2*keyBytes); got != want {
		t.Errorf("Bytes = %d, want %d", got, want)
	}
}

// TestTableHardMax: past hardMax keys the oldest goes, in the order they
// were added.
func TestTableHardMax(t *testing.T) {
	var tb Table
	for i, k := range []string{"a", "b", "c", "d"} {
		tb.Add(mark(k, int64(i)), 3)
	}
	for _, tt := range []struct {
		key  string
		want bool
	}{{"a", false}, {"b", true}, {"c", true}, {"d", true}} {
		if _, ok := tb.Lookup(Digest(tt.key), 4); ok != tt.want {
			t.Errorf("Lookup(%s) = %v, want %v", tt.key, ok, tt.want)
		}
	}
	if tb.Len() != 3 {
		t.Errorf("Len = %d, want 3", tb.Len())
	}
}

// TestTableRoundTrip: a table decodes to what was encoded, nonces aside,
// and leaves the decoder after it.
func TestTableRoundTrip(t *testing.T) {
	var tb Table
	for i, k := range []string{"x", "y", "z"} {
		tb.Add(mark(k, int64(i)*day), 10)
	}
	b := append(tb.AppendBinary(nil, false), 0xaa)
	d := wire.Decoder{B: b}
	var got Table
	if err := got.Decode(&d, false); err != nil {
		t.Fatal(err)
	}
	if len(d.B) != 1 || d.B[0] != 0xaa {
		t.Errorf("left %x, want aa", d.B)
	}
	want := tb
	for k, e := range want.m {
		e.Nonce = 0
		want.m[k] = e
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Table{}, order{})); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	for n := range len(b) - 1 {
		d := wire.Decoder{B: b[:n]}
		if err := got.Decode(&d, false); err == nil {
			t.Errorf("Decode of %d of %d bytes: no error", n, len(b)-1)
		}
	}
}

// TestMarkRoundTrip: a mark decodes to what was encoded (Seq aside), and a
// cut or extended one is wire.ErrRecord.
func TestMarkRoundTrip(t *testing.T) {
	m := mark("k", 12345)
	m.Seq = 99
	b := m.AppendBinary(nil)
	if b[0] != Tag {
		t.Fatalf("first byte %#x, want Tag", b[0])
	}
	var got Mark
	if err := got.Decode(b); err != nil {
		t.Fatal(err)
	}
	want := *m
	want.Seq = 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	for _, bad := range [][]byte{b[:len(b)-1], append(b[:len(b):len(b)], 0), {Tag, 0}} {
		if err := new(Mark).Decode(bad); !errors.Is(err, wire.ErrRecord) {
			t.Errorf("Decode(%x) = %v, want ErrRecord", bad, err)
		}
	}
	if got := m.Of(7); got != m {
		t.Error("Of(its website) is not the mark")
	}
	if got := m.Of(8); got != nil {
		t.Error("Of(another website) is not nil")
	}
}

func FuzzMarkDecode(f *testing.F) {
	f.Add(mark("k", 1).AppendBinary(nil))
	f.Add([]byte{Tag})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Mark
		if m.Decode(b) != nil {
			return
		}
		var again Mark
		if err := again.Decode(m.AppendBinary(nil)); err != nil || again != m {
			t.Fatalf("round trip of %+v: %+v, %v", m, again, err)
		}
	})
}

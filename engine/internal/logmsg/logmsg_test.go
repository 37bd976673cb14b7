package logmsg

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/wire"
)

// records splits a message back into its key and records.
func records(msg []byte) (key []byte, recs [][]byte, err error) {
	key, body, err := Split(msg)
	for err == nil && len(body) > 0 {
		var rec []byte
		rec, body, err = Next(body)
		recs = append(recs, rec)
	}
	return key, recs, err
}

// TestRoundTrip: messages of few and many records, with a key and
// without, split back into what they were made of; large ones are
// compressed.
func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		key  []byte
		kind byte
	}{
		{name: "plain", n: 3, kind: Plain},
		{name: "plain keyed", n: 1, key: []byte{0xf0, 1, 2}, kind: Keyed},
		{name: "zstd", n: 1000, kind: Zstd},
		{name: "zstd keyed", n: 1000, key: []byte("k"), kind: Keyed},
		{name: "empty record", n: 1, kind: Plain},
	} {
		t.Run(c.name, func(t *testing.T) {
			var want [][]byte
			var r Records
			for i := range c.n {
				rec := fmt.Appendf(nil, "record %d of a message, long enough to repeat", i)
				if c.name == "empty record" {
					rec = []byte{}
				}
				want = append(want, rec)
				r.Add(rec)
			}
			msg := r.Message(c.key)
			if msg[0] != c.kind {
				t.Errorf("kind %q, want %q", msg[0], c.kind)
			}
			if c.n == 1000 && len(msg) >= r.Len() {
				t.Errorf("%d bytes of records make a message of %d", r.Len(), len(msg))
			}
			key, got, err := records(msg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(key, c.key) {
				t.Errorf("key %q, want %q", key, c.key)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBytes pins the plain encoding: nodes of different versions share the
// log.
func TestBytes(t *testing.T) {
	var r Records
	r.Add([]byte("ab"))
	r.Add([]byte("c"))
	want := []byte{'k', 2, 0xf0, 7, 'p', 2, 'a', 'b', 1, 'c'}
	if diff := cmp.Diff(want, r.Message([]byte{0xf0, 7})); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if r.Len() != 6 {
		t.Errorf("Len %d, want 6", r.Len())
	}
}

// TestRefused: malformed messages are refused with wire.ErrRecord.
func TestRefused(t *testing.T) {
	for _, msg := range [][]byte{
		nil, {}, {'p'}, {'k', 1, 0xf0}, {'k', 9, 0xf0, 'p', 1, 'a'}, {'k', 1, 0xf0},
		{'x', 1, 'a'}, {'p', 3, 'a'}, {'p', 0x80}, {'z', 5, 1, 2, 3}, {'z', 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		if _, _, err := records(msg); !errors.Is(err, wire.ErrRecord) {
			t.Errorf("%q: %v, want wire.ErrRecord", msg, err)
		}
	}
}

// FuzzSplit: a message, whatever its bytes, splits or is refused without
// a panic, and what splits makes the same records again.
func FuzzSplit(f *testing.F) {
	var r Records
	for i := range 2000 {
		r.Add(fmt.Appendf(nil, "r%d", i%30))
	}
	f.Add(r.Message(nil))
	f.Add(r.Message([]byte("key")))
	f.Add([]byte{'p', 1, 'a', 0})
	f.Fuzz(func(t *testing.T, msg []byte) {
		key, recs, err := records(msg)
		if err != nil {
			return
		}
		var again Records
		for _, rec := range recs {
			again.Add(rec)
		}
		key2, recs2, err := records(again.Message(key))
		if err != nil || !bytes.Equal(key, key2) || !cmp.Equal(recs, recs2) {
			t.Fatalf("made again: %q %q %v, was %q %q", key2, recs2, err, key, recs)
		}
	})
}

package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/snapshot"
)

// FuzzDecodeRegistry: a registry transaction's message, whatever its bytes,
// decodes or is refused (wire.ErrRecord) without a panic, and so do its records
// (a follower refuses a message it cannot read before changing anything);
// a message encodeRegistry made decodes to what it was made of.
func FuzzDecodeRegistry(f *testing.F) {
	ops := []snapshot.Op{
		{Kind: snapshot.KindCounter, ID: counterWebsite, Value: []byte("7")},
		{Kind: snapshot.KindWebsite, ID: 7, Value: []byte(`{"id":7,"account":1,"domain":"a.example","timezone":"UTC"}`)},
		{Kind: snapshot.KindGoals, ID: 7, Delete: true},
		{Kind: snapshot.KindAccount, ID: 1, Value: []byte(`{"id":1,"email":"a@example.org"}`)},
		{Kind: snapshot.KindSession, ID: 3, Value: []byte(`{}`)},
		{Kind: snapshot.KindSecret, ID: 9, Value: make([]byte, 32)},
	}
	for i := range ops {
		msg, err := encodeRegistry(uint64(i), [16]byte{byte(i)}, ops[:i+1])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg)
		f.Add(msg[:len(msg)-1])
	}
	f.Add([]byte{msgRegistry})
	f.Add([]byte{msgRegistry, 0, 1, 2})
	f.Add([]byte{msgRegistry, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	e := &Engine{}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeRegistry(data)
		if err != nil {
			return
		}
		if _, err := e.decodeOps(m.ops); err != nil {
			return
		}
		again, err := encodeRegistry(m.base, m.id, m.ops)
		if err != nil {
			t.Fatalf("a decoded message does not encode: %v", err)
		}
		back, err := decodeRegistry(again)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(m, back, cmp.AllowUnexported(regMessage{}), cmp.Comparer(func(a, b []byte) bool { return string(a) == string(b) })); diff != "" {
			t.Fatalf("encode(decode(x)) decodes otherwise:\n%s", diff)
		}
	})
}

// An encoded transaction decodes to its parts.
func TestRegistryMessageRoundTrip(t *testing.T) {
	ops := []snapshot.Op{
		{Kind: snapshot.KindInvite, ID: 1<<64 - 1, Value: []byte(`{"by":1}`)},
		{Kind: snapshot.KindInvite, ID: 2, Delete: true},
		{Kind: snapshot.KindReport, ID: 7<<8 | 1, Value: []byte{}},
	}
	msg, err := encodeRegistry(42, [16]byte{1, 2, 3}, ops)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeRegistry(msg)
	if err != nil {
		t.Fatal(err)
	}
	want := regMessage{base: 42, id: [16]byte{1, 2, 3}, ops: ops}
	if diff := cmp.Diff(want, m, cmp.AllowUnexported(regMessage{}), cmp.Comparer(func(a, b []byte) bool { return string(a) == string(b) })); diff != "" {
		t.Fatal(diff)
	}
	for _, k := range []snapshot.Kind{0, snapshot.KindSalt, snapshot.KindCluster} {
		if _, err := encodeRegistry(1, [16]byte{}, []snapshot.Op{{Kind: k, ID: 1, Value: []byte("x")}}); err == nil {
			t.Errorf("kind %s was encoded into a shared transaction", k)
		}
	}
}

package regtx

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/wire"
	"github.com/webstats/webstats/snapshot"
)

// sameBytes compares values of writes, which alias a message or not.
var sameBytes = cmp.Comparer(func(a, b []byte) bool { return string(a) == string(b) })

// seeds are messages of transactions of one to six writes of the kinds a
// registry holds, each whole and cut short by a byte.
func seeds(f *testing.F) [][]byte {
	ops := []snapshot.Op{
		{Kind: snapshot.KindCounter, ID: 2, Value: []byte("7")},
		{Kind: snapshot.KindWebsite, ID: 7, Value: []byte(`{"id":7,"account":1,"domain":"a.example","timezone":"UTC"}`)},
		{Kind: snapshot.KindGoals, ID: 7, Delete: true},
		{Kind: snapshot.KindAccount, ID: 1, Value: []byte(`{"id":1,"email":"a@example.org"}`)},
		{Kind: snapshot.KindSession, ID: 3, Value: []byte(`{}`)},
		{Kind: snapshot.KindSecret, ID: 9, Value: make([]byte, 32)},
	}
	var out [][]byte
	for i := range ops {
		msg, err := Encode(Message{Base: uint64(i), ID: [16]byte{byte(i)}, Ops: ops[:i+1]})
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, msg, msg[:len(msg)-1])
	}
	return append(out,
		[]byte{Kind},
		[]byte{Kind, 0, 1, 2},
		[]byte{Kind, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
}

// FuzzDecode: a message, whatever its bytes, decodes or is refused
// (wire.ErrRecord) without a panic; what decodes encodes again to a message
// that decodes to the same.
func FuzzDecode(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			if !errors.Is(err, wire.ErrRecord) {
				t.Fatalf("refused with %v, not wire.ErrRecord", err)
			}
			return
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatalf("a decoded message does not encode: %v", err)
		}
		back, err := Decode(again)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(m, back, sameBytes); diff != "" {
			t.Fatalf("encode(decode(x)) decodes otherwise:\n%s", diff)
		}
	})
}

// An encoded transaction decodes to its parts, and the kinds no node
// shares are refused.
func TestMessageRoundTrip(t *testing.T) {
	ops := []snapshot.Op{
		{Kind: snapshot.KindInvite, ID: 1<<64 - 1, Value: []byte(`{"by":1}`)},
		{Kind: snapshot.KindInvite, ID: 2, Delete: true},
		{Kind: snapshot.KindReport, ID: 7<<8 | 1, Value: []byte{}},
	}
	want := Message{Base: 42, ID: [16]byte{1, 2, 3}, Ops: ops}
	msg, err := Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, m, sameBytes); diff != "" {
		t.Fatalf("mismatch (-want +got):\n%s", diff)
	}
	for _, k := range []snapshot.Kind{0, snapshot.KindSalt, snapshot.KindCluster} {
		if _, err := Encode(Message{Base: 1, Ops: []snapshot.Op{{Kind: k, ID: 1, Value: []byte("x")}}}); err == nil {
			t.Errorf("kind %s was encoded into a shared transaction", k)
		}
	}
}

// TestMessageBytes pins the encoding: nodes of different versions share
// the log.
func TestMessageBytes(t *testing.T) {
	msg, err := Encode(Message{Base: 300, ID: [16]byte{0xaa, 15: 0xbb}, Ops: []snapshot.Op{
		{Kind: snapshot.KindSecret, ID: 5, Value: []byte("ab")},
		{Kind: snapshot.KindInvite, ID: 128, Delete: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{'r', 0xac, 0x02, 0xaa, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xbb, 2,
		byte(snapshot.KindSecret), 5, 1, 2, 'a', 'b',
		byte(snapshot.KindInvite), 0x80, 0x01, 0}
	if diff := cmp.Diff(want, msg); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestTx: a dry run's writes are collected (values copied), the first
// write of each record is reported once, and Undo runs what was saved,
// latest first.
func TestTx(t *testing.T) {
	tx := New(9)
	if !tx.Empty() || tx.Bytes() != 0 {
		t.Fatalf("a new transaction: empty %v, %d bytes", tx.Empty(), tx.Bytes())
	}
	v := []byte("one")
	var order []int
	if !tx.Put(snapshot.KindSecret, 1, v) {
		t.Error("the first write of a record is not reported as first")
	}
	tx.OnUndo(func() { order = append(order, 1) })
	v[0] = 'X'
	if tx.Put(snapshot.KindSecret, 1, []byte("two")) || tx.Delete(snapshot.KindSecret, 1) {
		t.Error("a second write of a record is reported as first")
	}
	if !tx.Delete(snapshot.KindInvite, 1) {
		t.Error("the first write of another record is not reported as first")
	}
	tx.OnUndo(func() { order = append(order, 2) })
	if tx.Empty() || tx.Bytes() != 3+16+3+16+16+16 {
		t.Errorf("empty %v, %d bytes", tx.Empty(), tx.Bytes())
	}
	msg, err := tx.Message([16]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	want := Message{Base: 9, ID: [16]byte{7}, Ops: []snapshot.Op{
		{Kind: snapshot.KindSecret, ID: 1, Value: []byte("one")},
		{Kind: snapshot.KindSecret, ID: 1, Value: []byte("two")},
		{Kind: snapshot.KindSecret, ID: 1, Delete: true},
		{Kind: snapshot.KindInvite, ID: 1, Delete: true},
	}}
	if diff := cmp.Diff(want, m, sameBytes); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	tx.Undo()
	if diff := cmp.Diff([]int{2, 1}, order); diff != "" {
		t.Errorf("undo order mismatch (-want +got):\n%s", diff)
	}
}

// TestVersion: the version record reads back.
func TestVersion(t *testing.T) {
	op := VersionOp(1<<40 + 3)
	if op.Kind != snapshot.KindCluster || op.ID != VersionID || string(op.Value) != "1099511627779" {
		t.Fatalf("version op %+v", op)
	}
	if v, err := ParseVersion(op.Value); err != nil || v != 1<<40+3 {
		t.Errorf("ParseVersion: %d, %v", v, err)
	}
	if _, err := ParseVersion([]byte("x")); err == nil {
		t.Error("a version of x parsed")
	}
}

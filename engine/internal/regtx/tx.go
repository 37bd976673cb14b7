package regtx

import (
	"slices"

	"github.com/webstats/webstats/snapshot"
)

// Tx collects the writes of a dry run, with what puts memory back. It is
// guarded by the caller's registry lock.
type Tx struct {
	base  uint64
	ops   []snapshot.Op
	bytes int // of ops, about as encoded
	seen  map[key]bool
	undo  []func()
}

type key struct {
	kind snapshot.Kind
	id   uint64
}

// New returns an empty transaction made on the registry version base (the
// log position of the last transaction applied).
func New(base uint64) *Tx {
	return &Tx{base: base, seen: make(map[key]bool)}
}

// Put collects a write of value (copied). It reports whether it is the
// dry run's first write of the record: the caller then saves, with OnUndo,
// how to put back what memory holds for it (the changes write a record
// before they change memory, so that is memory as it was).
func (t *Tx) Put(kind snapshot.Kind, id uint64, value []byte) (first bool) {
	first = t.see(kind, id)
	t.ops = append(t.ops, snapshot.Op{Kind: kind, ID: id, Value: slices.Clone(value)})
	t.bytes += len(value) + 16
	return first
}

// Delete collects a deletion; its result is Put's.
func (t *Tx) Delete(kind snapshot.Kind, id uint64) (first bool) {
	first = t.see(kind, id)
	t.ops = append(t.ops, snapshot.Op{Kind: kind, ID: id, Delete: true})
	t.bytes += 16
	return first
}

func (t *Tx) see(kind snapshot.Kind, id uint64) bool {
	k := key{kind, id}
	if t.seen[k] {
		return false
	}
	t.seen[k] = true
	return true
}

// OnUndo adds fn to what Undo runs.
func (t *Tx) OnUndo(fn func()) { t.undo = append(t.undo, fn) }

// Undo puts memory back as it was before the dry run: what OnUndo added,
// latest first.
func (t *Tx) Undo() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
}

// Bytes is the size of the records collected so far, about as encoded.
func (t *Tx) Bytes() int { return t.bytes }

// Empty reports whether the dry run wrote nothing: there is nothing to
// publish.
func (t *Tx) Empty() bool { return len(t.ops) == 0 }

// Message returns the transaction as the message of id (Encode).
func (t *Tx) Message(id [16]byte) ([]byte, error) {
	return Encode(Message{Base: t.base, ID: id, Ops: t.ops})
}

package idem

import (
	"encoding/binary"
	"errors"

	"github.com/webstats/webstats/engine/internal/wire"
)

// Entry is a key of the table: when it was first used and what that call
// answered.
type Entry struct {
	Ms  int64
	Res Result
	// Nonce is the mark's while the process that applied it runs (not
	// saved: 0 once decoded).
	Nonce uint64
	// Parts is, for a call counted in parts and not all applied yet, how
	// many it has, and Done how many are applied (Res sums theirs); both
	// are 0 once the call is whole.
	Done, Parts uint32
}

// Partial reports an entry of a call whose parts are not all applied: a
// repeat resumes it.
func (e Entry) Partial() bool { return e.Parts != 0 }

// next is e with m, a part at or after e.Done, applied. Its Nonce
// becomes m's: the call that applied the last part is the one that
// counted the key whole (the others' answers are repeats).
func (e Entry) next(m *Mark) Entry {
	e.Res.Add(m.Res)
	e.Nonce = m.Nonce
	if e.Done = m.Part + 1; e.Done >= m.Parts {
		e.Done, e.Parts = 0, 0
	} else {
		e.Parts = m.Parts
	}
	return e
}

// Table is a website's keys younger than TTL, at most the hardMax of Add.
// It keeps them in the order they were applied, which is the log's order,
// so that expiry and the bound drop the same keys on every node and at
// every replay. The zero Table is empty and ready to use; it is not safe
// for concurrent use.
type Table struct {
	m     map[Key]Entry
	order []order
}

type order struct {
	key Key
	ms  int64
}

// Lookup returns the entry of key if it is younger than TTL at nowMs.
func (t *Table) Lookup(key Key, nowMs int64) (Entry, bool) {
	e, ok := t.m[key]
	if !ok || nowMs-e.Ms >= TTL.Milliseconds() {
		return Entry{}, false
	}
	return e, true
}

// Live counts the keys younger than TTL at nowMs and returns the time the
// oldest of them was first used (Unix ms; 0 with none).
func (t *Table) Live(nowMs int64) (n int, oldest int64) {
	i := 0
	for i < len(t.order) && nowMs-t.order[i].ms >= TTL.Milliseconds() {
		i++
	}
	if i < len(t.order) {
		oldest = t.order[i].ms
	}
	return len(t.order) - i, oldest
}

// Len is how many keys the table holds, expired ones included.
func (t *Table) Len() int { return len(t.order) }

// Accepts reports whether a batch with mark m counts, applied in log
// order at m's time: when m's key is not live, or is that of a call in
// parts not yet past m's part. A call's parts are logged in order, and a
// part none of whose hits counted is not logged (its drops go with the
// next part's mark, Mark.Carry), so the next part logged may come after
// Done. Two calls with one key racing on two nodes of a cluster (a
// client's retry, the same body): each part counts once, whichever call's
// arrives first.
func (t *Table) Accepts(m *Mark) bool {
	old, ok := t.Lookup(m.Key, m.Ms)
	return !ok || old.Partial() && m.Part >= old.Done
}

// Add records a key applied from the log (m.Ms is the time of its call).
// Keys older than TTL at m.Ms go first; past hardMax keys (more than the
// calls' own checks let in: calls on several nodes at once) the oldest
// goes: the table stays bounded whatever the log holds. A live key takes
// only a later part of its call (Accepts); anything else of it is a
// repeat, which counted nothing.
func (t *Table) Add(m *Mark, hardMax int) {
	if t.m == nil {
		t.m = make(map[Key]Entry)
	}
	if old, ok := t.Lookup(m.Key, m.Ms); ok {
		if old.Partial() && m.Part >= old.Done {
			t.m[m.Key] = old.next(m)
		}
		return
	}
	i := 0
	for i < len(t.order) && (m.Ms-t.order[i].ms >= TTL.Milliseconds() || len(t.order)-i >= hardMax) {
		o := t.order[i]
		if e, ok := t.m[o.key]; ok && e.Ms == o.ms {
			delete(t.m, o.key)
		}
		i++
	}
	if i > 0 {
		t.order = append(t.order[:0], t.order[i:]...)
	}
	if old, ok := t.m[m.Key]; ok {
		// Replaced (it had expired): its place in order goes with it.
		for j, o := range t.order {
			if o.key == m.Key && o.ms == old.Ms {
				t.order = append(t.order[:j], t.order[j+1:]...)
				break
			}
		}
	}
	t.m[m.Key] = Entry{Ms: m.Ms, Nonce: m.Nonce, Done: m.Part, Parts: m.Parts}.next(m)
	t.order = append(t.order, order{m.Key, m.Ms})
}

// Partial reports whether a key of the table is of a call not all of whose
// parts are applied: its encoding needs parts (AppendBinary).
func (t *Table) Partial() bool {
	for _, e := range t.m {
		if e.Partial() {
			return true
		}
	}
	return false
}

// keyBytes is what a key of a table takes in memory, its map entry and
// its place in order with their slack (about 142 bytes measured at 10,000
// keys): the bytes Bytes counts.
const keyBytes = 160

// Bytes is the memory the table's keys take (keyBytes each).
func (t *Table) Bytes() int64 { return int64(len(t.order)) * keyBytes }

// AppendBinary appends the table: its count, then each key in order with
// its time and its result's Reasons counts (not its nonce); with parts,
// each key's Done and Parts after its counts.
func (t *Table) AppendBinary(b []byte, parts bool) []byte {
	b = binary.AppendUvarint(b, uint64(len(t.order)))
	for _, o := range t.order {
		e := t.m[o.key]
		b = append(b, o.key[:]...)
		b = binary.AppendVarint(b, e.Ms)
		b = binary.AppendUvarint(b, uint64(e.Res.Accepted))
		for _, n := range e.Res.Dropped {
			b = binary.AppendUvarint(b, uint64(n))
		}
		if parts {
			b = binary.AppendUvarint(b, uint64(e.Done))
			b = binary.AppendUvarint(b, uint64(e.Parts))
		}
	}
	return b
}

// errTable: the table's encoding is malformed.
var errTable = errors.New("bad idempotency keys")

// Decode replaces t with the table AppendBinary wrote at d, with parts or
// not (at most one key per 17 bytes left), and leaves d after it.
func (t *Table) Decode(d *wire.Decoder, parts bool) error {
	n := d.Uvarint()
	if d.Bad || n > uint64(len(d.B))/17 {
		return errTable
	}
	*t = Table{}
	if n == 0 {
		return nil
	}
	t.m = make(map[Key]Entry, n)
	t.order = make([]order, 0, n)
	for range n {
		var k Key
		if len(d.B) < len(k) {
			return errTable
		}
		copy(k[:], d.B)
		d.B = d.B[len(k):]
		e := Entry{Ms: d.Varint()}
		e.Res.Accepted = uint32(d.Uvarint())
		for i := range e.Res.Dropped {
			e.Res.Dropped[i] = uint32(d.Uvarint())
		}
		if parts {
			done, n := d.Uvarint(), d.Uvarint()
			if n > MaxParts || n != 0 && done >= n || n == 0 && done != 0 {
				d.Bad = true
			}
			e.Done, e.Parts = uint32(done), uint32(n)
		}
		if d.Bad {
			return errTable
		}
		t.m[k] = e
		t.order = append(t.order, order{k, e.Ms})
	}
	return nil
}

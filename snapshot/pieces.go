package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Large day values are stored in pieces (format version 2). Pebble writes
// a value whole into one block of an sstable, snappy-compressed, when it
// flushes and compacts it: for the 8 MB day an import of 10,000 events of
// new values writes, the flush held the block, its compressed copy and
// its aligned buffer at once, 27 MB (a heap profile of imports in a row
// under a 16 MiB budget, issue #38 row 7). A day value of more than
// pieceBytes is written as a stub under the day's key (stubMark, its
// length and its number of pieces) and its pieces under the day's key
// followed by pieceMark and the piece's number, in the same batch as the
// stub: a reader sees the whole value or the one before. They sort after
// the day's parts (a part number's first byte is never pieceMark), inside
// every range that deletes the day.
var pieceBytes = 128 << 10

// SetPieceBytes sets the size of a day value's pieces and returns the size
// before: for tests (of this package and of the engine, whose values are
// small), called before stores are opened, never while one is in use.
func SetPieceBytes(n int) int {
	old := pieceBytes
	pieceBytes = n
	return old
}

// maxPieced bounds the length a stub may claim (a day value is at most
// megabytes; the stream of a partition's state refuses values over 1 GiB).
const maxPieced = 1 << 30

const (
	pieceMark byte = 0xff // after a day's key: its pieces
	// stubMark begins the value of a day stored in pieces. The engine's
	// day values never begin with it (a day's envelope begins with 0xd5,
	// a buckets day with its version, 1 or 2), and setDay stores any
	// value that does in pieces, whatever its length, so that no value
	// reads as a stub.
	stubMark byte = 0xfe
)

// pieceKeyLen is the length of a piece's key: a day key, pieceMark and
// the piece's number.
const pieceKeyLen = websiteKeyLen + 1 + 4

// piecesPrefix is the prefix of the pieces of the value under base.
func piecesPrefix(base []byte) []byte {
	p := make([]byte, 0, len(base)+5)
	return append(append(p, base...), pieceMark)
}

// pieceKey is the key of piece i of the value under base.
func pieceKey(base []byte, i uint32) []byte {
	return binary.BigEndian.AppendUint32(piecesPrefix(base), i)
}

// isPieceKey reports whether key is a piece's key.
func isPieceKey(key []byte) bool {
	return len(key) == pieceKeyLen && key[0] == prefixWebsite && key[5] == subDay && key[websiteKeyLen] == pieceMark
}

// stub is the value stored under the key of a value of total bytes in n
// pieces.
func stub(total, n int) []byte {
	b := []byte{stubMark}
	b = binary.AppendUvarint(b, uint64(total))
	return binary.AppendUvarint(b, uint64(n))
}

// parseStub reports whether v is a stub (pieced) and, if so, the length
// and number of pieces of its value.
func parseStub(v []byte) (total, n int, pieced bool, err error) {
	if len(v) == 0 || v[0] != stubMark {
		return 0, 0, false, nil
	}
	t, k := binary.Uvarint(v[1:])
	c, k2 := binary.Uvarint(v[1+max(k, 0):])
	if k <= 0 || k2 <= 0 || 1+k+k2 != len(v) || c == 0 || c > max(t, 1) || t > maxPieced {
		return 0, 0, true, &corruptError{fmt.Sprintf("malformed day stub %x", clip(v))}
	}
	return int(t), int(c), true, nil
}

// setDay adds to b the writes that store val under the day key key (nil:
// delete it), in pieces when it is longer than pieceBytes. The pieces of
// the value it replaces are deleted first, in the same batch (the writes
// after the deletion in a batch are newer than it): those in the store
// or written earlier in the batch (pieced lists their keys). Snapshots
// are serialised by WriteSnapshot's snapMu; a website deleted or
// replaced (a partition moved) meanwhile can at worst leave pieces beyond
// a stub's count, which readers never read.
func (s *Store) setDay(b *pebble.Batch, pieced map[string]bool, key, val []byte) error {
	had := pieced[string(key)]
	if !had {
		var err error
		if had, err = s.hasPieces(key); err != nil {
			return err
		}
	}
	if had {
		p := piecesPrefix(key)
		if err := b.DeleteRange(p, prefixEnd(p), nil); err != nil {
			return err
		}
	}
	if len(val) <= pieceBytes && (len(val) == 0 || val[0] != stubMark) {
		return setOrDelete(b, key, val)
	}
	if len(val) > maxPieced {
		return fmt.Errorf("a day value of %d bytes, over %d", len(val), maxPieced)
	}
	n := (len(val) + pieceBytes - 1) / pieceBytes
	pieced[string(key)] = true
	if err := b.Set(key, stub(len(val), n), nil); err != nil {
		return err
	}
	for i := range n {
		if err := b.Set(pieceKey(key, uint32(i)), val[i*pieceBytes:min((i+1)*pieceBytes, len(val))], nil); err != nil {
			return err
		}
	}
	return nil
}

// hasPieces reports whether the store holds pieces under the day key key:
// whether it holds the first (a point read: an iterator a day cost a
// snapshot of 20,000 small days five times the time; every value in
// pieces has a first piece).
func (s *Store) hasPieces(key []byte) (bool, error) {
	_, closer, err := s.db.Get(pieceKey(key, 0))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, closer.Close()
}

// getDay returns a copy of the day value under key, put together from its
// pieces when it has them, read from one view of the store; ErrNotFound
// when there is none.
func (s *Store) getDay(op string, key []byte) ([]byte, error) {
	// Most values are whole: one point read. A stub is read again with
	// its pieces through one iterator (one view of the store).
	val, err := s.getCopy(op, key)
	if err != nil || len(val) == 0 || val[0] != stubMark {
		return val, err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: key, UpperBound: prefixEnd(key)})
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := readDay(it, key)
	if cerr := it.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err == ErrNotFound {
		return nil, err
	}
	return out, wrap(op, err)
}

// readDay reads the day value under key with it, bounded to key's range.
func readDay(it *pebble.Iterator, key []byte) ([]byte, error) {
	if !it.First() || !bytes.Equal(it.Key(), key) {
		if err := it.Error(); err != nil {
			return nil, err
		}
		return nil, ErrNotFound
	}
	val, err := it.ValueAndErr()
	if err != nil {
		return nil, err
	}
	total, n, pieced, err := parseStub(val)
	if err != nil || !pieced {
		return bytes.Clone(val), err
	}
	var a assembly
	a.start(total, n)
	valid := it.SeekGE(pieceKey(key, 0))
	for ; valid && !a.done(); valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		a.add(it.Key(), v)
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return a.value()
}

// assembly puts a pieced value together from its pieces, read in key
// order.
type assembly struct {
	total, n int
	data     []byte
	got      int
}

func (a *assembly) start(total, n int) {
	*a = assembly{total: total, n: n, data: make([]byte, 0, min(total, 64<<20))}
}

func (a *assembly) done() bool { return a.got == a.n }

// add appends piece key's value v if it is the next piece; pieces beyond
// the value's (left by a longer value before it) are not read.
func (a *assembly) add(key, v []byte) {
	if a.got < a.n && binary.BigEndian.Uint32(key[len(key)-4:]) == uint32(a.got) && len(a.data)+len(v) <= a.total {
		a.data = append(a.data, v...)
		a.got++
	}
}

// value returns the value put together, or ErrCorrupt-wrapped when a piece
// is missing.
func (a *assembly) value() ([]byte, error) {
	if a.got != a.n || len(a.data) != a.total {
		return nil, &corruptError{fmt.Sprintf("day pieces: %d of %d pieces, %d of %d bytes", a.got, a.n, len(a.data), a.total)}
	}
	return a.data, nil
}

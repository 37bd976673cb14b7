package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// VisitorIndex is one entry of the index of a salt period's visitor state
// by visitor hash: the visitor's id (the engine's numbering), so that a
// chunk of the state that left memory is found again by hash. The engine
// writes it only for periods it pages (SPEC §13).
type VisitorIndex struct {
	Website uint32
	Period  int32
	Hash    uint64
	ID      uint32
}

// PeriodIndexed records how many visitors of a period, from its first,
// the index holds (the engine's count; 0 deletes the record).
type PeriodIndexed struct {
	Website uint32
	Period  int32
	N       uint32
}

// indexPeriodPrefix is the prefix of the index of website's period, and
// the key of its PeriodIndexed count.
func indexPeriodPrefix(website uint32, period int32) []byte {
	return websiteKey(website, subIndex, flipSign(period))
}

// indexKey is the key of hash in the index of website's period.
func indexKey(website uint32, period int32, hash uint64) []byte {
	return binary.BigEndian.AppendUint64(indexPeriodPrefix(website, period), hash)
}

// writeIndex adds sn's index entries and counts to b.
func writeIndex(b *pebble.Batch, sn *Snapshot) error {
	var err error
	var v [binary.MaxVarintLen32]byte
	for _, r := range sn.Index {
		err = errors.Join(err, b.Set(indexKey(r.Website, r.Period, r.Hash), binary.AppendUvarint(v[:0], uint64(r.ID)), nil))
	}
	for _, r := range sn.Indexed {
		var val []byte
		if r.N > 0 {
			val = binary.AppendUvarint(v[:0], uint64(r.N))
		}
		err = errors.Join(err, setOrDelete(b, indexPeriodPrefix(r.Website, r.Period), val))
	}
	return err
}

// VisitorID looks hash up in the index of website's period: the id, and
// whether the index has it.
func (s *Store) VisitorID(website uint32, period int32, hash uint64) (uint32, bool, error) {
	return s.getUvarint32(fmt.Sprintf("visitor index of website %d, period %d", website, period), indexKey(website, period, hash))
}

// PeriodIndexed returns how many visitors of website's period the index
// holds (0: none).
func (s *Store) PeriodIndexed(website uint32, period int32) (int, error) {
	n, _, err := s.getUvarint32(fmt.Sprintf("visitor index count of website %d, period %d", website, period), indexPeriodPrefix(website, period))
	return int(n), err
}

// getUvarint32 reads a value written as a uvarint of at most 32 bits.
func (s *Store) getUvarint32(op string, key []byte) (uint32, bool, error) {
	if err := s.enter(); err != nil {
		return 0, false, err
	}
	defer s.exit()
	val, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, wrap(op, err)
	}
	defer closer.Close()
	v, n := binary.Uvarint(val)
	if n != len(val) || v > 1<<32-1 {
		return 0, false, wrap(op, &corruptError{detail: fmt.Sprintf("visitor index value %x", val)})
	}
	return uint32(v), true, nil
}

// StateChunk returns a copy of chunk number chunk of website's visitor
// state of period, or ErrNotFound.
func (s *Store) StateChunk(website uint32, period int32, chunk uint32) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	return s.getCopy(fmt.Sprintf("state chunk %d of website %d, period %d", chunk, website, period), chunkKey(website, period, chunk))
}

// LastStateChunk returns the number and a copy of the last chunk of
// website's visitor state of period; ok is false when it has none.
func (s *Store) LastStateChunk(website uint32, period int32) (chunk uint32, data []byte, ok bool, err error) {
	if err := s.enter(); err != nil {
		return 0, nil, false, err
	}
	defer s.exit()
	op := fmt.Sprintf("last state chunk of website %d, period %d", website, period)
	p := chunkPeriodPrefix(website, period)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return 0, nil, false, wrap(op, err)
	}
	defer it.Close()
	if !it.Last() {
		return 0, nil, false, wrap(op, it.Error())
	}
	_, _, chunk, err = parseChunkKey(it.Key())
	if err != nil {
		return 0, nil, false, wrap(op, err)
	}
	val, err := it.ValueAndErr()
	if err != nil {
		return 0, nil, false, wrap(op, err)
	}
	return chunk, append([]byte(nil), val...), true, nil
}

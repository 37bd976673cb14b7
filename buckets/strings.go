package buckets

import (
	"encoding/binary"
	"iter"
	"slices"
	"strconv"
	"strings"
)

// stringsVersion is the format version of a strings chunk.
const stringsVersion = 1

// Strings interns the string values of one website: all dimensions share
// one table. Ids are dense from 0, assigned in order of first [Strings.Intern],
// and never change.
//
// The zero value is an empty table ready to use. A Strings must not be
// copied after first use.
type Strings struct {
	ids    map[string]uint32
	values []string
	bytes  int // sum of len(values[i])
}

// Intern returns the id of v, assigning the next id if v is new. The table
// keeps its own copy of v, never the caller's memory.
func (s *Strings) Intern(v string) uint32 {
	if id, ok := s.ids[v]; ok {
		return id
	}
	return s.add(strings.Clone(v))
}

// add appends v (owned by the table) under the next id.
func (s *Strings) add(v string) uint32 {
	if s.ids == nil {
		s.ids = make(map[string]uint32)
	}
	id := uint32(len(s.values))
	s.ids[v] = id
	s.values = append(s.values, v)
	s.bytes += len(v)
	return id
}

// Lookup returns the id of v, and false if v was never interned.
func (s *Strings) Lookup(v string) (uint32, bool) {
	id, ok := s.ids[v]
	return id, ok
}

// Value returns the string of id, and false if no such id exists.
func (s *Strings) Value(id uint32) (string, bool) {
	if uint64(id) >= uint64(len(s.values)) {
		return "", false
	}
	return s.values[id], true
}

// Len returns the number of strings, which is also the next id.
func (s *Strings) Len() int { return len(s.values) }

// All returns an iterator over the (id, value) pairs of the table in
// ascending id order. The table must not be changed during the iteration.
func (s *Strings) All() iter.Seq2[uint32, string] {
	return func(yield func(uint32, string) bool) {
		for i, v := range s.values {
			if !yield(uint32(i), v) {
				return
			}
		}
	}
}

// SizeBytes returns the approximate heap size of the table in bytes.
func (s *Strings) SizeBytes() int {
	// Per string: its bytes, a 16-byte slot in values, and a map slot of a
	// string header and an id (24 bytes) at a typical load factor of ~7/8
	// plus a control byte.
	return s.bytes + cap(s.values)*16 + len(s.values)*29
}

// AppendBinary appends to b the encoding of the strings with ids
// [from, Len()): a chunk, and returns the extended slice. The chunk records
// from; chunks applied in order with [Strings.AppendChunk] rebuild the table.
// A from beyond Len() is taken as Len() (an empty chunk).
//
// Format: version byte (1), uvarint first id, uvarint count, and per string
// its uvarint length and bytes.
func (s *Strings) AppendBinary(b []byte, from uint32) []byte {
	if uint64(from) > uint64(len(s.values)) {
		from = uint32(len(s.values))
	}
	vs := s.values[from:]
	n := 0
	for _, v := range vs {
		n += len(v) + binary.MaxVarintLen32
	}
	b = slices.Grow(b, 1+2*binary.MaxVarintLen32+n)
	b = append(b, stringsVersion)
	b = binary.AppendUvarint(b, uint64(from))
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b
}

// AppendChunk applies a chunk written by [Strings.AppendBinary]. The chunk
// must start at id Len(): otherwise the error wraps [ErrChunkOrder]. A
// malformed chunk, or one holding a value already in the table, gives an
// error wrapping [ErrCorrupt] (or [ErrVersion]). On error the table is left
// unchanged. The table does not retain chunk.
func (s *Strings) AppendChunk(chunk []byte) error {
	const what = "strings"
	if len(chunk) == 0 {
		return decodeErr(ErrCorrupt, what, "empty input")
	}
	switch v := chunk[0]; {
	case v > stringsVersion:
		return decodeErr(ErrVersion, what, "unknown format version %d (this build reads %d)", v, stringsVersion)
	case v != stringsVersion:
		return decodeErr(ErrCorrupt, what, "bad format version %d", v)
	}
	p := chunk[1:]
	from, n := binary.Uvarint(p)
	if n <= 0 {
		return decodeErr(ErrCorrupt, what, "truncated first id")
	}
	p = p[n:]
	if from != uint64(len(s.values)) {
		return &codedError{
			msg:  "buckets: decode strings: chunk starts at id " + strconv.FormatUint(from, 10) + ", want " + strconv.Itoa(len(s.values)),
			kind: ErrChunkOrder,
		}
	}
	count, n := binary.Uvarint(p)
	if n <= 0 {
		return decodeErr(ErrCorrupt, what, "truncated count")
	}
	p = p[n:]
	// Every string takes at least its one-byte length: check before
	// allocating anything in proportion to count.
	if count > uint64(len(p)) {
		return decodeErr(ErrCorrupt, what, "count %d exceeds the %d bytes left", count, len(p))
	}
	if from+count > 1<<32 {
		return decodeErr(ErrCorrupt, what, "ids overflow uint32")
	}
	// One allocation holds all values of the chunk; values are substrings of
	// it (the few length bytes in between are the price).
	all := string(p)
	off := 0
	rollback := func() {
		for _, v := range s.values[from:] {
			delete(s.ids, v)
			s.bytes -= len(v)
		}
		clear(s.values[from:])
		s.values = s.values[:from]
	}
	if want := int(from) + int(count); cap(s.values) < want {
		s.values = append(make([]string, 0, want), s.values...)
	}
	for i := uint64(0); i < count; i++ {
		l, n := binary.Uvarint(p[off:])
		if n <= 0 {
			rollback()
			return decodeErr(ErrCorrupt, what, "truncated length of string %d", from+i)
		}
		off += n
		if l > uint64(len(p)-off) {
			rollback()
			return decodeErr(ErrCorrupt, what, "truncated string %d", from+i)
		}
		v := all[off : off+int(l)]
		off += int(l)
		if _, dup := s.ids[v]; dup {
			rollback()
			return decodeErr(ErrCorrupt, what, "duplicate string %d", from+i)
		}
		s.add(v)
	}
	if off != len(p) {
		rollback()
		return decodeErr(ErrCorrupt, what, "%d trailing bytes", len(p)-off)
	}
	return nil
}

// MarshalBinary implements [encoding.BinaryMarshaler]: the whole table as
// one chunk, AppendBinary(nil, 0).
func (s *Strings) MarshalBinary() ([]byte, error) {
	return s.AppendBinary(nil, 0), nil
}

// UnmarshalBinary implements [encoding.BinaryUnmarshaler]: it replaces the
// table with the chunk b, which must start at id 0. On error the table is
// left unchanged.
func (s *Strings) UnmarshalBinary(b []byte) error {
	var t Strings
	if err := t.AppendChunk(b); err != nil {
		return err
	}
	*s = t
	return nil
}

package buckets

import (
	"encoding/binary"
	"strconv"
)

// stringsVersion is the format version of a strings chunk.
const stringsVersion = 1

// Strings is the string table of one website in stores written before days
// had their own dictionary (day format version 1): it is kept only to
// migrate such stores. Decode the website's chunks in order with
// [Strings.AppendChunk], then each of its days with [Day.UnmarshalBinaryV1]
// given [Strings.Value]; nothing writes a Strings any more.
//
// Ids are dense from 0, in the order of the chunks. The zero value is an
// empty table ready to use. A Strings must not be copied after first use.
type Strings struct {
	ids    map[string]uint32
	values []string
}

// add appends v (owned by the table) under the next id.
func (s *Strings) add(v string) uint32 {
	if s.ids == nil {
		s.ids = make(map[string]uint32)
	}
	id := uint32(len(s.values))
	s.ids[v] = id
	s.values = append(s.values, v)
	return id
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

// AppendChunk applies a chunk of the version 1 format: version byte (1),
// uvarint first id, uvarint count, and per string its uvarint length and
// bytes. The chunk must start at id Len(): otherwise the error wraps
// [ErrChunkOrder]. A malformed chunk, or one holding a value already in the
// table, gives an error wrapping [ErrCorrupt] (or [ErrVersion]). On error
// the table is left unchanged. The table does not retain chunk.
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

package wire

import (
	"encoding/binary"
	"errors"
)

// ErrRecord reports a malformed log record.
var ErrRecord = errors.New("engine: malformed log record")

// Decoder reads a binary encoding; after the first error Bad is set and every
// read returns zero. Its strings come from In when not nil.
type Decoder struct {
	B   []byte
	Bad bool
	In  *Interner
}

// Interner hands out one string per distinct value, so that decoding the
// same value again allocates nothing: log records repeat their browsers,
// countries, pages and so on. It holds at most maxInterned strings of at
// most maxInternLen bytes, and forgets them all when full.
type Interner struct {
	m map[string]string
}

const (
	maxInterned  = 1 << 14
	maxInternLen = 256
)

// Holds reports whether in holds s.
func (in *Interner) Holds(s string) bool {
	_, ok := in.m[s]
	return ok
}

// Get returns b as a string, the one held for its value when there is one.
func (in *Interner) Get(b []byte) string {
	if len(b) > maxInternLen {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok { // no allocation: a lookup
		return s
	}
	if in.m == nil {
		in.m = make(map[string]string, 1024)
	} else if len(in.m) == maxInterned {
		clear(in.m) // keeps its buckets
	}
	s := string(b)
	in.m[s] = s
	return s
}

func (d *Decoder) Byte() byte {
	if d.Bad || len(d.B) < 1 {
		d.Bad = true
		return 0
	}
	v := d.B[0]
	d.B = d.B[1:]
	return v
}

func (d *Decoder) Uvarint() uint64 {
	v, n := binary.Uvarint(d.B)
	if d.Bad || n <= 0 {
		d.Bad = true
		return 0
	}
	d.B = d.B[n:]
	return v
}

func (d *Decoder) Varint() int64 {
	v, n := binary.Varint(d.B)
	if d.Bad || n <= 0 {
		d.Bad = true
		return 0
	}
	d.B = d.B[n:]
	return v
}

func (d *Decoder) Uint64() uint64 {
	if d.Bad || len(d.B) < 8 {
		d.Bad = true
		return 0
	}
	v := binary.LittleEndian.Uint64(d.B)
	d.B = d.B[8:]
	return v
}

func (d *Decoder) String() string {
	n := d.Uvarint()
	if d.Bad || n > uint64(len(d.B)) {
		d.Bad = true
		return ""
	}
	var s string
	if d.In != nil && n > 0 {
		s = d.In.Get(d.B[:n])
	} else {
		s = string(d.B[:n])
	}
	d.B = d.B[n:]
	return s
}

// UniqueString is String for a value that rarely repeats: interning it
// would cost a hash and an insert for nothing.
func (d *Decoder) UniqueString() string {
	in := d.In
	d.In = nil
	s := d.String()
	d.In = in
	return s
}

// Count reads a count of items that each take at least a byte of what is
// left: larger is corrupt, so allocations are bounded by the data.
func (dd *Decoder) Count() int {
	v := dd.Uvarint()
	if dd.Bad || v > uint64(len(dd.B)) {
		dd.Bad = true
		return 0
	}
	return int(v)
}

package idem

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/webstats/webstats/engine/internal/wire"
)

// TTL is how long a key is remembered.
const TTL = 7 * 24 * time.Hour

// Key is the digest of a key: the table and the log keep 16 bytes of its
// SHA-256, whatever its length (a collision is as unlikely as a guessed
// 128-bit secret).
type Key [16]byte

// Digest returns the Key of key.
func Digest(key string) Key {
	sum := sha256.Sum256([]byte(key))
	return Key(sum[:16])
}

// Reasons is how many drop reasons a Result counts (the engine's, DropNone
// included): the table's encoding holds that many counts a key.
const Reasons = 6

// Result is what a keyed call answered: how many of its hits were
// accepted, and dropped for each reason.
type Result struct {
	Accepted uint32
	Dropped  [Reasons]uint32
}

// Add adds o's counts to r's.
func (r *Result) Add(o Result) {
	r.Accepted += o.Accepted
	for i, n := range o.Dropped {
		r.Dropped[i] += n
	}
}

// Mark is the key of a batch as the log holds it: its website, the key's
// digest, the engine's time of the call (Unix ms) and its answer. Seq is
// the log sequence of the mark (ingest) or of the message holding it
// (cluster mode); it is not encoded.
type Mark struct {
	Website uint32
	Key     Key
	Ms      int64
	Res     Result
	Seq     uint64
	// Nonce tells this call's mark from another's with the same key, time
	// and result (calls on two nodes at once).
	Nonce uint64
	// Part and Parts place the batch in a call counted in parts (the
	// engine's trackparts.go): Res is then the part's, with Carry, the
	// counts of the parts before it that logged nothing; Parts is 0 for a
	// call of one batch. Carry is not encoded.
	Part, Parts uint32
	Carry       Result
}

// MaxParts bounds the parts of one call as a mark or an entry holds them.
const MaxParts = 1<<32 - 1

// Of returns m if it is website's (nil otherwise, and for a nil m).
func (m *Mark) Of(website uint32) *Mark {
	if m == nil || m.Website != website {
		return nil
	}
	return m
}

// Tag is the first byte of a mark's log entry: records start with their
// version (1 to the engine's recordVersion), never this.
const Tag = 0xf0

// AppendBinary appends the mark's log entry to b.
func (m *Mark) AppendBinary(b []byte) []byte {
	b = append(b, Tag)
	b = binary.AppendUvarint(b, uint64(m.Website))
	b = append(b, m.Key[:]...)
	b = binary.AppendVarint(b, m.Ms)
	b = binary.LittleEndian.AppendUint64(b, m.Nonce)
	b = binary.AppendUvarint(b, uint64(m.Res.Accepted))
	b = binary.AppendUvarint(b, uint64(len(m.Res.Dropped)))
	for _, n := range m.Res.Dropped {
		b = binary.AppendUvarint(b, uint64(n))
	}
	if m.Parts > 1 {
		// (A call of one batch writes the mark as versions before parts.)
		b = binary.AppendUvarint(b, uint64(m.Part))
		b = binary.AppendUvarint(b, uint64(m.Parts))
	}
	return b
}

// Decode reads what AppendBinary wrote into m (Seq untouched); a newer
// version's extra reasons are read and not kept. A malformed mark is
// wire.ErrRecord.
func (m *Mark) Decode(b []byte) error {
	d := wire.Decoder{B: b}
	if d.Byte() != Tag {
		return fmt.Errorf("%w: key mark", wire.ErrRecord)
	}
	w := d.Uvarint()
	if d.Bad || w == 0 || w > 1<<32-1 || len(d.B) < len(m.Key) {
		return fmt.Errorf("%w: key mark", wire.ErrRecord)
	}
	m.Website = uint32(w)
	copy(m.Key[:], d.B)
	d.B = d.B[len(m.Key):]
	m.Ms = d.Varint()
	m.Nonce = d.Uint64()
	m.Res = Result{}
	acc, n := d.Uvarint(), d.Uvarint()
	if d.Bad || acc > 1<<32-1 || n > 64 {
		return fmt.Errorf("%w: key mark", wire.ErrRecord)
	}
	m.Res.Accepted = uint32(acc)
	for i := range int(n) {
		v := d.Uvarint()
		if v > 1<<32-1 {
			d.Bad = true
		}
		if i < len(m.Res.Dropped) { // a newer version's reasons: not kept
			m.Res.Dropped[i] = uint32(v)
		}
	}
	m.Part, m.Parts = 0, 0
	if len(d.B) > 0 {
		part, parts := d.Uvarint(), d.Uvarint()
		if parts < 2 || parts > MaxParts || part >= parts {
			d.Bad = true
		}
		m.Part, m.Parts = uint32(part), uint32(parts)
	}
	if d.Bad || len(d.B) != 0 {
		return fmt.Errorf("%w: key mark", wire.ErrRecord)
	}
	return nil
}

package importlog

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/webstats/webstats/engine/internal/wire"
)

// Kind is the kind byte of an import's message: Kind, an op (Part,
// Delete, Abort), the website (uvarint), the publisher's token (16
// bytes), then for Part a flags byte (First, Last), the number of its
// first chunk (uvarint), for the first message the record (length, JSON),
// then the chunks (count, then each: length, bytes), and for Delete the
// import's id (uvarint).
const Kind = 'i'

// The ops of a message.
const (
	Part   = 'p' // chunks of an import
	Delete = 'd' // the deletion of an import
	Abort  = 'a' // the end of an import its publisher gave up
)

// The flags of a Part.
const (
	First = 1 // its import's first message: it holds the record
	Last  = 2 // its import's last message
)

// Message is an import's message.
type Message struct {
	Op      byte
	Website uint32
	Token   [16]byte // the publisher's, one per import or deletion
	Flags   byte     // Part
	First   uint32   // Part: the number of its first chunk
	Record  []byte   // Part with First: the import's record, chunk 0
	Chunks  [][]byte // Part
	ID      uint32   // Delete
}

// Encode returns the bytes of m.
func (m Message) Encode() []byte {
	b := append([]byte{Kind, m.Op}, binary.AppendUvarint(nil, uint64(m.Website))...)
	b = append(b, m.Token[:]...)
	switch m.Op {
	case Part:
		b = append(b, m.Flags)
		b = binary.AppendUvarint(b, uint64(m.First))
		if m.Flags&First != 0 {
			b = binary.AppendUvarint(b, uint64(len(m.Record)))
			b = append(b, m.Record...)
		}
		b = binary.AppendUvarint(b, uint64(len(m.Chunks)))
		for _, c := range m.Chunks {
			b = binary.AppendUvarint(b, uint64(len(c)))
			b = append(b, c...)
		}
	case Delete:
		b = binary.AppendUvarint(b, uint64(m.ID))
	}
	return b
}

// decoder reads a message's fields; after a failed read it stays failed.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint(most uint64) uint64 {
	v, k := binary.Uvarint(d.b)
	if d.bad || k <= 0 || v > most {
		d.bad = true
		return 0
	}
	d.b = d.b[k:]
	return v
}

// count reads a count of what follows, at most one a byte left.
func (d *decoder) count() uint64 {
	n := d.uvarint(math.MaxUint64)
	if n > uint64(len(d.b)) {
		d.bad = true
		return 0
	}
	return n
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if d.bad {
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

// Decode reads a message of Encode; its slices alias msg.
func Decode(msg []byte) (Message, error) {
	var m Message
	bad := fmt.Errorf("engine: import message: %w", wire.ErrRecord)
	if len(msg) < 2 || msg[0] != Kind {
		return m, bad
	}
	m.Op = msg[1]
	d := &decoder{b: msg[2:]}
	m.Website = uint32(d.uvarint(1<<32 - 1))
	if d.bad || m.Website == 0 || len(d.b) < 16 {
		return m, bad
	}
	copy(m.Token[:], d.b)
	d.b = d.b[16:]
	switch m.Op {
	case Part:
		d.part(&m)
	case Delete:
		// Id 0 is read (and applied as not found): the decoder takes
		// whatever the encoder makes, or a follower would stop at it.
		m.ID = uint32(d.uvarint(1<<32 - 1))
	case Abort:
	default:
		return m, bad
	}
	if d.bad || len(d.b) != 0 {
		return m, bad
	}
	return m, nil
}

// part reads the fields of a Part.
func (d *decoder) part(m *Message) {
	if len(d.b) < 1 {
		d.bad = true
		return
	}
	m.Flags, d.b = d.b[0], d.b[1:]
	m.First = uint32(d.uvarint(1<<32 - 1))
	if m.First == 0 {
		d.bad = true
	}
	if m.Flags&First != 0 {
		m.Record = d.bytes()
	}
	n := d.count()
	for i := uint64(0); i < n && !d.bad; i++ {
		m.Chunks = append(m.Chunks, d.bytes())
	}
}

// Split returns the messages of an import of website by the publisher of
// token, stored as chunks (chunk 0 its record), each at most about limit
// bytes but for a chunk larger alone: the first holds the record, the
// last is flagged Last. The messages share the chunks.
func Split(website uint32, token [16]byte, chunks [][]byte, limit int) []Message {
	var parts []Message
	part := Message{Op: Part, Website: website, Token: token, Flags: First, First: 1, Record: chunks[0]}
	size := 64 + len(chunks[0])
	for i, c := range chunks[1:] {
		if len(part.Chunks) > 0 && size+len(c)+10 > limit {
			parts = append(parts, part)
			part = Message{Op: Part, Website: website, Token: token, First: uint32(i + 1)}
			size = 64
		}
		part.Chunks = append(part.Chunks, c)
		size += len(c) + 10
	}
	part.Flags |= Last
	return append(parts, part)
}

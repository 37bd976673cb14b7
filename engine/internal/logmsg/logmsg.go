package logmsg

import (
	"encoding/binary"
	"fmt"

	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/wire"
)

// Kind bytes of the messages of this package.
const (
	Plain = 'p' // records
	Zstd  = 'z' // records, compressed
	Keyed = 'k' // a key, then a message of records
	// Noop is the kind byte, and the whole, of a message that changes
	// nothing.
	Noop = 'n'
)

const (
	// zstdAbove is the size of records above which a message compresses
	// them.
	zstdAbove = 16 << 10
	// MaxRecords bounds a message's records, uncompressed (an import of
	// 10 MiB is about 3 MiB of records).
	MaxRecords = 64 << 20
)

// Records is the records of a message being made. The zero value has none.
type Records struct {
	body []byte // Plain, then the records
}

// Add appends the encoding of a record.
func (r *Records) Add(rec []byte) {
	if r.body == nil {
		r.body = []byte{Plain}
	}
	r.body = binary.AppendUvarint(r.body, uint64(len(rec)))
	r.body = append(r.body, rec...)
}

// Len is the size of the records uncompressed, with their lengths and the
// kind byte: at most MaxRecords in a message.
func (r *Records) Len() int { return max(len(r.body), 1) }

// Message returns the message of the records, compressed if they are
// large, after key if it is not nil.
func (r *Records) Message(key []byte) []byte {
	msg := r.body
	if msg == nil {
		msg = []byte{Plain}
	}
	if len(msg) > zstdAbove {
		z := binary.AppendUvarint([]byte{Zstd}, uint64(len(msg)-1))
		msg = segments.ZstdEncoder().EncodeAll(msg[1:], z)
	}
	if key != nil {
		keyed := binary.AppendUvarint([]byte{Keyed}, uint64(len(key)))
		msg = append(append(keyed, key...), msg...)
	}
	return msg
}

// Split returns the key of a message of kind Plain, Zstd or Keyed (nil:
// none) and its records, decompressed, which Next walks. A malformed
// message, or one without records, is an error wrapping wire.ErrRecord.
func Split(msg []byte) (key, records []byte, err error) {
	if len(msg) > 0 && msg[0] == Keyed {
		n, k := binary.Uvarint(msg[1:])
		if k <= 0 || n > uint64(len(msg)-1-k) {
			return nil, nil, fmt.Errorf("engine: cluster message key: %w", wire.ErrRecord)
		}
		key = msg[1+k : 1+k+int(n)]
		msg = msg[1+k+int(n):]
	}
	if len(msg) == 0 {
		return key, nil, fmt.Errorf("engine: empty cluster message: %w", wire.ErrRecord)
	}
	switch msg[0] {
	case Plain:
		records = msg[1:]
	case Zstd:
		n, k := binary.Uvarint(msg[1:])
		if k <= 0 || n > MaxRecords {
			return key, nil, fmt.Errorf("engine: cluster message length: %w", wire.ErrRecord)
		}
		if records, err = segments.Unzstd(msg[1+k:], int(n)); err != nil {
			return key, nil, fmt.Errorf("engine: cluster message: %w: %w", wire.ErrRecord, err)
		}
	default:
		return key, nil, fmt.Errorf("engine: cluster message of kind %q: %w", msg[0], wire.ErrRecord)
	}
	if len(records) == 0 {
		return key, nil, fmt.Errorf("engine: cluster message without records: %w", wire.ErrRecord)
	}
	return key, records, nil
}

// Next returns the first record of records (Split's) and those after it.
func Next(records []byte) (rec, rest []byte, err error) {
	n, k := binary.Uvarint(records)
	if k <= 0 || n > uint64(len(records)-k) {
		return nil, nil, fmt.Errorf("engine: cluster message: %w", wire.ErrRecord)
	}
	return records[k : k+int(n)], records[k+int(n):], nil
}

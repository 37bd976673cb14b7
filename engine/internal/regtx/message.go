package regtx

import (
	"encoding/binary"
	"fmt"

	"github.com/webstats/webstats/engine/internal/wire"
	"github.com/webstats/webstats/snapshot"
)

// Kind is the kind byte of a registry transaction's message on the
// cluster's log (its website, for Cluster.Publish, is 0).
const Kind = 'r'

// Message is a registry transaction as the log carries it.
type Message struct {
	// Base is the registry version the transaction was made on.
	Base uint64
	// ID tells the node that published it which transaction it is.
	ID  [16]byte
	Ops []snapshot.Op
}

// Encode makes m's message: Kind, the version it was made on (uvarint),
// its id, the number of writes (uvarint), then each write: kind, id
// (uvarint), 0 for a delete or 1 and the value's length (uvarint) and
// value. A kind that is not shared between nodes (0, the cluster's own
// records, salts) is refused.
func Encode(m Message) ([]byte, error) {
	msg := binary.AppendUvarint([]byte{Kind}, m.Base)
	msg = append(msg, m.ID[:]...)
	msg = binary.AppendUvarint(msg, uint64(len(m.Ops)))
	for _, o := range m.Ops {
		if !shared(o.Kind) {
			return nil, fmt.Errorf("engine: registry transaction: kind %s is not shared", o.Kind)
		}
		msg = append(msg, byte(o.Kind))
		msg = binary.AppendUvarint(msg, o.ID)
		if o.Delete {
			msg = append(msg, 0)
			continue
		}
		msg = append(msg, 1)
		msg = binary.AppendUvarint(msg, uint64(len(o.Value)))
		msg = append(msg, o.Value...)
	}
	return msg, nil
}

// shared reports whether records of kind travel in transactions.
func shared(kind snapshot.Kind) bool {
	return kind != 0 && kind != snapshot.KindCluster && kind != snapshot.KindSalt
}

// errBad is the error of every malformed message.
var errBad = fmt.Errorf("engine: registry transaction: %w", wire.ErrRecord)

// Decode reads a message of Encode; the values of its writes alias msg.
// A malformed message is an error wrapping wire.ErrRecord.
func Decode(msg []byte) (Message, error) {
	m, rest, n, err := decodeHeader(msg)
	if err != nil {
		return m, err
	}
	m.Ops = make([]snapshot.Op, 0, n)
	for range n {
		var o snapshot.Op
		if o, rest, err = decodeOp(rest); err != nil {
			return m, err
		}
		m.Ops = append(m.Ops, o)
	}
	if len(rest) != 0 {
		return m, errBad
	}
	return m, nil
}

// decodeHeader reads what precedes the writes; n is their number.
func decodeHeader(msg []byte) (m Message, rest []byte, n uint64, err error) {
	if len(msg) == 0 || msg[0] != Kind {
		return m, nil, 0, errBad
	}
	msg = msg[1:]
	base, k := binary.Uvarint(msg)
	if k <= 0 || len(msg)-k < 16 {
		return m, nil, 0, errBad
	}
	m.Base = base
	msg = msg[k:]
	copy(m.ID[:], msg)
	msg = msg[16:]
	n, k = binary.Uvarint(msg)
	if k <= 0 || n > uint64(len(msg)) {
		return m, nil, 0, errBad
	}
	return m, msg[k:], n, nil
}

// decodeOp reads one write.
func decodeOp(msg []byte) (snapshot.Op, []byte, error) {
	if len(msg) < 1 {
		return snapshot.Op{}, nil, errBad
	}
	o := snapshot.Op{Kind: snapshot.Kind(msg[0])}
	if !shared(o.Kind) {
		return o, nil, errBad
	}
	var k int
	if o.ID, k = binary.Uvarint(msg[1:]); k <= 0 || len(msg) < 2+k {
		return o, nil, errBad
	}
	msg = msg[1+k:]
	put := msg[0]
	msg = msg[1:]
	switch put {
	case 0:
		o.Delete = true
	case 1:
		l, k := binary.Uvarint(msg)
		if k <= 0 || l > uint64(len(msg)-k) {
			return o, nil, errBad
		}
		o.Value = msg[k : k+int(l)]
		msg = msg[k+int(l):]
	default:
		return o, nil, errBad
	}
	return o, msg, nil
}

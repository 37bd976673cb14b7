package logmsg

import (
	"fmt"

	"github.com/webstats/webstats/engine/internal/idem"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/wire"
)

// EncodeHits makes the message of the records recs[i], i in idx, of one
// website, with mark's key when mark is not nil. n is the records' size
// uncompressed (at most MaxRecords for a message the follower reads).
func EncodeHits(recs []record.Hit, idx []int, mark *idem.Mark) (msg []byte, n int) {
	var body Records
	var rec []byte
	for _, i := range idx {
		rec = recs[i].AppendBinary(rec[:0])
		body.Add(rec)
	}
	var key []byte
	if mark != nil {
		key = mark.AppendBinary(nil)
	}
	return body.Message(key), body.Len()
}

// DecodeHits splits a message of EncodeHits into its records, appended to
// recs[:0], and its idempotency key (nil: none). A key of another website
// than the records' is wire.ErrRecord.
func DecodeHits(msg []byte, recs []record.Hit) ([]record.Hit, *idem.Mark, error) {
	recs = recs[:0]
	key, body, err := Split(msg)
	var mark *idem.Mark
	if key != nil {
		mark = new(idem.Mark)
		if err := mark.Decode(key); err != nil {
			return recs, nil, err
		}
	}
	if err != nil {
		return recs, nil, err
	}
	for len(body) > 0 {
		var rec []byte
		if rec, body, err = Next(body); err != nil {
			return recs, nil, err
		}
		recs = append(recs, record.Hit{})
		if err := recs[len(recs)-1].Decode(rec); err != nil {
			return recs, nil, err
		}
	}
	if mark != nil && mark.Website != recs[0].Website {
		return recs, nil, fmt.Errorf("engine: cluster message key of another website: %w", wire.ErrRecord)
	}
	return recs, mark, nil
}

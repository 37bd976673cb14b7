package stored

import (
	"encoding/binary"
	"fmt"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/snapshot"
)

// dayEnvelope is the first byte of a day value holding buckets and
// segments: [dayEnvelope][uvarint length][buckets day][segments]. A value
// starting with another byte is a buckets day alone (stores written before
// the segments store; buckets days start with their version, 1 or 2), read
// with empty segments.
const dayEnvelope = 0xd5

// EncodeDay encodes a day for the store.
func EncodeDay(d *buckets.Day, seg *segments.Day) ([]byte, error) {
	bd, err := d.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(bd)+16+seg.Hits()*4)
	b = append(b, dayEnvelope)
	b = binary.AppendUvarint(b, uint64(len(bd)))
	b = append(b, bd...)
	return seg.AppendBinary(b), nil
}

// SplitDay splits a day value of the store into its buckets day and its
// segments; a value without the envelope is a buckets day alone.
func SplitDay(data []byte) (bd, segs []byte, enveloped bool, err error) {
	if len(data) > 0 && data[0] != dayEnvelope {
		return data, nil, false, nil
	}
	n, k := binary.Uvarint(data[min(1, len(data)):])
	if k <= 0 || n > uint64(len(data)-1-k) {
		return nil, nil, false, fmt.Errorf("day envelope: %w", snapshot.ErrCorrupt)
	}
	body := data[1+k:]
	return body[:n], body[n:], true, nil
}

// DecodeDay decodes a day value of the store; its segments too when
// withSeg (else seg is nil; empty segments for a value without them).
func DecodeDay(data []byte, withSeg bool) (*buckets.Day, *segments.Day, error) {
	d := buckets.NewDay(0)
	bd, segs, enveloped, err := SplitDay(data)
	if err != nil {
		return nil, nil, err
	}
	if err := d.UnmarshalBinary(bd); err != nil {
		return nil, nil, err
	}
	switch {
	case !withSeg:
		return d, nil, nil
	case !enveloped:
		return d, segments.NewDay(), nil
	}
	seg, err := segments.DecodeDay(segs)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", snapshot.ErrCorrupt, err)
	}
	return d, seg, nil
}

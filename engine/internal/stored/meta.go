package stored

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/idem"
	"github.com/webstats/webstats/engine/internal/wire"
	"github.com/webstats/webstats/snapshot"
)

// A website's meta record: version, last sequence, then the dates with
// data as delta-coded varints; version 2 adds the idempotency keys
// (idem.Table), which are applied with the same records as the last
// sequence, and version 3 the parts of each key (a call counted in parts
// not all applied). A website is written with the lowest version that
// holds its keys, which older versions read.
const metaVersion = 3

// AppendMeta appends the meta record of a website whose last applied
// sequence is lastSeq, with dates and keys.
func AppendMeta(b []byte, lastSeq uint64, dates map[buckets.Date]struct{}, keys *idem.Table) []byte {
	keyed, parts := keys.Len() > 0, keys.Partial()
	switch {
	case parts:
		b = append(b, 3)
	case keyed:
		b = append(b, 2)
	default:
		b = append(b, 1)
	}
	b = binary.AppendUvarint(b, lastSeq)
	sorted := make([]buckets.Date, 0, len(dates))
	for d := range dates {
		sorted = append(sorted, d)
	}
	slices.Sort(sorted)
	b = binary.AppendUvarint(b, uint64(len(sorted)))
	prev := int64(0)
	for _, d := range sorted {
		b = binary.AppendVarint(b, int64(d)-prev)
		prev = int64(d)
	}
	if !keyed {
		return b
	}
	return keys.AppendBinary(b, parts)
}

// DecodeMeta reads a meta record: it returns the last sequence, adds the
// dates to dates and replaces keys. A malformed record is
// snapshot.ErrCorrupt.
func DecodeMeta(b []byte, dates map[buckets.Date]struct{}, keys *idem.Table) (lastSeq uint64, err error) {
	d := wire.Decoder{B: b}
	v := d.Byte()
	if v < 1 || v > metaVersion {
		return 0, fmt.Errorf("unknown version %d: %w", v, snapshot.ErrCorrupt)
	}
	lastSeq = d.Uvarint()
	n := d.Uvarint()
	if d.Bad || n > uint64(len(d.B)) {
		return 0, fmt.Errorf("bad header: %w", snapshot.ErrCorrupt)
	}
	prev := int64(0)
	for range n {
		prev += d.Varint()
		if d.Bad || prev < -1<<31 || prev > 1<<31-1 {
			return 0, fmt.Errorf("bad dates: %w", snapshot.ErrCorrupt)
		}
		dates[buckets.Date(prev)] = struct{}{}
	}
	*keys = idem.Table{}
	if v >= 2 {
		if err := keys.Decode(&d, v >= 3); err != nil {
			return 0, fmt.Errorf("%w: %w", err, snapshot.ErrCorrupt)
		}
	}
	if len(d.B) != 0 {
		return 0, fmt.Errorf("trailing bytes: %w", snapshot.ErrCorrupt)
	}
	return lastSeq, nil
}

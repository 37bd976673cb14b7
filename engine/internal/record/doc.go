// Package record is the write-ahead log's record of a hit: the enriched
// hit (Hit) and its versioned binary encoding.
//
// Replaying records in sequence order on the state of the last snapshot
// reproduces the statistics exactly, so the encoding never changes for a
// version once written: a new field is a new Version, and older records
// decode with the fields they lack empty. The engine enriches hits into
// records (package enrich), logs them, applies them to the day buckets and
// the segments, and in cluster mode sends them in the shared log's
// messages.
package record

// Prop is one custom property of a hit (SPEC §2.4: at most MaxProps per
// hit, keys at most MaxPropKey and values at most MaxPropValue characters;
// Track drops the others).
type Prop struct {
	Key, Value string
}

// Bounds of a hit's custom properties (SPEC §2.4).
const (
	MaxProps     = 30
	MaxPropKey   = 300
	MaxPropValue = 2000
)

package buckets

import (
	"errors"
	"fmt"
)

// ErrCorrupt is returned (wrapped) when encoded bytes are malformed:
// truncated, inconsistent or with trailing garbage. Use errors.Is.
var ErrCorrupt = errors.New("buckets: corrupt encoding")

// ErrVersion is returned (wrapped) when encoded bytes carry a format version
// this build does not know, typically written by a newer webstats. Use
// errors.Is.
var ErrVersion = errors.New("buckets: unknown encoding version")

// ErrVersion1 is returned (wrapped) by [Day.UnmarshalBinary] for a day in
// format version 1, whose values are ids into its website's [Strings]
// table: decode it with [Day.UnmarshalBinaryV1]. Use errors.Is.
var ErrVersion1 = errors.New("buckets: day in format version 1")

// ErrChunkOrder is returned (wrapped) by [Strings.AppendChunk] when a chunk
// does not start at the table's next id: a chunk is missing, repeated or out
// of order. Use errors.Is.
var ErrChunkOrder = errors.New("buckets: strings chunk out of order")

// ErrInvalidDate is returned (wrapped) by [ParseDate] and [Date.UnmarshalText]
// for text that is not a valid "YYYY-MM-DD" date. Use errors.Is.
var ErrInvalidDate = errors.New("buckets: invalid date")

// codedError is an error with its own complete message that still matches a
// sentinel with errors.Is.
type codedError struct {
	msg  string
	kind error
}

func (e *codedError) Error() string { return e.msg }
func (e *codedError) Unwrap() error { return e.kind }

// decodeErr returns an error reading "buckets: decode <what>: <detail>" that
// wraps kind.
func decodeErr(kind error, what, format string, args ...any) error {
	return &codedError{
		msg:  "buckets: decode " + what + ": " + fmt.Sprintf(format, args...),
		kind: kind,
	}
}

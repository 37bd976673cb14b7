package snapshot

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
)

var (
	// ErrNotFound is returned by Get and Day when there is no such record.
	// Use errors.Is.
	ErrNotFound = errors.New("snapshot: not found")

	// ErrLocked is returned by Open when another process, or another Store
	// in this process, has the directory open. The error's message names
	// the directory. Use errors.Is.
	ErrLocked = errors.New("snapshot: data directory is in use by another process")

	// ErrVersion is returned by Open when the store was written with a newer
	// format version than FormatVersion. The error's message names the
	// directory and both versions. Use errors.Is.
	ErrVersion = errors.New("snapshot: data directory has a newer format version")

	// ErrCorrupt is returned when a stored key or a stored meta value (format
	// version, trim point) is malformed, or when Pebble reports corruption.
	// The error's message says what and where. Use errors.Is.
	ErrCorrupt = errors.New("snapshot: corrupt data")

	// ErrDiskFull is returned by every write method, without writing
	// anything, when the write would leave less than Options.MinFreeBytes
	// free on the store's file system, and by Open when less than that is
	// free. The message says how much is free and how much is needed. Writes
	// succeed again, without a restart, once space is freed (the free space
	// is read again at most every 100 ms). Use errors.Is.
	ErrDiskFull = errors.New("snapshot: disk full")

	// ErrClosed is returned by every method of a Store after Close.
	// Use errors.Is.
	ErrClosed = errors.New("snapshot: store is closed")
)

// plainError is an error with its own message that still matches a sentinel
// (and its cause) with errors.Is.
type plainError struct {
	msg      string
	sentinel error
	cause    error
}

func (e *plainError) Error() string { return e.msg }

func (e *plainError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

// corruptError is a malformed key or value. Its message does not repeat the
// package prefix, because it is always wrapped by opError.
type corruptError struct{ detail string }

func (e *corruptError) Error() string        { return "corrupt data: " + e.detail }
func (e *corruptError) Is(target error) bool { return target == ErrCorrupt }

// opError is the error of one Store operation: "snapshot: <op>: <cause>".
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return "snapshot: " + e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

// Is makes Pebble's own corruption errors match ErrCorrupt, and so its
// log reader's, which it does not mark: a log chunk zeroed or invalid
// where more of the log follows (under Options.SyncInterval, blocks of the
// log lost out of order on a power loss: walsync.go).
func (e *opError) Is(target error) bool {
	if target != ErrCorrupt {
		return false
	}
	return errors.Is(e.err, pebble.ErrCorruption) || errors.Is(e.err, record.ErrZeroedChunk) || errors.Is(e.err, record.ErrInvalidChunk)
}

// wrap adds the operation's context to err (nil stays nil).
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{op: op, err: err}
}

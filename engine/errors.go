package engine

import (
	"errors"

	"github.com/webstats/webstats/engine/internal/invalid"
	"github.com/webstats/webstats/snapshot"
)

// Errors returned by the Engine. Use errors.Is.
var (
	// ErrNotFound: no such website or account, or it belongs to another account.
	ErrNotFound = errors.New("engine: not found")
	// ErrClosed: the engine is closed.
	ErrClosed = errors.New("engine: closed")
	// ErrLocked: another process (a running webstatsd) has the data
	// directory open.
	ErrLocked = snapshot.ErrLocked
	// ErrVersion: the data directory was written by a newer version.
	ErrVersion = snapshot.ErrVersion
	// ErrDiskFull: the data directory's disk has less free space than the
	// store keeps in reserve; nothing was written (Track counted nothing).
	// Writes succeed again once space is freed.
	ErrDiskFull = snapshot.ErrDiskFull
	// ErrLogFailed: a write of the log failed after it was handed to the
	// disk (a failed fsync). Whether the hits of that call were stored is
	// unknown (a restart replays what was); no hit is accepted until the
	// engine is opened again.
	ErrLogFailed = errors.New("engine: write-ahead log failed; restart needed")
	// ErrClusterUnavailable: in cluster mode, the shared log did not
	// acknowledge a publish in time (no quorum, no connection). Whether
	// it was stored is unknown; a later call may succeed.
	ErrClusterUnavailable = errors.New("engine: the cluster's log is unavailable")
	// ErrLogGap: in cluster mode, the shared log no longer holds (or does
	// not hold yet) messages this node has not applied: its data directory
	// is older than the log keeps (start the node on an empty directory to
	// begin from the cluster's seed), or belongs to another log.
	ErrLogGap = errors.New("engine: the cluster's log lacks messages this node needs")
	// ErrTooLarge: in cluster mode, one call's hits of one website are
	// more than the cluster's log takes in one message (an import of
	// many thousand events with a small NATS max_payload). Nothing of
	// that website was counted.
	ErrTooLarge = errors.New("engine: too many hits in one call for the cluster's log")
	// ErrWrongLog: in cluster mode, the data directory follows another
	// log than the cluster's (recreated, or the directory was written by
	// a single process): its positions would name other messages.
	ErrWrongLog = errors.New("engine: the data directory follows another log")
)

// FieldError is one invalid field with a message in the wording of the API's
// 422 answers ("The domain field is required.").
type FieldError = invalid.Field

// ValidationError reports invalid input field by field. Use errors.As. Add
// records a message for a field; Err returns the error when it holds a
// field, else nil.
type ValidationError = invalid.Error

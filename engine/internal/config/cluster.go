package config

import (
	"context"
	"io"
	"time"
)

// Cluster is what the engine needs from a replicated log shared by several
// engines (cluster mode, SPEC §12). engine/jetstream implements it on NATS
// JetStream; without it (Options.Cluster nil) the engine is one process
// with its own log in the store, as always.
//
// With a Cluster, Track enriches and publishes, and answers once the log
// has acknowledged the records; it does not apply them. Every engine
// follows the log and applies each record in log order, so visitor
// numbering and visits, decided at apply time, are the same on every node.
// The log's sequence numbers replace the store's: a snapshot records the
// last one applied, and Open resumes following just after it.
type Cluster interface {
	// Publish appends one message to the log and returns once it is
	// acknowledged as durable. A message holds the records of one Track
	// call for one website (see engine.publish), a part of one website's import
	// or its deletion (engine/importcluster.go), or, with website 0, a registry
	// transaction (engine/regtx.go), which every node follows whatever websites
	// it holds; messages of one website (0 included) keep their order. On
	// an error it may or may not
	// have been appended, and Publish must make a retry of the same call
	// append it at most once.
	Publish(ctx context.Context, website uint32, message []byte) error
	// MaxMessage is the largest message Publish takes, in bytes.
	MaxMessage() int
	// Identity names the log; it changes when the log is recreated. A
	// store records the identity of the log it follows, and Open refuses
	// another: its positions would mean other messages. Follow must fail
	// with an error wrapping ErrWrongLog once the log's identity is no
	// longer the one Identity last returned.
	Identity(ctx context.Context) (string, error)
	// Follow calls fn with every message whose sequence is after after,
	// in log order, until ctx is done or fn returns an error; it returns
	// that error (or the context's, or its own: a log that lacks messages
	// after after, trimmed or recreated, is an error, never a silent
	// skip).
	Follow(ctx context.Context, after uint64, fn func(m LogMessage) error) error
	// Last returns the sequence of the log's last message (0: none).
	Last(ctx context.Context) (uint64, error)
	// Salt returns the salt of the salt period starting on day first (days
	// since 1970-01-01), which must be the same on every node: the first
	// proposal made anywhere wins and every later call returns it.
	Salt(ctx context.Context, first int32, proposal [16]byte) ([16]byte, error)
	// DropSalt forgets the salt of the period starting on day first,
	// cluster-wide: retention dropped the period's data, and the salt must
	// not outlive it. A later Salt for that period makes a new one.
	// Dropping a salt that is not there is not an error.
	DropSalt(ctx context.Context, first int32) error
}

// LogMessage is a message of the shared log as Follow gives it.
type LogMessage struct {
	Seq  uint64
	Data []byte
	// Time is when the log stored it; Pending how many messages the log
	// holds after it (as the follower last learnt).
	Time    time.Time
	Pending uint64
}

// Partitioner is what the engine needs, beyond Cluster, to hold some
// partitions only. Partitions are bits of a uint64 (bit p: partition p).
type Partitioner interface {
	// Count is the number of partitions, 1 to MaxPartitions; every node of
	// a cluster has the same.
	Count() int
	// Target returns the partitions this node should hold now.
	Target() uint64
	// Covered reports whether every other node that should hold partition p
	// holds it: this node, no longer among them, may drop it.
	Covered(p int) bool
	// Changed receives when Target or Covered may have changed.
	Changed() <-chan struct{}
	// SetHeld tells the other nodes which partitions this one holds.
	SetHeld(held uint64)
	// Follow is Cluster.Follow for the registry's messages and those of
	// the partitions parts only.
	Follow(ctx context.Context, after uint64, parts uint64, fn func(LogMessage) error) error
	// Last returns the sequence of the last of those messages (0: none).
	Last(ctx context.Context, parts uint64) (uint64, error)
	// First returns the sequence of the log's first message; 1 means it
	// was never trimmed (or is empty).
	First(ctx context.Context) (uint64, error)
	// Fetch returns the state of partition p from a node that holds it
	// (what that node's Serve fetch function writes); ErrNoHolder if none.
	Fetch(ctx context.Context, p int) (io.ReadCloser, error)
	// Ask sends req to a node that holds partition p and returns what its
	// Serve ask function answered; ErrNoHolder if none.
	Ask(ctx context.Context, p int, req []byte) ([]byte, error)
	// Serve answers the other nodes' Fetch and Ask with these functions
	// until stop is called.
	Serve(fetch func(ctx context.Context, p int, w io.Writer) error, ask func(ctx context.Context, req []byte) ([]byte, error)) (stop func(), err error)
}

package regtx

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/webstats/webstats/engine/internal/waiters"
)

// Wait bounds a change twice: the wait for its turn on the node, then its
// runs, publishes and the waits for this node to apply them, after
// conflicts included.
const Wait = 10 * time.Second

// Config configures a Runner.
type Config struct {
	// Publish appends a transaction's message to the log and returns
	// once it is durable; MaxMessage is the largest it takes.
	Publish    func(ctx context.Context, msg []byte) error
	MaxMessage func() int
	// Rand makes the transactions' ids.
	Rand io.Reader
	// Unavailable wraps the errors of a change that could not be made
	// within Wait; TooLarge those of a transaction larger than
	// MaxMessage.
	Unavailable, TooLarge error
}

// Runner makes a node's registry changes as transactions: one at a time
// (the node's own changes queue rather than conflict), each published and
// waited for until the node's follower decides it (Decided), and run again
// when another transaction came first. Its methods are safe for concurrent
// use.
type Runner struct {
	Config
	turn      chan struct{}
	waiters   waiters.Set[bool]
	conflicts atomic.Int64
}

// NewRunner returns a Runner.
func NewRunner(c Config) *Runner {
	return &Runner{Config: c, turn: make(chan struct{}, 1)}
}

// Do makes a change: dry runs it, publishes the transaction and waits for
// it to be decided, until it applies. dry must run the change afresh
// against the registry as it is now and return its transaction (nothing
// to publish when it is empty or dry fails). The caller's context going
// away does not cut a change short: once published it may apply anyway,
// and its outcome should be known.
func (r *Runner) Do(ctx context.Context, dry func() (*Tx, error)) error {
	// Wait starts once the change has its turn on this node, so that time
	// spent queued cannot cut short one already published.
	ctx = context.WithoutCancel(ctx)
	if err := r.wait(ctx); err != nil {
		return err
	}
	defer func() { <-r.turn }()
	ctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	for tries := 1; ; tries++ {
		tx, err := dry()
		if err != nil || tx.Empty() {
			return err
		}
		ok, err := r.commit(ctx, tx)
		if err != nil || ok {
			return err
		}
		// Another node's change came first: run again on the registry
		// with it, after a pause of up to a millisecond, so that nodes
		// making changes in step do not collide every time.
		r.conflicts.Add(1)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: the registry change lost to other nodes' %d times: %w", r.Unavailable, tries, ctx.Err())
		case <-time.After(time.Duration(rand.Int64N(int64(time.Millisecond)))):
		}
	}
}

// wait waits, at most Wait, for this node's turn.
func (r *Runner) wait(ctx context.Context) error {
	queued, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	select {
	case r.turn <- struct{}{}:
		return nil
	case <-queued.Done():
		return fmt.Errorf("%w: registry changes are queued on this node: %w", r.Unavailable, queued.Err())
	}
}

// commit publishes tx and waits until this node's follower decided it:
// true when applied, false when another transaction came first.
func (r *Runner) commit(ctx context.Context, tx *Tx) (bool, error) {
	var id [16]byte
	if _, err := io.ReadFull(r.Rand, id[:]); err != nil {
		return false, fmt.Errorf("engine: registry transaction id: %w", err)
	}
	msg, err := tx.Message(id)
	if err != nil {
		return false, err
	}
	if limit := r.MaxMessage(); len(msg) > limit {
		return false, fmt.Errorf("%w: a registry change of %d bytes; the cluster's log takes %d", r.TooLarge, len(msg), limit)
	}
	outcome, done := r.waiters.Add(id)
	defer done()
	if err := r.Publish(ctx, msg); err != nil {
		return false, err
	}
	select {
	case ok := <-outcome:
		return ok, nil
	case <-ctx.Done():
		// Published but not applied here yet (the follower is behind
		// or stopped): it may still apply, on every node.
		return false, fmt.Errorf("%w: the registry change was published but this node has not applied it yet: %w", r.Unavailable, ctx.Err())
	}
}

// Decided tells the change waiting for transaction id, if any, whether it
// applied (the follower calls it for every transaction).
func (r *Runner) Decided(id [16]byte, applied bool) { r.waiters.Notify(id, applied) }

// Conflicts counts the changes run again because another transaction came
// first.
func (r *Runner) Conflicts() int64 { return r.conflicts.Load() }

package engine

import (
	"context"
	"errors"
	"fmt"
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
	// Publish appends the encoded records of one website to the log, in
	// order, and returns once every one is acknowledged as durable. On an
	// error, some may have been appended; Publish must make a retry of
	// the same call append each record at most once.
	Publish(ctx context.Context, website uint32, records [][]byte) error
	// Follow calls fn with every record whose sequence is after after, in
	// log order, until ctx is done or fn returns an error; it returns that
	// error (or the context's, or its own).
	Follow(ctx context.Context, after uint64, fn func(seq uint64, data []byte) error) error
	// Salt returns the salt of the salt period starting on day first (days
	// since 1970-01-01), which must be the same on every node: the first
	// proposal made anywhere wins and every later call returns it.
	Salt(ctx context.Context, first int32, proposal [16]byte) ([16]byte, error)
}

// publish is ingest in cluster mode: the records go to the shared log, and
// the follower (follow) applies them, here as on every other node.
func (e *Engine) publish(ctx context.Context, website uint32, recs []record, idx []int) (ok bool, err error) {
	e.regMu.RLock()
	s := e.sites[website]
	e.regMu.RUnlock()
	if s == nil {
		return false, nil
	}
	buf := make([]byte, 0, 256*len(idx))
	data := make([][]byte, len(idx))
	for k, i := range idx {
		start := len(buf)
		buf = recs[i].appendBinary(buf)
		data[k] = buf[start:len(buf):len(buf)]
	}
	if err := e.opts.Cluster.Publish(ctx, website, data); err != nil {
		return false, fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	return true, nil
}

// follow applies the shared log from the last record applied until Close,
// starting again after an error (a lost connection, a record whose day
// could not be read) from the first record not applied.
func (e *Engine) follow() {
	defer e.bg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-e.stop
		cancel()
	}()
	defer cancel()
	var r record
	for ctx.Err() == nil {
		err := e.opts.Cluster.Follow(ctx, e.seq.Load(), func(seq uint64, data []byte) error {
			if !e.enter() {
				return ErrClosed
			}
			defer e.exit()
			if err := r.decode(data); err != nil {
				// A record this engine cannot read is skipped, loudly:
				// stopping here would stop every website.
				e.opts.Logger.Error("cluster: skip a record", "seq", seq, "err", err)
				e.seq.Store(seq)
				return nil
			}
			return e.applyShared(seq, &r)
		})
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return
		}
		e.opts.Logger.Error("cluster: follow the log", "after", e.seq.Load(), "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// applyShared applies the record of log sequence seq, as ingest does with
// its own durable records: pinned, queued, applied. A record its website
// has already applied (replayed after a restart) is skipped.
func (e *Engine) applyShared(seq uint64, r *record) error {
	e.regMu.RLock()
	s := e.sites[r.website]
	e.regMu.RUnlock()
	if s == nil {
		e.seq.Store(seq)
		return nil
	}
	st := s.state
	sh := e.shardOf(r.website)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if seq <= st.lastSeq || st.deleted {
		e.seq.Store(seq)
		return nil
	}
	recs := []record{*r}
	hits, err := e.pinLocked(sh, st, recs, []int{0})
	if err != nil {
		return err
	}
	if hits == nil { // deleted meanwhile
		e.seq.Store(seq)
		return nil
	}
	hits[0].seq = seq
	st.pending = append(st.pending, hits[0])
	e.seq.Store(seq)
	e.drainLocked(st, seq, s.cfg.Load().domain)
	return nil
}

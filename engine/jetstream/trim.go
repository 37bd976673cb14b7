package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
)

// Trimming. The stream keeps what a node may still need: one restarting
// from its own store needs the messages after its last snapshot, and a new
// one those after the seed it starts from. Each node records the position
// its store starts from, then of its last snapshot (PutPosition), in the
// bucket <name>_nodes, under a key of its own (Options.Node, kept across
// restarts) that expires MaxAge after its last update; Trim purges
// the messages at or below the least of those positions and of the oldest
// seed's. Without a seed, or without a node's position, nothing is purged:
// a new node would have nowhere to start from. A node away for longer
// than MaxAge is forgotten, as the stream's own MaxAge would forget it.

// nodes returns the bucket of the nodes' positions, creating it.
func (l *Log) nodes(ctx context.Context) (jetstream.KeyValue, error) {
	return l.keyValue(ctx, jetstream.KeyValueConfig{Bucket: l.opts.Name + "_nodes", TTL: l.opts.MaxAge})
}

// keyValue returns the bucket cfg names, creating it (file storage, the
// log's replicas) if no node did yet.
func (l *Log) keyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := l.js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		cfg.Replicas, cfg.Storage = l.opts.Replicas, jetstream.FileStorage
		kv, err = l.js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = l.js.KeyValue(ctx, cfg.Bucket) // another node was first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// PutPosition records that this node (Options.Node) needs the stream's
// messages after seq: the position its store starts from, then that of
// its last snapshot. A node calls it before it follows the log and then
// often: the record expires MaxAge after the last call.
func (l *Log) PutPosition(ctx context.Context, seq uint64) error {
	kv, err := l.nodes(ctx)
	if err != nil {
		return err
	}
	if _, err := kv.Put(ctx, l.opts.Node, strconv.AppendUint(nil, seq, 10)); err != nil {
		return fmt.Errorf("jetstream: position of node %s: %w", l.opts.Node, err)
	}
	return nil
}

// Unneeded returns the highest sequence that no node and no seed needs:
// the messages up to it may go. ok is false when nothing may go (no seed,
// or no node's position).
func (l *Log) Unneeded(ctx context.Context) (seq uint64, ok bool, err error) {
	os, err := l.seeds(ctx, false)
	if errors.Is(err, ErrNoSeed) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	seeds, err := l.list(ctx, os)
	if err != nil || len(seeds) == 0 {
		return 0, false, err
	}
	cut := seeds[len(seeds)-1].Seq // the oldest: a node may be starting from it
	kv, err := l.nodes(ctx)
	if err != nil {
		return 0, false, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("jetstream: nodes: %w", err)
	}
	defer lister.Stop()
	n := 0
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // expired meanwhile
		}
		if err != nil {
			return 0, false, fmt.Errorf("jetstream: node %s: %w", key, err)
		}
		seq, err := strconv.ParseUint(string(e.Value()), 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("jetstream: node %s: position %q: %w", key, e.Value(), err)
		}
		cut, n = min(cut, seq), n+1
	}
	if err := ctx.Err(); err != nil {
		return 0, false, err // the listing may have stopped short
	}
	return cut, n > 0, nil
}

// Trim purges the stream's messages that no node and no seed needs
// (Unneeded) and returns the sequence it purged up to (0: nothing to purge
// now).
func (l *Log) Trim(ctx context.Context) (uint64, error) {
	cut, ok, err := l.Unneeded(ctx)
	if err != nil || !ok {
		return 0, err
	}
	first, err := l.First(ctx)
	if err != nil || cut < first {
		return 0, err
	}
	if err := l.PurgeBefore(ctx, cut+1); err != nil {
		return 0, fmt.Errorf("jetstream: trim to %d: %w", cut, err)
	}
	return cut, nil
}

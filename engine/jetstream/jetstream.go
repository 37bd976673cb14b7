// Package jetstream is the engine's cluster mode on NATS JetStream (SPEC
// §12): an engine.Cluster whose shared log is a replicated stream and whose
// salts live in a replicated key-value bucket.
//
// The stream WEBSTATS_HITS holds enriched records on the subjects
// webstats.hits.<p>, p = website mod 64 (Options.Name renames both), so that one website's records keep
// their order. A publish waits for the acknowledgements of a whole batch
// (asynchronous publishes, one round trip for the batch, not one per
// record), and carries a message id per record, so that a publish retried
// after a lost acknowledgement is dropped by the stream's duplicate window
// rather than counted twice. Every node follows the whole stream with an
// ordered consumer starting just after the last record it applied.
//
// Only cmd wiring (httpd/internal/cli) and tests import this package; the
// engine itself never depends on NATS.
package jetstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/webstats/webstats/engine"
)

// Partitions is the number of subjects websites are spread over.
const Partitions = 64

// DefaultName names what a cluster keeps in JetStream: the stream
// WEBSTATS_HITS with the subjects webstats.hits.<p>, and the bucket
// webstats_salts.
const DefaultName = "webstats"

// Options configure a Log.
type Options struct {
	// Name prefixes the stream, subjects and buckets, so that several
	// clusters can share one NATS account (default DefaultName; letters,
	// digits, '-' and '_').
	Name string
	// Replicas of the stream and the buckets: 3 unless set (1 for a
	// single server).
	Replicas int
	// MaxAge bounds how long the stream keeps a record, a safety net for
	// the trimming behind snapshots (0: 7 days).
	MaxAge time.Duration
	// Duplicates is the window in which a record republished with the same
	// id is dropped (0: 2 minutes).
	Duplicates time.Duration
	// PublishTimeout bounds one Publish when its context has no deadline
	// (0: 10 s).
	PublishTimeout time.Duration
}

// Log is an engine.Cluster on one NATS connection.
type Log struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	salts jetstream.KeyValue
	opts  Options
	// stream, subjects and the subject prefix of websites, from Name.
	stream, all, prefix string
	// node and next make the message ids: unique per process and record.
	node string
	next atomic.Uint64
}

var _ engine.Cluster = (*Log)(nil)

// New creates (or finds) the stream and the salt bucket on nc's JetStream.
// The connection stays the caller's to close.
func New(ctx context.Context, nc *nats.Conn, o Options) (*Log, error) {
	if o.Name == "" {
		o.Name = DefaultName
	}
	for _, r := range o.Name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return nil, fmt.Errorf("jetstream: name %q: only letters, digits, '-' and '_'", o.Name)
		}
	}
	if o.Replicas <= 0 {
		o.Replicas = 3
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 7 * 24 * time.Hour
	}
	if o.Duplicates <= 0 {
		o.Duplicates = 2 * time.Minute
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = 10 * time.Second
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	l := &Log{nc: nc, js: js, opts: o,
		stream: strings.ToUpper(o.Name) + "_HITS",
		all:    o.Name + ".hits.>",
		prefix: o.Name + ".hits.",
	}
	_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:       l.stream,
		Subjects:   []string{l.all},
		Storage:    jetstream.FileStorage,
		Replicas:   o.Replicas,
		MaxAge:     o.MaxAge,
		Duplicates: o.Duplicates,
		Discard:    jetstream.DiscardOld,
	})
	if err != nil {
		return nil, fmt.Errorf("jetstream: stream %s: %w", l.stream, err)
	}
	bucket := o.Name + "_salts"
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:   bucket,
		Replicas: o.Replicas,
		Storage:  jetstream.FileStorage,
	})
	if err != nil {
		return nil, fmt.Errorf("jetstream: bucket %s: %w", bucket, err)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	l.salts, l.node = kv, hex.EncodeToString(id[:])
	return l, nil
}

// subject is the subject of a website's records.
func (l *Log) subject(website uint32) string {
	return l.prefix + strconv.Itoa(int(website%Partitions))
}

// Publish implements engine.Cluster: every record is published at once
// (asynchronously, in order, on one connection) and the call returns when
// the stream has acknowledged them all. Records whose acknowledgement
// failed are published again, with the same ids, until the context ends.
func (l *Log) Publish(ctx context.Context, website uint32, records [][]byte) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.opts.PublishTimeout)
		defer cancel()
	}
	subject := l.subject(website)
	ids := make([]string, len(records))
	for i := range ids {
		ids[i] = l.node + "-" + strconv.FormatUint(l.next.Add(1), 36)
	}
	todo := make([]int, len(records))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; ; attempt++ {
		futures := make([]jetstream.PubAckFuture, len(todo))
		var failed []int
		var last error
		for k, i := range todo {
			f, err := l.js.PublishAsync(subject, records[i], jetstream.WithMsgID(ids[i]), jetstream.WithExpectStream(l.stream))
			if err != nil {
				failed, last = append(failed, i), err
				continue
			}
			futures[k] = f
		}
		for k, f := range futures {
			if f == nil {
				continue
			}
			select {
			case <-f.Ok():
			case err := <-f.Err():
				failed, last = append(failed, todo[k]), err
			case <-ctx.Done():
				return fmt.Errorf("jetstream: publish: %w", ctx.Err())
			}
		}
		if len(failed) == 0 {
			return nil
		}
		todo = failed
		select {
		case <-ctx.Done():
			return fmt.Errorf("jetstream: publish: %w (last: %w)", ctx.Err(), last)
		case <-time.After(min(time.Duration(attempt+1)*50*time.Millisecond, time.Second)):
		}
	}
}

// Follow implements engine.Cluster with an ordered consumer of the whole
// stream, which the client recreates by itself, in order, after a
// connection or leader change.
func (l *Log) Follow(ctx context.Context, after uint64, fn func(seq uint64, data []byte) error) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{l.all}}
	if after > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = after + 1
	}
	c, err := l.js.OrderedConsumer(ctx, l.stream, cfg)
	if err != nil {
		return fmt.Errorf("jetstream: consumer: %w", err)
	}
	// Short pulls with frequent heartbeats: a consumer whose server went
	// away is noticed and recreated within about a second, not the
	// default's 30 s pull.
	it, err := c.Messages(jetstream.PullExpiry(2*time.Second), jetstream.PullHeartbeat(500*time.Millisecond))
	if err != nil {
		return fmt.Errorf("jetstream: consumer: %w", err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("jetstream: next: %w", err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("jetstream: metadata: %w", err)
		}
		if md.Sequence.Stream <= after {
			continue
		}
		if err := fn(md.Sequence.Stream, msg.Data()); err != nil {
			return err
		}
		after = md.Sequence.Stream
	}
}

// Salt implements engine.Cluster: the first node to create the key wins.
func (l *Log) Salt(ctx context.Context, first int32, proposal [16]byte) ([16]byte, error) {
	key := "salt." + strconv.Itoa(int(first))
	for {
		_, err := l.salts.Create(ctx, key, proposal[:])
		if err == nil {
			return proposal, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return proposal, fmt.Errorf("jetstream: salt: %w", err)
		}
		ent, err := l.salts.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) && ctx.Err() == nil {
			continue // deleted between the two calls
		}
		if err != nil {
			return proposal, fmt.Errorf("jetstream: salt: %w", err)
		}
		if v := ent.Value(); len(v) == 16 {
			return [16]byte(v), nil
		}
		return proposal, fmt.Errorf("jetstream: salt %s: %d bytes", key, len(ent.Value()))
	}
}

// Last returns the sequence of the stream's last record (0 when empty).
func (l *Log) Last(ctx context.Context) (uint64, error) {
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.LastSeq, nil
}

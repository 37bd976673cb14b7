// Package jetstream is the engine's cluster mode on NATS JetStream (SPEC
// §12): an engine.Cluster whose shared log is a replicated stream and whose
// salts live in a replicated key-value bucket.
//
// The stream WEBSTATS_HITS holds enriched records on the subjects
// webstats.hits.<p>, p = website mod 64 (Options.Name renames both), so
// that one website's records keep their order, and the registry's
// transactions on webstats.hits.registry. A message holds one Track call's records of one website
// (engine.Cluster); it carries an id, so that a publish retried after a
// lost acknowledgement is dropped by the stream's duplicate window rather
// than counted twice. Many calls publish at once on one connection, so a
// node is not bounded by one round trip at a time. Every node follows the whole stream with an
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
const Partitions = engine.MaxPartitions

// ErrReconnectBuffer is New's answer to a connection that buffers
// messages while it reconnects.
var ErrReconnectBuffer = errors.New("jetstream: the connection buffers messages while it reconnects; make it with nats.ReconnectBufSize(-1)")

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
	// PublishTimeout bounds one Publish, its retries included (0: 10 s);
	// it must stay well below Duplicates.
	PublishTimeout time.Duration
	// Node names this node's position in the bucket <name>_nodes (see
	// "Trimming"): a name that outlives the process (the command keeps
	// one in the data directory), so that a restart replaces its position
	// rather than leaving the old one there for MaxAge, holding back the
	// trimming. Letters, digits, '-' and '_'. Default: a random name for
	// each process.
	Node string
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
	// expect is the identity Identity last returned.
	expect atomic.Pointer[string]
}

var _ engine.Cluster = (*Log)(nil)

// New creates (or finds) the stream and the salt bucket on nc's JetStream.
// The connection stays the caller's to close. It must be made without a
// reconnect buffer (nats.ReconnectBufSize(-1)): a message buffered while
// the connection is down would be sent after Publish gave up, so that a
// call answered 503 would still be counted (and again when the client
// sends it once more), or a registry change reported failed still made.
func New(ctx context.Context, nc *nats.Conn, o Options) (*Log, error) {
	if nc.Opts.ReconnectBufSize >= 0 {
		return nil, ErrReconnectBuffer
	}
	if err := o.fill(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	l := &Log{nc: nc, js: js, opts: o,
		stream: strings.ToUpper(o.Name) + "_HITS",
		all:    o.Name + ".hits.>",
		prefix: o.Name + ".hits.",
	}
	if err := l.openStream(ctx); err != nil {
		return nil, err
	}
	if l.salts, err = l.openSalts(ctx); err != nil {
		return nil, err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	l.node = hex.EncodeToString(id[:])
	if o.Node == "" {
		l.opts.Node = "process-" + l.node
	}
	if !validName(l.opts.Node) {
		return nil, fmt.Errorf("jetstream: node %q: only letters, digits, '-' and '_'", o.Node)
	}
	return l, nil
}

// validName reports whether name is only letters, digits, '-' and '_'.
func validName(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// fill sets o's defaults and checks it.
func (o *Options) fill() error {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if !validName(o.Name) {
		return fmt.Errorf("jetstream: name %q: only letters, digits, '-' and '_'", o.Name)
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
	if o.PublishTimeout > o.Duplicates/2 {
		return fmt.Errorf("jetstream: PublishTimeout %v must be at most half of Duplicates %v", o.PublishTimeout, o.Duplicates)
	}
	return nil
}

// openStream finds the log's stream, or creates it. The first node creates
// the stream; later ones use it as it is, so that a node started with
// other options, or an operator's change (nats stream edit), is not
// overwritten at each start. Its duplicate window must still cover a
// publish's retries.
func (l *Log) openStream(ctx context.Context) error {
	o := l.opts
	st, err := l.js.Stream(ctx, l.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		var logID [12]byte
		if _, err := rand.Read(logID[:]); err != nil {
			return err
		}
		st, err = l.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       l.stream,
			Subjects:   []string{l.all},
			Storage:    jetstream.FileStorage,
			Replicas:   o.Replicas,
			MaxAge:     o.MaxAge,
			Duplicates: o.Duplicates,
			Discard:    jetstream.DiscardOld,
			// The log's identity: kept by a restore of the stream
			// (which gives it a new creation time), new when the
			// stream is made again.
			Metadata: map[string]string{logIDKey: hex.EncodeToString(logID[:])},
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = l.js.Stream(ctx, l.stream) // another node was first
		}
	}
	if err != nil {
		return fmt.Errorf("jetstream: stream %s: %w", l.stream, err)
	}
	if cfg := st.CachedInfo().Config; cfg.Duplicates < 2*o.PublishTimeout {
		return fmt.Errorf("jetstream: stream %s keeps duplicates %v, less than twice PublishTimeout %v: a retried publish could be counted twice", l.stream, cfg.Duplicates, o.PublishTimeout)
	}
	return nil
}

// openSalts finds the salts' key-value bucket, or creates it.
func (l *Log) openSalts(ctx context.Context) (jetstream.KeyValue, error) {
	bucket := l.opts.Name + "_salts"
	kv, err := l.js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = l.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:   bucket,
			Replicas: l.opts.Replicas,
			Storage:  jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = l.js.KeyValue(ctx, bucket) // another node was first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// Node is this node's name (Options.Node, or the random one New made).
func (l *Log) Node() string { return l.opts.Node }

// subject is the subject of a website's records; website 0's, the
// registry's transactions, is <name>.hits.registry, which every node
// follows whatever partitions it holds.
func (l *Log) subject(website uint32) string {
	if website == 0 {
		return l.prefix + "registry"
	}
	return l.prefix + strconv.Itoa(int(website%Partitions))
}

// Publish implements engine.Cluster: the message is published with an id
// of its own and the call waits for the acknowledgement, each try for at
// most two seconds. A failure the server did not decide (a lost
// acknowledgement, no leader yet) is tried again with the same id, within
// PublishTimeout, well inside the stream's duplicate window: if an earlier
// try did land, the stream drops the later one.
func (l *Log) Publish(ctx context.Context, website uint32, message []byte) error {
	ctx, cancel := context.WithTimeout(ctx, l.opts.PublishTimeout)
	defer cancel()
	id := l.node + "-" + strconv.FormatUint(l.next.Add(1), 36)
	subject := l.subject(website)
	for attempt := 0; ; attempt++ {
		try, cancelTry := context.WithTimeout(ctx, 2*time.Second)
		_, err := l.js.Publish(try, subject, message, jetstream.WithMsgID(id), jetstream.WithExpectStream(l.stream))
		cancelTry()
		if err == nil {
			return nil
		}
		var api *jetstream.APIError
		if errors.As(err, &api) || errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrConnectionClosed) || ctx.Err() != nil {
			return fmt.Errorf("jetstream: publish: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("jetstream: publish: %w (last: %w)", ctx.Err(), err)
		case <-time.After(min(time.Duration(attempt+1)*50*time.Millisecond, time.Second)):
		}
	}
}

// MaxMessage implements engine.Cluster: the connection's max payload, less
// room for the headers.
func (l *Log) MaxMessage() int { return int(l.nc.MaxPayload()) - 1024 }

// logIDKey is the stream metadata key of the log's identity.
const logIDKey = "webstats_log_id"

// Identity implements engine.Cluster: the id New put in the stream's
// metadata (or, for a stream made otherwise, its creation time). Follow
// then refuses a stream of another identity (ErrWrongLog).
func (l *Log) Identity(ctx context.Context) (string, error) {
	id, err := l.identity(ctx)
	if err == nil {
		l.expect.Store(&id)
	}
	return id, err
}

func (l *Log) identity(ctx context.Context) (string, error) {
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return "", fmt.Errorf("jetstream: stream: %w", err)
	}
	info := s.CachedInfo()
	if id := info.Config.Metadata[logIDKey]; id != "" {
		return l.stream + "#" + id, nil
	}
	return l.stream + "@" + info.Created.UTC().Format(time.RFC3339Nano), nil
}

// checkIdentity fails with engine.ErrWrongLog when the stream is not the
// one Identity named.
func (l *Log) checkIdentity(ctx context.Context) error {
	want := l.expect.Load()
	if want == nil {
		return nil
	}
	id, err := l.identity(ctx)
	if err != nil {
		return err
	}
	if id != *want {
		return fmt.Errorf("jetstream: %w: the stream is %q, the node follows %q (deleted and made again?)", engine.ErrWrongLog, id, *want)
	}
	return nil
}

// ErrGap is Follow's error when the stream no longer has (or does not yet
// have) the messages right after the position asked for: trimmed by age,
// purged, or recreated. The node cannot catch up from the stream alone.
var ErrGap = fmt.Errorf("jetstream: %w", engine.ErrLogGap)

// Follow implements engine.Cluster with an ordered consumer of the whole
// stream, which the client recreates by itself, in order, after a
// connection or leader change.
func (l *Log) Follow(ctx context.Context, after uint64, fn func(m engine.LogMessage) error) error {
	return l.follow(ctx, after, []string{l.all}, fn)
}

// follow follows the stream's subjects from after. With every subject
// (l.all) a message that does not follow the last one is a gap; with some
// only, the others' messages are not delivered, and the stream's first
// message is checked at the start and whenever the consumer is made again.
func (l *Log) follow(ctx context.Context, after uint64, subjects []string, fn func(m engine.LogMessage) error) error {
	whole := len(subjects) == 1 && subjects[0] == l.all
	if err := l.checkFollows(ctx, after); err != nil {
		return err
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: subjects, MaxResetAttempts: 5}
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
	// Next does not return on ctx while it recreates the consumer; Stop
	// ends that too.
	defer context.AfterFunc(ctx, it.Stop)()
	consumer := ""
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
		if md.Consumer != consumer {
			// The ordered consumer was made again (a lost server, a
			// leader change, or a stream deleted and made again): the
			// stream must still be the one followed.
			if consumer != "" {
				if err := l.checkRecreated(ctx, whole, after); err != nil {
					return err
				}
			}
			consumer = md.Consumer
		}
		seq := md.Sequence.Stream
		if seq <= after {
			continue
		}
		if whole && seq != after+1 {
			return fmt.Errorf("%w: message %d follows %d", ErrGap, seq, after)
		}
		if err := fn(engine.LogMessage{Seq: seq, Data: msg.Data(), Time: md.Timestamp, Pending: md.NumPending}); err != nil {
			return err
		}
		after = seq
	}
}

// checkFollows checks that the stream is the one this node followed and
// still holds the message after after, the first it needs.
func (l *Log) checkFollows(ctx context.Context, after uint64) error {
	if err := l.checkIdentity(ctx); err != nil {
		return err
	}
	st, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return fmt.Errorf("jetstream: stream: %w", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("jetstream: stream: %w", err)
	}
	if info.State.LastSeq < after {
		return fmt.Errorf("%w: it ends at %d, this node applied up to %d (stream recreated?)", ErrGap, info.State.LastSeq, after)
	}
	if info.State.FirstSeq > after+1 {
		return fmt.Errorf("%w: it starts at %d, this node applied up to %d", ErrGap, info.State.FirstSeq, after)
	}
	return nil
}

// checkRecreated checks, once the ordered consumer was made again, that
// the stream is still the one followed and, for a filtered follow (which
// cannot tell a gap from the sequence numbers), that it still holds the
// message after after.
func (l *Log) checkRecreated(ctx context.Context, whole bool, after uint64) error {
	if err := l.checkIdentity(ctx); err != nil {
		return err
	}
	if whole {
		return nil
	}
	first, err := l.First(ctx)
	if err != nil {
		return fmt.Errorf("jetstream: stream: %w", err)
	}
	if first > after+1 {
		return fmt.Errorf("%w: it starts at %d, this node applied up to %d", ErrGap, first, after)
	}
	return nil
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
			// Deleted between the two calls, or read from a replica
			// that has not seen it yet.
			time.Sleep(20 * time.Millisecond)
			continue
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

// DropSalt implements engine.Cluster: the key is purged, its value gone
// from every replica (a purge marker stays, 16 bytes less than the salt
// it replaces).
func (l *Log) DropSalt(ctx context.Context, first int32) error {
	if err := l.salts.Purge(ctx, "salt."+strconv.Itoa(int(first))); err != nil {
		return fmt.Errorf("jetstream: drop salt: %w", err)
	}
	return nil
}

// Last implements engine.Cluster: the sequence of the stream's last message
// (0 when empty).
func (l *Log) Last(ctx context.Context) (uint64, error) {
	st, err := l.state(ctx)
	return st.LastSeq, err
}

// state returns the stream's state, read from the server.
func (l *Log) state(ctx context.Context) (jetstream.StreamState, error) {
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return jetstream.StreamState{}, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return jetstream.StreamState{}, err
	}
	return info.State, nil
}

// PurgeBefore removes the stream's messages before sequence seq (Trim
// decides which may go).
func (l *Log) PurgeBefore(ctx context.Context, seq uint64) error {
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return err
	}
	return s.Purge(ctx, jetstream.WithPurgeSequence(seq))
}

package jetstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Seeds. A new node replays the stream from its first message; the stream
// keeps MaxAge (7 days) of them, so after that a new node would miss the
// older history. A seed is one node's store as of a point of the log, in
// an object store bucket beside the stream (<name>_seeds, one object,
// replaced by each new seed): a new node starts from the latest seed and
// follows the stream from there. The store's format is the caller's (the
// command writes a tar of an engine backup); the object store checks its
// digest on every read.

// seedObject is the one object of the seeds bucket.
const seedObject = "seed"

// Seed metadata keys.
const (
	seedSeqKey = "webstats_seq"
	seedLogKey = "webstats_log_id"
)

// ErrNoSeed is GetSeed's answer when the bucket holds no seed of this log.
var ErrNoSeed = errors.New("jetstream: no seed of this log")

// SeedInfo describes a seed.
type SeedInfo struct {
	// Seq is the last message of the stream the seed's store had applied
	// (at least: the store may have applied more).
	Seq uint64
	// Size is the seed's bytes, and Time when it was stored.
	Size uint64
	Time time.Time
}

// seeds returns the seeds bucket, creating it if create is set; without,
// a missing bucket is ErrNoSeed.
func (l *Log) seeds(ctx context.Context, create bool) (jetstream.ObjectStore, error) {
	bucket := l.opts.Name + "_seeds"
	os, err := l.js.ObjectStore(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) && !create {
		return nil, ErrNoSeed
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		os, err = l.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:   bucket,
			Replicas: l.opts.Replicas,
			Storage:  jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			os, err = l.js.ObjectStore(ctx, bucket) // another node was first
		}
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: bucket %s: %w", bucket, err)
	}
	return os, nil
}

// Seed describes the latest seed of this log; ErrNoSeed if there is none.
func (l *Log) Seed(ctx context.Context) (SeedInfo, error) {
	os, err := l.seeds(ctx, false)
	if err != nil {
		return SeedInfo{}, err
	}
	info, err := os.GetInfo(ctx, seedObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return SeedInfo{}, ErrNoSeed
	}
	if err != nil {
		return SeedInfo{}, fmt.Errorf("jetstream: seed: %w", err)
	}
	return l.seedInfo(ctx, info)
}

// seedInfo checks that info is a seed of this log and describes it.
func (l *Log) seedInfo(ctx context.Context, info *jetstream.ObjectInfo) (SeedInfo, error) {
	id, err := l.identity(ctx)
	if err != nil {
		return SeedInfo{}, err
	}
	if info.Metadata[seedLogKey] != id {
		return SeedInfo{}, ErrNoSeed // of a log made again since
	}
	seq, err := strconv.ParseUint(info.Metadata[seedSeqKey], 10, 64)
	if err != nil {
		return SeedInfo{}, fmt.Errorf("jetstream: seed: sequence %q", info.Metadata[seedSeqKey])
	}
	return SeedInfo{Seq: seq, Size: info.Size, Time: info.ModTime}, nil
}

// PutSeed stores r as the seed of the log as of message seq, in place of
// the one there, unless that one is as recent (its Seq ≥ seq): nodes put
// seeds on their own schedules, and a lagging node's must not replace a
// newer one. It reports whether r was stored.
func (l *Log) PutSeed(ctx context.Context, seq uint64, r io.Reader) (bool, error) {
	switch cur, err := l.Seed(ctx); {
	case errors.Is(err, ErrNoSeed):
	case err != nil:
		return false, err
	case cur.Seq >= seq:
		return false, nil
	}
	id, err := l.identity(ctx)
	if err != nil {
		return false, err
	}
	os, err := l.seeds(ctx, true)
	if err != nil {
		return false, err
	}
	_, err = os.Put(ctx, jetstream.ObjectMeta{
		Name:     seedObject,
		Metadata: map[string]string{seedSeqKey: strconv.FormatUint(seq, 10), seedLogKey: id},
	}, r)
	if err != nil {
		return false, fmt.Errorf("jetstream: put seed: %w", err)
	}
	return true, nil
}

// GetSeed opens the latest seed of this log for reading: the reader fails
// if the bytes do not match the digest they were stored with. The caller
// closes it. ErrNoSeed if there is none.
func (l *Log) GetSeed(ctx context.Context) (SeedInfo, io.ReadCloser, error) {
	os, err := l.seeds(ctx, false)
	if err != nil {
		return SeedInfo{}, nil, err
	}
	res, err := os.Get(ctx, seedObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return SeedInfo{}, nil, ErrNoSeed
	}
	if err != nil {
		return SeedInfo{}, nil, fmt.Errorf("jetstream: seed: %w", err)
	}
	info, err := res.Info()
	if err == nil {
		var si SeedInfo
		if si, err = l.seedInfo(ctx, info); err == nil {
			return si, res, nil
		}
	}
	res.Close()
	return SeedInfo{}, nil, err
}

// First returns the sequence of the stream's first message (what MaxAge
// and purges left; past the last one when the stream is empty).
func (l *Log) First(ctx context.Context) (uint64, error) {
	s, err := l.js.Stream(ctx, l.stream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.FirstSeq, nil
}

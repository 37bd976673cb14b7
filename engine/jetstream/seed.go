package jetstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Seeds. A new node replays the stream from its first message; the stream
// keeps MaxAge (7 days) of them, so after that a new node would miss the
// older history. A seed is one node's store as of a point of the log, in
// an object store bucket beside the stream (<name>_seeds): a new node
// starts from the latest seed and follows the stream from there. Each seed
// is an object of its own, named by its position and the node that put it,
// so that nodes putting seeds at once never write the same object; a put
// deletes the seeds older than the two latest once no reading of them can
// still be going on (dropSeeds). The store's format is the
// caller's (the command writes a tar of an engine backup); the object
// store checks its digest when a reader reaches its end.

// seedPrefix starts the names of the seeds bucket's objects.
const seedPrefix = "seed-"

// Seed metadata keys.
const (
	seedSeqKey = "webstats_seq"
	seedLogKey = "webstats_log_id"
)

// readLimit bounds the reading of a seed of size bytes: two minutes and a
// MiB a second. A seed read is never cut short by the client's default
// (5 s for a context without a deadline), and a stalled one ends.
func readLimit(size uint64) time.Duration {
	return 2*time.Minute + time.Duration(size>>20)*time.Second
}

// ErrNoSeed is the answer when the bucket holds no seed of this log.
var ErrNoSeed = errors.New("jetstream: no seed of this log")

// SeedInfo describes a seed.
type SeedInfo struct {
	// Seq is the last message of the stream the seed's store had applied
	// (at least: the store may have applied more).
	Seq uint64
	// Size is the seed's bytes, and Time when it was stored.
	Size uint64
	Time time.Time

	name string
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

// list returns the seeds of this log in os, the latest first.
func (l *Log) list(ctx context.Context, os jetstream.ObjectStore) ([]SeedInfo, error) {
	id, err := l.identity(ctx)
	if err != nil {
		return nil, err
	}
	infos, err := os.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: seeds: %w", err)
	}
	var out []SeedInfo
	for _, info := range infos {
		if !strings.HasPrefix(info.Name, seedPrefix) || info.Metadata[seedLogKey] != id {
			continue // not a seed, or of a log made again since
		}
		seq, err := strconv.ParseUint(info.Metadata[seedSeqKey], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, SeedInfo{Seq: seq, Size: info.Size, Time: info.ModTime, name: info.Name})
	}
	slices.SortFunc(out, func(a, b SeedInfo) int {
		return cmp.Or(cmp.Compare(b.Seq, a.Seq), b.Time.Compare(a.Time), strings.Compare(a.name, b.name))
	})
	return out, nil
}

// Seed describes the latest seed of this log; ErrNoSeed if there is none.
func (l *Log) Seed(ctx context.Context) (SeedInfo, error) {
	os, err := l.seeds(ctx, false)
	if err != nil {
		return SeedInfo{}, err
	}
	seeds, err := l.list(ctx, os)
	if err != nil {
		return SeedInfo{}, err
	}
	if len(seeds) == 0 {
		return SeedInfo{}, ErrNoSeed
	}
	return seeds[0], nil
}

// PutSeed stores r as a seed of the log as of message seq, unless a seed
// as recent is there (Seq ≥ seq: nodes put seeds on their own schedules),
// and then deletes the seeds older than the two latest. It reports
// whether r was stored (with an error if the deletion of old seeds
// failed). To stop it, fail r: the put then deletes what it wrote.
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
	// Not cancelled with ctx, and without a deadline (the client then
	// times out each acknowledgement): a put whose reader fails deletes
	// what it wrote.
	_, err = os.Put(context.WithoutCancel(ctx), jetstream.ObjectMeta{
		Name:     fmt.Sprintf("%s%020d-%s", seedPrefix, seq, l.node),
		Metadata: map[string]string{seedSeqKey: strconv.FormatUint(seq, 10), seedLogKey: id},
	}, r)
	if err != nil {
		return false, fmt.Errorf("jetstream: put seed: %w", err)
	}
	return true, l.dropSeeds(ctx, os, id)
}

// dropSeeds deletes the seeds no node needs: those of another log (made
// again since) and, beyond the two latest, each seed whose successor is
// older than a reading of it may take (a node that started reading it
// when it was the latest has finished or given up).
func (l *Log) dropSeeds(ctx context.Context, os jetstream.ObjectStore, id string) error {
	infos, err := os.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jetstream: seeds: %w", err)
	}
	seeds, err := l.list(ctx, os)
	if err != nil {
		return err
	}
	var drop []string
	for _, info := range infos {
		if info.Name == "seed" || strings.HasPrefix(info.Name, seedPrefix) && info.Metadata[seedLogKey] != id {
			drop = append(drop, info.Name)
		}
	}
	for i := 2; i < len(seeds); i++ {
		if time.Since(seeds[i-1].Time) > readLimit(seeds[i].Size) {
			drop = append(drop, seeds[i].name)
		}
	}
	// Not cancelled with ctx: a delete cut between its marker and its
	// purge would leave chunks nothing names.
	dctx := context.WithoutCancel(ctx)
	var errs []error
	for _, name := range drop {
		if err := os.Delete(dctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// GetSeed opens the latest seed of this log for reading (within ctx, and
// at most readLimit of its size): the reader fails at its end if the bytes do not
// match the digest they were stored with. The caller closes it.
// ErrNoSeed if there is none.
func (l *Log) GetSeed(ctx context.Context) (SeedInfo, io.ReadCloser, error) {
	os, err := l.seeds(ctx, false)
	if err != nil {
		return SeedInfo{}, nil, err
	}
	seeds, err := l.list(ctx, os)
	if err != nil {
		return SeedInfo{}, nil, err
	}
	if len(seeds) == 0 {
		return SeedInfo{}, nil, ErrNoSeed
	}
	// Without a deadline the client would give the whole reading its
	// default of 5 s; a stalled reading ends at readLimit.
	readCtx, cancel := context.WithTimeout(ctx, readLimit(seeds[0].Size))
	res, err := os.Get(readCtx, seeds[0].name)
	if err != nil {
		cancel()
		return SeedInfo{}, nil, fmt.Errorf("jetstream: seed: %w", err)
	}
	return seeds[0], &seedReader{ReadCloser: res, cancel: cancel}, nil
}

// seedReader is a seed being read; Close ends its context.
type seedReader struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (r *seedReader) Close() error {
	err := r.ReadCloser.Close()
	r.cancel()
	return err
}

// First returns the sequence of the stream's first message (what MaxAge
// and purges left; past the last one when the stream is empty).
func (l *Log) First(ctx context.Context) (uint64, error) {
	st, err := l.state(ctx)
	return st.FirstSeq, err
}

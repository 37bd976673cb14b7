package cli

import (
	"archive/tar"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/jetstream"
	"github.com/webstats/webstats/snapshot"
)

// Seeds (engine/jetstream, "Seeds"): every node checks now and then that
// the cluster's seed is recent, and if not puts one (a tar of a backup of
// its store); a node started on an empty data directory starts from the
// latest seed instead of replaying the stream, which keeps only MaxAge.

// defaultSeedEvery is -nats-seed-every's default: well inside the stream's
// 7 days, so that a seed always covers what the stream dropped.
const defaultSeedEvery = 6 * time.Hour

// minSeedEvery is -nats-seed-every's least value: each seed is a copy of
// the store, and each deleted one leaves a marker in the bucket.
const minSeedEvery = time.Hour

// seedPutLimit bounds the writing of one seed.
const seedPutLimit = 6 * time.Hour

// seedLoop puts a seed whenever the latest one is older than every (or
// missing), checking at random times a quarter of every apart on average,
// the first within a minute.
func seedLoop(ctx context.Context, e *engine.Engine, jl *jetstream.Log, data string, every time.Duration, log *slog.Logger) {
	wait := time.Duration(rand.Int64N(int64(time.Minute)))
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = every/8 + time.Duration(rand.Int64N(int64(every/4)))
		cur, err := jl.Seed(ctx)
		switch {
		case errors.Is(err, jetstream.ErrNoSeed):
		case err != nil:
			log.Warn("seed: read the latest", "err", err)
			continue
		case time.Since(cur.Time) < every:
			continue
		}
		start := time.Now()
		stored, seq, err := putSeed(ctx, e, jl, data)
		switch {
		case err != nil && stored:
			log.Warn("seed stored; deleting the old seeds failed", "seq", seq, "err", err)
		case err != nil:
			log.Error("seed: put", "err", err)
		case stored:
			log.Info("seed stored", "seq", seq, "duration", time.Since(start))
		}
	}
}

// trimEvery is how often a node records its position and trims the
// stream; trimRound bounds one round.
const (
	trimEvery = time.Minute
	trimRound = 30 * time.Second
)

// recordStart records, before the engine opens and follows the log, the
// position this node's store starts from (its last snapshot's, a restored
// seed's included; 0 without a store), so that no node trims the log past
// it while it catches up (jetstream, "Trimming"). Without the record, such
// a trim would make the node refuse to start (engine.ErrLogGap), never
// answer without the history: a failure to record is only logged.
func recordStart(ctx context.Context, jl *jetstream.Log, data string, log *slog.Logger) error {
	var seq uint64
	if has, err := hasStore(data); err != nil {
		return err
	} else if has {
		s, err := snapshot.Open(&snapshot.Options{Dir: data, Logger: log})
		if err != nil {
			return err
		}
		seq = s.Trim()
		if err := s.Close(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, trimRound)
	defer cancel()
	if err := jl.PutPosition(ctx, seq); err != nil {
		log.Warn("record this node's position", "seq", seq, "err", err)
	}
	return nil
}

// trimLoop records, every every, the stream position this node's store
// needs (its last snapshot's), and trims the stream behind what every node
// and the oldest seed need (jetstream, "Trimming"). Each node trims: a
// purge is the same whoever makes it.
func trimLoop(ctx context.Context, e *engine.Engine, jl *jetstream.Log, every time.Duration, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		round, cancel := context.WithTimeout(ctx, trimRound)
		if err := jl.PutPosition(round, e.SnapshotSeq()); err != nil {
			log.Warn("record this node's position", "err", err)
		} else if cut, err := jl.Trim(round); err != nil {
			log.Warn("trim the stream", "err", err)
		} else if cut > 0 {
			log.Info("stream trimmed", "through", cut)
		}
		cancel()
	}
}

// putSeed puts a seed of e's store: its log position read first, then a
// snapshot and a backup (which hold at least that), written as a tar into
// the seeds bucket as it is read. It reports whether it was stored (not
// when a seed as recent was there) and its position.
func putSeed(ctx context.Context, e *engine.Engine, jl *jetstream.Log, data string) (bool, uint64, error) {
	seq := e.Metrics().LogSeq
	if err := e.Snapshot(ctx); err != nil {
		return false, 0, err
	}
	tmp, err := tempName(data, ".seed-put-")
	if err != nil {
		return false, 0, err
	}
	defer os.RemoveAll(tmp)
	if err := e.Backup(ctx, tmp); err != nil {
		return false, 0, err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(writeTar(pw, tmp))
	}()
	// Cancelling ctx, or a put past seedPutLimit, fails the reader: the
	// put then deletes what it wrote.
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	timer := time.AfterFunc(seedPutLimit, func() { pr.CloseWithError(errors.New("seed: put took too long")) })
	stored, err := jl.PutSeed(ctx, seq, pr)
	stop()
	timer.Stop()
	pr.CloseWithError(errors.New("seed: put ended")) // stops writeTar if PutSeed returned early
	<-done                                           // before tmp is removed
	return stored, seq, err
}

// startFrom prepares data for a node of the cluster: it finishes or undoes
// what a crash left (an interrupted restore, temporary directories), and
// when data holds no store, writes the latest seed into it. Without a
// seed it checks that the log still starts at its first message: a node
// that replayed a log whose start was dropped would answer without that
// history (engine.ErrLogGap), so it is refused before any store is made.
func startFrom(ctx context.Context, jl *jetstream.Log, data string, log *slog.Logger) error {
	if err := sweepSeeds(data); err != nil {
		return err
	}
	if has, err := hasStore(data); err != nil || has {
		return err
	}
	restored, err := restoreSeed(ctx, jl, data, log)
	if err != nil || restored {
		return err
	}
	first, err := jl.First(ctx)
	if err != nil {
		return err
	}
	if first > 1 {
		return fmt.Errorf("%w: the log starts at message %d and the cluster has no seed: let a node that has the history put one (-nats-seed-every), then start this one again", engine.ErrLogGap, first)
	}
	return nil
}

// seedRestoring names the file that lists, during a restore, the entries
// being moved into the data directory: found at start, they are removed
// and the restore is made again.
const seedRestoring = ".seed-restoring"

// sweepSeeds removes what a crash left of seeds in data: an interrupted
// restore's entries, and temporary directories.
func sweepSeeds(data string) error {
	list, err := os.ReadFile(filepath.Join(data, seedRestoring))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		for name := range strings.Lines(string(list)) {
			name = strings.TrimSuffix(name, "\n")
			if !movable(name) {
				continue
			}
			if err := os.RemoveAll(filepath.Join(data, name)); err != nil {
				return err
			}
		}
		if err := os.Remove(filepath.Join(data, seedRestoring)); err != nil {
			return err
		}
	}
	tmps, err := filepath.Glob(filepath.Join(data, ".seed-[pg][ue]t-*"))
	if err != nil {
		return err
	}
	for _, t := range tmps {
		if err := os.RemoveAll(t); err != nil {
			return err
		}
	}
	return nil
}

// movable reports whether name may be a file a restore moves into the data
// directory (a store's file: not ".", "..", a hidden file, the embedded
// NATS server's directory, a path or a name with NUL).
func movable(name string) bool {
	return name != "" && name != "nats" && !strings.HasPrefix(name, ".") &&
		filepath.IsLocal(name) && !strings.ContainsAny(name, "/\\\x00")
}

// restoreSeed writes the latest seed into data, which holds no store, and
// reports whether it did (no seed: false). The entries are moved in with a
// list of them written first (seedRestoring), the manifest and markers
// last, so that a crash midway is undone at the next start (sweepSeeds).
func restoreSeed(ctx context.Context, jl *jetstream.Log, data string, log *slog.Logger) (bool, error) {
	// The NATS cluster may still be electing its leaders (the other nodes
	// starting too): a failed lookup is tried again, as startCluster does.
	deadline := time.Now().Add(joinWait)
	for {
		try, cancel := context.WithTimeout(ctx, 5*time.Second)
		latest, err := jl.Seed(try)
		cancel()
		if errors.Is(err, jetstream.ErrNoSeed) {
			return false, nil
		}
		if err == nil {
			// A seed the log has moved past would leave a store Open
			// refuses: refused here, before any store is made.
			first, err := jl.First(ctx)
			if err != nil {
				return false, err
			}
			if first > latest.Seq+1 {
				return false, fmt.Errorf("%w: the latest seed covers the log up to message %d, and the log starts at %d: let a node that has the history put a newer one (-nats-seed-every), then start this one again", engine.ErrLogGap, latest.Seq, first)
			}
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false, err
		}
		log.Info("waiting for the NATS cluster to answer for the seed", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	info, rc, err := jl.GetSeed(ctx)
	if errors.Is(err, jetstream.ErrNoSeed) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer rc.Close()
	if err := os.MkdirAll(data, 0o750); err != nil {
		return false, err
	}
	tmp, err := tempName(data, ".seed-get-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	if err := readTar(rc, tmp); err != nil {
		return false, fmt.Errorf("seed: %w", err)
	}
	// The object's digest is checked when its reader reaches the end,
	// which the tar reader stops short of.
	switch n, err := io.Copy(io.Discard, rc); {
	case err != nil:
		return false, fmt.Errorf("seed: %w", err)
	case n != 0:
		return false, fmt.Errorf("seed: %d bytes after the archive", n)
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return false, err
	}
	for _, ent := range ents {
		if !ent.Type().IsRegular() || !movable(ent.Name()) {
			return false, fmt.Errorf("seed: %q is not a store's file", ent.Name())
		}
		if _, err := os.Lstat(filepath.Join(data, ent.Name())); err == nil {
			return false, fmt.Errorf("seed: %s is in the data directory already", ent.Name())
		}
	}
	// The manifest and Pebble's markers last: until they are in, the
	// directory holds no store (hasStore).
	last := func(name string) bool {
		return strings.HasPrefix(name, "MANIFEST-") || strings.HasPrefix(name, "marker.")
	}
	slices.SortStableFunc(ents, func(a, b fs.DirEntry) int {
		la, lb := last(a.Name()), last(b.Name())
		switch {
		case la == lb:
			return strings.Compare(a.Name(), b.Name())
		case la:
			return 1
		}
		return -1
	})
	var list strings.Builder
	for _, ent := range ents {
		list.WriteString(ent.Name() + "\n")
	}
	if err := writeFile(filepath.Join(data, seedRestoring), strings.NewReader(list.String())); err != nil {
		return false, err
	}
	if err := syncDir(data); err != nil {
		return false, err
	}
	for _, ent := range ents {
		if err := os.Rename(filepath.Join(tmp, ent.Name()), filepath.Join(data, ent.Name())); err != nil {
			return false, fmt.Errorf("seed: %w", err)
		}
	}
	if err := syncDir(data); err != nil {
		return false, err
	}
	if err := os.Remove(filepath.Join(data, seedRestoring)); err != nil {
		return false, err
	}
	if err := syncDir(data); err != nil {
		return false, err
	}
	log.Info("started from the cluster's seed", "seq", info.Seq, "bytes", info.Size, "stored", info.Time)
	return true, nil
}

// syncDir syncs a directory, so that the names moved into it last.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// hasStore reports whether dir holds a store (a Pebble manifest).
func hasStore(dir string) (bool, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, ent := range ents {
		if strings.HasPrefix(ent.Name(), "MANIFEST-") || strings.HasPrefix(ent.Name(), "marker.manifest") {
			return true, nil
		}
	}
	return false, nil
}

// tempName returns a path in dir, not yet used, starting with prefix.
func tempName(dir, prefix string) (string, error) {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return "", err
	}
	return filepath.Join(dir, prefix+hex.EncodeToString(b[:])), nil
}

// writeTar writes the regular files and directories under dir as a tar.
func writeTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: filepath.ToSlash(rel) + "/", Mode: 0o750})
		case !fi.Mode().IsRegular():
			return fmt.Errorf("seed: %s is not a regular file", rel)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Size: fi.Size(), Mode: 0o640}); err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// readTar writes a tar of writeTar's into dir (which must not exist):
// directories and regular files only, every name inside dir.
func readTar(r io.Reader, dir string) error {
	if err := os.Mkdir(dir, 0o750); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(h.Name, "/")
		if !filepath.IsLocal(name) {
			return fmt.Errorf("tar: name %q outside the directory", h.Name)
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o750); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(path, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tar: %q is neither a file nor a directory", h.Name)
		}
	}
}

// writeFile writes r to a new file at path, synced.
func writeFile(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

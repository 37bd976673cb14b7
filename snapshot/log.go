package snapshot

import (
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// LogEntry is one record of the write-ahead log: an enriched hit, encoded by
// the engine, under the global sequence number the engine assigned to it.
type LogEntry struct {
	Seq  uint64 // > 0, unique; entries need not arrive in Seq order
	Data []byte // opaque
}

// Pending is an AppendAsync whose entries may not be durable yet. Its Wait
// must be called exactly once.
type Pending struct {
	s     *Store
	batch *pebble.Batch // nil under Options.NoSync: nothing to wait for
	err   error         // Wait's error when nothing was committed (a failed interval sync)
}

// AppendAsync writes entries to the log without waiting for them to be
// durable. When it returns nil, the entries are in the store (ReplayLog and
// a Backup see them) and in Pebble's write-ahead log, but possibly not yet
// synced; the returned Pending's Wait returns once they are. Entries are
// copied. An entry with an existing Seq replaces it. Seq 0 is invalid (0 is
// "no trim point").
//
// The engine relies on three properties, each checked in Pebble v2's source
// (commit.go, record/log_writer.go, db.go):
//
//   - Atomicity: the entries of one call are one Pebble batch, so a crash
//     keeps all of them or none.
//   - Order: if call X returns before call Y starts, X's entries precede Y's
//     in the WAL. Pebble assigns sequence numbers and writes the batch's
//     record into the WAL under one mutex (commitPipeline.prepare), before
//     ApplyNoSyncWait returns.
//   - Prefix durability: when Y's Wait returns nil, X's entries are durable
//     too. The WAL's flusher signals sync waiters in queue order, each after
//     an fsync of everything written before it was queued (LogWriter
//     flushLoop); a WAL rotation closes and syncs the previous file before
//     any record goes to the next (DB.rotateWAL); and a failed sync fails
//     every later one (the flusher's error is sticky).
//
// Under Options.NoSync the batch is applied unsynced and Wait returns at once;
// Flush syncs. Under Options.SyncInterval all of the above holds with
// "written to the operating system" for "durable" and "synced": the commit
// asks for a sync, so Pebble's flusher writes the record to the log file
// before it releases Wait, but that sync is not an fsync (walsync.go). A
// Store does not Close while a Pending is not yet waited for.
//
// It fails with ErrDiskFull, without writing anything, when the file system
// would be left with less than Options.MinFreeBytes.
func (s *Store) AppendAsync(entries ...LogEntry) (*Pending, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	p, err := s.appendAsync(entries)
	if err != nil {
		s.exit()
		return nil, err
	}
	return p, nil // p.Wait exits
}

// appendAsync is AppendAsync inside the gate. On success the returned Pending
// holds the gate until its Wait.
func (s *Store) appendAsync(entries []LogEntry) (*Pending, error) {
	size := 0
	for i, e := range entries {
		if e.Seq == 0 {
			return nil, fmt.Errorf("snapshot: append: entry %d has sequence number 0", i)
		}
		size += len(e.Data) + logKeyLen + 8
	}
	p := &Pending{s: s}
	if len(entries) == 0 {
		return p, nil
	}
	if err := s.wal.failed(); err != nil {
		// Not committed (nor counted by the disk guard): the log's
		// fsync failed. Wait reports it, as it does a failed sync.
		p.err = err
		return p, nil
	}
	if err := s.disk.admit(uint64(size)); err != nil {
		return nil, wrap("append", err)
	}
	b := s.db.NewBatchWithSize(size)
	var key [logKeyLen]byte
	for _, e := range entries {
		if err := b.Set(appendLogKey(key[:0], e.Seq), e.Data, nil); err != nil {
			b.Close()
			return nil, wrap("append", err)
		}
	}
	if !s.sync {
		err := s.db.Apply(b, pebble.NoSync)
		b.Close()
		return p, wrap("append", err)
	}
	// An error of ApplyNoSyncWait comes before the commit (an invalid
	// batch): there is no sync to wait for, and the batch may be closed.
	if err := s.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		b.Close()
		return nil, wrap("append", err)
	}
	p.batch = b
	return p, nil
}

// Wait blocks until the entries of its AppendAsync are durable (synced);
// under Options.NoSync it returns at once. Call it exactly once.
func (p *Pending) Wait() error {
	if p.s == nil {
		return errors.New("snapshot: Pending.Wait called twice")
	}
	s := p.s
	defer s.exit()
	p.s = nil
	if p.batch == nil {
		return wrap("append", p.err)
	}
	err := p.batch.SyncWait()
	if err == nil {
		// Under Options.SyncInterval a commit's sync is a write to the
		// operating system; a failed fsync of the log since fails it.
		err = s.wal.failed()
	}
	p.batch.Close()
	p.batch = nil
	return wrap("append", err)
}

// Append writes entries to the log in one batch and returns once they are
// durable (unless Options.NoSync): AppendAsync followed by Wait. Concurrent
// calls share fsyncs (Pebble's commit pipeline syncs the WAL once for every
// batch queued meanwhile).
func (s *Store) Append(entries ...LogEntry) error {
	p, err := s.AppendAsync(entries...)
	if err != nil {
		return err
	}
	return p.Wait()
}

// Flush returns once every entry appended and every record written before
// it is durable: it syncs Pebble's write-ahead log, also under
// Options.NoSync (where nothing else does) and Options.SyncInterval (where
// the background loop would later). It is not refused on a full disk (see
// ErrDiskFull): it adds an empty record, and makes durable what was admitted
// before.
func (s *Store) Flush() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	err := s.syncWAL()
	if err == nil && s.wal != nil {
		// syncWAL's sync wrote the record to the file, not to the disk.
		err = s.wal.syncAll()
	}
	return wrap("flush", err)
}

// syncWAL commits an empty record, synced: the WAL syncs a prefix, so every
// batch committed before is durable when it returns.
func (s *Store) syncWAL() error {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.LogData(nil, nil); err != nil {
		return err
	}
	if err := s.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		return err
	}
	return b.SyncWait()
}

// commit commits b once the disk guard admits its size (see ErrDiskFull).
//
// Under Options.SyncInterval it also fsyncs the log before it returns:
// registry records (a revoked session, a rotated cookie secret, the id
// counter) are few, and undoing one on a power loss would hand out again
// what was taken back or given away.
func (s *Store) commit(b *pebble.Batch) error {
	if err := s.wal.failed(); err != nil {
		return err // the log's fsync failed (walSyncer)
	}
	if err := s.disk.admit(uint64(b.Len())); err != nil {
		return err
	}
	if err := s.apply(b); err != nil {
		return err
	}
	if s.wal != nil {
		return s.wal.syncAll()
	}
	return nil
}

// apply commits b, synced unless Options.NoSync. A synced commit goes through
// ApplyNoSyncWait and SyncWait, so that a failed WAL sync is returned as an
// error: Pebble's Apply with Sync reports it through Logger.Fatalf.
func (s *Store) apply(b *pebble.Batch) error {
	if !s.sync {
		return s.db.Apply(b, pebble.NoSync)
	}
	if err := s.db.ApplyNoSyncWait(b, pebble.Sync); err != nil {
		return err
	}
	if err := b.SyncWait(); err != nil {
		return err
	}
	return s.wal.failed()
}

// ReplayLog calls fn for every log entry with Seq > after, in ascending Seq
// order. Entries at or below the trim point are covered by a snapshot and
// never visited, whatever after is. data is valid only during the call to
// fn. An error returned by fn stops the replay and is returned as is. fn must
// not call Close; appends made during the replay may or may not be visited.
func (s *Store) ReplayLog(after uint64, fn func(seq uint64, data []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	after = max(after, s.trim.Load())
	if after == math.MaxUint64 {
		return nil
	}
	return s.scan("replay log", logKey(after+1), logEnd, func(key, val []byte) error {
		seq, err := parseLogKey(key)
		if err != nil {
			return err
		}
		return fn(seq, val)
	})
}

// logCount returns the number of entries in the log (for tests).
func (s *Store) logCount() (int, error) {
	n := 0
	err := s.scan("count log", []byte{prefixLog}, logEnd, func(_, _ []byte) error {
		n++
		return nil
	})
	return n, err
}

package snapshot

import (
	"fmt"
	"math"
)

// LogEntry is one record of the write-ahead log: an enriched hit, encoded by
// the engine, under the global sequence number the engine assigned to it.
type LogEntry struct {
	Seq  uint64 // > 0, unique; entries need not arrive in Seq order
	Data []byte // opaque
}

// Append writes entries to the log in one batch and returns once they are
// durable. Entries are copied. An entry with an existing Seq replaces it.
// Seq 0 is invalid (0 is "no trim point").
//
// Concurrent calls share fsyncs (group commit): a commit queue gathers
// whatever callers are waiting into one synced batch. With Options.NoSync,
// Append returns at once and the queue writes what gathered every half
// millisecond, unsynced (see Flush); an error of such a write is returned by
// a later Append.
func (s *Store) Append(entries ...LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	size := 0
	for i, e := range entries {
		if e.Seq == 0 {
			return fmt.Errorf("snapshot: append: entry %d has sequence number 0", i)
		}
		size += len(e.Data) + logKeyLen + 8
	}
	if s.commits != nil {
		return wrap("append", s.commits.append(entries))
	}
	b := s.db.NewBatchWithSize(size)
	defer b.Close()
	var key [logKeyLen]byte
	for _, e := range entries {
		if err := b.Set(appendLogKey(key[:0], e.Seq), e.Data, nil); err != nil {
			return wrap("append", err)
		}
	}
	return wrap("append", s.db.Apply(b, s.wo))
}

// Flush returns once every entry appended before it is in the store. With
// NoSync, Append returns before its entries are written (they are gathered
// for a fraction of a millisecond into one batch); Flush, Backup and Close
// wait for them.
func (s *Store) Flush() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if s.commits == nil {
		return nil
	}
	return wrap("flush", s.commits.flush())
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

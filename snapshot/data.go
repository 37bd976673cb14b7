package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// Snapshot is what the engine persists at each snapshot: dirty state plus a
// new trim point. WriteSnapshot writes it as one synced batch. In every
// record, a nil Data deletes the record (an empty non-nil Data stores an
// empty value).
//
// DropPeriods are applied first, the records after them, all in the same
// batch: a snapshot may drop a period and write chunks of it anew.
type Snapshot struct {
	Days    []DayRecord    // upsert
	Strings []StringsChunk // upsert
	States  []StateRecord  // upsert (the old one-value form; see Chunks)
	Chunks  []StateChunk   // upsert
	Sites   []SiteRecord   // upsert
	Parts   []DayPart      // upsert
	// Index and Indexed are entries of the index of visitors by hash
	// (upsert) and the count of visitors it holds for their periods.
	Index   []VisitorIndex
	Indexed []PeriodIndexed
	// DropPeriods deletes, for each period, every chunk of its state, its
	// index and its old-form StateRecord.
	DropPeriods []PeriodRef
	// DropDays deletes, for each entry, the website's days (and their
	// parts) dated before Date: retention, in the same batch as the site
	// record that no longer lists them. It is applied before Days and
	// Parts, so a day written by the same snapshot is kept.
	DropDays []DaysBefore
	// Trim is the new trim point: every log entry with Seq <= Trim is covered
	// by this snapshot (and earlier ones) and is deleted. A Trim at or below
	// the current trim point is ignored (the trim point never goes back).
	Trim uint64
}

// DayRecord is the encoded day bucket of one website on one local day.
type DayRecord struct {
	Website uint32
	Date    int32 // days since 1970-01-01; may be negative
	Data    []byte
}

// DayPart is sealed part number Part of a website's day: rows the engine
// moved out of the day's value (its numbering and contents are the
// engine's). A part is deleted only with its day (DeleteDaysBefore,
// DeleteWebsite).
type DayPart struct {
	Website uint32
	Date    int32
	Part    uint32
	Data    []byte
}

// StringsChunk is a chunk of a website's interned strings table, keyed by the
// id of its first string.
type StringsChunk struct {
	Website uint32
	From    uint32
	Data    []byte
}

// StateRecord is a website's visitor state of one salt period.
type StateRecord struct {
	Website uint32
	Period  int32
	Data    []byte
}

// StateChunk is chunk number Chunk of a website's visitor state of one salt
// period. The engine splits a period's state into chunks so that a snapshot
// writes only those that changed; their numbering is the engine's.
type StateChunk struct {
	Website uint32
	Period  int32
	Chunk   uint32
	Data    []byte
}

// PeriodRef names the visitor state of one website and salt period.
type PeriodRef struct {
	Website uint32
	Period  int32
}

// DaysBefore names the days of one website dated before Date.
type DaysBefore struct {
	Website uint32
	Date    int32
}

// SiteRecord is a website's engine state (for example its last applied
// sequence number).
type SiteRecord struct {
	Website uint32
	Data    []byte
}

// setOrDelete adds a Set of key to b, or a Delete when val is nil.
func setOrDelete(b *pebble.Batch, key, val []byte) error {
	if val == nil {
		return b.Delete(key, nil)
	}
	return b.Set(key, val, nil)
}

// WriteSnapshot writes sn in one batch, synced (unless Options.NoSync; under
// Options.SyncInterval it fsyncs the log before it returns), and in the same
// batch moves the trim point forward and deletes the log entries at or below
// it (one DeleteRange). Either all of sn is stored or none of it. Data slices
// are copied.
func (s *Store) WriteSnapshot(sn *Snapshot) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	s.snapMu.Lock()
	defer s.snapMu.Unlock()

	b := s.db.NewBatch()
	defer b.Close()
	var err error
	for _, r := range sn.DropPeriods {
		p := chunkPeriodPrefix(r.Website, r.Period)
		ip := indexPeriodPrefix(r.Website, r.Period)
		err = errors.Join(err,
			b.DeleteRange(p, prefixEnd(p), nil),
			b.DeleteRange(ip, prefixEnd(ip), nil),
			b.Delete(stateKey(r.Website, r.Period), nil))
	}
	for _, r := range sn.DropDays {
		if r.Date != minDate {
			err = errors.Join(err, b.DeleteRange(websiteSubPrefix(r.Website, subDay), dayKey(r.Website, r.Date), nil))
		}
	}
	pieced := map[string]bool{}
	for _, r := range sn.Days {
		err = errors.Join(err, s.setDay(b, pieced, dayKey(r.Website, r.Date), r.Data))
	}
	for _, r := range sn.Strings {
		err = errors.Join(err, setOrDelete(b, stringsKey(r.Website, r.From), r.Data))
	}
	for _, r := range sn.States {
		err = errors.Join(err, setOrDelete(b, stateKey(r.Website, r.Period), r.Data))
	}
	for _, r := range sn.Chunks {
		err = errors.Join(err, setOrDelete(b, chunkKey(r.Website, r.Period, r.Chunk), r.Data))
	}
	err = errors.Join(err, writeIndex(b, sn))
	for _, r := range sn.Sites {
		err = errors.Join(err, setOrDelete(b, siteKey(r.Website), r.Data))
	}
	for _, r := range sn.Parts {
		err = errors.Join(err, setOrDelete(b, partKey(r.Website, r.Date, r.Part), r.Data))
	}
	trim := sn.Trim > s.trim.Load()
	if trim {
		err = errors.Join(err, b.Set(trimKey, encodeUint64(sn.Trim), nil))
		end := logEnd
		if sn.Trim < math.MaxUint64 {
			end = logKey(sn.Trim + 1)
		}
		err = errors.Join(err, b.DeleteRange([]byte{prefixLog}, end, nil))
	}
	if err == nil && !b.Empty() {
		err = s.commit(b)
	}
	if err == nil && s.wal != nil {
		err = s.wal.syncAll()
	}
	if err != nil {
		return wrap("write snapshot", err)
	}
	if trim {
		s.trim.Store(sn.Trim)
	}
	return nil
}

// Trim returns the trim point of the last snapshot (0 when none): every log
// entry with Seq <= Trim() is covered by a snapshot.
func (s *Store) Trim() uint64 { return s.trim.Load() }

// Day returns a copy of the day bucket of website on date, or ErrNotFound.
// The returned slice belongs to the caller.
func (s *Store) Day(website uint32, date int32) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	return s.getDay(fmt.Sprintf("day %d of website %d", date, website), dayKey(website, date))
}

// Days calls fn for every stored day of website from from to to, both
// inclusive, in ascending date order. data is valid only during the call to
// fn. An error returned by fn stops the scan and is returned as is. fn must
// not call Close. The days' parts are not read (see DaysWithParts).
func (s *Store) Days(website uint32, from, to int32, fn func(date int32, data []byte) error) error {
	return s.days(website, from, to, false, nil, func(date int32, data []byte, _ [][]byte) error { return fn(date, data) })
}

// DaysWanted is Days skipping the days for which want (when not nil) is
// false.
func (s *Store) DaysWanted(website uint32, from, to int32, want func(date int32) bool, fn func(date int32, data []byte) error) error {
	return s.days(website, from, to, false, want, func(date int32, data []byte, _ [][]byte) error { return fn(date, data) })
}

// DaysWithParts is DaysWanted giving each day's parts too: parts[i] is the
// value of part i, in part order, as far as they are numbered without a
// gap from 0. A day and its parts are read from one consistent view of the
// store. data and parts are copies that fn may keep.
func (s *Store) DaysWithParts(website uint32, from, to int32, want func(date int32) bool, fn func(date int32, data []byte, parts [][]byte) error) error {
	return s.days(website, from, to, true, want, fn)
}

func (s *Store) days(website uint32, from, to int32, withParts bool, want func(int32) bool, fn func(date int32, data []byte, parts [][]byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if from > to {
		return nil
	}
	op := fmt.Sprintf("days %d to %d of website %d", from, to, website)
	var (
		cur    int32
		data   []byte
		parts  [][]byte
		have   bool
		pieced bool // data is put together from the day's pieces (asm)
		asm    assembly
	)
	flush := func() error {
		if !have {
			return nil
		}
		have = false
		if pieced {
			var err error
			if data, err = asm.value(); err != nil {
				return err
			}
		}
		return fn(cur, data, parts)
	}
	err := s.scan(op, dayKey(website, from), prefixEnd(dayKey(website, to)), func(key, val []byte) error {
		if isPieceKey(key) {
			if have && pieced {
				asm.add(key, val)
			}
			return nil
		}
		if len(key) == partKeyLen {
			w, date, part, err := parsePartKey(key)
			if err == nil && w != website {
				err = malformedKey("day part", key)
			}
			if err != nil {
				return err
			}
			if withParts && have && date == cur && int(part) == len(parts) {
				parts = append(parts, bytes.Clone(val))
			}
			return nil
		}
		w, date, err := parseDayKey(key)
		if err == nil && w != website {
			err = malformedKey("day", key)
		}
		if err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		if want != nil && !want(date) {
			return nil
		}
		total, n, isStub, err := parseStub(val)
		if err != nil {
			return err
		}
		if !withParts && !isStub {
			return fn(date, val, nil)
		}
		cur, data, parts, have, pieced = date, nil, nil, true, isStub
		if isStub {
			asm.start(total, n)
		} else {
			data = bytes.Clone(val)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// ScanStrings calls fn for every strings chunk of website in ascending From
// order. data is valid only during the call to fn; fn's error is returned as
// is; fn must not call Close.
func (s *Store) ScanStrings(website uint32, fn func(from uint32, data []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	p := websiteSubPrefix(website, subStrings)
	return s.scan(fmt.Sprintf("scan strings of website %d", website), p, prefixEnd(p), func(key, val []byte) error {
		_, from, err := parseStringsKey(key)
		if err != nil {
			return err
		}
		return fn(from, val)
	})
}

// ScanStates calls fn for every old-form visitor state (one StateRecord per
// period, before state chunks) of website in ascending period order; the
// engine reads it to migrate to chunks. data is valid only during the call to fn; fn's error is returned as
// is; fn must not call Close.
func (s *Store) ScanStates(website uint32, fn func(period int32, data []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	p := websiteSubPrefix(website, subState)
	return s.scan(fmt.Sprintf("scan states of website %d", website), p, prefixEnd(p), func(key, val []byte) error {
		_, period, err := parseStateKey(key)
		if err != nil {
			return err
		}
		return fn(period, val)
	})
}

// ScanStateChunks calls fn for every chunk of website's visitor state of
// period, in ascending chunk order. data is valid only during the call to
// fn; fn's error is returned as is; fn must not call Close.
func (s *Store) ScanStateChunks(website uint32, period int32, fn func(chunk uint32, data []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	p := chunkPeriodPrefix(website, period)
	op := fmt.Sprintf("scan state chunks of website %d, period %d", website, period)
	return s.scan(op, p, prefixEnd(p), func(key, val []byte) error {
		_, _, chunk, err := parseChunkKey(key)
		if err != nil {
			return err
		}
		return fn(chunk, val)
	})
}

// StatePeriods calls fn for every salt period of website that has state
// chunks, in ascending order, stepping over the chunks (one seek per
// period). fn's error is returned as is; fn must not call Close.
func (s *Store) StatePeriods(website uint32, fn func(period int32) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	op := fmt.Sprintf("state periods of website %d", website)
	lower := websiteSubPrefix(website, subChunk)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(lower)})
	if err != nil {
		return wrap(op, err)
	}
	for valid := it.First(); valid; {
		_, period, _, err := parseChunkKey(it.Key())
		if err == nil {
			err = fn(period)
		}
		if err != nil {
			it.Close()
			if _, ok := err.(*corruptError); ok {
				return wrap(op, err)
			}
			return err
		}
		next := prefixEnd(chunkPeriodPrefix(website, period))
		if next == nil || bytes.Compare(next, prefixEnd(lower)) >= 0 {
			break
		}
		valid = it.SeekGE(next)
	}
	return wrap(op, it.Close())
}

// ScanSites calls fn for every site record in ascending website order. data
// is valid only during the call to fn; fn's error is returned as is; fn must
// not call Close.
func (s *Store) ScanSites(fn func(website uint32, data []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	return s.scan("scan sites", sitesPrefix, prefixEnd(sitesPrefix), func(key, val []byte) error {
		w, err := parseSiteKey(key)
		if err != nil {
			return err
		}
		return fn(w, val)
	})
}

// DeleteWebsite removes every day, strings chunk, state, state chunk and the
// site record of website, in one durable batch (one DeleteRange plus one delete). It does
// not touch the registry: deleting the website's KindWebsite record (and
// anything else the engine keeps about it there) is the caller's job. Log
// entries of the website stay until the next trim; the engine skips them on
// replay because the website is gone.
func (s *Store) DeleteWebsite(website uint32) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	b := s.db.NewBatch()
	defer b.Close()
	p := websitePrefix(website)
	err := errors.Join(
		b.DeleteRange(p, prefixEnd(p), nil),
		b.Delete(siteKey(website), nil),
	)
	if err == nil {
		err = s.commit(b)
	}
	return wrap(fmt.Sprintf("delete website %d", website), err)
}

// DeleteStrings removes website's strings chunks, durably: the engine's
// migration to self-contained days, once they are all rewritten.
func (s *Store) DeleteStrings(website uint32) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	b := s.db.NewBatch()
	defer b.Close()
	p := websiteSubPrefix(website, subStrings)
	err := b.DeleteRange(p, prefixEnd(p), nil)
	if err == nil {
		err = s.commit(b)
	}
	return wrap(fmt.Sprintf("delete strings of website %d", website), err)
}

// DeleteDaysBefore removes the day buckets of website dated before date
// (retention), durably. Strings and states are not touched.
func (s *Store) DeleteDaysBefore(website uint32, date int32) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if date == minDate {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	err := b.DeleteRange(websiteSubPrefix(website, subDay), dayKey(website, date), nil)
	if err == nil {
		err = s.commit(b)
	}
	return wrap(fmt.Sprintf("delete days of website %d before %d", website, date), err)
}

// Backup writes a consistent copy of the store to dir, on the store's file
// system, while writes go on: a Pebble checkpoint (hard links to the immutable
// sstables where the file system allows, copies of the rest) taken after
// flushing the WAL, so it holds every write that returned before Backup was
// called. dir must not exist. The copy is a complete store: Open it like any
// other. ctx is checked before the checkpoint starts; a checkpoint is not
// interruptible.
func (s *Store) Backup(ctx context.Context, dir string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	op := "backup to " + dir
	if err := ctx.Err(); err != nil {
		return wrap(op, err)
	}
	if err := s.wal.failed(); err != nil {
		return wrap(op, err) // the log's fsync failed: not a copy to trust
	}
	// The checkpoint syncs the WAL and may copy files on this file system.
	if err := s.disk.admit(0); err != nil {
		return wrap(op, err)
	}
	return wrap(op, s.db.Checkpoint(dir, pebble.WithFlushedWAL()))
}

// Compact flushes the memtables and compacts the whole key space, so that
// DiskUsage afterwards measures live data only. It can take long on a large
// store; writes go on meanwhile.
func (s *Store) Compact() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := s.wal.failed(); err != nil {
		return wrap("compact", err)
	}
	if err := s.disk.admit(0); err != nil {
		return wrap("compact", err)
	}
	if err := s.db.Flush(); err != nil {
		return wrap("compact", err)
	}
	return wrap("compact", s.db.Compact(context.Background(), []byte{0x00}, []byte{0xff}, true))
}

// CompactLog compacts the log's key range, so that the space of entries
// trimmed by snapshots is reclaimed now rather than whenever Pebble's own
// compactions reach them. It flushes the memtable first. The engine calls it
// every few snapshots. It is not refused on a full disk (see ErrDiskFull):
// it is how the space of the trimmed log comes back, and its output is at
// most the log's live entries.
func (s *Store) CompactLog() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if err := s.wal.failed(); err != nil {
		return wrap("compact log", err)
	}
	return wrap("compact log", s.db.Compact(context.Background(), logKey(0), logEnd, false))
}

// DiskUsage returns the bytes the store occupies on disk (sstables, WAL,
// manifests), as Pebble accounts them; 0 after Close.
func (s *Store) DiskUsage() uint64 {
	if err := s.enter(); err != nil {
		return 0
	}
	defer s.exit()
	return s.db.Metrics().DiskSpaceUsage()
}

// Usage is what a store's live keys hold, by family: the bytes of their
// keys and values as the store reads them (before Pebble compresses its
// blocks; the files also hold Pebble's own: the write-ahead log, the
// manifest, space not yet compacted away).
type Usage struct {
	Registry, Log, Sites, Meta int64
	// Days are the day values without their segments (DaySegments: the
	// bytes Usage's split said are segments), Parts the sealed parts of
	// days (segments rows moved out of an open day).
	Days, DaySegments, Parts int64
	Strings, State           int64
}

// Usage reads every live key once and sums its bytes by family. split
// tells how many bytes of a day's value are its segments (0: none). It
// costs a scan of the whole store, stopped when ctx is done: it is meant
// for measurements, not for a server's requests.
func (s *Store) Usage(ctx context.Context, split func(day []byte) int) (Usage, error) {
	var u Usage
	if err := s.enter(); err != nil {
		return u, err
	}
	defer s.exit()
	n := 0
	// A day stored in pieces is split once put together: its stub's and
	// pieces' bytes (size) are counted when the key after them comes.
	var (
		asm     assembly
		pieced  bool
		daySize int64
	)
	endDay := func() {
		if !pieced {
			return
		}
		pieced = false
		seg := int64(0)
		if v, err := asm.value(); err == nil {
			seg = int64(min(len(v), max(0, split(v))))
		}
		u.Days += daySize - seg
		u.DaySegments += seg
	}
	err := s.scan("usage", []byte{0x00}, []byte{0xff}, func(key, val []byte) error {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if isPieceKey(key) {
			if pieced {
				asm.add(key, val)
				daySize += int64(len(key) + len(val))
			} else {
				u.Days += int64(len(key) + len(val)) // left by a longer value
			}
			return nil
		}
		fam := familyOf(key)
		if fam != familyPart { // a pieced day's parts come before its pieces
			endDay()
		}
		size := int64(len(key) + len(val))
		switch fam {
		case familyRegistry:
			u.Registry += size
		case familyLog:
			u.Log += size
		case familySite:
			u.Sites += size
		case familyPart:
			u.Parts += size
		case familyDay:
			if total, n, isStub, err := parseStub(val); err == nil && isStub {
				asm.start(total, n)
				pieced, daySize = true, size
				return nil
			}
			seg := int64(min(len(val), max(0, split(val))))
			u.Days += size - seg
			u.DaySegments += seg
		case familyStrings:
			u.Strings += size
		case familyState:
			u.State += size
		default:
			u.Meta += size
		}
		return nil
	})
	endDay()
	return u, err
}

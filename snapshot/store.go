package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
)

// FormatVersion is the version of the key layout and meta values this
// package writes (see keys.go). Open refuses a store with a higher version
// (ErrVersion) and migrates one with a lower version.
const FormatVersion = 2

// Store is a webstats data directory: a Pebble database with typed
// accessors. Its methods are safe for concurrent use. Write methods return
// once their data is synced (unless Options.NoSync).
type Store struct {
	db   *pebble.DB
	lock *pebble.Lock
	dir  string
	log  *slog.Logger
	sync bool       // writes wait for their WAL sync (not Options.NoSync)
	disk *diskGuard // refuses writes on a full disk; nil when off
	// wal fsyncs the write-ahead log under Options.SyncInterval, where
	// the syncs writes wait for are not fsyncs (walsync.go); nil otherwise.
	wal *walSyncer

	// trim is the trim point of the last snapshot; written under snapMu.
	trim   atomic.Uint64
	snapMu sync.Mutex // serialises WriteSnapshot (read-modify-write of trim)

	// Close waits for calls in flight; gateMu guards inFlight and closed.
	gateMu   sync.Mutex
	gateCond sync.Cond
	inFlight int
	closed   bool
}

// migration upgrades a store from version from to from+1. It adds its writes
// to b, which also carries the new version number and is applied atomically
// (one synced batch) once run returns.
type migration struct {
	from uint64
	what string
	run  func(db *pebble.DB, b *pebble.Batch) error
}

// migrations upgrade older stores, in order: migrations[i].from == i+1.
//
// Version 2 stores large day values in pieces (pieces.go): a version 1
// store has none and reads as it is, so its migration only writes the new
// version, which makes an older program refuse the store instead of
// misreading a stub as a day. A store without a version key is either new
// (no keys at all: Open writes the version) or not a webstats store
// (ErrCorrupt): no release ever wrote data without a version. The
// mechanism is tested with a synthetic version in store_test.go.
var migrations = []migration{
	{from: 1, what: "day values in pieces", run: func(*pebble.DB, *pebble.Batch) error { return nil }},
}

// Open opens the store in opts.Dir, creating it if missing. On the operating
// system's file system (Options.FS nil) the directory is made owner-only:
// 0700, its files 0600; more open modes found there are narrowed and a
// warning is logged. A nil opts is
// invalid (Dir is required). It fails with ErrLocked when the directory is
// open elsewhere, ErrVersion when it was written by a newer format version,
// ErrDiskFull when its file system has less than Options.MinFreeBytes free,
// and ErrCorrupt when its meta keys are malformed. An older format version is
// migrated before Open returns.
func Open(opts *Options) (*Store, error) {
	return open(opts, FormatVersion, migrations)
}

// open is Open with the target version and migration table as parameters,
// so that tests can exercise migrations.
func open(opts *Options, target uint64, migs []migration) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	op := "open " + o.Dir
	if err := o.FS.MkdirAll(o.Dir, dirPerm); err != nil {
		return nil, wrap(op, err)
	}
	if _, ok := o.FS.(privateFS); ok {
		if err := tightenPerms(o.Dir, o.Logger); err != nil {
			return nil, wrap(op, err)
		}
	}
	lock, err := pebble.LockDirectory(o.Dir, o.FS)
	if err != nil {
		if isLockConflict(err) {
			return nil, &plainError{
				msg:      fmt.Sprintf("snapshot: data directory %q is in use by another process (is webstatsd running?)", o.Dir),
				sentinel: ErrLocked,
				cause:    err,
			}
		}
		return nil, wrap(op, err)
	}
	disk, err := newDiskGuard(o.FS, o.Dir, uint64(o.MinFreeBytes), o.Logger)
	if err == nil {
		err = disk.checkOpen()
	}
	if err != nil {
		lock.Close()
		var pe *plainError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, wrap(op, err)
	}
	po := o
	var wal *walSyncer
	if o.SyncInterval > 0 {
		wal = newWALSyncer(o.Logger)
		po.FS = walFS{FS: o.FS, w: wal}
	}
	db, err := pebble.Open(o.Dir, pebbleOptions(&po, lock))
	if err != nil {
		lock.Close()
		return nil, wrap(op, err)
	}
	s := &Store{db: db, lock: lock, dir: o.Dir, log: o.Logger, sync: !o.NoSync, disk: disk, wal: wal}
	s.gateCond.L = &s.gateMu
	if err := s.prepare(target, migs); err != nil {
		db.Close()
		lock.Close()
		var pe *plainError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, wrap(op, err)
	}
	if wal != nil {
		go wal.loop(o.SyncInterval)
	}
	return s, nil
}

// isLockConflict reports whether an error of LockDirectory means that the
// lock is held (by another process, or by this one), rather than that the
// lock file could not be created.
func isLockConflict(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return false // creating the LOCK file failed: permissions, missing directory...
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) ||
		errors.Is(err, syscall.EWOULDBLOCK) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// prepare checks the format version, writes it into a new store, runs
// migrations, and loads the trim point.
func (s *Store) prepare(target uint64, migs []migration) error {
	v, err := s.readVersion()
	if err != nil {
		return err
	}
	switch {
	case v == 0: // no version key
		empty, err := s.isEmpty()
		if err != nil {
			return err
		}
		if !empty {
			return &corruptError{"the store has data but no format version key (not a webstats data directory?)"}
		}
		if err := s.db.Set(versionKey, encodeUint64(target), pebble.Sync); err != nil {
			return err
		}
		s.log.Info("snapshot: created store", "dir", s.dir, "format_version", target)
	case v > target:
		return &plainError{
			msg:      fmt.Sprintf("snapshot: data directory %q has format version %d, this program reads up to %d", s.dir, v, target),
			sentinel: ErrVersion,
		}
	case v < target:
		if err := s.migrate(v, target, migs); err != nil {
			return err
		}
	}
	trim, closer, err := s.db.Get(trimKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return err
	default:
		t, err := decodeTrim(trim)
		closer.Close()
		if err != nil {
			return err
		}
		s.trim.Store(t)
	}
	return nil
}

// readVersion returns the stored format version, 0 when there is none.
func (s *Store) readVersion() (uint64, error) {
	val, closer, err := s.db.Get(versionKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	return decodeVersion(val)
}

// isEmpty reports whether the database holds no key at all.
func (s *Store) isEmpty() (bool, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	empty := !it.First()
	return empty, it.Close()
}

// migrate runs migs from version v up to target, one synced batch per step,
// each carrying its new version number: a crash leaves the store at a
// consistent version, and the next Open resumes from there.
func (s *Store) migrate(v, target uint64, migs []migration) error {
	for ; v < target; v++ {
		i := int(v) - 1
		if i >= len(migs) || migs[i].from != v {
			return fmt.Errorf("no migration from format version %d", v)
		}
		b := s.db.NewBatch()
		err := migs[i].run(s.db, b)
		if err == nil {
			err = b.Set(versionKey, encodeUint64(v+1), nil)
		}
		if err == nil {
			err = s.db.Apply(b, pebble.Sync)
		}
		b.Close()
		if err != nil {
			return fmt.Errorf("migrate format version %d to %d (%s): %w", v, v+1, migs[i].what, err)
		}
		s.log.Info("snapshot: migrated store", "dir", s.dir, "from", v, "to", v+1, "what", migs[i].what)
	}
	return nil
}

// enter registers a call in flight, or returns ErrClosed.
func (s *Store) enter() error {
	s.gateMu.Lock()
	defer s.gateMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.inFlight++
	return nil
}

// exit ends a call registered by enter.
func (s *Store) exit() {
	s.gateMu.Lock()
	s.inFlight--
	if s.inFlight == 0 && s.closed {
		s.gateCond.Broadcast()
	}
	s.gateMu.Unlock()
}

// Close waits for the calls in flight (an AppendAsync is in flight until its
// Pending's Wait), then closes the database and releases
// the directory lock. It must not be called from inside a callback of the
// Store (it would wait for itself). Later calls return ErrClosed.
func (s *Store) Close() error {
	s.gateMu.Lock()
	if s.closed {
		s.gateMu.Unlock()
		return ErrClosed
	}
	s.closed = true
	for s.inFlight > 0 {
		s.gateCond.Wait()
	}
	s.gateMu.Unlock()
	var err error
	if s.wal != nil {
		// A last fsync of what the calls acknowledged, whose error
		// Close returns (Pebble's Close closes the log files, which
		// fsyncs them again only if written since).
		s.wal.halt()
		err = s.wal.syncAll()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if lerr := s.lock.Close(); err == nil {
		err = lerr
	}
	return wrap("close "+s.dir, err)
}

// Dir returns the directory of the store.
func (s *Store) Dir() string { return s.dir }

// Kind is the kind of a registry record. Values are opaque to this package;
// the names say what the engine stores under them. New kinds take new
// numbers; a number is never reused for another meaning.
type Kind uint8

// Registry record kinds. Kind 0 is invalid.
const (
	KindAccount Kind = iota + 1
	KindWebsite
	KindSalt
	KindCounter
	KindReport
	KindSecret  // server secrets (cookie signing keys), by name hash
	KindSession // sign-in sessions, by the first 8 bytes of the token's hash
	KindGoals   // a website's goals, by website id
	KindInvite  // account invitations, by the first 8 bytes of the token's hash
	KindCluster // cluster mode: the identity of the shared log the store follows (id 1)
)

var kindNames = [...]string{
	KindAccount: "account",
	KindWebsite: "website",
	KindSalt:    "salt",
	KindCounter: "counter",
	KindReport:  "report",
	KindSecret:  "secret",
	KindSession: "session",
	KindGoals:   "goals",
	KindInvite:  "invite",
	KindCluster: "cluster",
}

// String returns the kind's name, or "kind(N)" for an unnamed one.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

func checkKind(k Kind) error {
	if k == 0 {
		return errors.New("kind 0 is invalid")
	}
	return nil
}

// Put stores value as record (k, id), replacing any previous value. It
// returns once the write is durable (unless Options.NoSync). value is copied.
func (s *Store) Put(k Kind, id uint64, value []byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	op := fmt.Sprintf("put %s %d", k, id)
	if err := checkKind(k); err != nil {
		return wrap(op, err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	err := b.Set(registryKey(k, id), value, nil)
	if err == nil {
		err = s.commit(b)
	}
	return wrap(op, err)
}

// PutMany stores values[i] as record (k, ids[i]) for every i, in one
// batch: one durable write (one sync) for all. Values are copied.
func (s *Store) PutMany(k Kind, ids []uint64, values [][]byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	op := fmt.Sprintf("put %d %s records", len(ids), k)
	if err := checkKind(k); err != nil {
		return wrap(op, err)
	}
	if len(ids) != len(values) {
		return wrap(op, errors.New("ids and values differ in length"))
	}
	if len(ids) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for i, id := range ids {
		if err := b.Set(registryKey(k, id), values[i], nil); err != nil {
			return wrap(op, err)
		}
	}
	return wrap(op, s.commit(b))
}

// Op is one write of Store.Write: a record put, or deleted when Delete.
type Op struct {
	Kind   Kind
	ID     uint64
	Value  []byte
	Delete bool
}

// Write applies ops in order, in one batch: all of them are durable
// together (one sync), or none is written. Values are copied.
func (s *Store) Write(ops []Op) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	op := fmt.Sprintf("write %d registry records", len(ops))
	if len(ops) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	for _, o := range ops {
		if err := checkKind(o.Kind); err != nil {
			return wrap(op, err)
		}
		var err error
		if o.Delete {
			err = b.Delete(registryKey(o.Kind, o.ID), nil)
		} else {
			err = b.Set(registryKey(o.Kind, o.ID), o.Value, nil)
		}
		if err != nil {
			return wrap(op, err)
		}
	}
	return wrap(op, s.commit(b))
}

// Get returns a copy of record (k, id), or ErrNotFound. The returned slice
// belongs to the caller.
func (s *Store) Get(k Kind, id uint64) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	return s.getCopy(fmt.Sprintf("get %s %d", k, id), registryKey(k, id))
}

// getCopy returns a copy of the value of key, or ErrNotFound.
func (s *Store) getCopy(op string, key []byte) ([]byte, error) {
	val, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, wrap(op, err)
	}
	out := append(make([]byte, 0, len(val)), val...)
	closer.Close()
	return out, nil
}

// Delete removes record (k, id); removing a missing record is not an error.
// It returns once the delete is durable (unless Options.NoSync).
func (s *Store) Delete(k Kind, id uint64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	op := fmt.Sprintf("delete %s %d", k, id)
	if err := checkKind(k); err != nil {
		return wrap(op, err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	err := b.Delete(registryKey(k, id), nil)
	if err == nil {
		err = s.commit(b)
	}
	return wrap(op, err)
}

// Scan calls fn for every record of kind k in ascending id order. value is
// valid only during the call to fn; copy it to keep it. An error returned by
// fn stops the scan and is returned as is. fn must not call Close.
func (s *Store) Scan(k Kind, fn func(id uint64, value []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	p := registryPrefix(k)
	return s.scan("scan "+k.String(), p, prefixEnd(p), func(key, val []byte) error {
		_, id, err := parseRegistryKey(key)
		if err != nil {
			return err
		}
		return fn(id, val)
	})
}

// scan iterates over [lower, upper) and calls fn with each key and value
// (both valid only during fn). An error of fn is returned as is, except a
// *corruptError (a key that fn failed to parse), which is wrapped with op like
// Pebble's own errors. The iterator is closed however scan ends, a panic of
// fn included: an open one pins Pebble's files, and Close would panic.
func (s *Store) scan(op string, lower, upper []byte, fn func(key, val []byte) error) (err error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return wrap(op, err)
	}
	closed := false
	defer func() {
		if !closed {
			it.Close() // fn panicked
		}
	}()
	for valid := it.First(); valid; valid = it.Next() {
		val, err := it.ValueAndErr()
		if err != nil {
			closed = true
			it.Close()
			return wrap(op, err)
		}
		if err := fn(it.Key(), val); err != nil {
			closed = true
			it.Close()
			if _, ok := err.(*corruptError); ok {
				return wrap(op, err)
			}
			return err
		}
	}
	closed = true
	return wrap(op, it.Close())
}

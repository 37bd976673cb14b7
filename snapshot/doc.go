// Package snapshot is the persistence layer of webstats: a typed store over
// Pebble holding the write-ahead log of enriched hits, snapshots of day
// buckets, interned strings and visitor state, per-website engine state,
// registry records, the format version, and backups.
//
// Values are opaque bytes encoded by the engine and the buckets package;
// this package owns the keys (keys.go is the only place in webstats where
// keys are built or parsed), the on-disk format version and Pebble's tuning.
//
// # Exactly-once
//
// The engine assigns a global sequence number to each hit, Appends it to the
// log and acknowledges it once Append returns (the write is synced; concurrent
// Appends share fsyncs). Periodically it writes a Snapshot: the dirty state,
// each website's last applied sequence (in its SiteRecord) and a trim point;
// WriteSnapshot stores all of it and trims the log in one atomic, synced
// batch. On start the engine loads the snapshot and calls ReplayLog(Trim(), …),
// skipping entries at or below their website's saved sequence. A crash at any
// moment therefore loses no acknowledged hit and applies none twice.
//
// # Disk full
//
// Pebble cannot survive a failed write of its WAL or MANIFEST (it panics,
// or keeps failing until restarted), and its Open hangs retrying on a full
// disk. So the Store refuses a write before it reaches Pebble when it would
// leave less than Options.MinFreeBytes free (default 256 MiB, the room
// Pebble's flushes and compactions of data already accepted may need):
// every write method then returns ErrDiskFull and writes nothing, and Open
// fails with ErrDiskFull at once. Writes succeed again, without a restart,
// once space is freed. The free space is read at most every 100 ms; writes
// in between subtract their size from it.
//
// # Permissions
//
// On the operating system's file system the data directory is 0700 and its
// files 0600, backups included: it holds session secrets and password
// hashes. Open narrows more open modes it finds and logs a warning.
//
// # Ownership
//
// Slices passed to write methods are copied. Slices returned by Get and Day
// belong to the caller; slices passed to scan callbacks are valid only during
// the callback.
//
// # Locking
//
// A Store holds Pebble's lock on its directory: a second Open of the same
// directory, from this process or another, fails with ErrLocked.
package snapshot

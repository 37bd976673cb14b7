package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Moving a website's statistics between stores (cluster mode with
// partitions): a View is a consistent read of one store, from which every
// key of a website is read (View.Website); ReplaceWebsite writes them into
// another store in place of what that one held. The keys travel as they
// are: both stores are of this format version.

// View is a read-only, point-in-time view of the store (a Pebble
// snapshot): writes made after it was taken are not in it. Close it.
type View struct {
	s    *Store
	snap *pebble.Snapshot
}

// View returns a view of the store as it is now.
func (s *Store) View() (*View, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	return &View{s: s, snap: s.db.NewSnapshot()}, nil
}

// Close releases the view.
func (v *View) Close() error {
	defer v.s.exit()
	return v.snap.Close()
}

// Trim returns the trim point stored in the view (0 if none).
func (v *View) Trim() (uint64, error) {
	val, closer, err := v.snap.Get(trimKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap("view trim", err)
	}
	defer closer.Close()
	if len(val) != 8 {
		return 0, wrap("view trim", fmt.Errorf("%d bytes: %w", len(val), ErrCorrupt))
	}
	return binary.BigEndian.Uint64(val), nil
}

// Website calls fn with every key of website in the view, its site record
// first, then its days, strings and visitor state in key order. key and
// val are valid only during the call.
func (v *View) Website(website uint32, fn func(key, val []byte) error) error {
	op := fmt.Sprintf("view website %d", website)
	val, closer, err := v.snap.Get(siteKey(website))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return wrap(op, err)
	default:
		err := fn(siteKey(website), val)
		closer.Close()
		if err != nil {
			return err
		}
	}
	p := websitePrefix(website)
	it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return wrap(op, err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		val, err := it.ValueAndErr()
		if err == nil {
			err = fn(it.Key(), val)
		}
		if err != nil {
			it.Close()
			return wrap(op, err)
		}
	}
	return wrap(op, it.Close())
}

// Site returns the site record of website (ErrNotFound if it has none).
func (s *Store) Site(website uint32) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.exit()
	return s.getCopy(fmt.Sprintf("site %d", website), siteKey(website))
}

// replaceBatch is how many bytes ReplaceWebsite writes in one batch.
const replaceBatch = 32 << 20

// ReplaceWebsite replaces every key of website (what DeleteWebsite
// removes) with the keys next gives until it returns ok false: keys a
// View.Website of another store gave for the same website. It writes
// durable batches of at most about replaceBatch bytes, the deletion in
// the first: until it returns, the store may hold part of the new keys
// (the caller must not use the website meanwhile, and must empty it
// again if it fails or crashes). A key that is not website's is
// ErrCorrupt.
func (s *Store) ReplaceWebsite(website uint32, next func() (key, val []byte, ok bool, err error)) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	op := fmt.Sprintf("replace website %d", website)
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	p := websitePrefix(website)
	site := siteKey(website)
	if err := errors.Join(b.DeleteRange(p, prefixEnd(p), nil), b.Delete(site, nil)); err != nil {
		return wrap(op, err)
	}
	for {
		key, val, ok, err := next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if !bytes.Equal(key, site) && (len(key) <= len(p) || !bytes.HasPrefix(key, p)) {
			return wrap(op, fmt.Errorf("key %x is not the website's: %w", key, ErrCorrupt))
		}
		if err := b.Set(key, val, nil); err != nil {
			return wrap(op, err)
		}
		if b.Len() >= replaceBatch {
			if err := s.commit(b); err != nil {
				return wrap(op, err)
			}
			b.Close()
			b = s.db.NewBatch()
		}
	}
	return wrap(op, s.commit(b))
}

// LowerTrim sets the trim point to seq if it is below the current one: a
// store whose log is elsewhere (cluster mode) must read that log again
// from seq after keys came in from another store (ReplaceWebsite). The
// store's own log is not touched.
func (s *Store) LowerTrim(seq uint64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if seq >= s.trim.Load() {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(trimKey, encodeUint64(seq), nil); err != nil {
		return wrap("lower trim", err)
	}
	if err := s.commit(b); err != nil {
		return wrap("lower trim", err)
	}
	s.trim.Store(seq)
	return nil
}

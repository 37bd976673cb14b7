package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/webstats/webstats/engine/internal/wire"
)

// Retried imports (SPEC §3.4 "Retries"): a call of TrackOnce with an
// idempotency key is counted at most once per website and key for
// KeyTTL. The key travels with the batch: in the write-ahead log it is one
// more entry after the batch's records (one atomic Pebble batch, so both
// or neither are in the log), and in cluster mode it is in the same
// message. It is recorded in the website's key table when the batch is
// applied, and the table is saved with the website's meta record by every
// snapshot, so replay after a crash and every node of a cluster know it.

// KeyTTL is how long an idempotency key is remembered.
const KeyTTL = 7 * 24 * time.Hour

// DefaultMaxImportKeys is the default of Options.MaxImportKeys.
const DefaultMaxImportKeys = 10_000

// MaxKeyLen is the longest idempotency key, in bytes.
const MaxKeyLen = 128

var (
	// ErrInvalidKey: an idempotency key that is empty, longer than
	// MaxKeyLen or not printable ASCII.
	ErrInvalidKey = errors.New("engine: invalid idempotency key")
	// ErrTooManyKeys: the website holds Options.MaxImportKeys keys younger
	// than KeyTTL; nothing was counted. Use errors.As with *KeysFullError
	// for when the oldest one expires.
	ErrTooManyKeys = errors.New("engine: too many idempotency keys for this website")
)

// KeysFullError is ErrTooManyKeys with the time the oldest key expires.
type KeysFullError struct{ RetryAt time.Time }

func (e *KeysFullError) Error() string { return ErrTooManyKeys.Error() }
func (e *KeysFullError) Unwrap() error { return ErrTooManyKeys }

// ValidKey reports whether key is a valid idempotency key: 1 to MaxKeyLen
// printable ASCII characters (space to '~').
func ValidKey(key string) bool {
	if len(key) == 0 || len(key) > MaxKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// idemKey is the digest of a key: the table and the log keep 16 bytes of
// its SHA-256, whatever its length (a collision is as unlikely as a
// guessed 128-bit secret).
type idemKey [16]byte

func digestKey(key string) idemKey {
	sum := sha256.Sum256([]byte(key))
	return idemKey(sum[:16])
}

// idemResult is what a keyed call answered: its TrackResult's counts.
type idemResult struct {
	accepted uint32
	dropped  [numDropReasons]uint32
}

// resultOfReasons is the counts of a call whose hits have reasons.
func resultOfReasons(reasons []DropReason) idemResult {
	var out idemResult
	for _, r := range reasons {
		if r == DropNone {
			out.accepted++
		} else if r < numDropReasons {
			out.dropped[r]++
		}
	}
	return out
}

func (r idemResult) track() TrackResult {
	out := TrackResult{Accepted: int(r.accepted), Repeated: true}
	for i, n := range r.dropped {
		out.Dropped[i] = int(n)
	}
	return out
}

// idemMark is the key of a batch as the log holds it: its website, the
// key's digest, the engine's time of the call (Unix ms) and its answer.
// seq is the log sequence of the mark (ingest) or of the message holding
// it (cluster mode).
type idemMark struct {
	website uint32
	key     idemKey
	ms      int64
	res     idemResult
	seq     uint64
	// nonce tells this call's mark from another's with the same key, time
	// and result (calls on two nodes at once): awaitKey's Repeated.
	nonce uint64
	// part and parts place the batch in a call tracked in parts
	// (trackparts.go): res is then the part's, with carry, the counts of
	// the parts before it that logged nothing; parts is 0 for a call of
	// one batch.
	part, parts uint32
	carry       idemResult
}

// of returns m if it is website's (nil otherwise, and for a nil m).
func (m *idemMark) of(website uint32) *idemMark {
	if m == nil || m.website != website {
		return nil
	}
	return m
}

// replayMark applies a mark read from the log at seq by replay, unless
// its website is gone or has applied it.
func (e *Engine) replayMark(seq uint64, m *idemMark) {
	if s := e.sites[m.website]; s != nil && seq > s.state.lastSeq {
		m.seq = seq
		e.applyMarkLocked(s.state, m)
	}
}

// idemTag is the first byte of a mark's log entry: records start with
// their version (1 to recordVersion), never this.
const idemTag = 0xf0

func (m *idemMark) appendBinary(b []byte) []byte {
	b = append(b, idemTag)
	b = binary.AppendUvarint(b, uint64(m.website))
	b = append(b, m.key[:]...)
	b = binary.AppendVarint(b, m.ms)
	b = binary.LittleEndian.AppendUint64(b, m.nonce)
	b = binary.AppendUvarint(b, uint64(m.res.accepted))
	b = binary.AppendUvarint(b, uint64(len(m.res.dropped)))
	for _, n := range m.res.dropped {
		b = binary.AppendUvarint(b, uint64(n))
	}
	if m.parts > 1 {
		// (A call of one batch writes the mark as versions before parts.)
		b = binary.AppendUvarint(b, uint64(m.part))
		b = binary.AppendUvarint(b, uint64(m.parts))
	}
	return b
}

func (m *idemMark) decode(b []byte) error {
	d := wire.Decoder{B: b}
	if d.Byte() != idemTag {
		return fmt.Errorf("%w: key mark", wire.ErrRecord)
	}
	w := d.Uvarint()
	if d.Bad || w == 0 || w > 1<<32-1 || len(d.B) < len(m.key) {
		return fmt.Errorf("%w: key mark", wire.ErrRecord)
	}
	m.website = uint32(w)
	copy(m.key[:], d.B)
	d.B = d.B[len(m.key):]
	m.ms = d.Varint()
	m.nonce = d.Uint64()
	m.res = idemResult{}
	acc, n := d.Uvarint(), d.Uvarint()
	if d.Bad || acc > 1<<32-1 || n > 64 {
		return fmt.Errorf("%w: key mark", wire.ErrRecord)
	}
	m.res.accepted = uint32(acc)
	for i := range int(n) {
		v := d.Uvarint()
		if v > 1<<32-1 {
			d.Bad = true
		}
		if i < len(m.res.dropped) { // a newer version's reasons: not kept
			m.res.dropped[i] = uint32(v)
		}
	}
	m.part, m.parts = 0, 0
	if len(d.B) > 0 {
		part, parts := d.Uvarint(), d.Uvarint()
		if parts < 2 || parts > maxParts || part >= parts {
			d.Bad = true
		}
		m.part, m.parts = uint32(part), uint32(parts)
	}
	if d.Bad || len(d.B) != 0 {
		return fmt.Errorf("%w: key mark", wire.ErrRecord)
	}
	return nil
}

// idemEntry is a key of the table: when it was first used and what that
// call answered.
type idemEntry struct {
	ms  int64
	res idemResult
	// nonce is the mark's while the process that applied it runs (not
	// saved: 0 once read from a snapshot).
	nonce uint64
	// parts is, for a call tracked in parts and not all applied yet, how
	// many it has, and done how many are applied (res sums theirs); both
	// are 0 once the call is whole.
	done, parts uint32
}

// partial reports an entry of a call whose parts are not all applied: a
// repeat resumes it.
func (e idemEntry) partial() bool { return e.parts != 0 }

// idemTable is a website's keys younger than KeyTTL, at most about
// Options.MaxImportKeys of them (see add). order lists them by when they
// were applied, which is the log's order, so that expiry and the bound
// drop the same keys on every node and at every replay.
type idemTable struct {
	m     map[idemKey]idemEntry
	order []idemOrder
}

type idemOrder struct {
	key idemKey
	ms  int64
}

// lookup returns the entry of key if it is younger than KeyTTL at nowMs.
func (t *idemTable) lookup(key idemKey, nowMs int64) (idemEntry, bool) {
	e, ok := t.m[key]
	if !ok || nowMs-e.ms >= KeyTTL.Milliseconds() {
		return idemEntry{}, false
	}
	return e, true
}

// live counts the keys younger than KeyTTL at nowMs and returns the time
// the oldest of them was first used (Unix ms).
func (t *idemTable) live(nowMs int64) (n int, oldest int64) {
	i := 0
	for i < len(t.order) && nowMs-t.order[i].ms >= KeyTTL.Milliseconds() {
		i++
	}
	if i < len(t.order) {
		oldest = t.order[i].ms
	}
	return len(t.order) - i, oldest
}

// add records a key applied from the log (m.ms is the time of its call).
// Keys older than KeyTTL at m.ms go first; past hardMax keys (more than
// the calls' own checks let in: calls on several nodes at once) the oldest
// goes: the table stays bounded whatever the log holds.
func (t *idemTable) add(m *idemMark, hardMax int) {
	if t.m == nil {
		t.m = make(map[idemKey]idemEntry)
	}
	if old, ok := t.lookup(m.key, m.ms); ok {
		// A live key takes only the next part of its call (accepts);
		// anything else of it is a repeat, counted nothing.
		if old.partial() && m.part >= old.done {
			t.m[m.key] = old.next(m)
		}
		return
	}
	i := 0
	for i < len(t.order) && (m.ms-t.order[i].ms >= KeyTTL.Milliseconds() || len(t.order)-i >= hardMax) {
		o := t.order[i]
		if e, ok := t.m[o.key]; ok && e.ms == o.ms {
			delete(t.m, o.key)
		}
		i++
	}
	if i > 0 {
		t.order = append(t.order[:0], t.order[i:]...)
	}
	if old, ok := t.m[m.key]; ok {
		// Replaced (it had expired): its place in order goes with it.
		for j, o := range t.order {
			if o.key == m.key && o.ms == old.ms {
				t.order = append(t.order[:j], t.order[j+1:]...)
				break
			}
		}
	}
	t.m[m.key] = idemEntry{ms: m.ms, nonce: m.nonce, done: m.part, parts: m.parts}.next(m)
	t.order = append(t.order, idemOrder{m.key, m.ms})
}

// next is e with m, a part at or after e.done, applied.
func (e idemEntry) next(m *idemMark) idemEntry {
	e.res.add(m.res)
	if e.done = m.part + 1; e.done >= m.parts {
		e.done, e.parts = 0, 0
	} else {
		e.parts = m.parts
	}
	return e
}

// accepts reports whether a batch with mark m counts, applied in log
// order at m's time: when m's key is not live, or is that of a call in
// parts not yet past m's part. A call's parts are logged in order, and
// a part none of whose hits counted is not logged (its drops go with the
// next part's mark, idemMark.carry), so the next part logged may come
// after done. Two calls with one key racing on two nodes of a cluster
// (a client's retry, the same body): each part counts once, whichever
// call's arrives first.
func (t *idemTable) accepts(m *idemMark) bool {
	old, ok := t.lookup(m.key, m.ms)
	return !ok || old.partial() && m.part >= old.done
}

// add adds r's counts to r's.
func (r *idemResult) add(o idemResult) {
	r.accepted += o.accepted
	for i, n := range o.dropped {
		r.dropped[i] += n
	}
}

// idemKeyBytes is what a key of a table takes in memory, its map entry
// and its place in order with their slack (about 142 bytes measured at
// 10,000 keys): the bytes counted in Metrics.KeyBytes and, with
// Options.MemoryBudget, in the budget.
const idemKeyBytes = 160

// bytes is the memory the table's keys take (idemKeyBytes each).
func (t *idemTable) bytes() int64 { return int64(len(t.order)) * idemKeyBytes }

// partial reports whether a key of the table is of a call not all of
// whose parts are applied: its meta record needs version 3.
func (t *idemTable) partial() bool {
	for _, e := range t.m {
		if e.partial() {
			return true
		}
	}
	return false
}

// appendBinary appends the table: its count, then each key in order; with
// parts (meta version 3), each key's done and parts after its counts.
func (t *idemTable) appendBinary(b []byte, parts bool) []byte {
	b = binary.AppendUvarint(b, uint64(len(t.order)))
	for _, o := range t.order {
		e := t.m[o.key]
		b = append(b, o.key[:]...)
		b = binary.AppendVarint(b, e.ms)
		b = binary.AppendUvarint(b, uint64(e.res.accepted))
		for _, n := range e.res.dropped {
			b = binary.AppendUvarint(b, uint64(n))
		}
		if parts {
			b = binary.AppendUvarint(b, uint64(e.done))
			b = binary.AppendUvarint(b, uint64(e.parts))
		}
	}
	return b
}

// decode reads what appendBinary wrote (at most one key per 17 bytes).
func (t *idemTable) decode(d *wire.Decoder, parts bool) error {
	n := d.Uvarint()
	if d.Bad || n > uint64(len(d.B))/17 {
		return errors.New("bad idempotency keys")
	}
	*t = idemTable{}
	if n == 0 {
		return nil
	}
	t.m = make(map[idemKey]idemEntry, n)
	t.order = make([]idemOrder, 0, n)
	for range n {
		var k idemKey
		if len(d.B) < len(k) {
			return errors.New("bad idempotency keys")
		}
		copy(k[:], d.B)
		d.B = d.B[len(k):]
		e := idemEntry{ms: d.Varint()}
		e.res.accepted = uint32(d.Uvarint())
		for i := range e.res.dropped {
			e.res.dropped[i] = uint32(d.Uvarint())
		}
		if parts {
			done, n := d.Uvarint(), d.Uvarint()
			if n > maxParts || n != 0 && done >= n || n == 0 && done != 0 {
				d.Bad = true
			}
			e.done, e.parts = uint32(done), uint32(n)
		}
		if d.Bad {
			return errors.New("bad idempotency keys")
		}
		t.m[k] = e
		t.order = append(t.order, idemOrder{k, e.ms})
	}
	return nil
}

// idemFlight is a keyed call under way on this process: a repeat waits for
// done, then looks again.
type idemFlight struct{ done chan struct{} }

// applyMarkLocked records m, applied with the batch it ends, in st's table.
func (e *Engine) applyMarkLocked(st *siteState, m *idemMark) {
	before := st.keys.bytes()
	st.keys.add(m, 2*e.opts.MaxImportKeys)
	e.counters.keys.Add(st.keys.bytes() - before)
	st.appliedLocked(m.seq)
}

// TrackOnce is Track for hits of one website (every Hit.Website the
// same, not 0) with an idempotency key: the hits are counted at most once
// per website and key for KeyTTL. A call whose key an earlier call used
// (counted, or being counted) counts nothing and returns that call's
// result, with Repeated set; one made while the earlier call is under way
// waits for it. The key is logged with the batch, so a call that failed
// after its batch reached the log (ErrLogFailed, a crash) is counted by
// the replay, and a repeat after the restart finds it.
//
// An invalid key is ErrInvalidKey; a website holding
// Options.MaxImportKeys live keys refuses new ones (*KeysFullError). A
// call all of whose hits are dropped logs nothing and keeps no key: it
// counted nothing, and its repeat is decided again. A call of more than a
// thousand hits, counted in parts (Track), is still counted once: a
// repeat of one cut short after some parts (a crash, ErrLogFailed)
// counts the rest, provided it carries the same hits.
func (e *Engine) TrackOnce(ctx context.Context, key string, hits ...Hit) (TrackResult, error) {
	if !ValidKey(key) {
		return TrackResult{}, ErrInvalidKey
	}
	if len(hits) == 0 {
		return e.Track(ctx, hits...)
	}
	website := hits[0].Website
	for i := range hits {
		if hits[i].Website != website || website == 0 {
			return TrackResult{}, errors.New("engine: TrackOnce: hits of more than one website")
		}
	}
	e.regMu.RLock()
	s := e.sites[website]
	e.regMu.RUnlock()
	if s == nil {
		return e.Track(ctx, hits...) // dropped as unknown
	}
	m := &idemMark{website: website, key: digestKey(key), nonce: rand.Uint64() | 1}
	f, res, prior, err := e.claimKey(ctx, s.state, m)
	if f == nil {
		return res, err
	}
	defer e.releaseKey(s.state, m.key, f)
	resumed := m.part > 0
	res, err = e.track(ctx, m, hits)
	if resumed {
		// The parts counted before count in the answer; a resumption
		// that counted nothing more is a repeat.
		res.Repeated = err == nil && res.Accepted == 0
		res.Accepted += int(prior.accepted)
		for i, n := range prior.dropped {
			res.Dropped[i] += int(n)
		}
	}
	if err == nil && e.opts.Cluster != nil && m.res.accepted > 0 && e.applies(website) {
		// Published, not yet applied here: the answer is that of the
		// first call with the key, which the log decides.
		return e.awaitKey(ctx, s.state, m, res), nil
	}
	return res, err
}

// KeyResult returns the result of the call that used key on website in
// the last KeyTTL (Repeated set), if this node knows one: a repeat is
// answered without reading its hits. A call of this process under way
// with the key is waited for (until ctx is done: then false), so that
// its repeats wait before their hits are read, not holding them.
func (e *Engine) KeyResult(ctx context.Context, website uint32, key string) (TrackResult, bool) {
	if !ValidKey(key) {
		return TrackResult{}, false
	}
	e.regMu.RLock()
	s := e.sites[website]
	e.regMu.RUnlock()
	if s == nil {
		return TrackResult{}, false
	}
	sh := e.shardOf(website)
	k := digestKey(key)
	for {
		sh.mu.Lock()
		ent, ok := s.state.keys.lookup(k, e.now().UnixMilli())
		f := s.state.flights[k]
		sh.mu.Unlock()
		switch {
		case ok && !ent.partial():
			return ent.res.track(), true
		case f == nil: // (a call in parts cut short: the repeat resumes it)
			return TrackResult{}, false
		}
		select {
		case <-f.done: // counted, or failed: look again
		case <-ctx.Done():
			return TrackResult{}, false
		}
	}
}

// claimKey finds m's key in st's table (and returns its result), or waits
// for a call of this process with the same key, or takes the key for this
// call: it returns the call's idemFlight, which releaseKey ends. It sets
// m.ms. The key of a call in parts cut short (a crash, a failed log
// write) is taken too, with m.part set to resume it after the parts
// already counted, whose counts are prior's.
func (e *Engine) claimKey(ctx context.Context, st *siteState, m *idemMark) (f *idemFlight, res TrackResult, prior idemResult, err error) {
	sh := e.shardOf(st.id)
	for {
		now := e.now()
		m.ms = now.UnixMilli()
		sh.mu.Lock()
		ent, ok := st.keys.lookup(m.key, m.ms)
		if ok && !ent.partial() {
			sh.mu.Unlock()
			return nil, ent.res.track(), prior, nil
		}
		if f := st.flights[m.key]; f != nil {
			sh.mu.Unlock()
			select {
			case <-f.done:
				continue
			case <-ctx.Done():
				return nil, TrackResult{}, prior, ctx.Err()
			}
		}
		if n, oldest := st.keys.live(m.ms); !ok && n+len(st.flights) >= e.opts.MaxImportKeys {
			sh.mu.Unlock()
			at := now.Add(time.Minute)
			if oldest != 0 {
				at = time.UnixMilli(oldest).Add(KeyTTL)
			}
			return nil, TrackResult{}, prior, &KeysFullError{RetryAt: at}
		}
		if ok { // partial: resumed
			m.part, prior = ent.done, ent.res
		}
		if st.flights == nil {
			st.flights = make(map[idemKey]*idemFlight)
		}
		f := &idemFlight{done: make(chan struct{})}
		st.flights[m.key] = f
		sh.mu.Unlock()
		return f, TrackResult{}, prior, nil
	}
}

// releaseKey ends this call's flight f of key: its repeats look again.
// (The website's state may have been reset meanwhile, a partition moving:
// f is closed whatever the map holds.)
func (e *Engine) releaseKey(st *siteState, key idemKey, f *idemFlight) {
	sh := e.shardOf(st.id)
	sh.mu.Lock()
	if st.flights[key] == f {
		delete(st.flights, key)
	}
	sh.mu.Unlock()
	close(f.done)
}

// awaitKey waits, in cluster mode, on a node that applies the website,
// until it has applied the first message with m's key (this call's or an earlier one's, published by
// another node), and returns that call's result; res, this call's own,
// when it takes longer than ctx or 10 s (its message counts only if it
// was the first).
func (e *Engine) awaitKey(ctx context.Context, st *siteState, m *idemMark, res TrackResult) TrackResult {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sh := e.shardOf(st.id)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		sh.mu.Lock()
		ent, ok := st.keys.lookup(m.key, m.ms)
		sh.mu.Unlock()
		if ok && !ent.partial() {
			out := ent.res.track()
			out.Repeated = ent.nonce != m.nonce
			if !out.Repeated {
				out.Reasons = res.Reasons
			}
			return out
		}
		select {
		case <-ctx.Done():
			return res
		case <-tick.C:
		}
	}
}

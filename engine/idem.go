package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/webstats/webstats/engine/internal/config"
	"github.com/webstats/webstats/engine/internal/idem"
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
const KeyTTL = idem.TTL

// DefaultMaxImportKeys is the default of Options.MaxImportKeys.
const DefaultMaxImportKeys = config.DefaultMaxImportKeys

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

// resultOfReasons is the counts of a call whose hits have reasons.
func resultOfReasons(reasons []DropReason) idem.Result {
	var out idem.Result
	for _, r := range reasons {
		if r == DropNone {
			out.Accepted++
		} else if r < numDropReasons {
			out.Dropped[r]++
		}
	}
	return out
}

// The keys' table counts every drop reason.
var _ [numDropReasons - idem.Reasons]struct{}
var _ [idem.Reasons - numDropReasons]struct{}

// repeated is the TrackResult of a repeated call whose first answered r.
func repeated(r idem.Result) TrackResult {
	out := TrackResult{Accepted: int(r.Accepted), Repeated: true}
	for i, n := range r.Dropped {
		out.Dropped[i] = int(n)
	}
	return out
}

// replayMark applies a mark read from the log at seq by replay, unless
// its website is gone or has applied it.
func (e *Engine) replayMark(seq uint64, m *idem.Mark) {
	if s := e.sites[m.Website]; s != nil && seq > s.state.lastSeq {
		m.Seq = seq
		e.applyMarkLocked(s.state, m)
	}
}

// idemFlight is a keyed call under way on this process: a repeat waits for
// done, then looks again.
type idemFlight struct{ done chan struct{} }

// applyMarkLocked records m, applied with the batch it ends, in st's table.
func (e *Engine) applyMarkLocked(st *siteState, m *idem.Mark) {
	before := st.keys.Bytes()
	st.keys.Add(m, 2*e.opts.MaxImportKeys)
	e.counters.keys.Add(st.keys.Bytes() - before)
	st.appliedLocked(m.Seq)
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
	return e.trackOnce(ctx, key, hits, false)
}

// trackOnce is TrackOnce; with own (Import), hits are the call's.
func (e *Engine) trackOnce(ctx context.Context, key string, hits []Hit, own bool) (TrackResult, error) {
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
	m := &idem.Mark{Website: website, Key: idem.Digest(key), Nonce: rand.Uint64() | 1}
	f, res, prior, err := e.claimKey(ctx, s.state, m)
	if f == nil {
		return res, err
	}
	defer e.releaseKey(s.state, m.Key, f)
	resumed := m.Part > 0
	res, err = e.track(ctx, m, hits, own)
	if resumed {
		// The parts counted before count in the answer. A resumption
		// decided the rest itself: not a repeat, even one that counted
		// nothing more (its parts all dropped: the key stays partial, and
		// its repeat is decided again, as a call that counts nothing
		// keeps no key).
		res.Repeated = false
		res.Accepted += int(prior.Accepted)
		for i, n := range prior.Dropped {
			res.Dropped[i] += int(n)
		}
	}
	if err == nil && e.opts.Cluster != nil && m.Res.Accepted > 0 && e.applies(website) {
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
	k := idem.Digest(key)
	for {
		sh.mu.Lock()
		ent, ok := s.state.keys.Lookup(k, e.now().UnixMilli())
		f := s.state.flights[k]
		sh.mu.Unlock()
		switch {
		case ok && !ent.Partial():
			return repeated(ent.Res), true
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
// m.Ms. The key of a call in parts cut short (a crash, a failed log
// write) is taken too, with m.Part set to resume it after the parts
// already counted, whose counts are prior's.
func (e *Engine) claimKey(ctx context.Context, st *siteState, m *idem.Mark) (f *idemFlight, res TrackResult, prior idem.Result, err error) {
	sh := e.shardOf(st.id)
	for {
		now := e.now()
		m.Ms = now.UnixMilli()
		sh.mu.Lock()
		ent, ok := st.keys.Lookup(m.Key, m.Ms)
		if ok && !ent.Partial() {
			sh.mu.Unlock()
			return nil, repeated(ent.Res), prior, nil
		}
		if f := st.flights[m.Key]; f != nil {
			sh.mu.Unlock()
			select {
			case <-f.done:
				continue
			case <-ctx.Done():
				return nil, TrackResult{}, prior, ctx.Err()
			}
		}
		if n, oldest := st.keys.Live(m.Ms); !ok && n+len(st.flights) >= e.opts.MaxImportKeys {
			sh.mu.Unlock()
			at := now.Add(time.Minute)
			if oldest != 0 {
				at = time.UnixMilli(oldest).Add(KeyTTL)
			}
			return nil, TrackResult{}, prior, &KeysFullError{RetryAt: at}
		}
		if ok { // partial: resumed
			m.Part, prior = ent.Done, ent.Res
		}
		if st.flights == nil {
			st.flights = make(map[idem.Key]*idemFlight)
		}
		f := &idemFlight{done: make(chan struct{})}
		st.flights[m.Key] = f
		sh.mu.Unlock()
		return f, TrackResult{}, prior, nil
	}
}

// releaseKey ends this call's flight f of key: its repeats look again.
// (The website's state may have been reset meanwhile, a partition moving:
// f is closed whatever the map holds.)
func (e *Engine) releaseKey(st *siteState, key idem.Key, f *idemFlight) {
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
func (e *Engine) awaitKey(ctx context.Context, st *siteState, m *idem.Mark, res TrackResult) TrackResult {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sh := e.shardOf(st.id)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		sh.mu.Lock()
		ent, ok := st.keys.Lookup(m.Key, m.Ms)
		sh.mu.Unlock()
		if ok && !ent.Partial() {
			out := repeated(ent.Res)
			out.Repeated = ent.Nonce != m.Nonce
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

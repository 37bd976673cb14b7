// Package limit holds the rate limiters of the HTTP layer: token buckets by
// key (an account, a client address, a website), shared by the API and the
// statistics pages.
package limit

import (
	"container/list"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// MaxKeys bounds the memory of a Limiter: past it (after a sweep forgot the
// buckets that are full again), a new key evicts the least recently used
// one, whose bucket starts full if it comes back. A new key is always
// limited: the bound never lets requests through untracked (#38). Overflow
// counts the evictions.
const MaxKeys = 1 << 20

// Limiter is a set of token buckets, one per key, each refilled at PerMinute
// tokens a minute up to as many. It is safe for concurrent use.
type Limiter struct {
	perMinute int     // the rate's whole tokens a minute, for headers
	rate      float64 // tokens a minute
	burst     float64 // tokens a bucket holds
	now       func() time.Time

	mu       sync.Mutex // guards buckets, lru, sweepAt and overflow
	buckets  map[string]*bucket
	lru      *list.List // of the keys, least recently used first
	maxKeys  int        // MaxKeys; smaller in tests
	sweepAt  int        // sweep full buckets when the map grows past this
	overflow int64
}

type bucket struct {
	tokens float64
	last   time.Time
	elem   *list.Element // in lru
}

// New returns a limiter of perMinute tokens a minute per key, reading the
// time from now (nil: time.Now).
func New(perMinute int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{perMinute: perMinute, rate: float64(perMinute), burst: float64(perMinute), now: now, buckets: make(map[string]*bucket), lru: list.New(), maxKeys: MaxKeys, sweepAt: 4096}
}

// NewEvery returns a limiter of burst tokens per key, refilled one every
// every (for limits slower than one a minute: "3, then one an hour").
// every must be positive. Its PerMinute is the burst.
func NewEvery(burst int, every time.Duration, now func() time.Time) *Limiter {
	if every <= 0 {
		panic("limit: NewEvery with a period that is not positive")
	}
	l := New(burst, now)
	l.rate = float64(time.Minute) / float64(every)
	return l
}

// PerMinute is the limiter's rate and burst (the burst of a NewEvery
// limiter).
func (l *Limiter) PerMinute() int { return l.perMinute }

// refillLocked brings b up to now.
func (l *Limiter) refillLocked(b *bucket, now time.Time) {
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(l.burst, b.tokens+el.Minutes()*l.rate)
		b.last = now
	}
}

// wait is how long until b holds one token.
func (l *Limiter) wait(b *bucket) time.Duration {
	return time.Duration((1 - b.tokens) / l.rate * float64(time.Minute))
}

// Take removes a token from key's bucket. ok is false when there was none;
// remaining is the whole tokens left; wait is the time until the next one.
func (l *Limiter) Take(key string) (ok bool, remaining int, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= l.sweepAt {
			l.sweepLocked(now)
		}
		for len(l.buckets) >= l.maxKeys {
			oldest := l.lru.Front()
			delete(l.buckets, l.lru.Remove(oldest).(string))
			l.overflow++
		}
		b = &bucket{tokens: l.burst, last: now}
		b.elem = l.lru.PushBack(key)
		l.buckets[key] = b
	} else {
		l.lru.MoveToBack(b.elem)
	}
	l.refillLocked(b, now)
	if b.tokens < 1 {
		return false, 0, l.wait(b)
	}
	b.tokens--
	return true, int(b.tokens), 0
}

// Refund gives back a token taken from key's bucket, for an attempt that
// turned out not to count (a right password, an attempt never made).
func (l *Limiter) Refund(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.buckets[key]; b != nil {
		b.tokens = min(l.burst, b.tokens+1)
	}
}

// Blocked reports whether key's bucket is empty, and for how long.
func (l *Limiter) Blocked(key string) (time.Duration, bool) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		return 0, false
	}
	l.refillLocked(b, now)
	if b.tokens >= 1 {
		return 0, false
	}
	return l.wait(b), true
}

// Used reports whether key's bucket is below full: a token was taken from
// it and has not refilled yet (the key failed recently).
func (l *Limiter) Used(key string) bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		return false
	}
	l.refillLocked(b, now)
	return b.tokens < l.burst
}

// Overflow is the number of buckets evicted because the limiter held
// MaxKeys keys.
func (l *Limiter) Overflow() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.overflow
}

// sweepLocked forgets the buckets that are full again.
func (l *Limiter) sweepLocked(now time.Time) {
	for k, b := range l.buckets {
		l.refillLocked(b, now)
		if b.tokens >= l.burst {
			l.lru.Remove(b.elem)
			delete(l.buckets, k)
		}
	}
	l.sweepAt = max(4096, 2*len(l.buckets))
}

// ClientKey is the rate-limit key of a client address: the address, or its
// /64 for IPv6 (one host usually holds a whole /64). The zero Addr is one
// key, "invalid IP".
func ClientKey(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// ParseIP parses "addr", "addr:port" or "[addr]:port", without a zone.
func ParseIP(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

package httpd

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/webstats/webstats/engine"
)

// authFailuresPerMinute bounds the failed authentications of one client
// address per minute.
const authFailuresPerMinute = 20

// authenticate checks the request's API key and the account's rate limit.
// On failure it writes the 401 or 429 answer and returns false. It sets the
// X-RateLimit headers when rate limiting is on.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (engine.Account, bool) {
	key := bearer(r.Header.Get("Authorization"))
	if key == "" {
		writeError(w, r, errUnauthenticated)
		return engine.Account{}, false
	}
	ipKey := limiterKey(s.clientIP(r))
	if wait, blocked := s.authLimit.blocked(ipKey); blocked {
		tooMany(w, r, wait)
		return engine.Account{}, false
	}
	a, err := s.e.Authenticate(r.Context(), key)
	if err != nil {
		s.authLimit.take(ipKey)
		writeError(w, r, errUnauthenticated)
		return engine.Account{}, false
	}
	if s.keyLimit != nil {
		ok, remaining, wait := s.keyLimit.take(strconv.FormatUint(uint64(a.ID), 10))
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.RateLimit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		if !ok {
			tooMany(w, r, wait)
			return engine.Account{}, false
		}
	}
	return a, true
}

// tooMany answers 429 with Retry-After in whole seconds (at least 1).
func tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	w.Header().Set("X-RateLimit-Remaining", "0")
	writeError(w, r, errTooManyAttempts)
}

// bearer returns the token of an "Authorization: Bearer <token>" header (the
// scheme in any case), or "".
func bearer(h string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// clientIP returns the client's address: with TrustProxy, the right-most
// address of X-Forwarded-For that is public; else (or when there is none) the
// connection's. It returns the zero Addr when none parses.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	if s.opts.TrustProxy {
		vals := r.Header.Values("X-Forwarded-For")
		seen := 0
		for i := len(vals) - 1; i >= 0 && seen < 64; i-- {
			parts := strings.Split(vals[i], ",")
			for j := len(parts) - 1; j >= 0 && seen < 64; j-- {
				seen++
				if a, ok := parseIP(strings.TrimSpace(parts[j])); ok && isPublic(a) {
					return a
				}
			}
		}
	}
	a, _ := parseIP(r.RemoteAddr)
	return a
}

// parseIP parses "addr", "addr:port" or "[addr]:port", without a zone.
func parseIP(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

// isPublic reports whether a is a routable client address.
func isPublic(a netip.Addr) bool {
	return a.IsValid() && !a.IsLoopback() && !a.IsPrivate() && !a.IsUnspecified() &&
		!a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast() && !a.IsMulticast()
}

// limiterKey is the rate-limit key of a client address: the address, or its
// /64 for IPv6 (one host usually holds a whole /64).
func limiterKey(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// limiter is a set of token buckets, one per key, each refilled at rate
// tokens per minute up to as many.
type limiter struct {
	perMinute int
	now       func() time.Time

	mu      sync.Mutex // guards buckets and sweepAt
	buckets map[string]*bucket
	sweepAt int // sweep full buckets when the map grows past this
}

type bucket struct {
	tokens float64
	last   time.Time
}

// maxBuckets bounds the memory of a limiter: past it, new keys are not
// tracked (and not limited).
const maxBuckets = 1 << 20

func newLimiter(perMinute int, now func() time.Time) *limiter {
	return &limiter{perMinute: perMinute, now: now, buckets: make(map[string]*bucket), sweepAt: 4096}
}

// refillLocked brings b up to now.
func (l *limiter) refillLocked(b *bucket, now time.Time) {
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(float64(l.perMinute), b.tokens+el.Minutes()*float64(l.perMinute))
		b.last = now
	}
}

// wait is how long until b holds one token.
func (l *limiter) wait(b *bucket) time.Duration {
	return time.Duration((1 - b.tokens) / float64(l.perMinute) * float64(time.Minute))
}

// take removes a token from key's bucket. ok is false when there was none;
// remaining is the whole tokens left; wait is the time until the next one.
func (l *limiter) take(key string) (ok bool, remaining int, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= l.sweepAt {
			l.sweepLocked(now)
		}
		if len(l.buckets) >= maxBuckets {
			return true, l.perMinute - 1, 0
		}
		b = &bucket{tokens: float64(l.perMinute), last: now}
		l.buckets[key] = b
	}
	l.refillLocked(b, now)
	if b.tokens < 1 {
		return false, 0, l.wait(b)
	}
	b.tokens--
	return true, int(b.tokens), 0
}

// blocked reports whether key's bucket is empty, and for how long.
func (l *limiter) blocked(key string) (time.Duration, bool) {
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

// sweepLocked forgets the buckets that are full again.
func (l *limiter) sweepLocked(now time.Time) {
	for k, b := range l.buckets {
		l.refillLocked(b, now)
		if b.tokens >= float64(l.perMinute) {
			delete(l.buckets, k)
		}
	}
	l.sweepAt = max(4096, 2*len(l.buckets))
}

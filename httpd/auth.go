package httpd

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd/internal/limit"
)

// authFailuresPerMinute bounds the failed authentications (wrong API keys)
// of one client address per minute; past it, wrong keys get 429 (right keys
// are never refused by it).
const authFailuresPerMinute = 20

// authenticate checks the request's API key and the account's rate limit.
// On failure it writes the 401 or 429 answer and returns false. It sets the
// X-RateLimit headers when rate limiting is on.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (engine.Account, bool) {
	a, res, wait := s.checkKey(w, r)
	switch res {
	case keyMissing, keyWrong:
		writeError(w, r, errUnauthenticated)
		return engine.Account{}, false
	case keyLimited:
		tooMany(w, r, wait)
		return engine.Account{}, false
	}
	return a, true
}

// keyCheck is the outcome of checkKey.
type keyCheck uint8

const (
	keyOK      keyCheck = iota
	keyMissing          // no "Authorization: Bearer" header
	keyWrong            // not a key of any account
	keyLimited          // the account's rate limit, or the client's failed authentications
)

// checkKey checks the request's API key and the account's rate limit, for
// both APIs (each writes its own error answers). It sets the X-RateLimit
// headers when rate limiting is on and the key is right; for keyLimited, wait
// is how long until the next request may pass.
func (s *Server) checkKey(w http.ResponseWriter, r *http.Request) (engine.Account, keyCheck, time.Duration) {
	key := bearer(r.Header.Get("Authorization"))
	if key == "" {
		return engine.Account{}, keyMissing, 0
	}
	// A right key always authenticates: keys are 256-bit, so the failure
	// limit only quiets guessing and may refuse only wrong keys (SPEC §13).
	a, err := s.e.Authenticate(r.Context(), key)
	if err != nil {
		ipKey := limiterKey(s.clientIP(r))
		if wait, blocked := s.authLimit.Blocked(ipKey); blocked {
			return engine.Account{}, keyLimited, wait
		}
		s.authLimit.Take(ipKey)
		return engine.Account{}, keyWrong, 0
	}
	if s.keyLimit != nil {
		ok, remaining, wait := s.keyLimit.Take(strconv.FormatUint(uint64(a.ID), 10))
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.RateLimit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		if !ok {
			return engine.Account{}, keyLimited, wait
		}
	}
	return a, keyOK, 0
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
func parseIP(s string) (netip.Addr, bool) { return limit.ParseIP(s) }

// isPublic reports whether a is a routable client address.
func isPublic(a netip.Addr) bool {
	return a.IsValid() && !a.IsLoopback() && !a.IsPrivate() && !a.IsUnspecified() &&
		!a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast() && !a.IsMulticast()
}

// limiterKey is the rate-limit key of a client address (limit.ClientKey).
func limiterKey(a netip.Addr) string { return limit.ClientKey(a) }

// limiter is the token-bucket limiter of the API (limit.Limiter).
type limiter = limit.Limiter

func newLimiter(perMinute int, now func() time.Time) *limiter { return limit.New(perMinute, now) }

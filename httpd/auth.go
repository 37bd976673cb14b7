package httpd

import (
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd/internal/limit"
)

// authFailuresPerMinute bounds the failed authentications (wrong API keys)
// of one client address per minute; past it, wrong keys get 429 (right keys
// are never refused by it).
const authFailuresPerMinute = 20

// authenticate checks the request's API key and the account's rate limit.
// On failure it writes the 401 or 429 answer and returns false. It sets the
// X-RateLimit headers when rate limiting is on.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (identity.Account, bool) {
	a, res, wait := s.checkKey(w, r)
	switch res {
	case keyMissing, keyWrong:
		writeError(w, r, errUnauthenticated)
		return identity.Account{}, false
	case keyLimited:
		tooMany(w, r, wait)
		return identity.Account{}, false
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
func (s *Server) checkKey(w http.ResponseWriter, r *http.Request) (identity.Account, keyCheck, time.Duration) {
	key := bearer(r.Header.Get("Authorization"))
	if key == "" {
		return identity.Account{}, keyMissing, 0
	}
	// A right key always authenticates: keys are 256-bit, so the failure
	// limit only quiets guessing and may refuse only wrong keys (SPEC §13).
	a, err := s.id.Authenticate(r.Context(), key)
	if err != nil {
		ipKey := limiterKey(s.clientIP(r))
		if wait, blocked := s.authLimit.Blocked(ipKey); blocked {
			return identity.Account{}, keyLimited, wait
		}
		s.authLimit.Take(ipKey)
		return identity.Account{}, keyWrong, 0
	}
	if s.keyLimit != nil {
		ok, remaining, wait := s.keyLimit.Take(strconv.FormatUint(uint64(a.ID), 10))
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(s.opts.RateLimit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		if !ok {
			return identity.Account{}, keyLimited, wait
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

// maxForwardedHops bounds the X-Forwarded-For entries clientIP reads.
const maxForwardedHops = 64

// clientIP returns the client's address, for every use of it (tracking,
// the rate and failure limits, sessions): the connection's peer, or, with
// TrustProxy and a peer that is a trusted proxy (Options.TrustedProxies),
// the right-most X-Forwarded-For entry that is not a trusted proxy (SPEC
// §13). Entries left of it were written by the client and are never read.
// When every entry is a trusted proxy, the left-most is the client (as
// nginx's real_ip_recursive does); an entry that does not parse ends the
// walk at the trusted proxy right of it. It returns the zero Addr when the
// peer does not parse.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer, _ := parseIP(r.RemoteAddr)
	if !s.opts.TrustProxy || !s.trustedProxy(peer) {
		return peer
	}
	client, seen := peer, 0
	vals := r.Header.Values("X-Forwarded-For")
	for i := len(vals) - 1; i >= 0; i-- {
		parts := strings.Split(vals[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			p := strings.TrimSpace(parts[j])
			if p == "" {
				continue
			}
			if seen++; seen > maxForwardedHops {
				return client
			}
			a, ok := parseIP(p)
			if !ok {
				return client
			}
			client = a
			if !s.trustedProxy(a) {
				return a
			}
		}
	}
	return client
}

// trustedProxy reports whether a is in Options.TrustedProxies.
func (s *Server) trustedProxy(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range s.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseIP parses "addr", "addr:port" or "[addr]:port", without a zone.
func parseIP(s string) (netip.Addr, bool) { return limit.ParseIP(s) }

// DefaultTrustedProxies is the default of Options.TrustedProxies (and of
// the binary's -trusted-proxies): loopback and the private ranges.
const DefaultTrustedProxies = "127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"

// ParseProxies parses a comma-separated list of CIDR prefixes or plain
// addresses (a /32 or /128), as -trusted-proxies takes it.
func ParseProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if a, err := netip.ParseAddr(f); err == nil && a.Zone() == "" {
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or a CIDR prefix (like 10.0.0.0/8)", f)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// limiterKey is the rate-limit key of a client address (limit.ClientKey).
func limiterKey(a netip.Addr) string { return limit.ClientKey(a) }

// limiter is the token-bucket limiter of the API (limit.Limiter).
type limiter = limit.Limiter

func newLimiter(perMinute int, now func() time.Time) *limiter { return limit.New(perMinute, now) }

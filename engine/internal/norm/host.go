package norm

import (
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxHostLen is the longest host name, in bytes, that Domain accepts and that
// Host and ReferrerHost return (SPEC §3.2: at most 255 chars).
const MaxHostLen = 255

// maxLabelLen is the longest label of a host name (RFC 1035).
const maxLabelLen = 63

// maxHostInput bounds the input, in bytes, that is given to IDNA processing:
// mapping can delete characters (soft hyphens, variation selectors), so a
// valid name may be sent longer than MaxHostLen, but not by this much.
const maxHostInput = 4 * MaxHostLen

// idnaProfile converts internationalised names to punycode for both the
// registry (Domain) and the lookup of tracked hits (Host, ReferrerHost), so
// that the two always agree. It is the lookup profile of RFC 5891 §5 with
// UTS #46 non-transitional processing (what current browsers send), the
// STD3 ASCII rules (letters, digits and '-' only), hyphen and joiner checks
// and the Bidi rule. Label and name lengths are checked by validHostName.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
)

// registrationProfile checks the domain of a new website: RFC 5891 §4
// registration rules with non-transitional processing. Unlike idnaProfile it
// maps nothing: a name that a lookup would map to another one (full-width
// or circled letters, "ⓖⓞⓞⓖⓛⓔ.com" → "google.com", an ideographic full
// stop, a soft hyphen, a decomposed accent) is refused, so a website is
// always registered under the name it is shown with, never under a
// confusable spelling of someone else's. Lengths are left to
// validHostName (SPEC §3.2 allows 255 characters; IDNA's DNS check would
// stop at 253).
var registrationProfile = idna.New(
	idna.ValidateForRegistration(),
	idna.VerifyDNSLength(false),
	idna.Transitional(false),
)

// Domain normalises and validates a website domain as the API receives it
// (SPEC §3.2). It trims surrounding spaces, lower-cases, removes one leading
// "http://" or "https://", one trailing "/" and one trailing "." (the
// fully-qualified form), converts an IDN to punycode ("Bücher.de" →
// "xn--bcher-kva.de") and removes leading "www." labels as long as what remains
// still contains a dot (so "www.example.com" → "example.com" but "www.com"
// stays "www.com"). A bare "www" ("https://www.") is refused: it is a prefix
// with the name missing.
//
// The name must pass IDNA's registration rules (registrationProfile): a
// character that lookups would map to another (case aside, which is
// lower-cased first) makes it invalid rather than being mapped.
//
// The result must then be a host name of labels of 1 to 63 characters of
// [a-z0-9-], none starting or ending with '-', at most MaxHostLen characters
// in all, or an IPv4 address in dotted-decimal form. Input longer than
// 1020 bytes after the prefixes are removed is rejected unread. A name whose last label
// is all digits must be a valid IPv4 address ("256.1.1.1" and "1.2.3" are
// invalid). Single-label names such as "localhost" are accepted; IPv6
// addresses, ports, paths ("example.com/path"), queries and user information
// are not.
//
// ok is false when s is not a valid domain; the caller writes the message.
// Domain is idempotent: a domain it returns normalises to itself.
func Domain(s string) (domain string, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if rest, found := strings.CutPrefix(s, "https://"); found {
		s = rest
	} else if rest, found := strings.CutPrefix(s, "http://"); found {
		s = rest
	}
	s = strings.TrimSuffix(s, "/")
	if s == "" || len(s) > maxHostInput || strings.IndexByte(s, '/') >= 0 {
		return "", false
	}
	s = strings.TrimSuffix(s, ".")
	// The registration profile also runs on ASCII input: it rejects
	// characters outside the STD3 rules and malformed "xn--" labels.
	a, err := registrationProfile.ToASCII(s)
	if err != nil {
		return "", false
	}
	s = stripWWW(a)
	if s == "www" || !validHostName(s) {
		return "", false
	}
	return s, true
}

// Host normalises the host of a tracked page URL for the website lookup
// (SPEC §2.4): the port is dropped, the name lower-cased and
// percent-decoded, an IDN converted to punycode with the same profile as
// Domain, one trailing dot and a leading "www." removed (with Domain's rule).
// "Example.COM:8080" → "example.com", "www.xn--bcher-kva.de" and "bücher.de"
// → "xn--bcher-kva.de". An IPv6 literal comes back in its canonical form
// without brackets ("[::1]:80" → "::1").
//
// Host returns "" when the name cannot be converted (an invalid IDN, a
// character outside letters, digits, '-' and '.'), or is longer than
// MaxHostLen. It does not check the label syntax of an ASCII name ("a..b",
// "-a.com"): such a host matches no website because Domain rejects it.
// For every domain d returned by Domain, Host(d) == d.
func Host(host string) string {
	if host == "" {
		return ""
	}
	if host[0] == '[' {
		return ipv6Literal(host)
	}
	if i := strings.IndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	h, ok := hostName(host, false)
	if !ok {
		return ""
	}
	return stripWWW(h)
}

// SiteHost removes a leading "www." from an already lower-cased host, with
// Domain's rule: only when what remains still contains a dot. It is used to
// compare a referrer's host with the website's domain and with the host that
// started the current visit (SPEC §2.2).
func SiteHost(host string) string {
	return stripWWW(host)
}

// ReferrerHost returns the referring host of a referrer URL as sent, for the
// referrer statistic (SPEC §2.3): the host lower-cased, without user
// information, port or trailing dot, keeping "www." ("https://www.google.com/search?q=x"
// → "www.google.com"). Any scheme is accepted as long as the URL has an
// authority, so app referrers keep their package name
// ("android-app://com.google.android.gm/" → "com.google.android.gm").
//
// IDNs are converted to punycode like Host does; '_' is accepted in ASCII
// names. ReferrerHost returns "" for an empty or unparsable referrer, one
// without a host ("about:blank", "example.com" without a scheme), and a host
// that is not a valid name or is longer than MaxHostLen.
func ReferrerHost(ref string) string {
	// scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" "//"
	i := 0
	for ; i < len(ref); i++ {
		c := ref[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' ||
			i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			continue
		}
		break
	}
	if i == 0 || i+3 > len(ref) || ref[i] != ':' || ref[i+1] != '/' || ref[i+2] != '/' {
		return ""
	}
	auth := ref[i+3:]
	if j := strings.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	if j := strings.LastIndexByte(auth, '@'); j >= 0 {
		auth = auth[j+1:]
	}
	if auth == "" {
		return ""
	}
	if auth[0] == '[' {
		return ipv6Literal(auth)
	}
	if j := strings.IndexByte(auth, ':'); j >= 0 {
		auth = auth[:j]
	}
	h, _ := hostName(auth, true)
	return h
}

// stripWWW removes leading "www." labels while what remains contains a dot.
func stripWWW(h string) string {
	for len(h) > 4 && h[:4] == "www." && strings.IndexByte(h[4:], '.') >= 0 {
		h = h[4:]
	}
	return h
}

// hostName lower-cases, percent-decodes and IDNA-converts a host name
// without port, and removes one trailing dot. ASCII names of letters, digits,
// '-', '.' (and '_' when underscore is set) take a fast path that does not
// allocate unless they contain upper-case letters.
func hostName(h string, underscore bool) (string, bool) {
	if len(h) > maxHostInput {
		return "", false
	}
	upper := false
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.':
		case 'A' <= c && c <= 'Z':
			upper = true
		case c == '_' && underscore:
		case c == '%':
			u, ok := unescapeHost(h)
			if !ok {
				return "", false
			}
			return hostName(u, underscore)
		default:
			return idnaHost(h)
		}
	}
	if upper {
		h = strings.ToLower(h)
	}
	return trimHost(h)
}

// idnaHost converts a name with characters outside the ASCII fast path.
func idnaHost(h string) (string, bool) {
	if !utf8.ValidString(h) {
		return "", false // idna would read invalid bytes as U+FFFD
	}
	a, err := idnaProfile.ToASCII(h)
	if err != nil {
		return "", false
	}
	return trimHost(a)
}

// trimHost removes one trailing dot and checks the length; a name with two
// trailing dots is invalid.
func trimHost(h string) (string, bool) {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > MaxHostLen || h[len(h)-1] == '.' {
		return "", false
	}
	return h, true
}

// unescapeHost decodes %XX escapes in a host (browsers decode them before
// IDNA processing: "b%C3%BCcher.de" is "bücher.de"). ok is false for a
// malformed escape or an escaped '%', which would decode again on the
// recursive call.
func unescapeHost(h string) (string, bool) {
	var b strings.Builder
	b.Grow(len(h))
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(h) {
			return "", false
		}
		hi, ok1 := unhex(h[i+1])
		lo, ok2 := unhex(h[i+2])
		if !ok1 || !ok2 || hi<<4|lo == '%' {
			return "", false
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// ipv6Literal returns the canonical form, without brackets, of a bracketed
// IPv6 literal with an optional port ("[::1]:80" → "::1"), or "".
func ipv6Literal(h string) string {
	end := strings.IndexByte(h, ']')
	if end < 0 {
		return ""
	}
	if rest := h[end+1:]; rest != "" && (rest[0] != ':' || !allDigits(rest[1:])) {
		return ""
	}
	addr, err := netip.ParseAddr(h[1:end])
	if err != nil || !addr.Is6() || addr.Zone() != "" {
		return ""
	}
	return addr.String()
}

// validHostName reports whether h is a host name Domain accepts: labels of
// 1–63 characters of [a-z0-9-] not starting or ending with '-', at most
// MaxHostLen characters, and, when the last label is all digits, an IPv4
// address.
func validHostName(h string) bool {
	if h == "" || len(h) > MaxHostLen {
		return false
	}
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			c := h[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		label := h[start:i]
		if label == "" || len(label) > maxLabelLen || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		if i == len(h) && allDigits(label) {
			addr, err := netip.ParseAddr(h)
			return err == nil && addr.Is4()
		}
		start = i + 1
	}
	return true
}

// allDigits reports whether s consists of ASCII digits only ("" is true).
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// PlausibleDomain normalises the domain field of a Plausible Events API
// payload for the website lookup (SPEC §2.4): the first of a comma-separated
// list, trimmed, normalised like Host ("www.Example.com, other.org" →
// "example.com"). It returns "" when there is no usable name.
func PlausibleDomain(s string) string {
	first, _, _ := strings.Cut(s, ",")
	return Host(strings.TrimSpace(first))
}

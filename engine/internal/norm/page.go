package norm

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// MaxPageLen is the longest page value, in characters (runes), that ParsePage
// returns (SPEC §2.3: at most 255 chars).
const MaxPageLen = 255

// MaxCampaignLen is the longest campaign value, in characters (runes), that
// ParsePage returns. The SPEC sets no limit; the page's is used.
const MaxCampaignLen = 255

// manyRules is the number of excluded parameters from which PageRules looks
// names up in a map rather than comparing them one by one.
const manyRules = 8

// PageRules are a website's exclude_params setting, parsed once (SPEC §2.4):
// one query parameter name per line, surrounding white space and blank lines
// ignored; a line "&" removes the whole query. A parameter is excluded when
// its name, URL-decoded ("utm%5Fsource" and "utm_source" alike), equals a
// line exactly (case-sensitive). utm_* parameters are kept unless listed.
//
// The zero value excludes nothing. PageRules are immutable and safe for
// concurrent use.
type PageRules struct {
	names     []string            // excluded names, in the order of the setting
	set       map[string]struct{} // names as a set, when there are manyRules or more
	dropQuery bool                // a line "&": remove the whole query
}

// ParsePageRules parses an exclude_params setting. It never fails: every
// non-blank line is a parameter name.
func ParsePageRules(excludeParams string) PageRules {
	var r PageRules
	for rest := excludeParams; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case line == "&":
			r.dropQuery = true
		case !r.excludes(line):
			r.names = append(r.names, line)
			if len(r.names) >= manyRules {
				if r.set == nil {
					r.set = make(map[string]struct{})
					for _, n := range r.names {
						r.set[n] = struct{}{}
					}
				}
				r.set[line] = struct{}{}
			}
		}
	}
	return r
}

// Empty reports whether the rules leave every query unchanged.
func (r PageRules) Empty() bool {
	return !r.dropQuery && len(r.names) == 0
}

// excludes reports whether the (decoded) parameter name is excluded.
func (r PageRules) excludes(name string) bool {
	if r.set != nil {
		_, ok := r.set[name]
		return ok
	}
	for _, n := range r.names {
		if n == name {
			return true
		}
	}
	return false
}

// excludesParam reports whether a raw query segment "key=value" is excluded.
func (r PageRules) excludesParam(seg string) bool {
	if len(r.names) == 0 {
		return false
	}
	key, _, _ := strings.Cut(seg, "=")
	return r.excludes(decodeQuery(key))
}

// filter removes the excluded parameters from a raw query. The query comes
// back unchanged, without allocating, when nothing is excluded; otherwise
// the kept parameters are joined with '&' in their order, as sent, and empty
// segments are dropped.
func (r PageRules) filter(q string) string {
	if len(r.names) == 0 {
		return q
	}
	first := -1 // start of the first excluded segment
	for i := 0; i <= len(q); {
		seg, next := segment(q, i)
		if r.excludesParam(seg) {
			first = i
			break
		}
		i = next
	}
	if first < 0 {
		return q
	}
	var b strings.Builder
	b.Grow(len(q))
	for i := 0; i <= len(q); {
		seg, next := segment(q, i)
		if seg != "" && (i < first || i > first && !r.excludesParam(seg)) {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(seg)
		}
		i = next
	}
	return b.String()
}

// segment returns the query segment starting at i and the start of the next
// one (len(q)+1 after the last).
func segment(q string, i int) (seg string, next int) {
	j := strings.IndexByte(q[i:], '&')
	if j < 0 {
		return q[i:], len(q) + 1
	}
	return q[i : i+j], i + j + 1
}

// Page is what a page URL contributes to a hit. Its strings may share memory
// with the URL given to ParsePage.
type Page struct {
	// Host is the URL's host normalised like Host (the website lookup key);
	// "" for a bare path and for a host that is not a valid name.
	Host string
	// Page is the path plus "?query" (SPEC §2.3 page): the query as sent,
	// order and encoding kept, minus the excluded parameters, and without
	// "?" when the query ends up empty; the fragment dropped; an empty path
	// is "/". It is cut at MaxPageLen characters (runes, never inside a
	// UTF-8 sequence) and always starts with "/".
	Page string
	// Fragment is the URL's fragment, without its '#', as sent; "" when
	// none. Page leaves it out; KeepFragment puts it in.
	Fragment string
	// Campaign is the first utm_campaign parameter of the URL, read before
	// the exclusion, URL-decoded ('+' is a space), cut at MaxCampaignLen
	// characters, with invalid UTF-8 replaced by U+FFFD and control
	// characters removed; "" when absent.
	Campaign string
}

// ParsePage parses a page URL: a full URL ("https://example.com/a?b=1#x", the
// scheme http or https in any case, user information and port ignored) or a
// path ("/a?b=1"). Any input starting with "/" is a path: "//a/b" is the path
// "//a/b", not a scheme-relative URL.
//
// ok is false for input that is neither: empty, invalid UTF-8, with an ASCII
// control character (browsers send spaces and controls percent-encoded), a
// relative reference ("a/b", "?q"), another scheme, a full URL without "//"
// or with an empty host, a port that is not a number, a malformed IPv6
// literal or a character a host cannot contain (space, '"', '<', '>', '\',
// '^', '`', '{', '|', '}').
//
// ParsePage is idempotent on its result: ParsePage(p.Page, rules) returns
// p.Page again.
func ParsePage(raw string, rules PageRules) (p Page, ok bool) {
	if raw == "" || !validText(raw) {
		return Page{}, false
	}
	rest := raw
	if raw[0] != '/' {
		var host string
		if rest, host, ok = splitURL(raw); !ok {
			return Page{}, false
		}
		p.Host = host
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, p.Fragment = rest[:i], rest[i+1:]
	}
	path, query := rest, ""
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		path, query = rest[:i], rest[i+1:]
	}
	if query != "" {
		p.Campaign = campaign(query)
		if rules.dropQuery {
			query = ""
		} else {
			query = rules.filter(query)
		}
	}
	switch {
	case path == "":
		// A full URL without path: "https://example.com?a=1".
		path = "/"
		if query != "" {
			rest = "/?" + query
		} else {
			rest = path
		}
	case query == "":
		rest = path
	case len(path)+1+len(query) != len(rest):
		rest = path + "?" + query
	}
	p.Page = cutPage(rest, len(path), rules)
	return p, true
}

// KeepFragment returns p with the fragment kept in Page, for Plausible's
// hash-based routing (a hit with "h": 1, SPEC §2.4): "/app/#/settings",
// "/app/?a=1#/settings", cut at MaxPageLen characters. A page without a
// fragment (or with an empty one) is returned unchanged.
//
// Plausible appends "#" and the fragment to the path
// (plausible/analytics lib/plausible/ingestion/request.ex, get_pathname
// with hash_mode 1); webstats keeps the fragment as sent, not decoded, as
// it keeps the path.
func (p Page) KeepFragment() Page {
	if p.Fragment != "" {
		p.Page = cutRunes(p.Page+"#"+p.Fragment, MaxPageLen)
	}
	return p
}

// Path is p.Page without its query: the path, and with KeepFragment the
// fragment too ("/app/#/a?b" keeps the fragment's '?').
func (p Page) Path() string {
	page := p.Page
	frag := ""
	if i := strings.IndexByte(page, '#'); i >= 0 {
		page, frag = page[:i], page[i:]
	}
	path, _, _ := strings.Cut(page, "?")
	if frag == "" {
		return path
	}
	return path + frag
}

// splitURL splits an absolute http(s) URL into the path, query and fragment
// that follow its authority, and the normalised host.
func splitURL(raw string) (rest, host string, ok bool) {
	colon := strings.IndexByte(raw, ':')
	if colon < 0 {
		return "", "", false
	}
	if scheme := raw[:colon]; !strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "http") {
		return "", "", false
	}
	rest = raw[colon+1:]
	if len(rest) < 2 || rest[0] != '/' || rest[1] != '/' {
		return "", "", false
	}
	rest = rest[2:]
	end := len(rest)
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c == '/' || c == '?' || c == '#' {
			end = i
			break
		}
	}
	auth := rest[:end]
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		auth = auth[i+1:]
	}
	if auth == "" {
		return "", "", false
	}
	if auth[0] == '[' {
		h := ipv6Literal(auth)
		return rest[end:], h, h != ""
	}
	name, port := auth, ""
	if i := strings.IndexByte(auth, ':'); i >= 0 {
		name, port = auth[:i], auth[i+1:]
	}
	if name == "" || !allDigits(port) || strings.ContainsAny(name, " \"<>\\^`{|}") {
		return "", "", false
	}
	return rest[end:], Host(name), true
}

// cutPage cuts page at MaxPageLen runes. When the cut falls inside the query,
// the truncated last parameter is checked against the rules again (a cut
// "utm_sourcex" may now read "utm_source") and a "?" left without a query is
// dropped, so that the result parses to itself.
func cutPage(page string, pathLen int, rules PageRules) string {
	if len(page) <= MaxPageLen {
		return page
	}
	n := runePrefix(page, MaxPageLen)
	if n == len(page) {
		return page
	}
	page = page[:n]
	if n <= pathLen {
		return page
	}
	q := page[pathLen+1:]
	last := strings.LastIndexByte(q, '&')
	if rules.excludesParam(q[last+1:]) {
		q = q[:max(last, 0)]
	}
	if q == "" {
		return page[:pathLen]
	}
	return page[:pathLen+1+len(q)]
}

// runePrefix returns the length in bytes of the first n runes of s.
func runePrefix(s string, n int) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// cutRunes cuts s at n runes.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:runePrefix(s, n)]
}

// validText reports whether s is valid UTF-8 without ASCII control
// characters.
func validText(s string) bool {
	const (
		lo    = 0x0101010101010101
		hi    = 0x8080808080808080
		space = 0x2020202020202020
		del   = 0x7f7f7f7f7f7f7f7f
	)
	// Eight bytes at a time while they are printable ASCII: a byte is
	// flagged when it is ≥ 0x80, < 0x20 or, xor-ed with 0x7f, zero.
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		y := x ^ del
		if (x|(x-space)|(y-lo)&^y)&hi != 0 {
			break
		}
	}
	ascii := true
	for ; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.ValidString(s)
}

// campaign returns the cleaned value of the first utm_campaign parameter of a
// raw query.
func campaign(q string) string {
	for q != "" {
		var seg string
		seg, q, _ = strings.Cut(q, "&")
		key, value, _ := strings.Cut(seg, "=")
		if len(key) < len("utm_campaign") || decodeQuery(key) != "utm_campaign" {
			continue
		}
		return cutRunes(cleanText(decodeQuery(value)), MaxCampaignLen)
	}
	return ""
}

// decodeQuery URL-decodes a query key or value ('+' is a space). A value
// with a malformed escape is returned as sent. It allocates only when there
// is something to decode.
func decodeQuery(s string) string {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s
	}
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// cleanText replaces invalid UTF-8 with U+FFFD and removes ASCII control
// characters. It allocates only when there is something to change.
func cleanText(s string) string {
	if validText(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

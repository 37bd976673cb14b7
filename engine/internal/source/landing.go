package source

import (
	"strings"
	"unicode/utf8"
)

// MaxQueryBytes bounds the part of a landing URL's query that ParseLanding
// reads: parameters that start after this many bytes are ignored. Plausible
// refuses URLs longer than 2,000 bytes, so every query it would read fits.
const MaxQueryBytes = 8 << 10

// MaxValueLen is the longest parameter value, in runes, that ParseLanding
// keeps; longer values are cut (never inside a UTF-8 sequence). It is the
// same bound as norm.MaxCampaignLen.
const MaxValueLen = 255

// ClickIDs records which ad click-id parameters a landing URL carries, one bit
// each. A parameter counts when its name is present, whatever its value
// ("?gclid" and "?gclid=" count), as in Plausible.
type ClickIDs uint8

// The click ids. The first six are the ones Plausible distinguishes, in the
// order it checks them; TTCLID (TikTok) is recorded for callers but plays no
// part in Param or in the channel.
const (
	GCLID   ClickIDs = 1 << iota // Google Ads
	GBRAID                       // Google Ads, iOS app campaigns
	WBRAID                       // Google Ads, web-to-app
	MSCLKID                      // Microsoft (Bing) Ads
	FBCLID                       // Meta
	TWCLID                       // X (Twitter) Ads
	TTCLID                       // TikTok Ads
)

// clickParams maps each click id to its query parameter name, in Plausible's
// order: Param returns the first one present.
var clickParams = [...]struct {
	id   ClickIDs
	name string
}{
	{GCLID, "gclid"},
	{GBRAID, "gbraid"},
	{WBRAID, "wbraid"},
	{MSCLKID, "msclkid"},
	{FBCLID, "fbclid"},
	{TWCLID, "twclid"},
	{TTCLID, "ttclid"},
}

// plausibleClickIDs are the ids Plausible's click_id_param considers.
const plausibleClickIDs = GCLID | GBRAID | WBRAID | MSCLKID | FBCLID | TWCLID

// Has reports whether every id of id is present.
func (c ClickIDs) Has(id ClickIDs) bool { return c&id == id && id != 0 }

// Param returns the name of the click-id parameter Plausible records for the
// visit (its click_id_param): the first present of gclid, gbraid, wbraid,
// msclkid, fbclid, twclid; "" when none is.
func (c ClickIDs) Param() string {
	c &= plausibleClickIDs
	for _, p := range clickParams {
		if c&p.id != 0 {
			return p.name
		}
	}
	return ""
}

// Landing is what decides a visit's source and channel: the landing URL's
// query and the referrer. The string fields are URL-decoded parameter values
// as ParseLanding returns them, "" when absent or empty.
type Landing struct {
	UTMSource, UTMMedium, UTMCampaign string // utm_source, utm_medium, utm_campaign
	UTMContent, UTMTerm               string // utm_content, utm_term (stored, not used by Classify)
	SourceParam, RefParam             string // the landing URL's `source` and `ref` parameters
	// RefHost is the referrer's host, lower-cased, "" for none or for the
	// site's own host (norm.ReferrerHost's result, after the caller's
	// same-site check).
	RefHost  string
	ClickIDs ClickIDs // which ad click ids the landing URL carries
}

// ParseLanding fills a Landing from a raw landing URL query string (what
// follows '?', without the fragment) and a referrer host.
//
// Parameter names are matched exactly after URL-decoding ("utm%5Fsource" is
// utm_source; "UTM_SOURCE" is not, as in Plausible). Values are URL-decoded
// ('+' is a space; a value with a malformed escape is kept as sent), invalid
// UTF-8 is replaced by U+FFFD, ASCII control characters are removed, and the
// result is cut at MaxValueLen runes. When a parameter appears more than once
// the first non-empty occurrence counts (Plausible keeps the last; the first
// agrees with norm.ParsePage's Campaign). An empty value counts as absent.
//
// Only the first MaxQueryBytes bytes of rawQuery are read, so the work is
// bounded whatever the input. The returned strings may share memory with
// rawQuery and refHost.
func ParseLanding(rawQuery, refHost string) Landing {
	l := Landing{RefHost: refHost}
	q := rawQuery
	if len(q) > MaxQueryBytes {
		q = q[:MaxQueryBytes]
	}
	for q != "" {
		var seg string
		seg, q, _ = strings.Cut(q, "&")
		key, value, _ := strings.Cut(seg, "=")
		if key == "" || len(key) > 3*len("utm_campaign") {
			continue // no parameter we read has a longer name, even fully escaped
		}
		key = decode(key)
		var dst *string
		switch key {
		case "utm_source":
			dst = &l.UTMSource
		case "utm_medium":
			dst = &l.UTMMedium
		case "utm_campaign":
			dst = &l.UTMCampaign
		case "utm_content":
			dst = &l.UTMContent
		case "utm_term":
			dst = &l.UTMTerm
		case "source":
			dst = &l.SourceParam
		case "ref":
			dst = &l.RefParam
		default:
			for _, p := range clickParams {
				if key == p.name {
					l.ClickIDs |= p.id
					break
				}
			}
			continue
		}
		if *dst == "" {
			*dst = cleanValue(value)
		}
	}
	return l
}

// cleanValue decodes a raw query value and makes it safe to store.
func cleanValue(v string) string {
	// Cut before decoding too: a value of escapes decodes to at most a
	// third of its length, so nothing that could survive the cut is lost.
	if limit := 3 * utf8.UTFMax * MaxValueLen; len(v) > limit {
		v = v[:limit]
	}
	v = decode(v)
	if !cleanText(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
		v = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return -1
			}
			return r
		}, v)
	}
	return cutRunes(v, MaxValueLen)
}

// decode URL-decodes a query key or value ('+' is a space). A malformed
// escape leaves s as sent. It allocates only when there is something to decode.
func decode(s string) string {
	plus, pct := false, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '+':
			plus = true
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return s
			}
			pct = true
		}
	}
	if !plus && !pct {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b = append(b, ' ')
		case '%':
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// cleanText reports whether s is valid UTF-8 without ASCII control characters.
func cleanText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		} else if c >= utf8.RuneSelf {
			return utf8.ValidString(s[i:]) && !hasControl(s[i:])
		}
	}
	return true
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}

// cutRunes cuts s after n runes.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

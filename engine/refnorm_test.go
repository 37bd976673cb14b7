package engine_test

import (
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The reference normalisers: SPEC §2.3 and §2.4 written again, the plain way,
// for the inputs the model tests generate. They must not call the engine's
// own (engine/internal/norm), so that a bug there is caught by the model.

// refPage is the page of a URL (a full http(s) URL or a path): path plus
// "?query" minus the excluded parameters, fragment dropped, "/" for an empty
// path, cut at 255 characters; and utm_campaign read before the exclusion.
// ok is false for what is not a page URL.
func refPage(raw string, rules refRules) (page, campaign string, ok bool) {
	rest := raw
	switch {
	case strings.HasPrefix(raw, "/"):
	case strings.HasPrefix(strings.ToLower(raw), "https://"), strings.HasPrefix(strings.ToLower(raw), "http://"):
		rest = raw[strings.Index(raw, "//")+2:]
		i := strings.IndexAny(rest, "/?#")
		if i < 0 {
			i = len(rest)
		}
		if i == 0 {
			return "", "", false
		}
		rest = rest[i:]
	default:
		return "", "", false
	}
	rest, _, _ = strings.Cut(rest, "#")
	path, query, _ := strings.Cut(rest, "?")
	if path == "" {
		path = "/"
	}
	var kept []string
	for _, seg := range strings.Split(query, "&") {
		if seg == "" {
			continue
		}
		k, v, _ := strings.Cut(seg, "=")
		k = refUnescape(k)
		if k == "utm_campaign" && campaign == "" {
			campaign = refUnescape(v)
		}
		if !rules.dropQuery && !rules.params[k] {
			kept = append(kept, seg)
		}
	}
	page = path
	if len(kept) > 0 {
		page += "?" + strings.Join(kept, "&")
	}
	if utf8.RuneCountInString(page) > 255 {
		page = string([]rune(page)[:255])
	}
	return page, campaign, true
}

func refUnescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// refRules is a website's exclude_params: one name per line, "&" drops the
// whole query.
type refRules struct {
	params    map[string]bool
	dropQuery bool
}

func parseRefRules(s string) refRules {
	r := refRules{params: map[string]bool{}}
	for _, line := range strings.Split(s, "\n") {
		switch line = strings.TrimSpace(line); line {
		case "":
		case "&":
			r.dropQuery = true
		default:
			r.params[line] = true
		}
	}
	return r
}

// refReferrerHost is the referring host as sent (SPEC §2.3 referrer):
// lower-cased, "www." kept, without port; "" for no referrer.
func refReferrerHost(ref string) string {
	_, rest, ok := strings.Cut(ref, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	host, _, _ := strings.Cut(rest, ":")
	return strings.ToLower(host)
}

// refSiteHost drops a leading "www." (SPEC §2.2: the host compared with the
// website's domain), only when a dotted name remains.
func refSiteHost(h string) string {
	if rest, ok := strings.CutPrefix(h, "www."); ok && strings.Contains(rest, ".") {
		return rest
	}
	return h
}

// refLanguage is the 2-letter primary language of an Accept-Language header,
// lower case.
func refLanguage(h string) string {
	first, _, _ := strings.Cut(h, ",")
	first, _, _ = strings.Cut(first, ";")
	primary, _, _ := strings.Cut(strings.TrimSpace(first), "-")
	if len(primary) != 2 {
		return ""
	}
	return strings.ToLower(primary)
}

// refResolution keeps "WIDTHxHEIGHT" of positive numbers without leading
// zeros, else "".
func refResolution(s string) string {
	w, h, ok := strings.Cut(s, "x")
	side := func(x string) bool {
		n, err := strconv.Atoi(x)
		return err == nil && n > 0 && len(x) <= 5 && x[0] != '0'
	}
	if !ok || !side(w) || !side(h) {
		return ""
	}
	return s
}

// refEventRow is the event statistic's value "name:value:unit" (SPEC §2.4):
// ':' becomes a space, the value is kept when it is a decimal number > 0 of
// at most 10 characters (a JSON number in shortest form, a string as sent).
// ok is false for an empty name.
func refEventRow(name string, value []byte, unit string) (string, bool) {
	clean := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, ":", " ")) }
	name = clean(name)
	if name == "" {
		return "", false
	}
	v := string(value)
	if s, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
		v = s
	} else if f, err := strconv.ParseFloat(v, 64); err == nil {
		v = strconv.FormatFloat(f, 'f', -1, 64)
	} else {
		v = ""
	}
	if f, err := strconv.ParseFloat(v, 64); err != nil || !(f > 0) || len(v) > 10 || strings.ContainsAny(v, "eE+-") {
		v = ""
	}
	unit = clean(unit)
	if utf8.RuneCountInString(unit) > 32 {
		unit = ""
	}
	return name + ":" + v + ":" + unit, true
}

// refIPSet is a website's exclude_ips: one IP or CIDR a line.
type refIPSet []netip.Prefix

func parseRefIPSet(s string) refIPSet {
	var set refIPSet
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if p, err := netip.ParsePrefix(line); err == nil {
			set = append(set, p.Masked())
		} else if a, err := netip.ParseAddr(line); err == nil {
			set = append(set, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return set
}

func (s refIPSet) contains(a netip.Addr) bool {
	for _, p := range s {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// civil is a local calendar day, as days since 1970-01-01; the model's own
// date type (buckets.Date is the engine's).
type civil int32

func civilOf(t time.Time) civil {
	y, m, d := t.Date()
	return civil(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
}

func (c civil) time() time.Time { return time.Unix(int64(c)*86400, 0).UTC() }

func (c civil) String() string { return c.time().Format("2006-01-02") }

// periodStart is the first day of the salt period holding c (SPEC §2.2:
// local midnight, Monday, the 1st).
func (c civil) periodStart(period string) civil {
	t := c.time()
	switch period {
	case "week":
		return c - civil((int(t.Weekday())+6)%7)
	case "month":
		return c - civil(t.Day()-1)
	}
	return c
}

package enrich

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/ua"
)

// maxSegValue bounds the strings the segments store keeps of a hit
// (paths, referrers, UTM values), in characters.
const maxSegValue = 255

// seg fills the segment fields of r (SPEC §10.1) from h. pg is h's
// parsed page; r's day-bucket fields are filled (r.RefHost is read).
func seg(h *Hit, pg norm.Page, r *record.Hit, ag ua.Agent, loc geo.Location) {
	f := &r.Seg
	f.Scroll = -1
	f.Path = pg.Path()
	f.Host = pg.Host
	f.Props = boundProps(h.Props)
	if h.Event != nil {
		f.NonInteractive = h.Event.NonInteractive
	}
	if e := h.Engagement; e != nil {
		f.Engagement = true
		f.EngagedMs = min(max(e.EngagedMs, 0), 24*3600*1000)
		if e.ScrollDepth >= 0 {
			f.Scroll = int8(min(e.ScrollDepth, 100))
		}
	}
	if f.Engagement {
		return
	}
	f.RefURL = referrerURL(h.Referrer, r.RefHost)
	f.Landing = landingParams(h.URL)
	f.BrowserVer, f.OSVer = ag.BrowserVersion, ag.OSVersion
	f.Region, f.RegionName, f.CityName, f.CityID = loc.Region, loc.RegionName, loc.CityName, loc.CityID
}

// boundProps keeps the custom properties SPEC §2.4 allows: at most
// MaxProps, keys of 1 to MaxPropKey and values of at most MaxPropValue
// characters, valid UTF-8; the first of a repeated key.
func boundProps(in []record.Prop) []record.Prop {
	var out []record.Prop
	for _, p := range in {
		if len(out) == record.MaxProps {
			break
		}
		if p.Key == "" || utf8.RuneCountInString(p.Key) > record.MaxPropKey || utf8.RuneCountInString(p.Value) > record.MaxPropValue ||
			!utf8.ValidString(p.Key) || !utf8.ValidString(p.Value) {
			continue
		}
		dup := false
		for _, o := range out {
			if o.Key == p.Key {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, record.Prop{Key: strings.Clone(p.Key), Value: strings.Clone(p.Value)})
		}
	}
	return out
}

// referrerURL is the referrer ref as visit:referrer shows it: host without
// "www." plus the path, no scheme, query or fragment, no trailing "/";
// "" for none. host is norm.ReferrerHost(ref).
func referrerURL(ref, host string) string {
	if host == "" {
		return ""
	}
	host = strings.TrimPrefix(host, "www.")
	rest := ref
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	path := ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		path = rest[i:]
		if j := strings.IndexAny(path, "?#"); j >= 0 {
			path = path[:j]
		}
	}
	path = strings.TrimRight(path, "/")
	return cutRunes(sanitize(host+path), maxSegValue)
}

// landingKeys are the landing URL parameters that decide a visit's source,
// channel and UTM dimensions; clickIDKeys the ad click ids among them
// (their values do not matter, only that they are there).
var (
	landingKeys = []string{"utm_source", "utm_medium", "utm_campaign", "utm_content", "utm_term", "source", "ref"}
	clickIDKeys = []string{"gclid", "gbraid", "wbraid", "dclid", "msclkid", "fbclid", "ttclid", "twclid", "li_fat_id", "yclid", "rdt_cid", "sccid", "epik"}
)

// landingParams extracts from a page URL the parameters in landingKeys and
// clickIDKeys, re-encoded as a query string in that order ("" when none).
func landingParams(raw string) string {
	_, q, ok := strings.Cut(raw, "?")
	if !ok {
		return ""
	}
	q, _, _ = strings.Cut(q, "#")
	if len(q) > 16<<10 {
		q = q[:16<<10]
	}
	vals, _ := url.ParseQuery(q) // a bad pair is skipped, the others kept
	var b url.Values
	for _, k := range landingKeys {
		if v := vals.Get(k); v != "" {
			if b == nil {
				b = url.Values{}
			}
			b.Set(k, cutRunes(sanitize(v), maxSegValue))
		}
	}
	for _, k := range clickIDKeys {
		if vals.Has(k) {
			if b == nil {
				b = url.Values{}
			}
			b.Set(k, "1")
		}
	}
	if b == nil {
		return ""
	}
	return b.Encode()
}

// sanitize drops control characters and replaces invalid UTF-8. Printable
// ASCII, most of what it sees, comes back as it is, without allocating.
func sanitize(s string) string {
	printable := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			printable = false
			break
		}
	}
	if printable {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// cutRunes cuts s to at most n characters.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

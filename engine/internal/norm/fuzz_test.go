package norm

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func FuzzParsePage(f *testing.F) {
	for _, seed := range []struct{ raw, exclude string }{
		{"https://example.com/a?b=1#x", ""},
		{"/a?b=1", ""},
		{"/?utm_source=x&utm_campaign=y&id=1", "utm_source\nutm_campaign"},
		{"/p?a=1&&sid=1&", "sid"},
		{"/p?a=1", "&"},
		{"HTTPS://u:p@WWW.Bücher.DE:8080?x", ""},
		{"http://[::1]:80/x?utm_campaign=%E2%82%AC+x", ""},
		{"/" + strings.Repeat("ü", 260) + "?a=1", ""},
		{"/" + strings.Repeat("a", 240) + "?a=1&utm_sourcex=1", "utm_source"},
		{"//example.com/a", ""},
		{"/a?s%69d=1", "sid"},
	} {
		f.Add(seed.raw, seed.exclude)
	}
	f.Fuzz(func(t *testing.T, raw, exclude string) {
		if got, want := validText(raw), validTextSlow(raw); got != want {
			t.Fatalf("validText(%q) = %v, want %v", raw, got, want)
		}
		rules := ParsePageRules(exclude)
		p, ok := ParsePage(raw, rules)
		if !ok {
			if p != (Page{}) {
				t.Fatalf("ParsePage(%q) not ok but returned %+v", raw, p)
			}
			return
		}
		if !utf8.ValidString(p.Page) || !utf8.ValidString(p.Campaign) || !utf8.ValidString(p.Host) {
			t.Fatalf("ParsePage(%q) = %+v: invalid UTF-8", raw, p)
		}
		if n := utf8.RuneCountInString(p.Page); n > MaxPageLen {
			t.Fatalf("ParsePage(%q): page of %d runes", raw, n)
		}
		if n := utf8.RuneCountInString(p.Campaign); n > MaxCampaignLen {
			t.Fatalf("ParsePage(%q): campaign of %d runes", raw, n)
		}
		if _, q, hasQuery := strings.Cut(p.Page, "?"); !strings.HasPrefix(p.Page, "/") || strings.Contains(p.Page, "#") || hasQuery && q == "" {
			t.Fatalf("ParsePage(%q): page %q", raw, p.Page)
		}
		if rules.dropQuery && strings.Contains(p.Page, "?") {
			t.Fatalf("ParsePage(%q): query kept despite &: %q", raw, p.Page)
		}
		again, ok := ParsePage(p.Page, rules)
		if !ok || again.Page != p.Page {
			t.Fatalf("ParsePage(%q) = %q, re-parsed: %q, %v", raw, p.Page, again.Page, ok)
		}
		if strings.HasPrefix(raw, "/") && p.Host != "" {
			t.Fatalf("ParsePage(%q): host %q for a path", raw, p.Host)
		}
	})
}

func FuzzDomain(f *testing.F) {
	for _, seed := range []string{
		"example.com", "https://www.Example.com/", "Bücher.de", "example.com/path", "192.168.0.1",
		"256.1.1.1", "www.www.example.com", "www.com", "localhost", "faß.de", "xn--bcher-kva.de",
		"ab--cd.com", "example.com.", "www.", "ｗｗｗ.example.com", "http://ＷＷＷ.example.com",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := Domain(s)
		if !ok {
			if d != "" {
				t.Fatalf("Domain(%q) = %q, false", s, d)
			}
			return
		}
		if !validHostName(d) {
			t.Fatalf("Domain(%q) = %q: not a valid host name", s, d)
		}
		if again, ok := Domain(d); !ok || again != d {
			t.Fatalf("Domain(%q) = %q, Domain(%q) = %q, %v", s, d, d, again, ok)
		}
		if h := Host(d); h != d {
			t.Fatalf("Domain(%q) = %q, Host(%q) = %q", s, d, d, h)
		}
		if h := Host(strings.ToUpper(d) + ":443"); h != d {
			t.Fatalf("Domain(%q) = %q, Host(upper:443) = %q", s, d, h)
		}
	})
}

func FuzzReferrerHost(f *testing.F) {
	for _, seed := range []string{
		"https://www.google.com/search?q=x", "android-app://com.google.android.gm/", "http://[2001:db8::1]:8080/",
		"https://u:p@Bücher.de.:1/", "about:blank", "", "https://%62%C3%BCcher.de/", "x://a_b/", "https://exa mple.com/",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		h := ReferrerHost(ref)
		if h == "" {
			return
		}
		if len(h) > MaxHostLen || h != strings.ToLower(h) || strings.HasSuffix(h, ".") {
			t.Fatalf("ReferrerHost(%q) = %q", ref, h)
		}
		for i := 0; i < len(h); i++ {
			c := h[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._:", c) >= 0) {
				t.Fatalf("ReferrerHost(%q) = %q: byte %q", ref, h, c)
			}
		}
		again := "https://" + h + "/"
		if strings.Contains(h, ":") {
			again = "https://[" + h + "]/"
		}
		if h2 := ReferrerHost(again); h2 != h {
			t.Fatalf("ReferrerHost(%q) = %q, ReferrerHost(%q) = %q", ref, h, again, h2)
		}
	})
}

func FuzzIPSet(f *testing.F) {
	for _, seed := range []string{
		"10.0.0.1\n192.168.0.0/16\n2001:db8::/32\n::1",
		"::ffff:10.0.0.0/104\n\n  0.0.0.0/0 \r\n",
		"10.1.2.3/8", "fe80::1%eth0", "10.0.0.300", "::/0", "2001:db8::/31\n2001:db8:8000::/33\n10.0.0.0/1",
	} {
		f.Add(seed, []byte{10, 1, 2, 3})
		f.Add(seed, []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
		f.Add(seed, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1})
	}
	f.Fuzz(func(t *testing.T, s string, ip []byte) {
		set, err := ParseIPSet(s)
		addr, addrOK := netip.AddrFromSlice(ip)
		if addrOK {
			set.Contains(addr) // must not panic
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("ParseIPSet(%q): %v", s, err)
			}
			return
		}
		// Reference: a linear scan over the entries as netip.Prefix.
		var ref []netip.Prefix
		n := 0
		for _, line := range strings.Split(s, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			n++
			var addr netip.Addr
			if p, err := netip.ParsePrefix(line); err == nil {
				addr = p.Addr()
			} else {
				addr = netip.MustParseAddr(line)
			}
			if !set.Contains(addr) {
				t.Fatalf("ParseIPSet(%q) does not contain %s of line %q", s, addr, line)
			}
			p, _ := parseIPLine(line)
			ref = append(ref, p)
		}
		if addrOK {
			want := false
			for _, p := range ref {
				want = want || p.Contains(addr.Unmap())
			}
			if got := set.Contains(addr); got != want {
				t.Fatalf("ParseIPSet(%q).Contains(%s) = %v, linear scan %v", s, addr, got, want)
			}
		}
		if set.Empty() != (n == 0) || set.Len() > n {
			t.Fatalf("ParseIPSet(%q): Empty %v, Len %d, %d lines", s, set.Empty(), set.Len(), n)
		}
	})
}

func FuzzLanguage(f *testing.F) {
	for _, seed := range []string{"en-US,en;q=0.9", "de", "*", "es-419", "zh-Hant-TW", "en;q=0.5, de;q=0.9", "iw", "garbage", "x-y"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, h string) {
		got := Language(h)
		if got != "" && (len(got) != 2 || !isLetter(got[0]) || !isLetter(got[1]) || got != strings.ToLower(got)) {
			t.Fatalf("Language(%q) = %q", h, got)
		}
		if slow := languageSlow(h); got != slow {
			t.Fatalf("Language(%q) = %q, full parse %q", h, got, slow)
		}
	})
}

func FuzzEventValue(f *testing.F) {
	for _, seed := range []string{`5`, `5.50`, `1e3`, `"5"`, `-1`, `"abc"`, `null`, `12345678901`, `0.00000001`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v := EventValue(json.RawMessage(raw))
		if v != "" && !decimalValue(v) {
			t.Fatalf("EventValue(%s) = %q", raw, v)
		}
	})
}

// FuzzEventText checks that event names and units never keep a control
// character (C0, DEL, C1) or a bidi control, which would reach CSV exports
// and pages raw.
func FuzzEventText(f *testing.F) {
	for _, seed := range []string{"Signup", "Sign\x00up", "a\tb\r\n", "\u202Egnp.exe", "\u0085", "bad\xffutf8", "x\u2066y"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, ok := EventName(s)
		unit := EventUnit(s)
		for _, out := range []string{name, unit} {
			if !utf8.ValidString(out) {
				t.Fatalf("EventName/EventUnit(%q) = %q: invalid UTF-8", s, out)
			}
			for _, r := range out {
				if unicode.Is(unicode.Cc, r) || strings.ContainsRune(bidiControls, r) {
					t.Fatalf("EventName/EventUnit(%q) = %q: keeps %U", s, out, r)
				}
			}
		}
		if ok != (name != "") {
			t.Fatalf("EventName(%q) = %q, %v", s, name, ok)
		}
	})
}

// bidiControls are Unicode's bidirectional formatting characters (UAX #9):
// ALM, LRM, RLM, LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI.
const bidiControls = "\u061C\u200E\u200F\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069"

// validTextSlow is the obvious definition of validText.
func validTextSlow(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return utf8.ValidString(s)
}

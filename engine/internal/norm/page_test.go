package norm

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestParsePage(t *testing.T) {
	long := "/" + strings.Repeat("a", 300)
	multibyte := "/" + strings.Repeat("ü", 300) // 2 bytes a rune
	tests := []struct {
		name    string
		raw     string
		exclude string
		want    Page
		wantOK  bool
	}{
		{name: "full URL", raw: "https://example.com/a?b=1#x", want: Page{Host: "example.com", Page: "/a?b=1", Fragment: "x"}, wantOK: true},
		{name: "path", raw: "/a?b=1", want: Page{Page: "/a?b=1"}, wantOK: true},
		{name: "path with fragment", raw: "/a#top", want: Page{Page: "/a", Fragment: "top"}, wantOK: true},
		{name: "root", raw: "/", want: Page{Page: "/"}, wantOK: true},
		{name: "empty path", raw: "https://example.com", want: Page{Host: "example.com", Page: "/"}, wantOK: true},
		{name: "empty path with query", raw: "https://example.com?a=1", want: Page{Host: "example.com", Page: "/?a=1"}, wantOK: true},
		{name: "empty path with fragment", raw: "https://example.com#x", want: Page{Host: "example.com", Page: "/", Fragment: "x"}, wantOK: true},
		{name: "host normalised", raw: "HTTPS://WWW.Example.COM:8443/A/B", want: Page{Host: "example.com", Page: "/A/B"}, wantOK: true},
		{name: "IDN host", raw: "http://bücher.de/katalog", want: Page{Host: "xn--bcher-kva.de", Page: "/katalog"}, wantOK: true},
		{name: "user info", raw: "https://u:p@example.com/", want: Page{Host: "example.com", Page: "/"}, wantOK: true},
		{name: "IPv6 host", raw: "http://[::1]:8080/x", want: Page{Host: "::1", Page: "/x"}, wantOK: true},
		{name: "invalid host name keeps page", raw: "https://my_site.com/x", want: Page{Page: "/x"}, wantOK: true},
		{name: "empty query dropped", raw: "/a?", want: Page{Page: "/a"}, wantOK: true},
		{name: "empty query and fragment", raw: "/a?#x", want: Page{Page: "/a", Fragment: "x"}, wantOK: true},
		{name: "query order and encoding kept", raw: "/s?z=1&a=%41+b&m=%e2%82%ac&a=2", want: Page{Page: "/s?z=1&a=%41+b&m=%e2%82%ac&a=2"}, wantOK: true},
		{name: "second question mark kept", raw: "/a?b=?c", want: Page{Page: "/a?b=?c"}, wantOK: true},
		{name: "path as sent", raw: "/a%2Fb/../c//d", want: Page{Page: "/a%2Fb/../c//d"}, wantOK: true},
		{name: "non-ASCII path kept", raw: "/über uns", want: Page{Page: "/über uns"}, wantOK: true},
		{name: "double slash is a path", raw: "//example.com/a", want: Page{Page: "//example.com/a"}, wantOK: true},

		{name: "utm kept unless excluded", raw: "/?utm_source=x&utm_campaign=y&id=1", want: Page{Page: "/?utm_source=x&utm_campaign=y&id=1", Campaign: "y"}, wantOK: true},
		{name: "excluded param", raw: "/p?utm_source=x&id=1&utm_medium=m", exclude: "utm_source\nutm_medium", want: Page{Page: "/p?id=1"}, wantOK: true},
		{name: "excluded repeated param", raw: "/p?a=1&sid=2&b=3&sid=4", exclude: "sid", want: Page{Page: "/p?a=1&b=3"}, wantOK: true},
		{name: "excluded key without value", raw: "/p?debug&a=1", exclude: "debug", want: Page{Page: "/p?a=1"}, wantOK: true},
		{name: "all params excluded", raw: "/p?sid=1", exclude: "sid", want: Page{Page: "/p"}, wantOK: true},
		{name: "excluded matches decoded key", raw: "/p?s%69d=1&s+id=2&a=1", exclude: "sid\ns id", want: Page{Page: "/p?a=1"}, wantOK: true},
		{name: "exclusion is case-sensitive", raw: "/p?SID=1", exclude: "sid", want: Page{Page: "/p?SID=1"}, wantOK: true},
		{name: "exclusion keeps encoding of others", raw: "/p?q=a%20b&sid=1&r=%7E", exclude: "sid", want: Page{Page: "/p?q=a%20b&r=%7E"}, wantOK: true},
		{name: "exclusion drops empty segments", raw: "/p?a=1&&sid=1&", exclude: "sid", want: Page{Page: "/p?a=1"}, wantOK: true},
		{name: "no exclusion keeps empty segments", raw: "/p?a=1&&b=2&", exclude: "sid", want: Page{Page: "/p?a=1&&b=2&"}, wantOK: true},
		{name: "rules with blank lines and spaces", raw: "/p?a=1&b=2&c=3", exclude: "\r\n  a \r\n\n\tc\n", want: Page{Page: "/p?b=2"}, wantOK: true},
		{name: "ampersand line removes query", raw: "/p?a=1&b=2#f", exclude: "&", want: Page{Page: "/p", Fragment: "f"}, wantOK: true},
		{name: "ampersand line on full URL", raw: "https://example.com?a=1", exclude: "x\n&", want: Page{Host: "example.com", Page: "/"}, wantOK: true},
		{name: "campaign read before exclusion", raw: "/p?utm_campaign=spring&x=1", exclude: "utm_campaign", want: Page{Page: "/p?x=1", Campaign: "spring"}, wantOK: true},
		{name: "campaign read before ampersand", raw: "/p?utm_campaign=spring", exclude: "&", want: Page{Page: "/p", Campaign: "spring"}, wantOK: true},
		{name: "campaign decoded", raw: "/?utm_campaign=Black+Friday%20%E2%82%AC", want: Page{Page: "/?utm_campaign=Black+Friday%20%E2%82%AC", Campaign: "Black Friday €"}, wantOK: true},
		{name: "campaign first occurrence", raw: "/?utm_campaign=a&utm_campaign=b", want: Page{Page: "/?utm_campaign=a&utm_campaign=b", Campaign: "a"}, wantOK: true},
		{name: "campaign encoded key", raw: "/?utm%5Fcampaign=a", want: Page{Page: "/?utm%5Fcampaign=a", Campaign: "a"}, wantOK: true},
		{name: "campaign malformed escape as sent", raw: "/?utm_campaign=50%", want: Page{Page: "/?utm_campaign=50%", Campaign: "50%"}, wantOK: true},
		{name: "campaign control and bad UTF-8 cleaned", raw: "/?utm_campaign=a%00b%FF", want: Page{Page: "/?utm_campaign=a%00b%FF", Campaign: "ab\uFFFD"}, wantOK: true},
		{name: "campaign empty", raw: "/?utm_campaign=", want: Page{Page: "/?utm_campaign="}, wantOK: true},
		{name: "campaign not in fragment", raw: "/#?utm_campaign=x", want: Page{Page: "/", Fragment: "?utm_campaign=x"}, wantOK: true},
		{name: "campaign not utm_campaigns", raw: "/?utm_campaigns=x", want: Page{Page: "/?utm_campaigns=x"}, wantOK: true},
		{name: "campaign cut", raw: "/?utm_campaign=" + strings.Repeat("é", 300), want: Page{Page: ("/?utm_campaign=" + strings.Repeat("é", 300))[:len("/?utm_campaign=")+2*240], Campaign: strings.Repeat("é", 255)}, wantOK: true},

		{name: "cut at 255 runes", raw: long, want: Page{Page: long[:255]}, wantOK: true},
		{name: "exactly 255 runes", raw: long[:255], want: Page{Page: long[:255]}, wantOK: true},
		{name: "cut at 255 multibyte runes", raw: multibyte, want: Page{Page: multibyte[:1+254*2]}, wantOK: true},
		{name: "cut after exclusion", raw: "/?sid=" + strings.Repeat("x", 300) + "&a=1", exclude: "sid", want: Page{Page: "/?a=1"}, wantOK: true},
		{name: "cut leaving bare question mark", raw: long[:254] + "?a=1", want: Page{Page: long[:254]}, wantOK: true},
		{name: "cut making an excluded key", raw: long[:240] + "?a=1&utm_sourcex=1", exclude: "utm_source", want: Page{Page: long[:240] + "?a=1"}, wantOK: true},
		{name: "cut making an excluded only key", raw: long[:244] + "?utm_sourcex=1", exclude: "utm_source", want: Page{Page: long[:244]}, wantOK: true},

		{name: "empty", raw: "", wantOK: false},
		{name: "relative", raw: "a/b", wantOK: false},
		{name: "query only", raw: "?a=1", wantOK: false},
		{name: "leading space", raw: " /a", wantOK: false},
		{name: "control character", raw: "/a\nb", wantOK: false},
		{name: "tab", raw: "https://example.com/\t", wantOK: false},
		{name: "DEL", raw: "/a\x7f", wantOK: false},
		{name: "invalid UTF-8", raw: "/a\xffb", wantOK: false},
		{name: "other scheme", raw: "ftp://example.com/a", wantOK: false},
		{name: "javascript", raw: "javascript:alert(1)", wantOK: false},
		{name: "no slashes", raw: "https:example.com/a", wantOK: false},
		{name: "one slash", raw: "https:/example.com/a", wantOK: false},
		{name: "empty host", raw: "https:///a", wantOK: false},
		{name: "empty host with user info", raw: "https://u@/a", wantOK: false},
		{name: "only port", raw: "https://:80/a", wantOK: false},
		{name: "bad port", raw: "https://example.com:80a/", wantOK: false},
		{name: "space in host", raw: "https://exa mple.com/", wantOK: false},
		{name: "bad IPv6", raw: "http://[::1/", wantOK: false},
		{name: "host without scheme", raw: "example.com/a", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParsePage(tt.raw, ParsePageRules(tt.exclude))
			if ok != tt.wantOK {
				t.Fatalf("ParsePage(%q) ok = %v, want %v", tt.raw, ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParsePage(%q) mismatch (-want +got):\n%s", tt.raw, diff)
			}
			if ok {
				again, ok := ParsePage(got.Page, ParsePageRules(tt.exclude))
				if diff := cmp.Diff(got.Page, again.Page); !ok || diff != "" {
					t.Errorf("ParsePage(%q) not idempotent (ok %v); mismatch (-want +got):\n%s", got.Page, ok, diff)
				}
				if n := utf8.RuneCountInString(got.Page); n > MaxPageLen {
					t.Errorf("page has %d runes", n)
				}
			}
		})
	}
}

func TestParsePageRules(t *testing.T) {
	tests := []struct {
		in        string
		want      []string
		dropQuery bool
	}{
		{in: "", want: nil},
		{in: "\n \r\n", want: nil},
		{in: "a\nb\r\na\n", want: []string{"a", "b"}},
		{in: "&\nsid", want: []string{"sid"}, dropQuery: true},
		{in: "p0\np1\np2\np3\np4\np5\np6\np7\np8\np9", want: []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r := ParsePageRules(tt.in)
			if diff := cmp.Diff(tt.want, r.names); diff != "" {
				t.Errorf("names mismatch (-want +got):\n%s", diff)
			}
			if r.dropQuery != tt.dropQuery {
				t.Errorf("dropQuery = %v, want %v", r.dropQuery, tt.dropQuery)
			}
			for _, n := range tt.want {
				if !r.excludes(n) {
					t.Errorf("%q not excluded", n)
				}
			}
			if r.excludes("other") {
				t.Errorf("other excluded")
			}
			if got, want := r.Empty(), len(tt.want) == 0 && !tt.dropQuery; got != want {
				t.Errorf("Empty() = %v, want %v", got, want)
			}
		})
	}
}

func TestValidText(t *testing.T) {
	base := "/abcdefghijklmnopqrstuvwxyz0123456789"
	for i := range len(base) {
		for _, c := range []string{"\x00", "\x1f", "\x7f", "\x80", "\xff", " ", "~", "ü", "\xc3"} {
			s := base[:i] + c + base[i:]
			if got, want := validText(s), validTextSlow(s); got != want {
				t.Errorf("validText(%q) = %v, want %v", s, got, want)
			}
		}
	}
}

// TestKeepFragment checks hash-based routing's page (SPEC §2.4): the
// fragment appended to the page ("/app/#/settings"), and Path without the
// query but with the fragment.
func TestKeepFragment(t *testing.T) {
	long := "/" + strings.Repeat("a", 250)
	tests := []struct {
		raw, page, path, plainPath string
	}{
		{raw: "https://example.com/app/#/settings", page: "/app/#/settings", path: "/app/#/settings", plainPath: "/app/"},
		{raw: "https://example.com/app/?x=1#/a", page: "/app/?x=1#/a", path: "/app/#/a", plainPath: "/app/"},
		{raw: "https://example.com/app#/a?b=1", page: "/app#/a?b=1", path: "/app#/a?b=1", plainPath: "/app"},
		{raw: "https://example.com/app/#", page: "/app/", path: "/app/", plainPath: "/app/"},
		{raw: "https://example.com/app/", page: "/app/", path: "/app/", plainPath: "/app/"},
		{raw: "https://example.com" + long + "#/abcdefgh", page: (long + "#/abcdefgh")[:255], path: (long + "#/abcdefgh")[:255], plainPath: long},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			p, ok := ParsePage(tt.raw, PageRules{})
			if !ok {
				t.Fatal("not a page")
			}
			if got := p.Path(); got != tt.plainPath {
				t.Errorf("Path() without the fragment = %q, want %q", got, tt.plainPath)
			}
			k := p.KeepFragment()
			if k.Page != tt.page || k.Path() != tt.path {
				t.Errorf("KeepFragment: page %q path %q, want %q %q", k.Page, k.Path(), tt.page, tt.path)
			}
		})
	}
}

package norm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDomain(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	tests := []struct {
		name   string
		in     string
		want   string
		wantOK bool
	}{
		{name: "plain", in: "example.com", want: "example.com", wantOK: true},
		{name: "scheme www slash case", in: "https://www.Example.com/", want: "example.com", wantOK: true},
		{name: "http scheme", in: "http://example.com", want: "example.com", wantOK: true},
		{name: "upper-case scheme", in: "HTTPS://EXAMPLE.COM", want: "example.com", wantOK: true},
		{name: "spaces trimmed", in: "  example.com \t", want: "example.com", wantOK: true},
		{name: "subdomain kept", in: "blog.example.com", want: "blog.example.com", wantOK: true},
		{name: "www subdomain only stripped once at front", in: "www.blog.www.example.com", want: "blog.www.example.com", wantOK: true},
		{name: "repeated www", in: "www.www.example.com", want: "example.com", wantOK: true},
		{name: "www.com kept", in: "www.com", want: "www.com", wantOK: true},
		{name: "www.com with scheme", in: "https://www.com/", want: "www.com", wantOK: true},
		{name: "wwwexample not stripped", in: "wwwexample.com", want: "wwwexample.com", wantOK: true},
		{name: "trailing dot", in: "example.com.", want: "example.com", wantOK: true},
		{name: "IDN", in: "Bücher.de", want: "xn--bcher-kva.de", wantOK: true},
		{name: "IDN with scheme and www", in: "https://www.bücher.de/", want: "xn--bcher-kva.de", wantOK: true},
		{name: "punycode kept", in: "xn--bcher-kva.de", want: "xn--bcher-kva.de", wantOK: true},
		{name: "IDN sharp s non-transitional", in: "faß.de", want: "xn--fa-hia.de", wantOK: true},
		{name: "IDN fullwidth dot", in: "bücher。de"}, // mapped by lookups: refused at registration
		{name: "circled letters", in: "ⓖⓞⓞⓖⓛⓔ.com"},
		{name: "fullwidth letters", in: "ｇｏｏｇｌｅ.com"},
		{name: "decomposed accent", in: "bu\u0308cher.de"},
		{name: "soft hyphen", in: "goo\u00adgle.com"},
		{name: "IDN TLD", in: "例え.テスト", want: "xn--r8jz45g.xn--zckzah", wantOK: true},
		{name: "IPv4", in: "192.168.1.10", want: "192.168.1.10", wantOK: true},
		{name: "IPv4 with scheme", in: "http://10.0.0.1/", want: "10.0.0.1", wantOK: true},
		{name: "localhost", in: "localhost", want: "localhost", wantOK: true},
		{name: "digits inside", in: "123.example.com", want: "123.example.com", wantOK: true},
		{name: "hyphen inside", in: "my-site.example", want: "my-site.example", wantOK: true},
		{name: "label of 63", in: label63 + ".com", want: label63 + ".com", wantOK: true},
		{name: "255 chars", in: strings.Repeat(label63+".", 3) + strings.Repeat("b", 63), want: strings.Repeat(label63+".", 3) + strings.Repeat("b", 63), wantOK: true},

		{name: "empty", in: "", wantOK: false},
		{name: "blank", in: "   ", wantOK: false},
		{name: "only scheme", in: "https://", wantOK: false},
		{name: "only slash", in: "/", wantOK: false},
		{name: "path", in: "example.com/path", wantOK: false},
		{name: "path with scheme", in: "https://example.com/path/", wantOK: false},
		{name: "two trailing slashes", in: "example.com//", wantOK: false},
		{name: "query", in: "example.com?a=1", wantOK: false},
		{name: "port", in: "example.com:8080", wantOK: false},
		{name: "user info", in: "user@example.com", wantOK: false},
		{name: "other scheme", in: "ftp://example.com", wantOK: false},
		{name: "IPv4 out of range", in: "256.1.1.1", wantOK: false},
		{name: "IPv4 three parts", in: "1.2.3", wantOK: false},
		{name: "IPv4 leading zero", in: "01.2.3.4", wantOK: false},
		{name: "numeric TLD", in: "example.123", wantOK: false},
		{name: "single number", in: "12345", wantOK: false},
		{name: "IPv6", in: "::1", wantOK: false},
		{name: "IPv6 bracketed", in: "[::1]", wantOK: false},
		{name: "label of 64", in: label63 + "a.com", wantOK: false},
		{name: "256 chars", in: strings.Repeat(label63+".", 3) + strings.Repeat("b", 64), wantOK: false},
		{name: "leading hyphen", in: "-example.com", wantOK: false},
		{name: "trailing hyphen", in: "example-.com", wantOK: false},
		{name: "hyphens at 3 and 4", in: "ab--cd.com", wantOK: false},
		{name: "empty label", in: "example..com", wantOK: false},
		{name: "leading dot", in: ".example.com", wantOK: false},
		{name: "two trailing dots", in: "example.com..", wantOK: false},
		{name: "underscore", in: "my_site.com", wantOK: false},
		{name: "space inside", in: "exa mple.com", wantOK: false},
		{name: "bad punycode", in: "xn--zz-.com", wantOK: false},
		{name: "www and trailing dot", in: "www."}, // "https://www.": the name is missing
		{name: "bare www", in: "https://www"},
		{name: "UTS 46 symbol", in: "☃.com", want: "xn--n3h.com", wantOK: true},
		{name: "UTS 46 symbol with a variation selector", in: "☃️.com"}, // the selector is mapped away by lookups
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Domain(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" || ok != tt.wantOK {
				t.Errorf("Domain(%q) = %q, %v; want ok %v; mismatch (-want +got):\n%s", tt.in, got, ok, tt.wantOK, diff)
			}
		})
	}
}

func TestHost(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "example.com", want: "example.com"},
		{in: "Example.COM:8080", want: "example.com"},
		{in: "www.example.com", want: "example.com"},
		{in: "WWW.Example.com:443", want: "example.com"},
		{in: "www.com", want: "www.com"},
		{in: "www.xn--bcher-kva.de", want: "xn--bcher-kva.de"},
		{in: "bücher.de", want: "xn--bcher-kva.de"},
		{in: "BÜCHER.de:80", want: "xn--bcher-kva.de"},
		{in: "b%C3%BCcher.de", want: "xn--bcher-kva.de"},
		{in: "ex%61mple.com", want: "example.com"},
		{in: "example.com.", want: "example.com"},
		{in: "[::1]:80", want: "::1"},
		{in: "[2001:DB8::1]", want: "2001:db8::1"},
		{in: "192.168.0.1:8080", want: "192.168.0.1"},
		{in: "localhost:3000", want: "localhost"},
		{in: "", want: ""},
		{in: ":80", want: ""},
		{in: ".", want: ""},
		{in: "my_site.com", want: ""},
		{in: "exa mple.com", want: ""},
		{in: "bad%zz.com", want: ""},
		{in: "[::1", want: ""},
		{in: "[1.2.3.4]", want: ""},
		{in: "[fe80::1%25eth0]", want: ""},
		{in: strings.Repeat("a.", 128) + "com", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Host(tt.in)); diff != "" {
				t.Errorf("Host(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestHostMatchesDomain checks the property the website lookup relies on: a
// page host that differs from a registered domain only in case, port, "www."
// or IDN encoding finds it.
func TestHostMatchesDomain(t *testing.T) {
	for _, in := range []string{"example.com", "https://www.Bücher.de/", "faß.de", "localhost", "10.0.0.1", "www.com", "a.b.c.d.example"} {
		d, ok := Domain(in)
		if !ok {
			t.Fatalf("Domain(%q) invalid", in)
		}
		for _, host := range []string{d, "www." + d, strings.ToUpper(d), d + ":8080", "WWW." + d + ".:1"} {
			if strings.HasPrefix(strings.ToLower(host), "www.") && !strings.Contains(d, ".") {
				continue // "www.localhost" is its own site, as Domain decides
			}
			if diff := cmp.Diff(d, Host(host)); diff != "" {
				t.Errorf("Host(%q) mismatch (-want +got):\n%s", host, diff)
			}
		}
	}
}

func TestSiteHost(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "www.google.com", want: "google.com"},
		{in: "google.com", want: "google.com"},
		{in: "www.com", want: "www.com"},
		{in: "www.www.example.com", want: "example.com"},
		{in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, SiteHost(tt.in)); diff != "" {
				t.Errorf("SiteHost(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestReferrerHost(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "https://www.google.com/search?q=x", want: "www.google.com"},
		{in: "https://WWW.Google.COM:443/", want: "www.google.com"},
		{in: "http://example.com", want: "example.com"},
		{in: "http://example.com?x=1", want: "example.com"},
		{in: "http://example.com#x", want: "example.com"},
		{in: "https://user:pw@example.com/", want: "example.com"},
		{in: "https://news.ycombinator.com./item", want: "news.ycombinator.com"},
		{in: "android-app://com.google.android.gm/", want: "com.google.android.gm"},
		{in: "android-app://com.Google.Android.GM", want: "com.google.android.gm"},
		{in: "ios-app://12345/com.example", want: "12345"},
		{in: "https://bücher.de/", want: "xn--bcher-kva.de"},
		{in: "https://my_host.example.com/", want: "my_host.example.com"},
		{in: "http://[2001:db8::1]:8080/", want: "2001:db8::1"},
		{in: "http://192.168.1.1/", want: "192.168.1.1"},
		{in: "", want: ""},
		{in: "example.com", want: ""},
		{in: "www.google.com/search", want: ""},
		{in: "/path", want: ""},
		{in: "//example.com/", want: ""},
		{in: "about:blank", want: ""},
		{in: "https://", want: ""},
		{in: "https:///path", want: ""},
		{in: "https://:80/", want: ""},
		{in: "https://exa mple.com/", want: ""},
		{in: "https://<script>/", want: ""},
		{in: "1http://example.com/", want: ""},
		{in: "https://" + strings.Repeat("a.", 128) + "com/", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ReferrerHost(tt.in)); diff != "" {
				t.Errorf("ReferrerHost(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestPlausibleDomain(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "example.com", want: "example.com"},
		{in: " www.Example.com , other.org", want: "example.com"},
		{in: "bücher.de,example.com", want: "xn--bcher-kva.de"},
		{in: "", want: ""},
		{in: ",example.com", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, PlausibleDomain(tt.in)); diff != "" {
				t.Errorf("PlausibleDomain(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

package norm

import (
	"fmt"
	"net/netip"
	"net/url"
	"testing"
)

var sinkPage Page

func BenchmarkParsePage(b *testing.B) {
	rules := ParsePageRules("utm_source\nutm_medium\nfbclid\ngclid")
	cases := []struct {
		name  string
		raw   string
		rules PageRules
	}{
		{name: "url=path", raw: "/blog/2026/11/how-we-count-visitors"},
		{name: "url=full", raw: "https://www.example.com/blog/2026/11/how-we-count-visitors?ref=home#comments"},
		{name: "url=campaign", raw: "https://example.com/pricing?utm_source=news&utm_medium=email&utm_campaign=black%20friday", rules: rules},
		{name: "url=full-no-exclusion", raw: "https://example.com/search?q=go+stats&page=2", rules: rules},
		{name: "url=idn", raw: "https://bücher.de/katalog?seite=3"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkPage, _ = ParsePage(c.raw, c.rules)
			}
		})
	}
}

var sinkString string

func BenchmarkHost(b *testing.B) {
	for _, host := range []string{"www.example.com", "Example.COM:8080"} {
		b.Run("host="+host, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkString = Host(host)
			}
		})
	}
}

func BenchmarkReferrerHost(b *testing.B) {
	for _, c := range []struct{ name, ref string }{
		{name: "ref=google", ref: "https://www.google.com/search?q=webstats&oq=webstats"},
		{name: "ref=app", ref: "android-app://com.google.android.gm/"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sinkString = ReferrerHost(c.ref)
			}
		})
	}
}

func BenchmarkLanguage(b *testing.B) {
	for _, c := range []struct{ name, h string }{
		{name: "header=browser", h: "en-US,en;q=0.9,de;q=0.8"},
		{name: "header=weighted", h: "de;q=0.8, en-US;q=0.9"},
	} {
		b.Run(c.name, func(b *testing.B) {
			Language(c.h) // build the table outside the loop
			b.ReportAllocs()
			for b.Loop() {
				sinkString = Language(c.h)
			}
		})
	}
}

var sinkBool bool

func BenchmarkIPSetContains(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			var text []byte
			for i := range n {
				switch i % 4 {
				case 0:
					text = fmt.Appendf(text, "10.%d.0.0/16\n", i)
				case 1:
					text = fmt.Appendf(text, "192.168.%d.%d\n", i/256, i%256)
				case 2:
					text = fmt.Appendf(text, "2001:db8:%x::/48\n", i)
				default:
					text = fmt.Appendf(text, "172.16.%d.0/24\n", i)
				}
			}
			set, err := ParseIPSet(string(text))
			if err != nil {
				b.Fatal(err)
			}
			ips := []netip.Addr{
				netip.MustParseAddr("8.8.8.8"),
				netip.MustParseAddr("10.0.1.2"),
				netip.MustParseAddr("2a00:1450:4001::1"),
				netip.MustParseAddr("::ffff:192.168.0.1"),
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sinkBool = set.Contains(ips[i&3])
				i++
			}
		})
	}
}

var sinkURL *url.URL

// BenchmarkNetURL is the reference point for BenchmarkParsePage/url=full:
// net/url alone, before any normalisation.
func BenchmarkNetURL(b *testing.B) {
	b.Run("url=full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkURL, _ = url.Parse("https://www.example.com/blog/2026/11/how-we-count-visitors?ref=home#comments")
		}
	})
}

package enrich

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/ua"
)

func TestReferrerURL(t *testing.T) {
	for _, tc := range []struct{ ref, host, want string }{
		{ref: "", host: "", want: ""},
		{ref: "https://www.google.com/", host: "www.google.com", want: "google.com"},
		{ref: "https://news.ycombinator.com/item?id=1#c", host: "news.ycombinator.com", want: "news.ycombinator.com/item"},
		{ref: "android-app://com.x/path/", host: "com.x", want: "com.x/path"},
	} {
		if got := referrerURL(tc.ref, tc.host); got != tc.want {
			t.Errorf("referrerURL(%q, %q) = %q, want %q", tc.ref, tc.host, got, tc.want)
		}
	}
}

func TestLandingParams(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{url: "https://x.com/", want: ""},
		{url: "https://x.com/?a=1", want: ""},
		{url: "https://x.com/?utm_source=News&utm_medium=x%00y#utm_term=no", want: "utm_medium=xy&utm_source=News"},
		{url: "/p?gclid=abc&ref=hn", want: "gclid=1&ref=hn"},
		{url: "/p?utm_campaign=" + strings.Repeat("é", 300), want: "utm_campaign=" + strings.Repeat("%C3%A9", maxSegValue)},
	} {
		if got := landingParams(tc.url); got != tc.want {
			t.Errorf("landingParams(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestSiteHost(t *testing.T) {
	for _, tc := range []struct {
		hit  Hit
		want string
	}{
		{hit: Hit{URL: "https://user@Example.com:8080/a?b#c"}, want: "example.com"},
		{hit: Hit{URL: "/relative"}, want: ""},
		{hit: Hit{URL: "https://a.com/", Domain: "b.com,c.com"}, want: "b.com"},
	} {
		if got := SiteHost(&tc.hit); got != tc.want {
			t.Errorf("SiteHost(%+v) = %q, want %q", tc.hit, got, tc.want)
		}
	}
}

func TestBot(t *testing.T) {
	for _, tc := range []struct {
		name string
		hit  Hit
		bot  bool
		want bool
	}{
		{name: "live bot agent", hit: Hit{Live: true, UserAgent: "curl/8"}, bot: true, want: true},
		{name: "import with a bot agent", hit: Hit{UserAgent: "curl/8"}, bot: true, want: true},
		{name: "import without an agent", hit: Hit{Visitor: "v1"}, bot: true, want: false},
		{name: "live browser", hit: Hit{Live: true, UserAgent: "Mozilla/5.0"}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Bot(&tc.hit, ua.Agent{Bot: tc.bot}); got != tc.want {
				t.Errorf("Bot = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBoundProps(t *testing.T) {
	in := []record.Prop{{Key: "a", Value: "1"}, {Key: "", Value: "x"}, {Key: "a", Value: "2"},
		{Key: "b", Value: strings.Repeat("v", record.MaxPropValue+1)}, {Key: "c", Value: "\xff"}, {Key: "d", Value: "4"}}
	want := []record.Prop{{Key: "a", Value: "1"}, {Key: "d", Value: "4"}}
	if diff := cmp.Diff(want, boundProps(in)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	many := make([]record.Prop, record.MaxProps+5)
	for i := range many {
		many[i] = record.Prop{Key: strings.Repeat("k", i+1)}
	}
	if got := len(boundProps(many)); got != record.MaxProps {
		t.Errorf("kept %d props, want %d", got, record.MaxProps)
	}
}

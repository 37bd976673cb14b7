package source

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// The cases follow Plausible's documented rules (source.ex, acquisition.ex,
// event.ex and its acquisition tests), with this package's documented
// differences where the referrer database decides.
func TestClassify(t *testing.T) {
	type want struct{ Src, Channel, Medium string }
	tests := []struct {
		name  string
		query string
		ref   string
		want  want
	}{
		{name: "direct", want: want{"", "Direct", ""}},
		{name: "google organic", ref: "www.google.com", want: want{"Google", "Organic Search", ""}},
		{name: "google country domain", ref: "google.co.uk", want: want{"Google", "Organic Search", ""}},
		{name: "google with gclid", query: "gclid=abc", ref: "www.google.com",
			want: want{"Google", "Paid Search", "(gclid)"}},
		{name: "gclid without value still counts", query: "gclid", ref: "www.google.com",
			want: want{"Google", "Paid Search", "(gclid)"}},
		{name: "gclid with explicit medium keeps it", query: "gclid=1&utm_medium=brand", ref: "google.com",
			want: want{"Google", "Paid Search", "brand"}},
		{name: "bing with msclkid", query: "msclkid=x", ref: "www.bing.com",
			want: want{"Bing", "Paid Search", "(msclkid)"}},
		{name: "gclid on bing is organic", query: "gclid=x", ref: "www.bing.com",
			want: want{"Bing", "Organic Search", ""}},
		{name: "msclkid on duckduckgo is organic", query: "msclkid=x", ref: "duckduckgo.com",
			want: want{"DuckDuckGo", "Organic Search", ""}},
		{name: "gclid wins over msclkid", query: "msclkid=1&gclid=2", ref: "bing.com",
			want: want{"Bing", "Organic Search", ""}},
		{name: "gclid on unknown referrer", query: "gclid=x", ref: "example.org",
			want: want{"example.org", "Referral", ""}},
		{name: "utm_medium=cpc on google", query: "utm_source=google&utm_medium=cpc",
			want: want{"Google", "Paid Search", "cpc"}},
		{name: "utm_medium=cpc without source", query: "utm_medium=cpc", want: want{"", "Paid Other", "cpc"}},
		{name: "utm_medium=ppc on facebook", query: "utm_source=facebook&utm_medium=ppc",
			want: want{"Facebook", "Paid Social", "ppc"}},
		{name: "paid medium prefix", query: "utm_source=duckduckgo&utm_medium=paid_search",
			want: want{"DuckDuckGo", "Paid Search", "paid_search"}},
		{name: "facebook referrer", ref: "l.facebook.com", want: want{"Facebook", "Organic Social", ""}},
		{name: "twitter t.co", ref: "t.co", want: want{"Twitter", "Organic Social", ""}},
		{name: "x.com supplement", ref: "x.com", want: want{"Twitter", "Organic Social", ""}},
		{name: "reddit subdomain", ref: "old.reddit.com", want: want{"Reddit", "Organic Social", ""}},
		{name: "hacker news", ref: "news.ycombinator.com", want: want{"Hacker News", "Organic Social", ""}},
		{name: "baidu without www", ref: "baidu.com", want: want{"Baidu", "Organic Search", ""}},
		{name: "gmail referrer", ref: "mail.google.com", want: want{"Gmail", "Email", ""}},
		{name: "unknown referrer", ref: "www.markosaric.com", want: want{"markosaric.com", "Referral", ""}},
		{name: "ref=producthunt", query: "ref=producthunt", want: want{"producthunt", "Referral", ""}},
		{name: "source param", query: "source=Newsletter", want: want{"Newsletter", "Email", ""}},
		{name: "utm_source over source over ref", query: "ref=a&source=b&utm_source=c", want: want{"c", "Referral", ""}},
		{name: "source over ref", query: "ref=a&source=b", want: want{"b", "Referral", ""}},
		{name: "tag over referrer", query: "utm_source=newsletter", ref: "www.google.com",
			want: want{"newsletter", "Email", ""}},
		{name: "empty tag falls back to referrer", query: "utm_source=", ref: "www.google.com",
			want: want{"Google", "Organic Search", ""}},
		{name: "utm_source=fb", query: "utm_source=fb", want: want{"Facebook", "Organic Social", ""}},
		{name: "utm_source=ig", query: "utm_source=ig", want: want{"Instagram", "Organic Social", ""}},
		{name: "utm_source=GOOGLE", query: "utm_source=GOOGLE", want: want{"Google", "Organic Search", ""}},
		{name: "utm_source=hacker+news", query: "utm_source=hacker+news", want: want{"Hacker News", "Organic Social", ""}},
		{name: "utm_source=fb-ads", query: "utm_source=fb-ads", want: want{"Facebook", "Paid Social", ""}},
		{name: "utm_source=fbad", query: "utm_source=fbad", want: want{"Facebook", "Paid Social", ""}},
		{name: "utm_source=facebook-ads", query: "utm_source=facebook-ads", want: want{"Facebook", "Paid Social", ""}},
		{name: "utm_source=Reddit-ads", query: "utm_source=Reddit-ads", want: want{"Reddit", "Paid Social", ""}},
		{name: "utm_source=google_ads", query: "utm_source=google_ads", want: want{"Google", "Paid Search", ""}},
		{name: "utm_source=Adwords", query: "utm_source=Adwords", want: want{"Google", "Paid Search", ""}},
		{name: "utm_source=ipad is no ad tag", query: "utm_source=ipad", want: want{"ipad", "Referral", ""}},
		{name: "host tag keeps name takes category", query: "utm_source=facebook.com",
			want: want{"facebook.com", "Organic Social", ""}},
		{name: "cross-network", query: "utm_campaign=summer-cross-network&utm_source=google",
			want: want{"Google", "Cross-network", ""}},
		{name: "paid shopping campaign", query: "utm_campaign=Shopping&utm_medium=paid",
			want: want{"", "Paid Shopping", "paid"}},
		{name: "organic shopping campaign", query: "utm_campaign=e-shop", want: want{"", "Organic Shopping", ""}},
		{name: "workshop is no shopping", query: "utm_campaign=workshop", want: want{"", "Direct", ""}},
		{name: "display", query: "utm_medium=banner&utm_source=acme", want: want{"acme", "Display", "banner"}},
		{name: "paid search is tried before display", query: "utm_medium=display&gclid=1", ref: "google.com",
			want: want{"Google", "Paid Search", "display"}},
		{name: "social medium", query: "utm_medium=social", want: want{"", "Organic Social", "social"}},
		{name: "video medium", query: "utm_medium=video", want: want{"", "Organic Video", "video"}},
		{name: "email medium", query: "utm_medium=E-Mail&utm_source=acme", want: want{"acme", "Email", "E-Mail"}},
		{name: "newsletter tag", query: "utm_source=Newsletter-UK", want: want{"Newsletter-UK", "Email", ""}},
		{name: "affiliate", query: "utm_medium=affiliate", want: want{"", "Affiliates", "affiliate"}},
		{name: "audio", query: "utm_medium=audio", want: want{"", "Audio", "audio"}},
		{name: "sms source", query: "utm_source=sms", want: want{"sms", "SMS", ""}},
		{name: "sms medium", query: "utm_medium=sms", want: want{"", "SMS", "sms"}},
		{name: "referral medium", query: "utm_medium=referral", want: want{"", "Referral", "referral"}},
		{name: "push medium is not a channel here", query: "utm_medium=app-push", want: want{"", "Direct", "app-push"}},
		// Documented differences: the database has no video, shopping or AI category.
		{name: "youtube is social here", ref: "www.youtube.com", want: want{"Youtube", "Organic Social", ""}},
		{name: "utm_source=yt-ads", query: "utm_source=yt-ads", want: want{"Youtube", "Paid Social", ""}},
		{name: "amazon is search here", ref: "www.amazon.com", want: want{"Amazon", "Organic Search", ""}},
		{name: "chatgpt is referral", ref: "chatgpt.com", want: want{"chatgpt.com", "Referral", ""}},
		{name: "encoded key and value", query: "utm%5Fsource=Hacker%20News", want: want{"Hacker News", "Organic Social", ""}},
		{name: "first occurrence wins", query: "utm_source=fb&utm_source=google", want: want{"Facebook", "Organic Social", ""}},
		{name: "upper-case key is not utm", query: "UTM_SOURCE=fb", ref: "bing.com", want: want{"Bing", "Organic Search", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got want
			got.Src, got.Channel, got.Medium = Classify(ParseLanding(tt.query, tt.ref))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Classify(ParseLanding(%q, %q)) mismatch (-want +got):\n%s", tt.query, tt.ref, diff)
			}
		})
	}
}

func TestParseLanding(t *testing.T) {
	tests := []struct {
		name, query string
		want        Landing
	}{
		{name: "empty"},
		{name: "all fields",
			query: "utm_source=a&utm_medium=b&utm_campaign=c+d&utm_content=e&utm_term=f&source=g&ref=h&gclid=1&fbclid&ttclid=",
			want: Landing{UTMSource: "a", UTMMedium: "b", UTMCampaign: "c d", UTMContent: "e", UTMTerm: "f",
				SourceParam: "g", RefParam: "h", ClickIDs: GCLID | FBCLID | TTCLID}},
		{name: "malformed escape kept", query: "utm_source=100%&x=%zz", want: Landing{UTMSource: "100%"}},
		{name: "controls removed, bad utf-8 replaced", query: "utm_source=a%00b%ffc",
			want: Landing{UTMSource: "ab\uFFFDc"}},
		{name: "empty segments", query: "&&utm_medium=x&&", want: Landing{UTMMedium: "x"}},
		{name: "other keys ignored", query: "utm_sourcex=1&xgclid=1", want: Landing{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ParseLanding(tt.query, "")); diff != "" {
				t.Errorf("ParseLanding(%q) mismatch (-want +got):\n%s", tt.query, diff)
			}
		})
	}
}

func TestParseLandingBounds(t *testing.T) {
	long := strings.Repeat("ü", 2*MaxValueLen)
	l := ParseLanding("utm_campaign="+long, "")
	if got := utf8.RuneCountInString(l.UTMCampaign); got != MaxValueLen {
		t.Errorf("campaign cut at %d runes, want %d", got, MaxValueLen)
	}
	// A parameter past MaxQueryBytes is not read.
	pad := strings.Repeat("a=1&", MaxQueryBytes/4)
	if l := ParseLanding(pad+"gclid=1", ""); l.ClickIDs != 0 {
		t.Errorf("click id past MaxQueryBytes was read: %v", l.ClickIDs)
	}
	if l := ParseLanding("gclid=1&"+pad, ""); l.ClickIDs != GCLID {
		t.Errorf("ClickIDs = %v, want GCLID", l.ClickIDs)
	}
}

func TestClickIDsParam(t *testing.T) {
	tests := []struct {
		ids  ClickIDs
		want string
	}{
		{0, ""},
		{TTCLID, ""},
		{FBCLID | TTCLID, "fbclid"},
		{MSCLKID | GBRAID, "gbraid"},
		{TWCLID, "twclid"},
		{GCLID | MSCLKID, "gclid"},
	}
	for _, tt := range tests {
		if got := tt.ids.Param(); got != tt.want {
			t.Errorf("ClickIDs(%b).Param() = %q, want %q", tt.ids, got, tt.want)
		}
	}
}

// The index must come from the dependency's database, not from a few
// hand-written entries.
func TestIndexSize(t *testing.T) {
	ix := db()
	if len(ix.hosts) < 1500 || len(ix.names) < 300 {
		t.Fatalf("index has %d hosts and %d names; the referrer database did not load", len(ix.hosts), len(ix.names))
	}
	for _, s := range shorthands {
		if _, ok := ix.names[strings.ToLower(s.name)]; !ok {
			t.Errorf("shorthand %q names %q, which the database does not know", s.key, s.name)
		}
	}
}

func TestChannels(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Channels {
		if seen[c] || !IsChannel(c) {
			t.Errorf("channel %q repeated or not recognised", c)
		}
		seen[c] = true
	}
	if IsChannel("AI Assistants") || IsChannel("") {
		t.Error("IsChannel accepts a name outside the 17")
	}
}

func FuzzClassify(f *testing.F) {
	for _, s := range []struct{ q, ref string }{
		{"", ""},
		{"gclid=1", "www.google.com"},
		{"utm_source=fb-ads&utm_medium=cpc&utm_campaign=e-shop", ""},
		{"ref=producthunt", "news.ycombinator.com"},
		{"utm_source=%ff%00&utm_medium=%", "a.b.c.d.e.f.g.h.i.j.k.l.google.com"},
		{"utm_source=ad&source=ads", "www."},
	} {
		f.Add(s.q, s.ref)
	}
	f.Fuzz(func(t *testing.T, q, ref string) {
		l := ParseLanding(q, ref)
		for _, v := range []string{l.UTMSource, l.UTMMedium, l.UTMCampaign, l.UTMContent, l.UTMTerm, l.SourceParam, l.RefParam} {
			if !utf8.ValidString(v) || utf8.RuneCountInString(v) > MaxValueLen {
				t.Fatalf("ParseLanding(%q) value %q invalid or too long", q, v)
			}
		}
		src, channel, medium := Classify(l)
		if !IsChannel(channel) {
			t.Fatalf("Classify(%+v) channel %q is not a channel name", l, channel)
		}
		if src == "" && channel == ChannelReferral && !isOneOf(strings.ToLower(medium), "referral", "app", "link") {
			t.Fatalf("Classify(%+v): Referral without a source or referral medium", l)
		}
		if l.UTMMedium != "" && medium != l.UTMMedium {
			t.Fatalf("Classify(%+v) medium %q, want the raw %q", l, medium, l.UTMMedium)
		}
		// Direct Landings (any struct, not only ParseLanding's) must not panic either.
		Classify(Landing{UTMSource: q, UTMCampaign: ref, RefHost: strings.ToLower(ref), ClickIDs: ClickIDs(len(q))})
	})
}

func BenchmarkClassify(b *testing.B) {
	for _, bc := range []struct{ name, q, ref string }{
		{"case=direct", "", ""},
		{"case=google", "", "www.google.com"},
		{"case=unknown-ref", "", "blog.example.org"},
		{"case=gclid", "gclid=abc123", "www.google.com"},
		{"case=utm", "utm_source=Newsletter&utm_medium=email&utm_campaign=Spring+Sale", ""},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Classify(ParseLanding(bc.q, bc.ref))
			}
		})
	}
	b.Run("case=hostile-1MiB", func(b *testing.B) {
		q := strings.Repeat("utm_source=%41&", 1<<20/15)
		b.ReportAllocs()
		for b.Loop() {
			Classify(ParseLanding(q, "x.y.z"))
		}
	})
}

package export

import (
	"testing"

	"github.com/webstats/webstats/buckets"
)

// TestPage: pageviews get back the pages the day's bucket counted, a
// visit's first pageview a landing page with its campaign, and a path the
// bucket does not know its query.
func TestPage(t *testing.T) {
	day := buckets.NewDay(0)
	for _, c := range []struct {
		dim   buckets.Dim
		value string
		n     uint64
	}{
		{buckets.Page, "/a?utm_source=x", 1},
		{buckets.Page, "/a?ref=1", 1},
		{buckets.LandingPage, "/a?utm_source=x", 1},
		{buckets.Referrer, "www.example.org", 1},
		{buckets.Referrer, "news.example", 1},
		{buckets.Referrer, "www.news.example", 1},
	} {
		day.Add(c.dim, c.value, c.n, 100)
	}
	h := NewHints(day)
	var last Pageviews
	last.Next()
	const m = 60 * 1000
	for _, tt := range []struct {
		name        string
		visitor     string
		ms          int64
		path, query string
		want        string
	}{
		{"landing with its campaign", "v1", 0, "/a", "utm_source=x", "/a?utm_source=x"},
		{"next pageview of the visit", "v1", m, "/a", "", "/a?ref=1"},
		{"counts used up", "v1", 2 * m, "/a", "", "/a"},
		{"unknown path keeps its query", "v2", 0, "/b", "utm_source=y", "/b?utm_source=y"},
	} {
		if got := h.Page(&last, tt.visitor, tt.ms, false, tt.path, tt.query); got != tt.want {
			t.Errorf("%s: Page = %q, want %q", tt.name, got, tt.want)
		}
	}
	for ref, want := range map[string]string{"example.org/x": "www.example.org/x", "news.example/": "news.example/", "other.example": "other.example"} {
		if got := h.Referrer(ref); got != want {
			t.Errorf("Referrer(%q) = %q, want %q", ref, got, want)
		}
	}
}

// TestPageAcrossMidnight: a pageview within 30 minutes of its visitor's
// last one of the day before continues that visit: no landing page.
func TestPageAcrossMidnight(t *testing.T) {
	day := buckets.NewDay(0)
	day.Add(buckets.Page, "/p?q=landing", 1, 100)
	day.Add(buckets.LandingPage, "/p?q=landing", 1, 100)
	day.Add(buckets.Page, "/p?q=inner", 1, 100)
	var last Pageviews
	last.Next()
	NewHints(nil).Page(&last, "v", 1000, false, "/x", "")
	last.Next()
	h := NewHints(day)
	if got := h.Page(&last, "v", 1000+10*60*1000, false, "/p", ""); got != "/p?q=inner" {
		t.Errorf("continued visit: Page = %q, want /p?q=inner", got)
	}
	if got := h.Page(&last, "w", 0, false, "/p", ""); got != "/p?q=landing" {
		t.Errorf("new visit: Page = %q, want /p?q=landing", got)
	}
}

func TestWithQuery(t *testing.T) {
	for _, tt := range []struct{ page, query, want string }{
		{"/a", "x=1", "/a?x=1"},
		{"/a?y=2", "x=1", "/a?y=2&x=1"},
		{"/a#top", "x=1", "/a?x=1#top"},
	} {
		if got := withQuery(tt.page, tt.query); got != tt.want {
			t.Errorf("withQuery(%q, %q) = %q, want %q", tt.page, tt.query, got, tt.want)
		}
	}
}

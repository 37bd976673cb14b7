package pages

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestExportDownload: the settings page links to the download of every
// hit of the website as import lines (SPEC §14), for its owner only.
func TestExportDownload(t *testing.T) {
	f := newFixture(t)
	f.track(hit{url: "https://public.example/a"}, hit{url: "https://public.example/b?x=1", ref: "https://news.ycombinator.com/"},
		hit{url: "https://public.example/b", event: "Signup"})
	c := f.signedIn()
	res := c.get(sitePath(f.public.ID, "/settings"))
	mustContain(t, "settings", res.body, `<a href="`+sitePath(f.public.ID, "/export")+`" download>Download all data (NDJSON)</a>`)

	res = c.get(sitePath(f.public.ID, "/export"))
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/x-ndjson" ||
		res.header.Get("Content-Disposition") != `attachment; filename="public.example-events.ndjson"` {
		t.Fatalf("export: %d %v", res.status, res.header)
	}
	var pages, events []string
	sc := bufio.NewScanner(strings.NewReader(res.body))
	for sc.Scan() {
		var l struct {
			Page      string
			Visitor   string
			IP        string `json:"ip"`
			UserAgent string `json:"user_agent"`
			Browser   string
			Event     *struct{ Name string }
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if l.Visitor == "" || l.IP != "" || l.UserAgent != "" || l.Browser != "Chrome" {
			t.Errorf("line %s: want a visitor id and the browser, never an IP or user agent", sc.Text())
		}
		if l.Event != nil {
			events = append(events, l.Event.Name)
		} else {
			pages = append(pages, l.Page)
		}
	}
	if strings.Join(pages, " ") != "https://public.example/a https://public.example/b?x=1" || strings.Join(events, " ") != "Signup" {
		t.Errorf("pages %q, events %q", pages, events)
	}

	// Another account's website is not found.
	if res := c.get(sitePath(f.otherSecret.ID, "/export")); res.status != http.StatusNotFound || strings.Contains(res.body, `"page"`) {
		t.Errorf("another account's export: %d", res.status)
	}
}

package httpd

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
)

// TestExportEvents: GET /api/v1/websites/{id}/events streams the
// website's hits of a range of its local days as import lines, for the
// owner's key only (SPEC §14, §3.3 errors).
func TestExportEvents(t *testing.T) {
	f := newFixture(t, nil)
	var hits []engine.Hit
	for d := 1; d <= 3; d++ {
		// 23:30 UTC is the next day in Paris (website 2).
		hits = append(hits, engine.Hit{Website: 2, Time: time.Date(2026, 11, d, 23, 30, 0, 0, time.UTC), URL: "/d" + string(rune('0'+d)), Visitor: "v"})
	}
	f.track(t, nil)
	if _, err := f.e.Track(t.Context(), hits...); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, key string
		code            int
		want            string // the pages, in order
	}{
		{name: "all", path: "/api/v1/websites/2/events", code: 200, want: "/d1 /d2 /d3"},
		{name: "local days", path: "/public/api/v1/websites/2/events?from=2026-11-03&to=2026-11-03", code: 200, want: "/d2"},
		{name: "from only", path: "/api/v1/websites/2/events?from=2026-11-04", code: 200, want: "/d3"},
		{name: "bad day", path: "/api/v1/websites/2/events?from=3.11.2026", code: 422},
		{name: "from after to", path: "/api/v1/websites/2/events?from=2026-11-04&to=2026-11-01", code: 422},
		{name: "other account", path: "/api/v1/websites/3/events", code: 404},
		{name: "no such website", path: "/api/v1/websites/99/events", code: 404},
		{name: "no key", path: "/api/v1/websites/2/events", key: "-", code: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := f.alice
			if tt.key == "-" {
				key = ""
			}
			w := f.do(request{method: "GET", path: tt.path, key: key})
			if w.Code != tt.code {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.code, w.Body)
			}
			if tt.code != http.StatusOK {
				return
			}
			var pages []string
			for _, line := range strings.Split(strings.TrimSpace(w.Body.String()), "\n") {
				i := strings.Index(line, `"page":"`)
				j := strings.Index(line[i+8:], `"`)
				page := line[i+8 : i+8+j]
				pages = append(pages, page[strings.LastIndex(page, "/"):])
			}
			if got := strings.Join(pages, " "); got != tt.want {
				t.Errorf("pages %q, want %q", got, tt.want)
			}
		})
	}
}

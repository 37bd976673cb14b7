package httpd

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// TestImportGiven: an import line may give its device, browser, OS and
// location instead of a user agent and an IP address (README "Moving in
// and out"), and they are counted as given; bad ones answer 422 and
// nothing counts.
func TestImportGiven(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"time":"2026-11-20T10:00:00Z","page":"/a","visitor":"v1","browser":"Firefox","browser_version":"132.0","os":"Linux","device":"desktop","country":"de","region":"DE-BE","region_name":"Berlin","city":"Berlin","city_id":2950159}
{"time":"2026-11-20T10:01:00Z","page":"/b","visitor":"v2","device":"mobile","country":"FR"}
{"time":"2026-11-20T10:02:00Z","page":"/c","visitor":"v3","ip":"8.8.8.8","user_agent":"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36","os":"Plan 9"}`
	w := f.do(request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/x-ndjson", body: body})
	if w.Code != http.StatusOK {
		t.Fatalf("import: %d %s", w.Code, w.Body)
	}
	// The third line gives an OS: its agent is the given one (browser
	// and device unknown), whatever its user agent says.
	want := map[string][]engine.Row{
		"browser": {{Value: "", Count: 2}, {Value: "Firefox", Count: 1}},
		"os":      {{Value: "", Count: 1}, {Value: "Linux", Count: 1}, {Value: "Plan 9", Count: 1}},
		"device":  {{Value: "", Count: 1}, {Value: "desktop", Count: 1}, {Value: "mobile", Count: 1}},
		"country": {{Value: "DE:Germany", Count: 1}, {Value: "FR:France", Count: 1}, {Value: "US:United States", Count: 1}},
		"city":    {{Value: "", Count: 2}, {Value: "DE:Berlin, BE", Count: 1}},
	}
	for name, rows := range want {
		p, err := f.e.Owner(f.aliceID).Stat(t.Context(), engine.StatQuery{Website: 1, Name: name, From: engine.DateOf(2026, 11, 20), To: engine.DateOf(2026, 11, 20), SortBy: "value", Asc: true})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(rows, p.Rows); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
		}
	}

	bad := `{"time":"2026-11-20T11:00:00Z","page":"/a","visitor":"v1","device":"phablet","browser":7,"city_id":"x"}`
	w = f.do(request{method: "POST", path: "/api/v1/websites/1/events", key: f.alice, ctype: "application/x-ndjson", body: bad})
	wantBody := `{"message":{"events.0.browser":["The events.0.browser must be a string."],"events.0.device":["The events.0.device must be desktop, mobile or tablet."],"events.0.city_id":["The events.0.city_id must be a GeoNames id (a positive integer)."]},"status":422}`
	if w.Code != http.StatusUnprocessableEntity || w.Body.String() != wantBody+"\n" && w.Body.String() != wantBody {
		t.Errorf("bad given keys: %d %s\nwant 422 %s", w.Code, w.Body, wantBody)
	}
}

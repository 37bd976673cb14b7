package httpd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIsolation sends every endpoint as bob against alice's websites: each
// is a 404 exactly like a missing website, and nothing of alice's changes.
func TestIsolation(t *testing.T) {
	f := newFixture(t, nil)
	f.seedStats(t)
	snapshot := func() map[string]string {
		out := make(map[string]string)
		for _, p := range []string{"/api/v1/websites", "/api/v1/websites/1", "/api/v1/websites/2",
			"/api/v1/stats/1?name=page&from=2026-11-01&to=2026-11-30&per_page=100",
			"/api/v1/stats/1?name=pageviews&from=2026-11-01&to=2026-11-30", "/api/v1/account"} {
			out[p] = f.do(request{method: "GET", path: p, key: f.alice}).Body.String()
		}
		return out
	}
	before := snapshot()
	missing := f.do(request{method: "GET", path: "/api/v1/websites/99", key: f.bob}).Body.String()

	event := `{"time":"2026-11-20T10:00:00Z","page":"/bob","ip":"8.8.8.8","user_agent":"Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0"}`
	for _, prefix := range apiPrefixes {
		for _, id := range []string{"1", "2"} {
			for _, req := range []request{
				{method: "GET", path: "/websites/" + id},
				{method: "PUT", path: "/websites/" + id, ctype: "application/json", body: `{"privacy":0}`},
				{method: "PATCH", path: "/websites/" + id, ctype: "application/x-www-form-urlencoded", body: "exclude_bots=0"},
				{method: "PATCH", path: "/websites/" + id, ctype: "application/json", body: `{"privacy":"bad"}`},
				{method: "DELETE", path: "/websites/" + id},
				{method: "GET", path: "/stats/" + id + "?name=page&from=2026-11-01&to=2026-11-30"},
				{method: "GET", path: "/stats/" + id},
				{method: "POST", path: "/websites/" + id + "/events", ctype: "application/x-ndjson", body: event},
				{method: "POST", path: "/websites/" + id + "/events", ctype: "application/x-ndjson", body: "{bad"},
			} {
				req.path = prefix + req.path
				req.key = f.bob
				w := f.do(req)
				if w.Code != 404 || w.Body.String() != missing {
					t.Errorf("%s %s as bob: %d %s, want the 404 of a missing website", req.method, req.path, w.Code, w.Body)
				}
			}
		}
		// Bob's list and account are his own.
		w := f.do(request{method: "GET", path: prefix + "/websites?per_page=100", key: f.bob})
		var list struct {
			Data []struct{ ID int }
			Meta struct{ Total int }
		}
		json.Unmarshal(w.Body.Bytes(), &list)
		if len(list.Data) != 1 || list.Data[0].ID != 3 || list.Meta.Total != 1 {
			t.Errorf("bob's list: %s", w.Body)
		}
		w = f.do(request{method: "GET", path: prefix + "/account", key: f.bob})
		if !strings.Contains(w.Body.String(), `"email":"bob@example.com"`) {
			t.Errorf("bob's account: %s", w.Body)
		}
		// Bob importing into his own website with alice's host counts under his.
		w = f.do(request{method: "POST", path: prefix + "/websites/3/events", key: f.bob, body: strings.Replace(event, "/bob", "https://example.com/bob", 1)})
		if w.Code != 200 {
			t.Errorf("bob's own import: %d %s", w.Code, w.Body)
		}
	}
	if diff := cmp.Diff(before, snapshot()); diff != "" {
		t.Errorf("alice's data changed (-before +after):\n%s", diff)
	}
	// And alice cannot read bob's.
	if w := f.do(request{method: "GET", path: "/api/v1/stats/3?name=page&from=2026-11-01&to=2026-11-30", key: f.alice}); w.Code != 404 {
		t.Errorf("alice reading bob's stats: %d", w.Code)
	}
}

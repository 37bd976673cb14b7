package httpd

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// pipedream replays, call for call, the requests of the public phpAnalytics
// client component for Pipedream (PipedreamHQ/pipedream,
// components/h_supertools_analytics_tool): an axios client with
// "Authorization: Bearer <key>", JSON bodies, and query parameters in the
// order its code builds them (undefined ones left out).
type pipedream struct {
	t   *testing.T
	f   *fixture
	key string
}

// call is _makeRequest: url = apiUrl + "/" + path, axios defaults.
func (p *pipedream) call(method, path string, params [][2]string, data string) map[string]any {
	p.t.Helper()
	if len(params) > 0 {
		var q []string
		for _, kv := range params {
			q = append(q, url.QueryEscape(kv[0])+"="+url.QueryEscape(kv[1]))
		}
		path += "?" + strings.Join(q, "&")
	}
	req := request{method: method, path: "/api/v1/" + path, key: p.key,
		header: map[string]string{"Accept": "application/json, text/plain, */*", "User-Agent": "axios/1.7.7"}}
	if data != "" {
		req.ctype = "application/json"
		req.body = data
	}
	w := p.f.do(req)
	if w.Code/100 != 2 {
		p.t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
	}
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	return out
}

// paginate is the component's paginate(): page = 1, 2, … until
// current_page == last_page, yielding every row of data.
func (p *pipedream) paginate(reportID string, params [][2]string) []any {
	p.t.Helper()
	var rows []any
	for page := 1; ; page++ {
		if page > 100 {
			p.t.Fatal("paginate does not end")
		}
		res := p.call("GET", "stats/"+reportID, append(params, [2]string{"page", itoa(page)}), "")
		rows = append(rows, res["data"].([]any)...)
		if res["current_page"] == res["last_page"] {
			return rows
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestPipedreamCompat(t *testing.T) {
	f := newFixture(t, &Options{RateLimit: 60})
	f.seedStats(t)
	p := &pipedream{t: t, f: f, key: f.alice}

	// create-report: {...data, email: +email, exclude_bots: +excludeBots,
	// exclude_params, exclude_ips, privacy: privacy - 1}; undefined props
	// are left out by JSON.stringify.
	res := p.call("POST", "websites", nil, `{"domain":"shop.example","email":1,"exclude_bots":0,"privacy":0}`)
	data := res["data"].(map[string]any)
	if data["id"] != float64(4) || data["domain"] != "shop.example" || data["exclude_bots"] != float64(0) || data["email"] != float64(1) || data["privacy"] != float64(0) {
		t.Errorf("create-report answer: %v", res)
	}
	// The "Password" option (3) sends privacy 2 and a password.
	res = p.call("POST", "websites", nil, `{"domain":"secret.example","password":"hunter2","email":0,"exclude_bots":1,"exclude_params":"utm_source","exclude_ips":"10.0.0.1","privacy":2}`)
	if d := res["data"].(map[string]any); d["password"] != true || d["privacy"] != float64(2) {
		t.Errorf("create-report with password: %v", res)
	}

	// reportId options: listReports({params: {page}}), page from 0.
	var domains []string
	for _, page := range []string{"0", "1", "2"} {
		res := p.call("GET", "websites", [][2]string{{"page", page}}, "")
		for _, w := range res["data"].([]any) {
			domains = append(domains, w.(map[string]any)["domain"].(string))
		}
	}
	// Pages 0 and 1 are both the first page; page 2 is empty.
	want := []string{"secret.example", "shop.example", "blog.example.org", "example.com"}
	if diff := cmp.Diff(append(want, want...), domains); diff != "" {
		t.Errorf("listReports mismatch (-want +got):\n%s", diff)
	}

	// retrieve-report-data: {...params (name, from, to, search, sort),
	// sort_by: sortBy (default "url"), per_page: 10} then page.
	rows := p.paginate("1", [][2]string{{"name", "page"}, {"from", "2026-11-01"}, {"to", "2026-11-21"}, {"sort", "asc"}, {"sort_by", "url"}, {"per_page", "10"}})
	if len(rows) != 23 {
		t.Fatalf("retrieve-report-data: %d rows, want 23", len(rows))
	}
	if first := rows[0].(map[string]any); first["value"] != "/p01" || first["count"] != float64(1) {
		t.Errorf("first row (count ascending) = %v", first)
	}
	// With a search, and a statistic with a single page.
	rows = p.paginate("1", [][2]string{{"name", "browser"}, {"from", "2026-11-20"}, {"to", "2026-11-20"}, {"search", "fire"}, {"sort", "desc"}, {"sort_by", "id"}, {"per_page", "10"}})
	if len(rows) != 1 || rows[0].(map[string]any)["value"] != "Firefox" {
		t.Errorf("search rows = %v", rows)
	}
	// An empty statistic still ends (last_page is 1).
	if rows := p.paginate("4", [][2]string{{"name", "country"}, {"from", "2026-11-01"}, {"to", "2026-11-21"}, {"sort", "asc"}, {"sort_by", "url"}, {"per_page", "10"}}); len(rows) != 0 {
		t.Errorf("empty statistic: %v", rows)
	}

	// report-generated source: sort_by id, from 1970-01-01 to today,
	// sort desc, per_page 100.
	rows = p.paginate("1", [][2]string{{"sort_by", "id"}, {"name", "pageviews"}, {"from", "1970-01-01"}, {"to", "2026-11-21"}, {"sort", "desc"}, {"per_page", "100"}})
	if len(rows) != 1 || rows[0].(map[string]any)["value"] != "2026-11-20" || rows[0].(map[string]any)["count"] != float64(276) {
		t.Errorf("report-generated rows = %v", rows)
	}
}

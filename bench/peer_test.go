package bench

import (
	"context"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStatsForm: the peer run's queries in both versions of Plausible's
// Stats API, and the answers it reads.
func TestStatsForm(t *testing.T) {
	today := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	ctx := context.Background()

	v1 := statsForm{api: "v1", domain: "medium.example", today: today}
	req, err := v1.byPage(ctx, "http://peer", "KEY")
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"site_id": {"medium.example"}, "period": {"custom"}, "date": {"2026-10-30,2026-11-28"},
		"property": {"event:page"}, "metrics": {"visitors,pageviews"}, "limit": {"10"}}
	if req.Method != "GET" || req.URL.Path != "/api/v1/stats/breakdown" || req.Header.Get("Authorization") != "Bearer KEY" {
		t.Errorf("v1 by page: %s %s, %q", req.Method, req.URL.Path, req.Header.Get("Authorization"))
	}
	if diff := cmp.Diff(want, req.URL.Query()); diff != "" {
		t.Errorf("v1 by page (-want +got):\n%s", diff)
	}
	req, err = v1.pageviewsToday(ctx, "http://peer", "KEY")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(url.Values{"site_id": {"medium.example"}, "period": {"day"}, "date": {"2026-11-28"}, "metrics": {"pageviews"}}, req.URL.Query()); req.URL.Path != "/api/v1/stats/aggregate" || diff != "" {
		t.Errorf("v1 pageviews today: %s (-want +got):\n%s", req.URL.Path, diff)
	}

	v2 := statsForm{api: "v2", domain: "medium.example", today: today}
	req, err = v2.byPage(ctx, "http://peer", "KEY")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(req.Body)
	wantBody := `{"date_range":["2026-10-30","2026-11-28"],"dimensions":["event:page"],"metrics":["visitors","pageviews"],"pagination":{"limit":10},"site_id":"medium.example"}`
	if req.Method != "POST" || req.URL.Path != "/api/v2/query" || string(body) != wantBody {
		t.Errorf("v2 by page: %s %s %s", req.Method, req.URL.Path, body)
	}

	for _, c := range []struct {
		name   string
		form   statsForm
		answer string
		n      float64
		ok     bool
	}{
		{"v1, Plausible's form", v1, `{"results":{"pageviews":{"value":42}}}`, 42, true},
		{"v1, a bare number", v1, `{"pageviews":42,"visitors":7}`, 42, true},
		{"v1, neither", v1, `{"results":{"visitors":{"value":7}}}`, 0, false},
		{"v2", v2, `{"results":[{"metrics":[42],"dimensions":[]}]}`, 42, true},
		{"v2, two metrics", v2, `{"results":[{"metrics":[42,1]}]}`, 0, false},
	} {
		if n, ok := c.form.pageviews([]byte(c.answer)); n != c.n || ok != c.ok {
			t.Errorf("%s: pageviews %v, %v; want %v, %v", c.name, n, ok, c.n, c.ok)
		}
	}
	for _, c := range []struct {
		name      string
		form      statsForm
		answer    string
		rows      int
		pageviews float64
	}{
		{"v1", v1, `{"results":[{"page":"/a","visitors":3,"pageviews":5},{"page":"/b","visitors":1,"pageviews":2}]}`, 2, 7},
		{"v2", v2, `{"results":[{"dimensions":["/a"],"metrics":[3,5]},{"dimensions":["/b"],"metrics":[1,2]}]}`, 2, 7},
		{"v2, another shape: rows still counted", v2, `{"results":[{"dimensions":["/a"],"metrics":[3]},{"x":1}]}`, 2, 0},
		{"v1, another shape", v1, `{"results":[{"page":"/a"},{"page":"/b","pageviews":4}]}`, 2, 4},
	} {
		if rows, pv, ok := c.form.rows([]byte(c.answer)); rows != c.rows || pv != c.pageviews || !ok {
			t.Errorf("%s: rows %d, pageviews %v, %v", c.name, rows, pv, ok)
		}
	}
}

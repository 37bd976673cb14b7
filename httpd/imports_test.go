package httpd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/internal/plgen"
)

// TestImportsAPI: an export zip uploaded over HTTP is listed, answers v2
// queries with include.imports with the file's sums, and is deleted as a
// whole; a broken zip is a 422 naming file, line and column and counts
// nothing; another account can neither list nor delete it (SPEC §14).
func TestImportsAPI(t *testing.T) {
	f := newFixture(t, nil)
	zip, want := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 3, 1), Days: 31, DailyVisitors: 200, Pages: 5, Cities: 4, Seed: 9})
	base := "/api/v1/websites/1/imports"

	query := func() map[string]any {
		w := f.do(request{method: http.MethodPost, path: "/api/v2/query", key: f.alice, ctype: "application/json",
			body: `{"site_id":"example.com","metrics":["visitors","pageviews"],"date_range":["2024-03-01","2024-03-31"],"include":{"imports":true}}`})
		if w.Code != http.StatusOK {
			t.Fatalf("query: %d %s", w.Code, w.Body)
		}
		var res map[string]any
		json.Unmarshal(w.Body.Bytes(), &res)
		return res
	}

	// Broken: the export, truncated.
	w := f.do(request{method: http.MethodPost, path: base, key: f.alice, ctype: "application/zip", body: string(zip[:len(zip)-40])})
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "not a readable zip") {
		t.Fatalf("truncated zip: %d %s", w.Code, w.Body)
	}
	if res := query(); fmt.Sprint(res["meta"]) != "map[imports_included:false imports_skip_reason:no_imported_data]" {
		t.Fatalf("after a refused upload: %v", res["meta"])
	}

	w = f.do(request{method: http.MethodPost, path: base + "?file=site_20240401.zip", key: f.alice, ctype: "application/zip", body: string(zip)})
	if w.Code != http.StatusCreated {
		t.Fatalf("upload: %d %s", w.Code, w.Body)
	}
	var created struct {
		Data struct {
			ID   int    `json:"id"`
			File string `json:"file"`
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"data"`
	}
	json.Unmarshal(w.Body.Bytes(), &created)
	if created.Data.ID == 0 || created.Data.File != "site_20240401.zip" || created.Data.From != "2024-03-01" || created.Data.To != "2024-03-31" {
		t.Fatalf("created %s", w.Body)
	}
	res := query()
	got := fmt.Sprint(res["results"], res["meta"])
	wantS := fmt.Sprintf("[map[dimensions:[] metrics:[%d %d]]] map[imports_included:true]", want.Total[0], want.Total[2])
	if got != wantS {
		t.Fatalf("query: %s, want %s", got, wantS)
	}

	for _, c := range []struct {
		method, path, key string
		code              int
	}{
		{http.MethodGet, base, f.bob, http.StatusNotFound},
		{http.MethodDelete, fmt.Sprintf("%s/%d", base, created.Data.ID), f.bob, http.StatusNotFound},
		{http.MethodDelete, base + "/999", f.alice, http.StatusNotFound},
		{http.MethodDelete, base + "/x", f.alice, http.StatusNotFound},
		{http.MethodPost, base, "", http.StatusUnauthorized},
	} {
		if w := f.do(request{method: c.method, path: c.path, key: c.key}); w.Code != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, w.Code, w.Body, c.code)
		}
	}
	w = f.do(request{method: http.MethodGet, path: base, key: f.alice})
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"file":"site_20240401.zip"`) {
		t.Fatalf("list: %d %s", w.Code, w.Body)
	}
	w = f.do(request{method: http.MethodDelete, path: fmt.Sprintf("%s/%d", base, created.Data.ID), key: f.alice})
	if w.Code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", w.Code, w.Body)
	}
	if res := query(); fmt.Sprint(res["meta"]) != "map[imports_included:false imports_skip_reason:no_imported_data]" {
		t.Fatalf("after delete: %v", res["meta"])
	}
	w = f.do(request{method: http.MethodGet, path: base, key: f.alice})
	if !strings.Contains(w.Body.String(), `"data":[]`) {
		t.Fatalf("list after delete: %s", w.Body)
	}
}

// TestImportsAPIRefusesBadRow: a bad date deep in one file is a 422 naming
// the file, line and column, and nothing of the zip is stored.
func TestImportsAPIRefusesBadRow(t *testing.T) {
	f := newFixture(t, nil)
	zip := zipFiles(t, map[string]string{
		"imported_visitors_20240101_20240102.csv": "date,visitors,pageviews,bounces,visits,visit_duration\n2024-01-01,5,9,1,6,100\n",
		"imported_pages_20240101_20240102.csv":    "date,hostname,page,visits,visitors,pageviews\n2024-01-01,example.com,/a,1,1,1\n2024-01-32,example.com,/b,1,1,1\n",
	})
	w := f.do(request{method: http.MethodPost, path: "/api/v1/websites/1/imports", key: f.alice, ctype: "application/zip", body: string(zip)})
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "imported_pages_20240101_20240102.csv:3:1: date: not a date") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	w = f.do(request{method: http.MethodGet, path: "/api/v1/websites/1/imports", key: f.alice})
	if !strings.Contains(w.Body.String(), `"data":[]`) {
		t.Fatalf("list: %s", w.Body)
	}
}

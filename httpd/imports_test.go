package httpd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/plausiblezip/plgen"
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

// TestImportsV1: the v1 Stats API merges the imported layer with
// with_imported=true (totals, daily series, a breakdown) and adds
// Plausible's "warning" when it cannot.
func TestImportsV1(t *testing.T) {
	f := newFixture(t, nil)
	zip, want := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 3, 1), Days: 31, DailyVisitors: 200, Pages: 5, Cities: 4, Seed: 11})
	if w := f.do(request{method: http.MethodPost, path: "/api/v1/websites/1/imports", key: f.alice, ctype: "application/zip", body: string(zip)}); w.Code != http.StatusCreated {
		t.Fatalf("upload: %d %s", w.Code, w.Body)
	}
	get := func(path string) map[string]any {
		t.Helper()
		w := f.do(request{method: http.MethodGet, path: path, key: f.alice})
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		var res map[string]any
		json.Unmarshal(w.Body.Bytes(), &res)
		return res
	}
	const march = "site_id=example.com&period=custom&date=2024-03-01,2024-03-31"
	res := get("/api/v1/stats/aggregate?" + march + "&metrics=visitors,pageviews&with_imported=true")
	if got, wantS := fmt.Sprint(res), fmt.Sprintf("map[results:map[pageviews:map[value:%d] visitors:map[value:%d]]]", want.Total[2], want.Total[0]); got != wantS {
		t.Errorf("aggregate %s, want %s", got, wantS)
	}
	if res := get("/api/v1/stats/aggregate?" + march + "&metrics=visitors"); fmt.Sprint(res) != "map[results:map[visitors:map[value:0]]]" {
		t.Errorf("without with_imported: %v", res)
	}
	res = get("/api/v1/stats/timeseries?" + march + "&interval=day&with_imported=true")
	days := res["results"].([]any)
	if len(days) != 31 {
		t.Fatalf("%d days", len(days))
	}
	for _, d := range days {
		m := d.(map[string]any)
		day, _ := buckets.ParseDate(m["date"].(string))
		if m["visitors"].(float64) != float64(want.Daily[day][0]) {
			t.Errorf("%v: %v, want %d", day, m["visitors"], want.Daily[day][0])
		}
	}
	res = get("/api/v1/stats/breakdown?" + march + "&property=visit:source&with_imported=true")
	for _, r := range res["results"].([]any) {
		m := r.(map[string]any)
		src := m["source"].(string)
		key := src
		if src == "Direct / None" {
			key = ""
		}
		if m["visitors"].(float64) != float64(want.Visitors["source"][key]) {
			t.Errorf("source %s: %v, want %d", src, m["visitors"], want.Visitors["source"][key])
		}
	}
	res = get("/api/v1/stats/aggregate?" + march + "&with_imported=true&filters=" + "visit:source%3D%3DGoogle%3Bvisit:device%3D%3DDesktop")
	if res["warning"] != "Imported stats are not included in the results because query parameters are not supported. For more information, see: https://plausible.io/docs/stats-api#filtering-imported-stats" {
		t.Errorf("no warning: %v", res)
	}
}

// TestImportsUploadsOneAtATime: an upload waits while another is read
// and stored (each holds its zip and rows in memory), then succeeds.
func TestImportsUploadsOneAtATime(t *testing.T) {
	f := newFixture(t, nil)
	zip, _ := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 3, 1), Days: 5, DailyVisitors: 50, Pages: 3, Cities: 2, Seed: 1})
	post := func(body io.Reader) chan int {
		done := make(chan int, 1)
		go func() {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/websites/1/imports", body)
			r.Header.Set("Authorization", "Bearer "+f.alice)
			r.Header.Set("Content-Type", "application/zip")
			w := httptest.NewRecorder()
			f.s.ServeHTTP(w, r)
			done <- w.Code
		}()
		return done
	}
	pr, pw := io.Pipe()
	first := post(pr)
	pw.Write(zip[:10]) // the first upload is being read
	second := post(bytes.NewReader(zip))
	select {
	case code := <-second:
		t.Fatalf("second upload answered %d while the first was being read", code)
	case <-time.After(300 * time.Millisecond):
	}
	pw.Write(zip[10:])
	pw.Close()
	if a, b := <-first, <-second; a != http.StatusCreated || b != http.StatusCreated {
		t.Fatalf("uploads: %d, %d", a, b)
	}
}

// TestImportUnknownStatus: an import change whose outcome the node could
// not learn is a 202 saying to list the imports first, not a 503 that
// clients retry (importing twice).
func TestImportUnknownStatus(t *testing.T) {
	for _, err := range []error{
		engine.ErrImportUnknown,
		fmt.Errorf("%w: %w: late", engine.ErrImportUnknown, engine.ErrClusterUnavailable),
		fmt.Errorf("%w: %w", engine.ErrImportUnknown, engine.ErrClosed),
	} {
		code, msg, internal := errorStatus(err)
		if code != http.StatusAccepted || internal || !strings.Contains(fmt.Sprint(msg), "list the website's imports") {
			t.Errorf("%v: %d %v %v", err, code, msg, internal)
		}
	}
}

package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/plausiblezip/plgen"
	"github.com/webstats/webstats/snapshot"
)

// importExport makes an export of days days from 2024-01-01, reads it
// and imports it into website.
func importExport(t *testing.T, e *engine.Engine, w engine.Website, days int) (engine.Import, *plgen.Sums) {
	t.Helper()
	b, sums := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 1, 1), Days: days, DailyVisitors: 300, Pages: 8, Cities: 5, Seed: 3})
	x, err := plausiblezip.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	imp, err := e.Owner(w.Account).ImportPlausible(context.Background(), w.ID, x, "export.zip")
	if err != nil {
		t.Fatal(err)
	}
	return imp, sums
}

// v2 runs a v2 query given as JSON (site_id filled in).
func v2(t *testing.T, e *engine.Engine, w engine.Website, body string) engine.QueryResult {
	t.Helper()
	q, err := engine.ParseQuery([]byte(body))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	res, err := e.Owner(w.Account).Query(context.Background(), w.ID, q)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return res
}

func metricInt(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(int64)
	if !ok {
		t.Fatalf("metric %v (%T) is not an int64", v, v)
	}
	return n
}

const jan = `"date_range":["2024-01-01","2024-02-09"],"include":{"imports":true}`

// TestImportedQueries: v2 queries with include.imports answer the export's
// sums: totals, a daily and a monthly series, and the breakdowns Plausible
// merges (SPEC §14; plausible-api.md meta.imports_included).
func TestImportedQueries(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	_, want := importExport(t, e, w, 40)

	res := v2(t, e, w, `{"site_id":"example.com","metrics":["visitors","visits","pageviews","bounce_rate","visit_duration","views_per_visit"],`+jan+`}`)
	if res.Meta.ImportsIncluded == nil || !*res.Meta.ImportsIncluded || res.Meta.ImportsSkipReason != "" {
		t.Fatalf("meta %+v", res.Meta)
	}
	m := res.Results[0].Metrics
	tot := want.Total // visitors, visits, pageviews, bounces, duration
	wantM := []any{int64(tot[0]), int64(tot[1]), int64(tot[2]),
		int64(math.Round(100 * float64(tot[3]) / float64(tot[1]))),
		int64(math.Round(float64(tot[4]) / float64(tot[1]))),
		math.Round(100*float64(tot[2])/float64(tot[1])) / 100}
	if fmt.Sprint(m) != fmt.Sprint(wantM) {
		t.Fatalf("totals %v, want %v", m, wantM)
	}

	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors","pageviews"],"dimensions":["time:day"],`+jan+`}`)
	if len(res.Results) != 40 {
		t.Fatalf("%d days", len(res.Results))
	}
	for _, row := range res.Results {
		d, _ := buckets.ParseDate(row.Dimensions[0].(string))
		if got, wantV := metricInt(t, row.Metrics[0]), int64(want.Daily[d][0]); got != wantV {
			t.Errorf("%v: %d visitors, want %d", d, got, wantV)
		}
	}
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"dimensions":["time:month"],`+jan+`}`)
	var janV, febV uint64
	for d, v := range want.Daily {
		if y, mo, _ := d.Civil(); y == 2024 && mo == 1 {
			janV += v[0]
		} else {
			febV += v[0]
		}
	}
	if got := fmt.Sprint(res.Results); got != fmt.Sprintf("[{[2024-01-01] [%d]} {[2024-02-01] [%d]}]", janV, febV) {
		t.Errorf("months %s, want %d, %d", got, janV, febV)
	}

	// Weeks: 2024-01-01 is a Monday, so weeks start every 7 days from it.
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"dimensions":["time:week"],`+jan+`}`)
	weeks := map[string]int64{}
	for d, v := range want.Daily {
		start := buckets.DateOf(2024, 1, 1) + (d-buckets.DateOf(2024, 1, 1))/7*7
		weeks[start.String()] += int64(v[0])
	}
	gotWeeks := map[string]int64{}
	for _, row := range res.Results {
		gotWeeks[row.Dimensions[0].(string)] = metricInt(t, row.Metrics[0])
	}
	if len(res.Results) != 6 || fmt.Sprint(gotWeeks) != fmt.Sprint(weeks) {
		t.Errorf("weeks %v, want %v", gotWeeks, weeks)
	}

	for _, c := range []struct{ dim, key string }{
		{"visit:source", "source"}, {"visit:device", "device"}, {"visit:browser", "browser"},
		{"visit:os", "os"}, {"visit:country", "country"}, {"event:page", "page"},
		{"visit:entry_page", "imported_entry_pages"}, {"visit:exit_page", "imported_exit_pages"},
		{"event:name", "name"},
	} {
		res := v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"dimensions":["`+c.dim+`"],`+jan+`}`)
		got := map[string]int64{}
		for _, row := range res.Results {
			got[fmt.Sprint(row.Dimensions[0])] = metricInt(t, row.Metrics[0])
		}
		exp := map[string]int64{}
		for v, n := range want.Visitors[c.key] {
			switch {
			case v == "" && c.key == "source":
				v = "Direct / None"
			case v == "" && c.key == "browser":
				v = "(not set)"
			}
			if n > 0 {
				exp[v] += int64(n)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Errorf("%s: %v, want %v", c.dim, got, exp)
		}
		// Ordered by visitors, descending (the default order).
		for i := 1; i < len(res.Results); i++ {
			if metricInt(t, res.Results[i].Metrics[0]) > metricInt(t, res.Results[i-1].Metrics[0]) {
				t.Errorf("%s: rows out of order: %v", c.dim, res.Results)
				break
			}
		}
	}
	names := map[string]string{"EE": "Estonia", "US": "United States", "DE": "Germany", "FR": "France"}
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"dimensions":["visit:country_name"],`+jan+`}`)
	if len(res.Results) != 4 {
		t.Errorf("country names: %v", res.Results)
	}
	for _, row := range res.Results {
		var code string
		for c, n := range names {
			if n == row.Dimensions[0] {
				code = c
			}
		}
		if code == "" || metricInt(t, row.Metrics[0]) != int64(want.Visitors["country"][code]) {
			t.Errorf("country name %v: %v, want %d", row.Dimensions[0], row.Metrics, want.Visitors["country"][code])
		}
	}
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"filters":[["is","visit:country_name",["Estonia"]]],`+jan+`}`)
	if metricInt(t, res.Results[0].Metrics[0]) != int64(want.Visitors["country"]["EE"]) {
		t.Errorf("Estonia: %v, want %d", res.Results, want.Visitors["country"]["EE"])
	}
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["events"],"dimensions":["event:name"],`+jan+`}`)
	for _, row := range res.Results {
		if got := metricInt(t, row.Metrics[0]); got != int64(want.Events[row.Dimensions[0].(string)]) {
			t.Errorf("events of %v: %d, want %d", row.Dimensions[0], got, want.Events[row.Dimensions[0].(string)])
		}
	}
	// Filters on the breakdown's own table (base.ex: one table answers).
	sum := func(key string, keep func(string) bool) int64 {
		var n int64
		for v, c := range want.Visitors[key] {
			if keep(v) {
				n += int64(c)
			}
		}
		return n
	}
	for _, c := range []struct {
		query string
		want  int64
	}{
		{`"filters":[["is","visit:source",["Google"]]]`, sum("source", func(v string) bool { return v == "Google" })},
		{`"filters":[["is","visit:source",["Direct / None"]]]`, sum("source", func(v string) bool { return v == "" })},
		{`"filters":[["is_not","visit:source",["Google","Bing"]]]`, sum("source", func(v string) bool { return v != "Google" && v != "Bing" })},
		{`"filters":[["contains","visit:source",["duck"],{"case_sensitive":false}]]`, sum("source", func(v string) bool { return v == "DuckDuckGo" })},
		{`"filters":[["matches","event:page",["^/blog/post-[12]$"]]]`, sum("page", func(v string) bool { return v == "/blog/post-1" || v == "/blog/post-2" })},
		{`"filters":[["and",[["is","visit:country",["EE","DE"]],["is_not","visit:country",["DE"]]]]]`, sum("country", func(v string) bool { return v == "EE" })},
	} {
		res := v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],`+c.query+`,`+jan+`}`)
		if got := metricInt(t, res.Results[0].Metrics[0]); got != c.want || !*res.Meta.ImportsIncluded {
			t.Errorf("%s: %d (%+v), want %d", c.query, got, res.Meta, c.want)
		}
	}
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"dimensions":["visit:source"],"filters":[["is_not","visit:source",["Google"]]],`+jan+`}`)
	for _, row := range res.Results {
		if row.Dimensions[0] == "Google" {
			t.Errorf("filtered out Google is a row: %v", res.Results)
		}
	}
	if len(res.Results) != len(want.Visitors["source"])-1 {
		t.Errorf("sources without Google: %v", res.Results)
	}

	// "all" reaches back to the first imported day.
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"date_range":"all","include":{"imports":true}}`)
	if got := metricInt(t, res.Results[0].Metrics[0]); got != int64(tot[0]) || res.Query.DateRange[0][:10] != "2024-01-01" {
		t.Errorf("all: %d from %s, want %d from 2024-01-01", got, res.Query.DateRange[0], tot[0])
	}

	// Pagination applies to the merged rows.
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"dimensions":["event:page"],"pagination":{"limit":3,"offset":2},"include":{"imports":true,"total_rows":true},"date_range":["2024-01-01","2024-02-09"]}`)
	if len(res.Results) != 3 || res.Meta.TotalRows == nil || *res.Meta.TotalRows != len(want.Pageviews) {
		t.Errorf("page of pages: %d rows, total %v", len(res.Results), res.Meta.TotalRows)
	}
}

// TestImportedSkips: Plausible's skip reasons and warnings
// (lib/plausible/stats/query.ex, query_result.ex).
func TestImportedSkips(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	bare := newSite(t, e, "bare.com")
	importExport(t, e, w, 10)
	cases := []struct {
		site          engine.Website
		query, reason string
		warningPrefix string
	}{
		{bare, `"metrics":["visitors"],` + jan, "no_imported_data", ""},
		{w, `"metrics":["visitors"],"date_range":["2025-01-01","2025-01-31"],"include":{"imports":true}`, "out_of_range", ""},
		{w, `"metrics":["visitors"],"dimensions":["time:hour"],"date_range":["2024-01-02","2024-01-02"],"include":{"imports":true}`, "unsupported_interval", "Imported stats are not included because the time dimension (i.e. the interval) is too short."},
		{w, `"metrics":["visitors"],"dimensions":["visit:device"],"filters":[["is","visit:source",["Google"]]],` + jan, "unsupported_query", "Imported stats are not included in the results because query parameters are not supported. For more information, see: https://plausible.io/docs/stats-api#filtering-imported-stats"},
		{w, `"metrics":["visitors"],"filters":[["is","visit:channel",["Organic Search"]]],` + jan, "unsupported_query", "Imported stats"},
		{w, `"metrics":["visitors"],"filters":[["or",[["is","visit:source",["Google"]],["is","visit:source",["Bing"]]]]],` + jan, "unsupported_query", "Imported stats"},
		{w, `"metrics":["visitors"],"dimensions":["visit:source","visit:device"],` + jan, "unsupported_query", "Imported stats"},
		{w, `"metrics":["scroll_depth"],"dimensions":["event:page"],` + jan, "unsupported_query", "Imported stats"},
	}
	for _, c := range cases {
		res := v2(t, e, c.site, `{"site_id":"`+c.site.Domain+`",`+c.query+`}`)
		if res.Meta.ImportsIncluded == nil || *res.Meta.ImportsIncluded || res.Meta.ImportsSkipReason != c.reason ||
			len(res.Meta.ImportsWarning) < len(c.warningPrefix) || res.Meta.ImportsWarning[:len(c.warningPrefix)] != c.warningPrefix ||
			(c.warningPrefix == "") != (res.Meta.ImportsWarning == "") {
			t.Errorf("%s: meta %+v, want %s %q", c.query, res.Meta, c.reason, c.warningPrefix)
		}
		b, _ := json.Marshal(res)
		if c.reason == "no_imported_data" && !bytes.Contains(b, []byte(`"meta":{"imports_included":false,"imports_skip_reason":"no_imported_data"}`)) {
			t.Errorf("body %s", b)
		}
	}
	// Without include.imports the imported layer is left out, with no meta.
	res := v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"date_range":["2024-01-01","2024-02-09"]}`)
	if res.Meta.ImportsIncluded != nil || metricInt(t, res.Results[0].Metrics[0]) != 0 {
		t.Errorf("without imports: %+v %v", res.Meta, res.Results)
	}
}

// TestImportedMergesLive: on days with both, live and imported figures add
// up, as Plausible's full join of native and imported rows does
// (imported.ex, merge_imported); visitors of a range are the sum of the
// days' (SPEC §14).
func TestImportedMergesLive(t *testing.T) {
	c := newClock("2024-01-05T23:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	_, want := importExport(t, e, w, 10)
	track(t, e,
		pv("2024-01-05T10:00:00Z", "https://example.com/blog/post-1"),
		pv("2024-01-05T10:01:00Z", "https://example.com/new-page"),
		pv("2024-01-05T11:00:00Z", "https://example.com/blog/post-1", func(h *engine.Hit) { h.IP = ip("9.9.9.9") }),
	)
	res := v2(t, e, w, `{"site_id":"example.com","metrics":["visitors","pageviews"],"date_range":["2024-01-01","2024-01-10"],"include":{"imports":true}}`)
	if got, wantV := fmt.Sprint(res.Results[0].Metrics), fmt.Sprint([]int64{int64(want.Total[0]) + 2, int64(want.Total[2]) + 3}); got != wantV {
		t.Errorf("totals %s, want %s", got, wantV)
	}
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["pageviews"],"dimensions":["event:page"],"date_range":["2024-01-01","2024-01-10"],"include":{"imports":true}}`)
	got := map[string]int64{}
	for _, row := range res.Results {
		got[row.Dimensions[0].(string)] = metricInt(t, row.Metrics[0])
	}
	if got["/new-page"] != 1 || got["/blog/post-1"] != int64(want.Pageviews["/blog/post-1"])+2 || got["/blog/post-0"] != int64(want.Pageviews["/blog/post-0"]) {
		t.Errorf("pages %v; imported post-1 %d", got, want.Pageviews["/blog/post-1"])
	}
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],"dimensions":["time:day"],"date_range":["2024-01-01","2024-01-10"],"include":{"imports":true}}`)
	for _, row := range res.Results {
		d, _ := buckets.ParseDate(row.Dimensions[0].(string))
		wantV := int64(want.Daily[d][0])
		if d == buckets.DateOf(2024, 1, 5) {
			wantV += 2
		}
		if metricInt(t, row.Metrics[0]) != wantV {
			t.Errorf("%v: %v, want %d", d, row.Metrics, wantV)
		}
	}
}

// TestImportedListDeleteRestart: an import is listed, survives a restart,
// and is deleted as a whole; deleting the website removes its imports.
func TestImportedListDeleteRestart(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	fs := snapshot.NewMemFS()
	e, opts := openMem(t, c, func(o *engine.Options) { o.FS = fs })
	w := newSite(t, e, "example.com")
	imp, want := importExport(t, e, w, 12)
	imp2, _ := importExport(t, e, w, 3)
	if imp.ID == imp2.ID || imp.From != buckets.DateOf(2024, 1, 1) || imp.To != buckets.DateOf(2024, 1, 12) || imp.Rows != want.Rows {
		t.Fatalf("imports %+v %+v (rows want %d)", imp, imp2, want.Rows)
	}
	if err := e.Owner(w.Account).DeleteImport(context.Background(), w.ID, imp2.ID); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err := engine.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	list, err := e.Owner(w.Account).Imports(context.Background(), w.ID)
	if err != nil || len(list) != 1 || list[0] != imp {
		t.Fatalf("after restart: %+v %v, want [%+v]", list, err, imp)
	}
	res := v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],`+jan+`}`)
	if metricInt(t, res.Results[0].Metrics[0]) != int64(want.Total[0]) {
		t.Fatalf("after restart: %v, want %d", res.Results, want.Total[0])
	}
	if err := e.Owner(w.Account).DeleteImport(context.Background(), w.ID, imp.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Owner(w.Account).DeleteImport(context.Background(), w.ID, imp.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	res = v2(t, e, w, `{"site_id":"example.com","metrics":["visitors"],`+jan+`}`)
	if res.Meta.ImportsSkipReason != "no_imported_data" || metricInt(t, res.Results[0].Metrics[0]) != 0 {
		t.Errorf("after delete: %+v %v", res.Meta, res.Results)
	}
	// Deleting the website removes its imports from the store.
	del := newSite(t, e, "deleted.example")
	delImp, _ := importExport(t, e, del, 3)
	if err := e.Owner(del.Account).DeleteWebsite(context.Background(), del.ID); err != nil {
		t.Fatal(err)
	}

	// Another account sees nothing of it.
	other, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Owner(other.ID).Imports(context.Background(), w.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("other account lists: %v", err)
	}
	e.Close()
	st, err := snapshot.Open(&snapshot.Options{FS: opts.FS, Dir: opts.Dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	if err := st.ScanImports(del.ID, func(id, chunk uint32, data []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("import %d of a deleted website: %d chunks left, %v", delImp.ID, n, err)
	}
	// (Import 0 is the record of the last id given, kept while the website is.)
	if err := st.ScanImports(w.ID, func(id, chunk uint32, data []byte) error {
		if id != 0 {
			n++
		}
		return nil
	}); err != nil || n != 0 {
		t.Errorf("deleted import: %d chunks left, %v", n, err)
	}
}

// TestImportedConcurrent: queries with include.imports run while imports
// are added and deleted; each answer is one of the states the layer went
// through (no import, or one whole import), never a part of one.
func TestImportedConcurrent(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	b, want := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 1, 1), Days: 40, DailyVisitors: 300, Pages: 8, Cities: 5, Seed: 3})
	x, err := plausiblezip.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 3 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				q, _ := engine.ParseQuery([]byte(`{"site_id":"example.com","metrics":["visitors"],` + jan + `}`))
				res, err := e.Owner(w.Account).Query(context.Background(), w.ID, q)
				if err == nil {
					if v := res.Results[0].Metrics[0].(int64); v != 0 && v != int64(want.Total[0]) {
						err = fmt.Errorf("visitors %d: neither 0 nor %d", v, want.Total[0])
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 5 {
		imp, err := e.Owner(w.Account).ImportPlausible(context.Background(), w.ID, x, "export.zip")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Owner(w.Account).DeleteImport(context.Background(), w.ID, imp.ID); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestImportedWebsiteDeletedDuringImport: a website deleted while one of
// its imports is being stored keeps no chunk of it in the store (the
// import either lands before the deletion, which then removes it, or
// fails with ErrNotFound).
func TestImportedWebsiteDeletedDuringImport(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	fs := snapshot.NewMemFS()
	e, opts := openMem(t, c, func(o *engine.Options) { o.FS = fs })
	b, _ := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 1, 1), Days: 200, DailyVisitors: 300, Pages: 8, Cities: 5, Seed: 3})
	x, err := plausiblezip.Read(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var sites []engine.Website
	for i := range 4 {
		w := newSite(t, e, fmt.Sprintf("s%d.example", i))
		sites = append(sites, w)
		started, done := make(chan struct{}), make(chan error, 1)
		go func() {
			close(started)
			_, err := e.Owner(w.Account).ImportPlausible(context.Background(), w.ID, x, "export.zip")
			done <- err
		}()
		<-started
		if err := e.Owner(w.Account).DeleteWebsite(context.Background(), w.ID); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil && !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("import: %v", err)
		}
	}
	e.Close()
	st, err := snapshot.Open(&snapshot.Options{FS: opts.FS, Dir: opts.Dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, w := range sites {
		n := 0
		// (Import 0 is the record of the last id given, kept while the website is.)
		if err := st.ScanImports(w.ID, func(id, chunk uint32, data []byte) error {
			if id != 0 {
				n++
			}
			return nil
		}); err != nil || n != 0 {
			t.Errorf("website %d, deleted during its import: %d chunks left, %v", w.ID, n, err)
		}
	}
}

// TestImportedResidentBounded: the imports loaded for queries stay within
// their bound (here: one website's, the one used last), and a website
// whose imports were dropped from memory reads them again whole.
func TestImportedResidentBounded(t *testing.T) {
	defer engine.SetImportedCacheBytes(engine.SetImportedCacheBytes(1))
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	var sites []engine.Website
	var sums []*plgen.Sums
	var imps []engine.Import
	for i := range 3 {
		w := newSite(t, e, fmt.Sprintf("s%d.example", i))
		imp, s := importExport(t, e, w, 10+i)
		sites, sums, imps = append(sites, w), append(sums, s), append(imps, imp)
	}
	for round := range 2 {
		for i, w := range sites {
			q := `{"site_id":"` + w.Domain + `","metrics":["visitors"],` + jan + `}`
			res := v2(t, e, w, q)
			if got := metricInt(t, res.Results[0].Metrics[0]); got != int64(sums[i].Total[0]) {
				t.Errorf("round %d, %s: %d visitors, want %d", round, w.Domain, got, sums[i].Total[0])
			}
			if n, rows := engine.ImportedResident(e); n != 1 || rows != imps[i].Rows {
				t.Errorf("round %d, after %s: %d websites' imports loaded, %d rows; want 1, %d", round, w.Domain, n, rows, imps[i].Rows)
			}
		}
	}
	// A second import of a website loaded meanwhile is counted with it.
	imp, s := importExport(t, e, sites[2], 5)
	res := v2(t, e, sites[2], `{"site_id":"`+sites[2].Domain+`","metrics":["visitors"],`+jan+`}`)
	if got := metricInt(t, res.Results[0].Metrics[0]); got != int64(sums[2].Total[0]+s.Total[0]) {
		t.Errorf("two imports: %d visitors, want %d", got, sums[2].Total[0]+s.Total[0])
	}
	if n, rows := engine.ImportedResident(e); n != 1 || rows != imps[2].Rows+imp.Rows {
		t.Errorf("two imports: %d websites, %d rows loaded", n, rows)
	}
}

// TestImportedBreakdownOneNativeScan: a breakdown with include.imports
// over more native groups than a page (MaxQueryLimit) reads the native
// rows in one query, not a query per page of them (each of which
// groups every row again: quadratic in the groups).
func TestImportedBreakdownOneNativeScan(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	importExport(t, e, w, 3)
	n := engine.MaxQueryLimit*2 + 5
	hits := make([]engine.Hit, n)
	for i := range hits {
		hits[i] = pv("2026-11-21T10:00:00Z", fmt.Sprintf("https://example.com/p%d", i))
	}
	track(t, e, hits...)
	q := `{"site_id":"example.com","metrics":["visitors"],"dimensions":["event:page"],"date_range":["2024-01-01","2026-11-21"],"include":{"imports":true,"total_rows":true}}`
	before := engine.QueryRuns()
	res := v2(t, e, w, q)
	scans := engine.QueryRuns() - before
	if res.Meta.TotalRows == nil || *res.Meta.TotalRows < n || !*res.Meta.ImportsIncluded {
		t.Fatalf("meta %+v", res.Meta)
	}
	// One for the page asked (its echo and meta), one for every native row.
	if scans > 2 {
		t.Errorf("%d queries of the native rows, want 2", scans)
	}
}

// TestImportedIDsNotReused: an import's id is never given again after it
// is deleted, before or after a restart (Plausible's site_imports ids are
// a serial): a DELETE of it retried later cannot delete another import.
func TestImportedIDsNotReused(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	fs := snapshot.NewMemFS()
	e, opts := openMem(t, c, func(o *engine.Options) { o.FS = fs })
	w := newSite(t, e, "example.com")
	a, _ := importExport(t, e, w, 3)
	b, _ := importExport(t, e, w, 3)
	if err := e.Owner(w.Account).DeleteImport(context.Background(), w.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	c3, _ := importExport(t, e, w, 3)
	if c3.ID == a.ID || c3.ID == b.ID {
		t.Errorf("ids %d, %d (deleted), then %d", a.ID, b.ID, c3.ID)
	}
	if err := e.Owner(w.Account).DeleteImport(context.Background(), w.ID, c3.ID); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, _ = openMem(t, c, func(o *engine.Options) { *o = *opts })
	d, _ := importExport(t, e, w, 3)
	if d.ID == a.ID || d.ID == b.ID || d.ID == c3.ID {
		t.Errorf("after a restart: ids %d, %d, %d, then %d", a.ID, b.ID, c3.ID, d.ID)
	}
}

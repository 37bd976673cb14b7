package plausiblezip_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/plausiblezip/plgen"
)

func read(t *testing.T, b []byte) (*plausiblezip.Export, error) {
	t.Helper()
	return plausiblezip.Read(bytes.NewReader(b), int64(len(b)))
}

// TestReadExport: every file of a realistic export is read, with its
// numbers as written (SPEC §14, issue 40: a file made from the documented
// columns, numbers checked against it).
func TestReadExport(t *testing.T) {
	from := buckets.DateOf(2024, 1, 1)
	b, want := plgen.Zip(plgen.Options{From: from, Days: 40, DailyVisitors: 500, Pages: 12, Cities: 6, Seed: 1})
	x, err := read(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Files) != 10 || x.From != from || x.To != from+39 {
		t.Fatalf("%d files, %v to %v", len(x.Files), x.From, x.To)
	}
	var total [5]uint64
	rows := 0
	for _, f := range x.Files {
		rows += len(f.Rows)
	}
	for _, r := range x.Rows("imported_visitors") {
		total[0] += r.M[plausiblezip.Visitors]
		total[1] += r.M[plausiblezip.Visits]
		total[2] += r.M[plausiblezip.Pageviews]
		total[3] += r.M[plausiblezip.Bounces]
		total[4] += r.M[plausiblezip.Duration]
	}
	if total != want.Total || rows != want.Rows {
		t.Fatalf("totals %v rows %d, want %v %d", total, rows, want.Total, want.Rows)
	}
	pv := map[string]uint64{}
	for _, r := range x.Rows("imported_pages") {
		pv[r.Dims[1]] += r.M[plausiblezip.Pageviews]
	}
	for page, n := range want.Pageviews {
		if pv[page] != n {
			t.Errorf("page %s: %d pageviews, want %d", page, pv[page], n)
		}
	}
	ev := map[string]uint64{}
	for _, r := range x.Rows("imported_custom_events") {
		ev[r.Dims[0]] += r.M[plausiblezip.Events]
	}
	for name, n := range want.Events {
		if ev[name] != n {
			t.Errorf("event %s: %d, want %d", name, ev[name], n)
		}
	}
	exits := uint64(0)
	for _, r := range x.Rows("imported_exit_pages") {
		exits += r.M[plausiblezip.Visitors]
	}
	var wantExits uint64
	for _, n := range want.Visitors["imported_exit_pages"] {
		wantExits += n
	}
	if exits != wantExits {
		t.Errorf("exit pages visitors %d, want %d", exits, wantExits)
	}
}

// zipOf builds a zip of the given files.
func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const visitorsHeader = "date,visitors,pageviews,bounces,visits,visit_duration\n"

// TestReadRefusals: a broken export is refused naming the file, line and
// column (issue 40: wrong header, bad date, truncated zip, over-long line).
func TestReadRefusals(t *testing.T) {
	good, _ := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 1, 1), Days: 3, DailyVisitors: 50, Pages: 2, Cities: 2, Seed: 2})
	const vf = "imported_visitors_20240101_20240131.csv"
	long := visitorsHeader + "2024-01-01,1,1,1,1,1\n2024-01-02," + strings.Repeat("9", plausiblezip.MaxLine+10) + ",1,1,1,1\n"
	cases := []struct {
		name      string
		zip       []byte
		file      string
		line, col int
		msg       string
	}{
		{"wrong header", zipOf(t, map[string]string{vf: "date,visitors,pageviews,bounces,visits,duration\n"}), vf, 1, 40, `unknown column "duration"`},
		{"missing column", zipOf(t, map[string]string{vf: "date,visitors,pageviews,bounces,visits\n"}), vf, 1, 0, `missing column "visit_duration"`},
		{"bad date", zipOf(t, map[string]string{vf: visitorsHeader + "2024-01-01,1,1,1,1,1\n2024-13-01,1,1,1,1,1\n"}), vf, 3, 1, "not a date"},
		{"date outside the file's range", zipOf(t, map[string]string{vf: visitorsHeader + "2024-02-01,1,1,1,1,1\n"}), vf, 2, 1, "outside the file's range"},
		{"bad number", zipOf(t, map[string]string{vf: visitorsHeader + "2024-01-01,1,x1,1,1,1\n"}), vf, 2, 14, "pageviews: not an unsigned integer"},
		{"short row", zipOf(t, map[string]string{vf: visitorsHeader + "2024-01-01,1,1\n"}), vf, 2, 1, "wrong number of fields"},
		{"over-long line", zipOf(t, map[string]string{vf: long}), vf, 3, 0, "line longer than"},
		{"unknown file", zipOf(t, map[string]string{"notes.txt": "hi"}), "notes.txt", 0, 0, "not a file of a Plausible export"},
		{"truncated zip", good[:len(good)/2], "", 0, 0, "not a readable zip"},
		{"empty zip", zipOf(t, map[string]string{}), "", 0, 0, "no imported_"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := read(t, c.zip)
			var pe *plausiblezip.Error
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, %v; want an *Error", x, err)
			}
			if pe.File != c.file || pe.Line != c.line || pe.Column != c.col || !strings.Contains(pe.Msg, c.msg) {
				t.Fatalf("got %q (file %q line %d col %d), want file %q line %d col %d, %q", err, pe.File, pe.Line, pe.Column, c.file, c.line, c.col, c.msg)
			}
		})
	}
}

// TestReadCorruptEntry: a zip whose entry's bytes are damaged (the central
// directory intact) is refused naming the entry.
func TestReadCorruptEntry(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "imported_visitors_20240101_20240131.csv", Method: zip.Store})
	w.Write([]byte(visitorsHeader + strings.Repeat("2024-01-01,1,1,1,1,1\n", 100)))
	zw.Close()
	b := buf.Bytes()
	i := bytes.Index(b, []byte("2024-01-01,1,1,1,1,1\n2024"))
	b[i+11] = '2' // still a valid row: only the checksum tells
	_, err := read(t, b)
	var pe *plausiblezip.Error
	if !errors.As(err, &pe) || pe.File == "" || !strings.Contains(pe.Msg, "checksum") {
		t.Fatalf("got %v", err)
	}
}

// TestReadClickHouseCSV: the files as ClickHouse's CSVWithNames writes them
// (Plausible's export streams them so: strings and dates quoted, NULL as
// \N), and an older export's columns (csv_importer.ex before scroll depth
// and referrers: pages with exits and time_on_page, sources without
// referrer, utm_source and pageviews, exit pages with exits only).
func TestReadClickHouseCSV(t *testing.T) {
	b := zipOf(t, map[string]string{
		"imported_pages_20240101_20240101.csv": `"date","hostname","page","visits","visitors","pageviews","scroll_depth","pageleave_visitors"` + "\n" +
			`"2024-01-01","example.com","/a, b",3,2,5,\N,0` + "\n",
		"imported_sources_20240101_20240101.csv": "date,source,utm_medium,utm_campaign,utm_content,utm_term,visitors,visits,visit_duration,bounces\n" +
			"2024-01-01,Google,,,,,7,8,90,4\n",
		"imported_exit_pages_20240101_20240101.csv": "date,exit_page,visitors,exits\n2024-01-01,/a,1,2\n",
	})
	x, err := read(t, b)
	if err != nil {
		t.Fatal(err)
	}
	p := x.Rows("imported_pages")
	if len(p) != 1 || p[0].Dims[1] != "/a, b" || p[0].M[plausiblezip.Visitors] != 2 || p[0].M[plausiblezip.Pageviews] != 5 || p[0].M[plausiblezip.Visits] != 3 {
		t.Errorf("pages %+v", p)
	}
	s := x.Rows("imported_sources")
	if len(s) != 1 || s[0].Dims[0] != "Google" || s[0].Dims[1] != "" || s[0].M[plausiblezip.Visits] != 8 || s[0].M[plausiblezip.Bounces] != 4 || s[0].M[plausiblezip.Duration] != 90 {
		t.Errorf("sources %+v", s)
	}
	e := x.Rows("imported_exit_pages")
	if len(e) != 1 || e[0].M[plausiblezip.Visits] != 2 {
		t.Errorf("exit pages %+v", e)
	}
}

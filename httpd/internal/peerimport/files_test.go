package peerimport_test

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/webstats/webstats/httpd/internal/peerimport"
)

// memFiles are files held in memory, opened as often as asked.
func memFiles(kv ...string) []peerimport.File {
	var out []peerimport.File
	for i := 0; i < len(kv); i += 2 {
		body := kv[i+1]
		out = append(out, peerimport.File{Name: kv[i], Open: func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(body)), nil
		}})
	}
	return out
}

type got struct {
	line string
	file string
	n    int
}

func collect(format string, files []peerimport.File) ([]got, error) {
	var out []got
	err := peerimport.Lines(format, files, func(line []byte, file string, n int) error {
		out = append(out, got{string(line), file, n})
		return nil
	})
	return out, err
}

// NDJSON: blank lines are skipped but counted, lines trimmed, files in
// order; the line numbers are what both importers name a bad line by.
func TestLinesNDJSON(t *testing.T) {
	lines, err := collect("ndjson", memFiles("a", "{\"x\":1}\n\n  {\"x\":2}  \n", "b", "\n{\"x\":3}"))
	if err != nil {
		t.Fatal(err)
	}
	want := []got{{`{"x":1}`, "a", 1}, {`{"x":2}`, "a", 3}, {`{"x":3}`, "b", 2}}
	if len(lines) != len(want) {
		t.Fatalf("got %v, want %v", lines, want)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Fatalf("line %d: got %v, want %v", i, lines[i], want[i])
		}
	}
}

// A line over MaxLine is a *LongLineError naming its file and line, after
// the lines before it were given.
func TestLinesNDJSONLongLine(t *testing.T) {
	body := "{}\n\n" + strings.Repeat("x", peerimport.MaxLine+1) + "\n{}\n"
	lines, err := collect("ndjson", memFiles("ok", "{}\n", "big", body))
	var long *peerimport.LongLineError
	if !errors.As(err, &long) || long.File != "big" || long.Line != 3 {
		t.Fatalf("error %v (%T): want a *LongLineError of big at line 3", err, err)
	}
	if len(lines) != 2 {
		t.Fatalf("got %d lines before the long one, want 2", len(lines))
	}
}

// A file that opens but cannot be read is a *ReadError naming it once.
func TestLinesReadError(t *testing.T) {
	dir := t.TempDir()
	for _, format := range []string{"ndjson", "umami"} {
		_, err := collect(format, []peerimport.File{{Name: dir, Open: func() (io.ReadCloser, error) { return os.Open(dir) }}})
		var re *peerimport.ReadError
		if !errors.As(err, &re) || re.File != dir || strings.Count(err.Error(), dir) != 2 { // "dir: read dir: ..."
			t.Fatalf("%s: error %v (%T): want a *ReadError of %s", format, err, err, dir)
		}
	}
	// An error of Open is the opener's, as it is.
	boom := errors.New("boom")
	_, err := collect("goatcounter", []peerimport.File{{Name: "g", Open: func() (io.ReadCloser, error) { return nil, boom }}})
	if err != boom {
		t.Fatalf("error %v: want the opener's", err)
	}
}

// Umami's tables are told apart by their headers, in any order: the
// events' lines take their session's fields and their event_data's props.
func TestLinesUmami(t *testing.T) {
	events := "session_id,created_at,url_path,event_type,event_id,event_name\n" +
		"s1,2024-01-02 03:04:05,/a,1,e1,\n" +
		"s1,2024-01-02 03:04:06,/b,2,e2,signup\n"
	sessions := "session_id,browser,country\ns1,firefox,DE\n"
	data := "website_event_id,data_key,string_value\ne2,plan,pro\n"
	lines, err := collect("umami", memFiles("ev.csv", events, "data.csv", data, "sess.csv", sessions))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0].file != "ev.csv" || lines[0].n != 2 || lines[1].n != 3 {
		t.Fatalf("got %v", lines)
	}
	for _, want := range []string{`"browser":"Firefox"`, `"country":"DE"`, `"page":"/b"`, `"props":{"plan":"pro"}`} {
		if !strings.Contains(lines[1].line, want) {
			t.Fatalf("line %s: no %s", lines[1].line, want)
		}
	}
	for _, files := range [][]peerimport.File{nil, memFiles("ev.csv", events), memFiles("sess.csv", sessions, "data.csv", data)} {
		if _, err := collect("umami", files); !errors.Is(err, peerimport.ErrUmamiTables) {
			t.Fatalf("error %v: want ErrUmamiTables", err)
		}
	}
}

// TestLinesUmamiBoundAllFiles (SPEC §13: every map fed by a request is
// bounded): the bound on the sessions and event properties an Umami
// import holds in memory is on all its files together, not on each: an
// upload of several session tables, each under it, is refused past it,
// before any line is given.
func TestLinesUmamiBoundAllFiles(t *testing.T) {
	defer peerimport.SetUmamiTotal(peerimport.SetUmamiTotal(3))
	events := "session_id,created_at,url_path,event_type,event_id,event_name\ns1,2024-01-02 03:04:05,/a,1,e1,\n"
	sess := func(ids ...string) string {
		return "session_id,browser,country\n" + strings.Join(ids, ",firefox,DE\n") + ",firefox,DE\n"
	}
	data := func(ids ...string) string {
		return "website_event_id,data_key,string_value\n" + strings.Join(ids, ",plan,pro\n") + ",plan,pro\n"
	}
	if lines, err := collect("umami", memFiles("ev.csv", events, "a.csv", sess("s1", "s2"), "b.csv", sess("s2", "s3"))); err != nil || len(lines) != 1 {
		t.Fatalf("3 sessions in two files, bound 3: %v, %v", lines, err)
	}
	for name, files := range map[string][]peerimport.File{
		"sessions":   memFiles("ev.csv", events, "a.csv", sess("s1", "s2"), "b.csv", sess("s3", "s4")),
		"properties": memFiles("ev.csv", events, "s.csv", sess("s1"), "d1.csv", data("e1", "e2"), "d2.csv", data("e3", "e4")),
	} {
		lines, err := collect("umami", files)
		var pe *peerimport.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "in all the files") || len(lines) != 0 {
			t.Errorf("%s past the bound over two files: %d lines, %v; want a peerimport.Error and no line", name, len(lines), err)
		}
	}
}

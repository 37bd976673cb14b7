package pages

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webstats/webstats/httpd/internal/peerimport"
)

// TestUploadFileMessages pins the page's own sentences for the errors of
// reading an upload (peerimport.Lines reads it, for the command line too),
// and the line numbers it names: blank NDJSON lines count.
func TestUploadFileMessages(t *testing.T) {
	tmp := t.TempDir()
	save := func(name, body string) upload {
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return upload{name, path}
	}
	long := save("long.ndjson", "{}\n\n"+strings.Repeat("a", peerimport.MaxLine+1)+"\n")
	sess := save("session.csv", "session_id,browser\ns1,firefox\n")
	goat := save("goat.csv", "2Path,Date\n")
	tests := []struct {
		format string
		files  []upload
		want   string
	}{
		{"ndjson", []upload{long}, fmt.Sprintf("long.ndjson, line 3: a line longer than %d bytes.", peerimport.MaxLine)},
		{"umami", []upload{sess}, "Umami needs the session table and the website_event table (and, for event properties, event_data), each a CSV file with a header: choose them together."},
		{"goatcounter", []upload{goat}, "goat.csv:1: wrong header: no column Title (want GoatCounter's export format 2: "},
	}
	for _, tt := range tests {
		err := eachChunk(tt.format, tt.files, func([]byte, []at) error { return nil })
		var ue *uploadError
		if !errors.As(err, &ue) || !strings.HasPrefix(ue.msg, tt.want) || !strings.HasSuffix(ue.msg, ".") {
			t.Errorf("%s: error %v (%T), want an *uploadError %q", tt.format, err, err, tt.want)
		}
	}
	var where []at
	ok := save("ok.ndjson", "\n{\"a\":1}\n\n{\"a\":2}\n")
	if err := eachChunk("ndjson", []upload{ok}, func(_ []byte, w []at) error { where = append(where, w...); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(where) != "[{ok.ndjson 2} {ok.ndjson 4}]" {
		t.Errorf("lines at %v, want ok.ndjson 2 and 4", where)
	}
}

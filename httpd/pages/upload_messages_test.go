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
	saved := make(map[string]upload)
	for name, body := range map[string]string{
		"long.ndjson": "{}\n\n" + strings.Repeat("a", peerimport.MaxLine+1) + "\n",
		"session.csv": "session_id,browser\ns1,firefox\n",
		"goat.csv":    "2Path,Date\n",
		"ok.ndjson":   "\n{\"a\":1}\n\n{\"a\":2}\n",
	} {
		u := upload{name, filepath.Join(t.TempDir(), name)}
		if err := os.WriteFile(u.path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		saved[name] = u
	}
	long, sess, goat := saved["long.ndjson"], saved["session.csv"], saved["goat.csv"]
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
	if err := eachChunk("ndjson", []upload{saved["ok.ndjson"]}, func(_ []byte, w []at) error { where = append(where, w...); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(where) != "[{ok.ndjson 2} {ok.ndjson 4}]" {
		t.Errorf("lines at %v, want ok.ndjson 2 and 4", where)
	}
}

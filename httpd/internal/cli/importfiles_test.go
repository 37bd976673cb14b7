package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webstats/webstats/httpd/internal/peerimport"
)

// TestImportFileMessages pins the command line's own wording of the
// errors of reading the files (peerimport.Lines reads them, for the web
// page's upload too): a long NDJSON line, Umami without its tables, a file
// that cannot be read, and "-". Each is found in the check, before
// anything is sent.
func TestImportFileMessages(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	long := write("long.ndjson", "{}\n\n"+strings.Repeat("a", peerimport.MaxLine+1)+"\n")
	sess := write("session.csv", "session_id,browser\ns1,firefox\n")
	dir := filepath.Join(tmp, "dir")
	os.Mkdir(dir, 0o700)
	tests := []struct {
		format string
		files  []string
		code   int
		want   string
	}{
		{"ndjson", []string{long}, 1, fmt.Sprintf("%s:3: a line longer than %d bytes (nothing was imported)\n", long, peerimport.MaxLine)},
		{"umami", []string{sess}, 2, "import: -from umami needs the session table and the website_event table (and, for event properties, event_data), each as a CSV file with a header\n"},
		{"ndjson", []string{dir}, 1, dir + ": read " + dir + ": is a directory\n"},
		{"umami", []string{dir}, 1, dir + ": read " + dir + ": is a directory\n"},
		{"goatcounter", []string{dir}, 1, dir + ": read " + dir + ": is a directory\n"},
		{"ndjson", []string{"-"}, 2, "import: a file is read twice (checked, then sent): give a file, not -\n"},
		{"umami", []string{sess, "-"}, 2, "import: a file is read twice (checked, then sent): give a file, not -\n"},
	}
	for _, tt := range tests {
		_, stderr, code := runCLI(t, t.Context(), nil, append([]string{"import", "-data", filepath.Join(tmp, "data"), "-site", "example.com", "-from", tt.format, "-quiet"}, tt.files...)...)
		// The message, alone on its line (a usage error's help follows).
		first, _, _ := strings.Cut(stderr, "\n")
		if code != tt.code || first+"\n" != "webstatsd: "+tt.want {
			t.Errorf("%s %v: exit %d, stderr %q: want %d and %q", tt.format, tt.files, code, first, tt.code, tt.want)
		}
	}
}

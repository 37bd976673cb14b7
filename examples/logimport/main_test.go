package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLogImport(t *testing.T) {
	want := `lines read:     20
parse errors:   1
skipped:        9 (not 2xx 2, not GET 2, static asset 5)
hits sent:      10
hits accepted:  9
dropped:        1 (bot 1)

top pages of example.com, 2026-10-01 to 2026-10-02:
      3  /
      2  /blog/hello-world
      2  /pricing
      1  /blog/hello-world?utm_campaign=launch
      1  /docs/install
`
	// Batches of 3: the last batch is partial, and counts add up across calls.
	for _, args := range [][]string{
		{"-batch", "3", "testdata/access.log"},
		{"-domain", "www.example.com"}, // stdin
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			log, err := os.Open("testdata/access.log")
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			var out bytes.Buffer
			if err := run(t.Context(), args, log, &out); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, out.String()); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLine(t *testing.T) {
	tests := []struct {
		name, line string
		wantSkip   string
		wantOK     bool
		wantURL    string
		wantRef    string
	}{
		{name: "page", line: `1.2.3.4 - bob [01/Oct/2026:08:00:01 +0000] "GET /a?b=1 HTTP/1.1" 200 5 "-" "UA"`, wantOK: true, wantURL: "/a?b=1"},
		{name: "apache escaped quote", line: `1.2.3.4 - - [01/Oct/2026:08:00:01 +0000] "GET /q HTTP/1.1" 200 5 "https://r/?q=\"x\"" "UA \"quoted\""`, wantOK: true, wantURL: "/q", wantRef: `https://r/?q="x"`},
		{name: "static with query", line: `1.2.3.4 - - [01/Oct/2026:08:00:01 +0000] "GET /a.css?v=1 HTTP/1.1" 200 5 "-" "UA"`, wantOK: true, wantSkip: SkipStatic},
		{name: "redirect", line: `1.2.3.4 - - [01/Oct/2026:08:00:01 +0000] "GET /old HTTP/1.1" 301 5 "-" "UA"`, wantOK: true, wantSkip: SkipNotOK},
		{name: "TLS on the HTTP port", line: `1.2.3.4 - - [01/Oct/2026:08:00:01 +0000] "\x16\x03\x01" 400 157 "-" "-"`, wantOK: true, wantSkip: SkipNotOK},
		{name: "common format", line: `1.2.3.4 - - [01/Oct/2026:08:00:01 +0000] "GET / HTTP/1.1" 200 5`},
		{name: "host name", line: `host.example - - [01/Oct/2026:08:00:01 +0000] "GET / HTTP/1.1" 200 5 "-" "UA"`},
		{name: "bad time", line: `1.2.3.4 - - [yesterday] "GET / HTTP/1.1" 200 5 "-" "UA"`},
		{name: "empty request", line: `1.2.3.4 - - [01/Oct/2026:08:00:01 +0000] "-" 200 5 "-" "UA"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, skip, ok := ParseLine(tt.line)
			if ok != tt.wantOK || skip != tt.wantSkip {
				t.Fatalf("ParseLine = skip %q, ok %v; want %q, %v", skip, ok, tt.wantSkip, tt.wantOK)
			}
			if h.URL != tt.wantURL || h.Referrer != tt.wantRef {
				t.Errorf("URL %q, referrer %q; want %q, %q", h.URL, h.Referrer, tt.wantURL, tt.wantRef)
			}
		})
	}
}

package httpd

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// maxTrackerGzip is the budget of the tracker script, gzipped (SPEC §4).
const maxTrackerGzip = 1536

func TestTrackerScriptSize(t *testing.T) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(trackerJS)
	zw.Close()
	if buf.Len() > maxTrackerGzip {
		t.Errorf("script.js is %d bytes gzipped, over the budget of %d", buf.Len(), maxTrackerGzip)
	}
	if len(trackerAsset.gz) > maxTrackerGzip {
		t.Errorf("served script.js is %d bytes gzipped, over the budget of %d", len(trackerAsset.gz), maxTrackerGzip)
	}
	t.Logf("script.js: %d bytes, %d gzipped", len(trackerJS), len(trackerAsset.gz))
}

func TestTrackerScript(t *testing.T) {
	f := newFixture(t, nil)
	tests := []struct {
		name     string
		method   string
		encoding string // Accept-Encoding
		gzipped  bool
	}{
		{name: "gzip", method: http.MethodGet, encoding: "gzip, deflate, br, zstd", gzipped: true},
		{name: "gzip with q", method: http.MethodGet, encoding: "br;q=1.0, gzip;q=0.8", gzipped: true},
		{name: "any", method: http.MethodGet, encoding: "*", gzipped: true},
		{name: "none", method: http.MethodGet},
		{name: "identity", method: http.MethodGet, encoding: "identity"},
		{name: "gzip refused", method: http.MethodGet, encoding: "gzip;q=0, br"},
		{name: "HEAD", method: http.MethodHead, encoding: "gzip", gzipped: true},
	}
	etags := map[bool]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.encoding != "" {
				hdr["Accept-Encoding"] = tt.encoding
			}
			w := f.do(request{method: tt.method, path: "/js/script.js", header: hdr})
			if w.Code != http.StatusOK {
				t.Fatalf("status %d, want 200", w.Code)
			}
			h := w.Header()
			for k, want := range map[string]string{
				"Content-Type":  "application/javascript; charset=utf-8",
				"Cache-Control": "public, max-age=3600",
				"Vary":          "Accept-Encoding",
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s %q, want %q", k, got, want)
				}
			}
			etag := h.Get("ETag")
			if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 10 {
				t.Errorf("ETag %q, want a strong validator", etag)
			}
			if prev, ok := etags[tt.gzipped]; ok && prev != etag {
				t.Errorf("ETag %q, want %q as before", etag, prev)
			}
			etags[tt.gzipped] = etag
			want := trackerAsset.plain
			if tt.gzipped {
				want = trackerAsset.gz
				if h.Get("Content-Encoding") != "gzip" {
					t.Errorf("Content-Encoding %q, want gzip", h.Get("Content-Encoding"))
				}
			} else if h.Get("Content-Encoding") != "" {
				t.Errorf("Content-Encoding %q, want none", h.Get("Content-Encoding"))
			}
			if h.Get("Content-Length") != strconv.Itoa(len(want)) {
				t.Errorf("Content-Length %s, want %d", h.Get("Content-Length"), len(want))
			}
			if tt.method == http.MethodHead {
				if w.Body.Len() != 0 {
					t.Errorf("HEAD answered a body of %d bytes", w.Body.Len())
				}
				return
			}
			body := w.Body.Bytes()
			if tt.gzipped {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(body, trackerJS) {
				t.Errorf("body is not the script")
			}
		})
	}
	if etags[true] == etags[false] {
		t.Errorf("the gzipped and the plain script share the ETag %s", etags[true])
	}

	t.Run("304", func(t *testing.T) {
		for _, inm := range []string{
			etags[true], etags[false], "W/" + etags[true], `"other", ` + etags[false], "*",
		} {
			w := f.do(request{method: http.MethodGet, path: "/js/script.js",
				header: map[string]string{"Accept-Encoding": "gzip", "If-None-Match": inm}})
			if w.Code != http.StatusNotModified || w.Body.Len() != 0 {
				t.Errorf("If-None-Match %s: status %d with %d bytes, want 304 and none", inm, w.Code, w.Body.Len())
			}
			if w.Header().Get("ETag") != etags[true] {
				t.Errorf("If-None-Match %s: ETag %q, want %q", inm, w.Header().Get("ETag"), etags[true])
			}
		}
		w := f.do(request{method: http.MethodGet, path: "/js/script.js",
			header: map[string]string{"If-None-Match": `"stale"`}})
		if w.Code != http.StatusOK {
			t.Errorf("stale If-None-Match: status %d, want 200", w.Code)
		}
	})
}

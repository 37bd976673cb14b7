package pages

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// postZip posts data as a Plausible zip on the "Import data" page of
// the public website, signed in as its owner.
func postZip(f *fixture, c *client, data []byte) response {
	f.t.Helper()
	page := "/websites/" + strconv.Itoa(int(f.public.ID)) + "/import"
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("csrf", c.csrfFor(page, page))
	mw.WriteField("format", "plausible")
	fw, _ := mw.CreateFormFile("file", "export.zip")
	fw.Write(data)
	mw.Close()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+page, &body)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", f.srv.URL)
	return c.do(req)
}

// TestUploadZipTakesServerSlot: the page's Plausible zip upload holds a
// zip and its rows in memory as the API's zip upload does, so it takes
// the server's one zip slot (Options.ZipUpload) too: refused while the
// slot is taken (nothing read), and given back once read.
func TestUploadZipTakesServerSlot(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	c.signIn(f.ownerKey)
	taken, held, calls := true, 0, 0
	f.p.zipUpload = func() (func(), bool) {
		calls++
		if taken {
			return nil, false
		}
		held++
		return func() { held-- }, true
	}
	res := postZip(f, c, []byte("not a zip"))
	if res.status != http.StatusUnprocessableEntity || calls != 1 || !strings.Contains(text(res.body), "Another import is under way on this server") {
		t.Fatalf("zip slot taken: status %d, slot asked %d times, body %q", res.status, calls, mainText(res.body))
	}
	taken = false
	res = postZip(f, c, []byte("not a zip"))
	if res.status != http.StatusUnprocessableEntity || calls != 2 || strings.Contains(text(res.body), "Another import") || !strings.Contains(text(res.body), "Nothing was imported") {
		t.Fatalf("zip slot free: status %d, slot asked %d times, body %q", res.status, calls, mainText(res.body))
	}
	if held != 0 {
		t.Errorf("zip slot held %d times after the upload ended, want 0", held)
	}
}

// TestUploadRunRecovers: a panic while an upload counts in the background
// (no handler recovers there: it would end the server) stops the import
// with an error on its status, and the uploaded files are removed.
func TestUploadRunRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lines.ndjson")
	if err := os.WriteFile(path, []byte(`{"time":"2026-11-20T10:00:00Z","page":"/","visitor":"v"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	u := &uploader{count: func(context.Context, uint32, []byte, string) (int, error) { panic("boom") }}
	if !u.claim(1, "ndjson", testNow) {
		t.Fatal("claim")
	}
	u.run(t.Context(), 1, "ndjson", []upload{{"lines.ndjson", path}}, "web-x-")
	if u.job.Running || u.job.Err == "" {
		t.Errorf("job after a panic: running %v, error %q; want stopped with an error", u.job.Running, u.job.Err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("uploaded file after the run: %v, want removed", err)
	}
}

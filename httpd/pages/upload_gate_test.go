package pages

import (
	"bytes"
	"mime/multipart"
	"net/http"
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

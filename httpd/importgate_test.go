package httpd

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestImportGateSlowSender: the one import slot (importmem.go) is taken
// before the body is read, so a client that declares a body and sends it
// slowly holds it for as long as the server lets it read (ReadTimeout, 60
// s and more in serve), and every other import on the server waits
// behind it with no answer. A waiting import must be answered within a
// few seconds: counted, or 503/429 with Retry-After (which the command
// line retries with the same key), not left hanging until its own read
// deadline has passed.
func TestImportGateSlowSender(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.s)
	defer srv.Close()
	path := srv.URL + fmt.Sprintf("/api/v1/websites/%d/events", 1)
	line := `{"time":"2026-11-20T10:00:00Z","page":"/slow","visitor":"v"}` + "\n"

	// The slow sender: declares 1 MiB, sends one line, then nothing.
	pr, pw := io.Pipe()
	defer pw.Close()
	slow, _ := http.NewRequest("POST", path, pr)
	slow.ContentLength = 1 << 20
	slow.Header.Set("Authorization", "Bearer "+f.alice)
	slow.Header.Set("Content-Type", "application/x-ndjson")
	go func() {
		if resp, err := http.DefaultClient.Do(slow); err == nil {
			resp.Body.Close()
		}
	}()
	if _, err := pw.Write([]byte(line)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the slow import holds the slot

	req, _ := http.NewRequest("POST", path, strings.NewReader(line))
	req.Header.Set("Authorization", "Bearer "+f.alice)
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Idempotency-Key", "waiting")
	hc := &http.Client{Timeout: 15 * time.Second}
	t0 := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("an import behind a slow sender got no answer in %v: %v", time.Since(t0).Round(time.Second), err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("%d without Retry-After", resp.StatusCode)
		}
	default:
		t.Errorf("an import behind a slow sender: %s, want 200, or 503/429 with Retry-After", resp.Status)
	}
}

// TestImportSlotWaitNotBodyTime: an import that waits for the import slot
// longer than its body timeout, its body sent at once but cut short (a
// chunk, then the connection's write side closed), is answered 400 once
// the slot is free: the body's read deadline starts when the body is read,
// not while the server made the client wait, so the server reads the end
// of the body rather than a 408 of its own making (TestBrokenBodies saw it
// under load).
func TestImportSlotWaitNotBodyTime(t *testing.T) {
	const timeout = 200 * time.Millisecond
	f := newFixture(t, &Options{RateLimit: -1, ImportBodyTimeout: timeout})
	srv := httptest.NewServer(f.s)
	defer srv.Close()
	release, err := f.s.acquireImport(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(3 * timeout) // past the body's deadline
		release()
	}()
	head := "POST /api/v1/websites/1/events HTTP/1.1\r\nHost: stats.example\r\nAuthorization: Bearer " + f.alice +
		"\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n"
	code, _ := rawExchange(t, srv.Listener.Addr().String(), head, "b\r\n{\"page\":\"/a\r\n", true)
	if code != http.StatusBadRequest {
		t.Errorf("an import that waited %v for the slot, its body cut short: %d, want 400", 3*timeout, code)
	}
}

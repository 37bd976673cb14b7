package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileImportRetry is issue #38 row 10 (SPEC §3.4 "Retries"): an
// import whose answer the client never got (the connection cut once the
// answer started, or the process killed with SIGKILL at any moment of the
// import) is retried with the same Idempotency-Key after a restart, and is
// counted exactly once. Before the key, a retry whose first attempt had
// reached the log counted twice.
func TestHostileImportRetry(t *testing.T) {
	bin := buildBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	flags := []string{"-rate-limit", "0"} // snapshots every hour (launch): the key is only in the log
	srv := startServer(t, bin, data, flags...)
	key := srv.adminKey(t)
	id := createSite(t, srv.base(), key, url.Values{"domain": {"retry.example"}})
	const day = "2026-11-01"
	body := func(page string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `{"time":"%sT%02d:%02d:00Z","page":%q,"visitor":"v%d"}`+"\n", day, 8+i/60%12, i%60, page, i)
		}
		return b.String()
	}
	path := fmt.Sprintf("/api/v1/websites/%d/events", id)
	// retry sends the import again with its key, on a good connection,
	// and checks the answer: every event accepted.
	retry := func(what, ikey, page string, n int) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.base()+path, strings.NewReader(body(page, n)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Idempotency-Key", ikey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		raw := drain(resp)
		var r struct {
			Data struct {
				Accepted int `json:"accepted"`
			} `json:"data"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &r) != nil || r.Data.Accepted != n {
			t.Fatalf("%s: %d %s, want 200 with %d accepted", what, resp.StatusCode, raw, n)
		}
	}
	counted := func(what, page string, n int) {
		t.Helper()
		if got := pageCounts(t, srv.base(), key, id, day, day)[page]; got != n {
			t.Errorf("%s: %s counted %d times, want %d", what, page, got, n)
		}
	}
	restart := func() {
		srv.kill(t)
		srv = startServer(t, bin, data, flags...)
	}

	// 1. The answer is cut: the server has begun to answer (the batch is
	// in the log), the client reads one byte, and the server is killed.
	const n = 500
	conn, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	b := body("/cut", n)
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/x-ndjson\r\nIdempotency-Key: cut-1\r\nContent-Length: %d\r\n\r\n%s",
		path, srv.addr, key, len(b), b)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := bufio.NewReader(conn).ReadByte(); err != nil {
		t.Fatalf("the first attempt got no answer: %v", err)
	}
	restart()
	conn.Close()
	retry("retry after a cut answer and kill -9", "cut-1", "/cut", n)
	counted("cut answer, kill -9, retry", "/cut", n)
	retry("second retry", "cut-1", "/cut", n)
	counted("cut answer, two retries", "/cut", n)

	// 2. Killed at any moment of the import: whether the first attempt
	// reached the log or not, the retry makes it count once.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 38))
	for round := range 4 {
		page, ikey, m := fmt.Sprintf("/kill-%d", round), fmt.Sprintf("kill-%d", round), 4000
		delay := time.Duration(rng.IntN(60)) * time.Millisecond
		go func(base string) {
			req, _ := http.NewRequest("POST", base+path, strings.NewReader(body(page, m)))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Idempotency-Key", ikey)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				drain(resp)
			}
		}(srv.base())
		time.Sleep(delay)
		restart()
		retry(fmt.Sprintf("retry after kill -9 %v into the import", delay), ikey, page, m)
		counted(fmt.Sprintf("kill -9 %v into the import, retry", delay), page, m)
	}

	// 3. Another key counts; no key counts again (the contrast).
	retry("another key", "cut-2", "/cut", n)
	counted("another key", "/cut", 2*n)
	if n := srv.stderr.Panics(); n > 0 {
		t.Errorf("the server logged %d panics:\n%s", n, srv.stderr.String())
	}
	srv.stop(t)
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEndToEnd builds the real binary and drives it as an operator would:
// create a key, start the server, use the API over HTTP, stop it with
// SIGTERM, start it again on the same data, and find the same statistics.
func TestEndToEnd(t *testing.T) {
	// Not skipped under -short: it takes a few seconds (the build reuses
	// the test's own compiled packages, and the package's tests share it).
	bin := buildBinary(t)
	data := filepath.Join(t.TempDir(), "data")

	// The key is created before the first start: serve then creates no
	// admin account and prints nothing on stdout.
	out, err := exec.Command(bin, "user", "add", "-data", data, "-email", "e2e@example.com").Output()
	if err != nil {
		t.Fatalf("user add: %v", err)
	}
	key := strings.TrimSpace(string(out))

	srv := startServer(t, bin, data)
	api := &client{t: t, base: "http://" + srv.addr + "/api/v1", key: key}

	var site struct {
		Data struct {
			ID     int    `json:"id"`
			Domain string `json:"domain"`
		} `json:"data"`
	}
	api.do("POST", "/websites", "application/x-www-form-urlencoded", "domain=https://www.E2E.example/", http.StatusCreated, &site)
	if site.Data.Domain != "e2e.example" {
		t.Fatalf("created website %+v", site.Data)
	}
	id := site.Data.ID

	const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"
	events := []string{
		`{"time":"2026-10-01T09:00:00Z","page":"/a","ip":"8.8.8.8","user_agent":"` + chrome + `"}`,
		`{"time":"2026-10-01T09:01:00Z","page":"/b","ip":"8.8.8.8","user_agent":"` + chrome + `"}`,
		`{"time":"2026-10-01T10:00:00Z","page":"https://e2e.example/a","ip":"1.1.1.1","user_agent":"` + chrome + `"}`,
		`{"time":"2026-10-01T11:00:00Z","page":"/a","visitor":"v3","referrer":"https://www.google.com/","user_agent":"` + chrome + `"}`,
		`{"time":"2026-10-01T11:05:00Z","page":"/c","ip":"66.249.66.1","user_agent":"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"}`,
		`{"time":"2026-10-01T11:06:00Z","page":"/a","visitor":"v3","user_agent":"` + chrome + `","event":{"name":"Signup"}}`,
	}
	var imported struct {
		Data struct {
			Accepted int            `json:"accepted"`
			Dropped  map[string]int `json:"dropped"`
		} `json:"data"`
	}
	api.do("POST", fmt.Sprintf("/websites/%d/events", id), "application/x-ndjson", strings.Join(events, "\n"), http.StatusOK, &imported)
	if imported.Data.Accepted != 5 || imported.Data.Dropped["bot"] != 1 {
		t.Fatalf("import answered %+v, want 5 accepted and 1 bot", imported.Data)
	}

	type row struct {
		Value string `json:"value"`
		Count int    `json:"count"`
	}
	stats := func(name string) []row {
		var page struct {
			Data []row `json:"data"`
		}
		api.do("GET", fmt.Sprintf("/stats/%d?name=%s&from=2026-10-01&to=2026-10-31", id, name), "", "", http.StatusOK, &page)
		return page.Data
	}
	wantPages := []row{{"/a", 3}, {"/b", 1}}
	wantEvents := []row{{"Signup::", 1}}
	if diff := cmp.Diff(wantPages, stats("page")); diff != "" {
		t.Errorf("page mismatch (-want +got):\n%s", diff)
	}

	// While the server holds the data, user list fails at once and says why.
	start := time.Now()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "user", "list", "-data", data)
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
		t.Errorf("user list while serving: %v, want exit code 1", err)
	}
	want := "webstatsd: data directory " + data + " is in use by a running webstatsd; stop it first, or use the API\n"
	if stderr.String() != want {
		t.Errorf("user list while serving said %q, want %q", stderr.String(), want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("user list while serving took %v, want to fail at once", d)
	}

	srv.stop(t)
	if srv.stdout.String() != "" {
		t.Errorf("serve printed %q on stdout, want nothing (an account existed)", srv.stdout.String())
	}

	srv = startServer(t, bin, data)
	api.base = "http://" + srv.addr + "/api/v1"
	if diff := cmp.Diff(wantPages, stats("page")); diff != "" {
		t.Errorf("page after a restart mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantEvents, stats("event")); diff != "" {
		t.Errorf("event after a restart mismatch (-want +got):\n%s", diff)
	}
	srv.stop(t)
}

// server is a running webstatsd.
type server struct {
	cmd    *exec.Cmd
	addr   string
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan error
}

// startServer starts bin serve on data and a free port, with the extra
// flags (which override the defaults here), and waits until it answers
// /healthz.
func startServer(t testing.TB, bin, data string, extra ...string) *server {
	t.Helper()
	s := launch(t, bin, data, extra...)
	s.waitUp(t, 20*time.Second)
	return s
}

// launch starts bin serve on data and a free port, with the extra flags,
// without waiting for it (waitUp does).
func launch(t testing.TB, bin, data string, extra ...string) *server {
	t.Helper()
	s := &server{stdout: new(syncBuffer), stderr: new(syncBuffer), done: make(chan error, 1)}
	args := append([]string{"-addr", "127.0.0.1:0", "-data", data, "-log-format", "json", "-snapshot-every", "1h"}, extra...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout = s.stdout
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// waitUp waits, at most wait, until s logged its address, and checks that
// it answers /healthz.
func (s *server) waitUp(t testing.TB, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for s.addr == "" {
		select {
		case err := <-s.done:
			t.Fatalf("webstatsd exited: %v\n%s", err, s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("webstatsd did not log its address in %v:\n%s", wait, s.stderr.String())
		}
		s.addr = listenAddr(s.stderr.String())
	}
	resp, err := http.Get("http://" + s.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
}

// listenAddr finds the address in the "webstatsd listening" log line.
func listenAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "webstatsd listening" {
			return line.Addr
		}
	}
	return ""
}

// stop sends SIGTERM and expects a clean exit.
func (s *server) stop(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("webstatsd after SIGTERM: %v, want exit code 0\n%s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("webstatsd did not exit in 30s after SIGTERM")
	}
	if !strings.Contains(s.stderr.String(), `"msg":"webstatsd stopped"`) {
		t.Errorf("no clean stop in the logs:\n%s", s.stderr.String())
	}
}

// client calls the API with a key.
type client struct {
	t    *testing.T
	base string
	key  string
}

// do sends a request and decodes the answer into v, failing the test on a
// status other than want.
func (c *client) do(method, path, contentType, body string, want int, v any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: %s, want %d\n%s", method, path, resp.Status, want, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		c.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
	}
}

// syncBuffer collects a process's output, safe for one writer and
// concurrent readers. It keeps the first headMax and the last tailMax bytes
// (a flood logs a line per request) and counts the writes that mention a
// panic.
type syncBuffer struct {
	mu     sync.Mutex
	head   []byte
	tail   []byte
	cut    int64 // bytes dropped between head and tail
	panics int
}

const (
	headMax = 64 << 10
	tailMax = 256 << 10
)

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bytes.Contains(p, []byte("panic")) {
		b.panics++
	}
	q := p
	if n := min(len(q), headMax-len(b.head)); n > 0 {
		b.head = append(b.head, q[:n]...)
		q = q[n:]
	}
	b.tail = append(b.tail, q...)
	if over := len(b.tail) - tailMax; over > 0 {
		b.cut += int64(over)
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return len(p), nil
}

// String returns what was kept: everything, or the head and the tail with
// a line saying how much was left out.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut == 0 {
		return string(b.head) + string(b.tail)
	}
	return fmt.Sprintf("%s\n[… %d bytes left out …]\n%s", b.head, b.cut, b.tail)
}

// Panics returns the number of writes that mentioned "panic".
func (b *syncBuffer) Panics() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.panics
}

package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/httpd/internal/bintest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bintest.Remove()
	os.Exit(code)
}

// buildBinary builds webstatsd once and returns its path
// (bintest.Webstatsd).
func buildBinary(t testing.TB) string { return bintest.Webstatsd(t) }

// npmDir is the directory of package.json: the clients are installed in
// its node_modules (a testdata directory, which the go tool ignores: a
// package there ships Go files) by
// `npm ci --prefix httpd/internal/conformance/testdata`.
const npmDir = "testdata"

// pinned are the clients of package.json and the versions the tests were
// written for.
var pinned = map[string]string{
	"@plausible-analytics/tracker": "0.4.6",
	"plausible-tracker":            "0.3.9",
	"plausible":                    "2.2.1",
	"@jackdbd/plausible-client":    "1.0.2",
}

// nodeModules returns the absolute path of the installed node_modules after
// checking that every pinned client is there in its version. Without them
// the test is skipped with the install command, except under CI=true, where
// it fails (.ci/run installs them).
func nodeModules(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(npmDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for name, want := range pinned {
		b, err := os.ReadFile(filepath.Join(dir, name, "package.json"))
		var pkg struct{ Version string }
		if err == nil {
			err = json.Unmarshal(b, &pkg)
		}
		// plausible@2.2.1 says "v2.2.1" in its package.json.
		switch {
		case err != nil:
			missing = append(missing, name+"@"+want)
		case strings.TrimPrefix(pkg.Version, "v") != want:
			missing = append(missing, fmt.Sprintf("%s@%s (found %s)", name, want, pkg.Version))
		}
	}
	if len(missing) > 0 {
		abs, _ := filepath.Abs(npmDir)
		msg := fmt.Sprintf("Plausible's clients are not installed (%s): run `npm ci --prefix %s`", strings.Join(missing, "; "), abs)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	return dir
}

// server is a running webstatsd on a fresh data directory.
type server struct {
	base string // http://127.0.0.1:port
	key  string // the admin account's API key
	cmd  *exec.Cmd
}

// lockedBuffer is a bytes.Buffer safe for a writer and readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer starts webstatsd as an operator does on an empty data
// directory (it creates the admin account and prints its key), without the
// API rate limit (the suite asks more than 60 questions a minute).
func startServer(t *testing.T) *server {
	t.Helper()
	bin := buildBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	var stdout, stderr lockedBuffer
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-data", data, "-log-format", "json", "-rate-limit", "0", "-snapshot-every", "1h")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("webstatsd's log:\n%s", tail(stderr.String(), 4000))
		}
	})
	s := &server{cmd: cmd}
	deadline := time.Now().Add(30 * time.Second)
	for s.base == "" || s.key == "" {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("webstatsd exited: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("webstatsd did not start in 30s:\n%s", stderr.String())
		}
		if addr := listenAddr(stderr.String()); addr != "" {
			s.base = "http://" + addr
		}
		s.key, _, _ = strings.Cut(stdout.String(), "\n")
	}
	return s
}

// listenAddr finds the address in the "webstatsd listening" log line.
func listenAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "webstatsd listening" {
			return line.Addr
		}
	}
	return ""
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// call sends an API request with the admin key and decodes a JSON answer
// into v (when not nil); it stops the test unless the status is want.
func (s *server) call(t testing.TB, method, path, ctype, body string, want int, v any) {
	t.Helper()
	if !s.try(t, method, path, ctype, body, want, v) {
		t.FailNow()
	}
}

// try is call that reports a failure (t.Errorf) and returns false instead
// of stopping the test.
func (s *server) try(t testing.TB, method, path, ctype, body string, want int, v any) bool {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != want {
		t.Errorf("%s %s %s: %s, want %d\n%s", method, path, body, resp.Status, want, b)
		return false
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Errorf("%s %s: %v\n%s", method, path, err, b)
			return false
		}
	}
	return true
}

// website creates a website (the phpAnalytics API, which also sets
// exclude_bots: headless Chromium says so in its client hints) and returns
// its id; goals are event goals created through Plausible's Sites API, the
// one named in currency with that revenue currency.
func (s *server) website(t *testing.T, domain string, goals []string, revenueGoal, currency string) int {
	t.Helper()
	var site struct {
		Data struct{ ID int } `json:"data"`
	}
	form := url.Values{"domain": {domain}, "timezone": {"UTC"}, "exclude_bots": {"0"}}
	s.call(t, "POST", "/api/v1/websites", "application/x-www-form-urlencoded", form.Encode(), http.StatusCreated, &site)
	for _, g := range goals {
		body := map[string]any{"site_id": domain, "goal_type": "event", "event_name": g}
		if g == revenueGoal {
			body["currency"] = currency
		}
		b, _ := json.Marshal(body)
		s.call(t, "PUT", "/api/v1/sites/goals", "application/json", string(b), http.StatusOK, nil)
	}
	return site.Data.ID
}

// query asks Stats API v2 and returns its results as dimension values
// (joined by " | ") → metric values; a revenue metric's value is its
// "value". An error answer fails the test and returns nil.
func (s *server) query(t testing.TB, q map[string]any) map[string][]any {
	t.Helper()
	b, _ := json.Marshal(q)
	var res struct {
		Results []struct {
			Dimensions []any `json:"dimensions"`
			Metrics    []any `json:"metrics"`
		} `json:"results"`
	}
	if !s.try(t, "POST", "/api/v2/query", "application/json", string(b), http.StatusOK, &res) {
		return nil
	}
	out := map[string][]any{}
	for _, r := range res.Results {
		var dims []string
		for _, d := range r.Dimensions {
			dims = append(dims, fmt.Sprint(d))
		}
		for i, m := range r.Metrics {
			if o, ok := m.(map[string]any); ok {
				r.Metrics[i] = o["value"]
			}
		}
		out[strings.Join(dims, " | ")] = r.Metrics
	}
	return out
}

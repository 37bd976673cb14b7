package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// transferSite starts a server on a new data directory with an account
// and the website domain; it returns the server, the key and the site id.
func transferSite(t *testing.T, bin, domain string) (*server, string, int, string) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	out, err := exec.Command(bin, "user", "add", "-data", data, "-email", "t@example.com").Output()
	if err != nil {
		t.Fatalf("user add: %v", err)
	}
	key := strings.TrimSpace(string(out))
	srv := startServer(t, bin, data, "-rate-limit", "0")
	api := &client{t: t, base: srv.base() + "/api/v1", key: key}
	var site struct {
		Data struct {
			ID int `json:"id"`
		} `json:"data"`
	}
	api.do("POST", "/websites", "application/x-www-form-urlencoded", "domain="+domain, http.StatusCreated, &site)
	return srv, key, site.Data.ID, data
}

// dailyPageviews reads the pageviews statistic of October 2026.
func dailyPageviews(t *testing.T, srv *server, key string, id int) map[string]int {
	t.Helper()
	api := &client{t: t, base: srv.base() + "/api/v1", key: key}
	out := map[string]int{}
	for page := 1; ; page++ {
		var p struct {
			Data []struct {
				Value string `json:"value"`
				Count int    `json:"count"`
			} `json:"data"`
			CurrentPage int `json:"current_page"`
			LastPage    int `json:"last_page"`
		}
		api.do("GET", fmt.Sprintf("/stats/%d?name=pageviews&from=2026-10-01&to=2026-10-31&per_page=100&page=%d", id, page), "", "", http.StatusOK, &p)
		for _, r := range p.Data {
			out[r.Value] = r.Count
		}
		if p.CurrentPage >= p.LastPage {
			return out
		}
	}
}

// writeLines writes n import lines over October 2026 and returns the
// pageviews each day should count.
func writeLines(t *testing.T, path string, n int) map[string]int {
	t.Helper()
	var b bytes.Buffer
	want := map[string]int{}
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		at := start.Add(time.Duration(int64(i)*31*24*3600/int64(n)) * time.Second)
		fmt.Fprintf(&b, `{"time":%q,"page":"/p%d","visitor":"v%d"}`+"\n", at.Format(time.RFC3339), i%50, i%700)
		want[at.Format("2006-01-02")]++
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestImportKilledHalfWay kills webstatsd import (against a running
// server) half-way and starts it again: every line is counted once (SPEC
// §14: resumable, idempotent per chunk). The chunk in flight when it was
// killed may have been counted without the state file saying so: only the
// server's Idempotency-Key (SPEC §3.4 Retries) makes its resending count
// nothing.
func TestImportKilledHalfWay(t *testing.T) {
	bin := buildBinary(t)
	srv, key, id, _ := transferSite(t, bin, "example.com")
	file := filepath.Join(t.TempDir(), "lines.ndjson")
	want := writeLines(t, file, 40000)
	args := []string{"import", "-url", srv.base(), "-key", key, "-site", "example.com", "-from", "ndjson", "-chunk", "400", "-quiet", file}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once a few chunks are counted (the state file says so).
	deadline := time.Now().Add(60 * time.Second)
	for {
		var st struct{ Done int }
		if b, err := os.ReadFile(file + ".webstats-import"); err == nil && json.Unmarshal(b, &st) == nil && st.Done >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress: %s", stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	half := dailyPageviews(t, srv, key, id)
	if cmp.Equal(half, want) {
		t.Fatal("the import finished before it was killed: nothing was tested")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("import again: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "resuming after chunk") {
		t.Errorf("the second run did not resume: %s", out)
	}
	if diff := cmp.Diff(want, dailyPageviews(t, srv, key, id)); diff != "" {
		t.Errorf("pageviews after a killed and resumed import mismatch (-want +got):\n%s", diff)
	}
}

// TestExportImportCLI moves a website from one server to another with
// the commands: webstatsd export on the stopped first server's data
// directory, webstatsd import -from ndjson to the second one over HTTP.
func TestExportImportCLI(t *testing.T) {
	bin := buildBinary(t)
	a, keyA, idA, dataA := transferSite(t, bin, "example.com")
	file := filepath.Join(t.TempDir(), "lines.ndjson")
	want := writeLines(t, file, 3000)
	if out, err := exec.Command(bin, "import", "-url", a.base(), "-key", keyA, "-site", "example.com", "-from", "ndjson", "-quiet", file).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if diff := cmp.Diff(want, dailyPageviews(t, a, keyA, idA)); diff != "" {
		t.Fatalf("first server mismatch (-want +got):\n%s", diff)
	}
	a.stop(t)
	exported := filepath.Join(t.TempDir(), "export.ndjson")
	cmd := exec.Command(bin, "export", "-data", dataA, "-site", "example.com")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr.String())
	}
	if n := bytes.Count(out.Bytes(), []byte{'\n'}); n != 3000 {
		t.Fatalf("export wrote %d lines, want 3000: %s", n, stderr.String())
	}
	os.WriteFile(exported, out.Bytes(), 0o600)
	b, keyB, idB, _ := transferSite(t, bin, "example.com")
	if out, err := exec.Command(bin, "import", "-url", b.base(), "-key", keyB, "-site", "example.com", "-from", "ndjson", "-quiet", exported).CombinedOutput(); err != nil {
		t.Fatalf("import of the export: %v\n%s", err, out)
	}
	if diff := cmp.Diff(want, dailyPageviews(t, b, keyB, idB)); diff != "" {
		t.Errorf("second server mismatch (-want +got):\n%s", diff)
	}
	// The export over HTTP is the same as the command's.
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/websites/%d/events", b.base(), idB), nil)
	req.Header.Set("Authorization", "Bearer "+keyB)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	again := drain(resp)
	if resp.StatusCode != http.StatusOK || bytes.Count(again, []byte{'\n'}) != 3000 {
		t.Errorf("GET events: %s, %d lines", resp.Status, bytes.Count(again, []byte{'\n'}))
	}
}

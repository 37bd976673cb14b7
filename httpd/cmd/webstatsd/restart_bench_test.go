package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
)

// restartSite is a year of about a million hits (issue #16: "restart after
// kill -9 with 1M hits in the log").
var restartSite = bench.Site{Domain: "restart.example", PageviewsPerMonth: 80_000, PagesPerDay: 200}

// BenchmarkRestart measures issue #16's restart on the real binary. A
// server with snapshots off (-snapshot-every 0, so that the log holds every
// hit) imports a year of about a million hits through the API, 10,000 per
// request, and is then killed with SIGKILL (after=kill-9: the restart
// replays the whole log) or stopped with SIGTERM (after=stop: its final
// snapshot holds everything). It reports the time from starting the
// process again to the first 200 of /healthz, and then the first query of
// each of the 17 statistics over the 365 days through the API: the
// slowest, and all of them; and the import's rate (one client, durable,
// issue #16's "import, 10,000-event NDJSON requests"). Medians of the runs.
//
//	go test ./httpd/cmd/webstatsd -run '^$' -bench Restart -benchtime 3x -timeout 30m
func BenchmarkRestart(b *testing.B) {
	bin := buildBinary(b)
	// The year before today: the import refuses hits from the future.
	start := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -366)
	cfg := bench.Config{Seed: 16, Sites: []bench.Site{restartSite}, Days: 365, Start: start}
	var lines [][]byte
	for h := range bench.NewGenerator(cfg).Hits() {
		lines = append(lines, importLine(h))
	}
	from, to := start.Format("2006-01-02"), start.AddDate(0, 0, 364).Format("2006-01-02")
	flags := []string{"-snapshot-every", "0", "-rate-limit", "0"}
	for _, after := range []string{"kill-9", "stop"} {
		b.Run("after="+after, func(b *testing.B) {
			var restart, slowest, all, imports []float64
			for b.Loop() {
				data := filepath.Join(b.TempDir(), "data")
				out, err := exec.Command(bin, "user", "add", "-data", data, "-email", "bench@example.com").Output()
				if err != nil {
					b.Fatalf("user add: %v", err)
				}
				key := strings.TrimSpace(string(out))
				srv := startServer(b, bin, data, flags...)
				api := "http://" + srv.addr + "/api/v1"
				var site struct {
					Data struct{ ID int } `json:"data"`
				}
				call(b, key, "POST", api+"/websites", "application/x-www-form-urlencoded", []byte("domain="+restartSite.Domain), &site)
				bodies := make([][]byte, 0, len(lines)/10_000+1)
				for i := 0; i < len(lines); i += 10_000 {
					bodies = append(bodies, bytes.Join(lines[i:min(i+10_000, len(lines))], []byte("\n")))
				}
				start := time.Now()
				for _, body := range bodies {
					call(b, key, "POST", fmt.Sprintf("%s/websites/%d/events", api, site.Data.ID), "application/x-ndjson", body, nil)
				}
				imports = append(imports, float64(len(lines))/time.Since(start).Seconds())
				if after == "kill-9" {
					if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
						b.Fatal(err)
					}
					<-srv.done
				} else {
					srv.stop(b)
				}
				t0 := time.Now()
				again := launch(b, bin, data, flags...)
				again.waitUp(b, 5*time.Minute)
				restart = append(restart, float64(time.Since(t0).Microseconds())/1000)
				api = "http://" + again.addr + "/api/v1"
				var most, sum time.Duration
				for _, name := range engine.StatNames() {
					t0 := time.Now()
					call(b, key, "GET", fmt.Sprintf("%s/stats/%d?name=%s&from=%s&to=%s", api, site.Data.ID, name, from, to), "", nil, nil)
					d := time.Since(t0)
					most, sum = max(most, d), sum+d
				}
				slowest = append(slowest, float64(most.Microseconds())/1000)
				all = append(all, float64(sum.Microseconds())/1000)
				again.stop(b)
			}
			b.ReportMetric(float64(len(lines)), "hits")
			b.ReportMetric(medianOf(restart), "restart-ms")
			b.ReportMetric(medianOf(slowest), "slowest-first-query-ms")
			b.ReportMetric(medianOf(all), "first-queries-ms")
			b.ReportMetric(medianOf(imports), "import-hits/s")
		})
	}
}

// importLine is h as a line of the import API's NDJSON.
func importLine(h engine.Hit) []byte {
	ev := map[string]any{"time": h.Time.Format(time.RFC3339Nano), "page": h.URL, "user_agent": h.UserAgent}
	if h.IP.IsValid() {
		ev["ip"] = h.IP.String()
	}
	if h.Referrer != "" {
		ev["referrer"] = h.Referrer
	}
	if h.Visitor != "" {
		ev["visitor"] = h.Visitor
	}
	if h.Event != nil {
		ev["event"] = map[string]any{"name": h.Event.Name}
	}
	b, _ := json.Marshal(ev)
	return b
}

// call sends a request with the API key and decodes a 2xx answer into v.
func call(b testing.TB, key, method, url, ctype string, body []byte, v any) {
	b.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		b.Fatalf("%s %s: %s: %.300s", method, url, resp.Status, data)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			b.Fatal(err)
		}
	}
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

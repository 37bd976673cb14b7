package cli

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd"
)

// goatFile writes a GoatCounter export of n hits over October 2026 (2,000
// sessions a day, 20 paths, three browsers) and returns its path.
func goatFile(b *testing.B, n int) string {
	path := filepath.Join(b.TempDir(), "goatcounter.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := csv.NewWriter(f)
	w.Write(goatHeader)
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	browsers := []string{"Chrome 120", "Firefox 119", "Safari 17.1"}
	for i := range n {
		at := start.Add(time.Duration(int64(i) * int64(31*24*time.Hour) / int64(n)))
		sess := fmt.Sprintf("s%d-%d", at.Day(), i%2000)
		w.Write([]string{fmt.Sprintf("/page/%d", i%20), "Title", "false", "", browsers[i%3], "Linux", sess, "0",
			"news.ycombinator.com/item", "h", "1920,1080,1", "DE", "false", at.Format(time.RFC3339)})
	}
	w.Flush()
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkImportGoatCounter300k: webstatsd import -from goatcounter of a
// 300,000-line file (issue 40: at the import API's rate). "check" is the
// check pass alone; "http" the whole command against a server on a data
// directory on disk (httptest, real Pebble), a new website each iteration.
//
//	go test ./httpd/internal/cli -run '^$' -bench ImportGoatCounter300k -benchtime 3x -count 3
func BenchmarkImportGoatCounter300k(b *testing.B) {
	const n = 300_000
	file := goatFile(b, n)
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			src := &source{format: "goatcounter", files: []string{file}, chunk: defaultChunk}
			if err := src.check(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
	b.Run("http", func(b *testing.B) {
		ctx := context.Background()
		e, err := engine.Open(&engine.Options{Dir: filepath.Join(b.TempDir(), "data"), SnapshotEvery: -1})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		a, key, err := identity.Must(e).CreateAccount(ctx, "Owner", "owner@example.org")
		if err != nil {
			b.Fatal(err)
		}
		h, err := httpd.New(e, &httpd.Options{RateLimit: -1})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			d := fmt.Sprintf("site%d.example", i)
			if _, err := e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &d}); err != nil {
				b.Fatal(err)
			}
			os.Remove(file + ".webstats-import")
			b.StartTimer()
			c := &cli{stdout: io.Discard, stderr: io.Discard, lookupEnv: func(string) (string, bool) { return "", false }}
			if code := c.main(ctx, []string{"import", "-url", srv.URL, "-key", key, "-site", d, "-from", "goatcounter", "-quiet", file}); code != 0 {
				b.Fatalf("import: exit %d", code)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	})
}

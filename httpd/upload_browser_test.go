package httpd

import (
	"encoding/csv"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/webstats/webstats/engine"

	"github.com/webstats/webstats/httpd/internal/browsertest"
)

// TestBrowserImportData uploads a GoatCounter export on a website's
// "Import data" page in headless Chromium against the whole server (SPEC
// §14: an upload, then progress): a file with a bad date is refused with
// its file and line and counts nothing; the good file is imported with a
// progress line, and its numbers are on the dashboard.
func TestBrowserImportData(t *testing.T) {
	browsertest.Path(t)
	f := newFixture(t, nil)
	srv := httptest.NewServer(f.s)
	defer srv.Close()
	dir := t.TempDir()
	header := []string{"2Path", "Title", "Event", "UserAgent", "Browser", "System", "Session", "Bot",
		"Referrer", "Referrer scheme", "Screen size", "Location", "FirstVisit", "Date"}
	rows := [][]string{header}
	day := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for i := range 30 { // 30 pageviews of 6 sessions, on 2026-11-20
		rows = append(rows, []string{fmt.Sprintf("/p%d", i%4), "T", "false", "", "Firefox 120", "Linux",
			fmt.Sprintf("s%d", i%6), "0", "", "", "1920,1080,1", "DE", "false", day.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)})
	}
	good := writeCSVFile(t, filepath.Join(dir, "goatcounter.csv"), rows)
	badRows := append([][]string(nil), rows[:4]...)
	badRows = append(badRows, append(append([]string(nil), rows[4][:13]...), "yesterday"))
	bad := writeCSVFile(t, filepath.Join(dir, "broken.csv"), badRows)

	ctx := browsertest.New(t)
	b := tab{browsertest.Tab{T: t, Ctx: ctx}}
	b.Do(chromedp.Navigate(srv.URL+"/websites/1/settings"), chromedp.SendKeys(chromedp.ID("key"), f.alice))
	b.Submit(chromedp.Submit(chromedp.ID("key")))
	if !browsertest.Eval[bool](b.Tab, `!!document.querySelector('a[href="/websites/1/import"]')`) {
		t.Error("the settings page has no link to Import data")
	}
	b.Do(chromedp.Navigate(srv.URL + "/websites/1/import"))

	upload := func(file string) {
		b.Do(chromedp.SetValue(chromedp.ID("format"), "goatcounter"), chromedp.SetUploadFiles(`#file`, []string{file}))
		b.Submit(chromedp.Click(chromedp.CSS(`form[enctype] button[type=submit]`)))
	}
	upload(bad)
	mustContainText(t, "bad file", b.Text("#import-error"), "broken.csv:5:", "column Date", "Nothing was imported.")
	if p, err := f.e.Unscoped().Stat(t.Context(), engine.StatQuery{Website: 1, Name: "pageviews",
		From: engine.DateOf(2026, 11, 20), To: engine.DateOf(2026, 11, 20)}); err != nil || len(p.Rows) > 0 {
		t.Fatalf("the broken file counted %v (%v)", p.Rows, err)
	}

	upload(good)
	// The page refreshes itself while the import runs; reading it again
	// here waits for the end without racing a refresh.
	status := b.Text("#import-status")
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(status, "Done.") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		b.Do(chromedp.Navigate(srv.URL + "/websites/1/import"))
		status = b.Text("#import-status")
	}
	mustContainText(t, "progress", status, "30 of 30 lines (100%)", "30 counted", "Done.")

	b.Do(chromedp.Navigate(srv.URL+"/stats/example.com?from=2026-11-20&to=2026-11-20"), chromedp.WaitVisible(chromedp.CSS(".totals")))
	mustContainText(t, "dashboard", b.Text(".totals"), "UNIQUE VISITORS 6", "PAGEVIEWS 30")
}

func writeCSVFile(t *testing.T, path string, rows [][]string) string {
	t.Helper()
	var sb strings.Builder
	w := csv.NewWriter(&sb)
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

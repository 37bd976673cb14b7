package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// newSiteDir makes a data directory with one account and the website
// example.com (UTC).
func newSiteDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	domain := "example.com"
	a, _, err := identity.Must(e).CreateAccount(t.Context(), "A", "a@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Owner(a.ID).CreateWebsite(t.Context(), engine.WebsiteInput{Domain: &domain}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stats reads statistics of example.com (website 1) in dir over October
// 2026: name → value → count.
func stats(t *testing.T, dir string, names ...string) map[string]map[string]int64 {
	t.Helper()
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	out := make(map[string]map[string]int64)
	for _, name := range names {
		p, err := e.Unscoped().Stat(t.Context(), engine.StatQuery{Website: 1, Name: name,
			From: engine.DateOf(2026, 10, 1), To: engine.DateOf(2026, 10, 31), PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[string]int64)
		for _, r := range p.Rows {
			m[r.Value] = int64(r.Count)
		}
		out[name] = m
	}
	return out
}

// writeCSV writes rows (the first the header) to a file in dir.
func writeCSV(t *testing.T, dir, name string, rows [][]string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(f)
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// goatRow is one hit of a GoatCounter export, as its columns document it.
type goatRow struct {
	path, event, browser, system, session, bot, ref, scheme, screen, loc, date string
}

// goatHeader is GoatCounter's export header, format version 2.
var goatHeader = []string{"2Path", "Title", "Event", "UserAgent", "Browser", "System", "Session", "Bot",
	"Referrer", "Referrer scheme", "Screen size", "Location", "FirstVisit", "Date"}

func goatRows() []goatRow {
	var rows []goatRow
	browsers := []string{"Chrome 120", "Firefox 119", "Safari 17.1"}
	systems := []string{"Windows 10", "Linux", "macOS 14"}
	locs := []string{"US-CA", "DE", "NL-NH"}
	for day := 1; day <= 3; day++ {
		for s := 0; s < 7+day; s++ {
			at := time.Date(2026, 10, day, 8+s, 0, 0, 0, time.UTC)
			sess := fmt.Sprintf("sess-%d-%d", day, s%5) // sessions repeat within a day
			for p := 0; p < 1+s%3; p++ {
				r := goatRow{path: []string{"/", "/about", "/blog/x"}[p], event: "false", browser: browsers[s%3], system: systems[s%3],
					session: sess, bot: "0", screen: "1920,1080,1", loc: locs[s%3], date: at.Add(time.Duration(p) * time.Minute).Format(time.RFC3339)}
				if p == 0 && s%2 == 0 {
					r.ref, r.scheme = "news.ycombinator.com/item", "h"
				}
				rows = append(rows, r)
			}
			if s%4 == 0 {
				rows = append(rows, goatRow{path: "signup-click", event: "true", browser: browsers[s%3], system: systems[s%3],
					session: sess, bot: "0", loc: locs[s%3], date: at.Add(5 * time.Minute).Format(time.RFC3339)})
			}
			if s == 3 {
				rows = append(rows, goatRow{path: "/", event: "false", browser: "Chrome 120", session: "bot-" + sess, bot: "4", date: at.Format(time.RFC3339)})
			}
		}
	}
	return rows
}

func goatRecords(rows []goatRow) [][]string {
	out := [][]string{goatHeader}
	for _, r := range rows {
		out = append(out, []string{r.path, "Title", r.event, "", r.browser, r.system, r.session, r.bot, r.ref, r.scheme, r.screen, r.loc, "false", r.date})
	}
	return out
}

// TestImportGoatCounter imports a GoatCounter export made here from its
// documented columns and checks the numbers against the rows (SPEC §14).
func TestImportGoatCounter(t *testing.T) {
	dir := newSiteDir(t)
	rows := goatRows()
	file := writeCSV(t, t.TempDir(), "goatcounter.csv", goatRecords(rows))
	_, stderr, code := runCLI(t, t.Context(), nil, "import", "-data", dir, "-site", "example.com", "-from", "goatcounter", "-chunk", "7", file)
	if code != 0 {
		t.Fatalf("import: %d %s", code, stderr)
	}
	// The reference, from the rows: bots are not counted; a visitor
	// (session) counts once a day, under its first pageview's browser.
	want := map[string]map[string]int64{"pageviews": {}, "visitors": {}, "browser": {}, "os": {}, "country": {}, "event": {}, "referrer": {}}
	seen := map[string]bool{}
	countries := map[string]string{"US-CA": "US:United States", "DE": "DE:Germany", "NL-NH": "NL:Netherlands"}
	for _, r := range rows {
		if r.bot != "0" {
			continue
		}
		day := r.date[:10]
		if r.event == "true" {
			want["event"][r.path+"::"]++
			continue
		}
		want["pageviews"][day]++
		if k := day + r.session; !seen[k] {
			seen[k] = true
			want["visitors"][day]++
			name, _, _ := strings.Cut(r.browser, " ")
			want["browser"][name]++
			osName, _, _ := strings.Cut(r.system, " ")
			want["os"][osName]++
			want["country"][countries[r.loc]]++
		}
	}
	// Referrers count visits, which the rows do not give directly: only
	// that Hacker News is there is checked.
	got := stats(t, dir, "pageviews", "visitors", "browser", "os", "country", "event", "referrer")
	delete(want, "referrer")
	if got["referrer"]["news.ycombinator.com"] == 0 {
		t.Errorf("referrer rows %v: want news.ycombinator.com", got["referrer"])
	}
	delete(got, "referrer")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr, "importing") {
		t.Errorf("no progress bar on stderr:\n%s", stderr)
	}

	// Started again on the same file: the state file says it is done.
	_, stderr, code = runCLI(t, t.Context(), nil, "import", "-data", dir, "-site", "example.com", "-from", "goatcounter", file)
	if code != 0 || !strings.Contains(stderr, "already imported") {
		t.Fatalf("second import: %d %s", code, stderr)
	}
	if again := stats(t, dir, "pageviews"); !cmp.Equal(again["pageviews"], want["pageviews"]) {
		t.Errorf("a second run counted again: %v", again["pageviews"])
	}
}

// Umami's session and website_event columns (prisma/schema.prisma's
// Session and WebsiteEvent), in an order of our own: the importer reads
// them by name.
var (
	umamiSessionHeader = []string{"session_id", "website_id", "browser", "os", "device", "screen", "language", "country", "subdivision1", "city", "created_at"}
	umamiEventHeader   = []string{"event_id", "website_id", "session_id", "visit_id", "created_at", "url_path", "url_query", "referrer_path",
		"referrer_query", "referrer_domain", "page_title", "event_type", "event_name", "hostname"}
)

// TestImportUmami imports Umami tables made here and checks the numbers
// against the rows (SPEC §14).
func TestImportUmami(t *testing.T) {
	dir := newSiteDir(t)
	type sess struct{ id, browser, os, device, country, region, city, wantBrowser, wantOS, wantDevice, wantCountry, wantCity string }
	sessions := []sess{
		{"0b1e0000-0000-4000-8000-000000000001", "chrome", "Windows 10", "desktop", "US", "US-CA", "San Francisco", "Chrome", "Windows", "desktop", "US:United States", "US:San Francisco, CA"},
		{"0b1e0000-0000-4000-8000-000000000002", "firefox", "Linux", "laptop", "DE", "", "", "Firefox", "Linux", "desktop", "DE:Germany", ""},
		{"0b1e0000-0000-4000-8000-000000000003", "ios", "iOS", "mobile", "FR", "FR-IDF", "Paris", "Safari", "iOS", "mobile", "FR:France", "FR:Paris, IDF"},
		{"0b1e0000-0000-4000-8000-000000000004", "edge-chromium", "Mac OS", "tablet", "NL", "", "", "Edge", "macOS", "tablet", "NL:Netherlands", ""},
	}
	srows := [][]string{umamiSessionHeader}
	for _, s := range sessions {
		srows = append(srows, []string{s.id, "w1", s.browser, s.os, s.device, "1920x1080", "en-US", s.country, s.region, s.city, "2026-10-01 00:00:00"})
	}
	erows := [][]string{umamiEventHeader}
	want := map[string]map[string]int64{"pageviews": {}, "visitors": {}, "browser": {}, "os": {}, "device": {}, "country": {}, "city": {}, "event": {}, "page": {}}
	seen := map[string]bool{}
	n := 0
	for day := 1; day <= 4; day++ {
		for i, s := range sessions[:day] {
			for p := 0; p < 1+i; p++ {
				n++
				at := time.Date(2026, 10, day, 9+i, p*3, 0, 0, time.UTC)
				path, query := []string{"/", "/pricing", "/docs"}[p%3], ""
				if p == 0 && i == 1 {
					query = "utm_source=mail"
				}
				erows = append(erows, []string{fmt.Sprint(n), "w1", s.id, "v", at.Format("2006-01-02 15:04:05.000"), path, query, "", "", "", "T", "1", "", "example.com"})
				d := at.Format("2006-01-02")
				want["pageviews"][d]++
				page := path
				if query != "" {
					page += "?" + query
				}
				want["page"][page]++
				if !seen[d+s.id] {
					seen[d+s.id] = true
					want["visitors"][d]++
					want["browser"][s.wantBrowser]++
					want["os"][s.wantOS]++
					want["device"][s.wantDevice]++
					want["country"][s.wantCountry]++
					want["city"][s.wantCity]++ // unknown is ""
				}
			}
			if i == 2 {
				n++
				erows = append(erows, []string{fmt.Sprint(n), "w1", s.id, "v", time.Date(2026, 10, day, 20, 0, 0, 0, time.UTC).Format(time.RFC3339), "/pricing", "", "", "", "", "", "2", "checkout", "example.com"})
				want["event"]["checkout::"]++
			}
		}
	}
	// The checkout events' properties (event_data, PostgreSQL's names).
	drows := [][]string{{"event_data_id", "website_id", "website_event_id", "data_key", "string_value", "number_value", "date_value", "data_type"}}
	for _, r := range erows[1:] {
		if r[11] == "2" {
			drows = append(drows, []string{"d" + r[0], "w1", r[0], "plan", "pro", "", "", "1"}, []string{"e" + r[0], "w1", r[0], "amount", "", "19.5000", "", "2"})
		}
	}
	tmp := t.TempDir()
	ev := writeCSV(t, tmp, "website_event.csv", erows)
	se := writeCSV(t, tmp, "session.csv", srows)
	da := writeCSV(t, tmp, "event_data.csv", drows)
	_, stderr, code := runCLI(t, t.Context(), nil, "import", "-data", dir, "-site", "example.com", "-from", "umami", "-quiet", ev, da, se)
	if code != 0 {
		t.Fatalf("import: %d %s", code, stderr)
	}
	got := stats(t, dir, "pageviews", "visitors", "browser", "os", "device", "country", "city", "event", "page")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	// Every checkout carries its properties (read back by the export).
	out, stderr, code := runCLI(t, t.Context(), nil, "export", "-data", dir, "-site", "example.com")
	if code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	checkouts := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, `"name":"checkout"`) {
			checkouts++
			if !strings.Contains(line, `"plan":"pro"`) || !strings.Contains(line, `"amount":"19.5"`) {
				t.Errorf("checkout without its properties: %s", line)
			}
		}
	}
	if int64(checkouts) != want["event"]["checkout::"] {
		t.Errorf("%d checkouts exported, want %d", checkouts, want["event"]["checkout::"])
	}
}

// TestImportBrokenFiles: a bad file is refused with its file, line and
// column, and nothing of any file of the import counts (SPEC §14).
func TestImportBrokenFiles(t *testing.T) {
	good := goatRecords(goatRows())
	tests := []struct {
		name    string
		format  string
		write   func(dir string) string
		wantErr string
	}{
		{"wrong header", "goatcounter", func(dir string) string {
			rows := append([][]string{{"Path", "Title", "Date"}}, good[1:]...)
			return writeCSV(t, dir, "wrong.csv", rows)
		}, "wrong.csv:1: wrong header: no column 2Path"},
		{"bad date", "goatcounter", func(dir string) string {
			rows := append([][]string(nil), good...)
			rows[7] = append([]string(nil), rows[7]...)
			rows[7][13] = "yesterday"
			return writeCSV(t, dir, "date.csv", rows)
		}, fmt.Sprintf(`date.csv:8:%d: column Date: not an RFC 3339 date-time: "yesterday"`, badDateColumn(good[7]))},
		{"truncated", "goatcounter", func(dir string) string {
			path := writeCSV(t, dir, "cut.csv", good)
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)*2/3], 0o600)
			return path
		}, "cut.csv:"},
		{"very long line", "goatcounter", func(dir string) string {
			rows := append([][]string(nil), good...)
			rows[3] = append([]string(nil), rows[3]...)
			rows[3][1] = strings.Repeat("x", 3<<20)
			return writeCSV(t, dir, "long.csv", rows)
		}, "long.csv:4: a line longer than"},
		{"ndjson bad time", "ndjson", func(dir string) string {
			path := filepath.Join(dir, "lines.ndjson")
			os.WriteFile(path, []byte(`{"time":"2026-10-01T10:00:00Z","page":"/a","visitor":"v"}`+"\n\n"+`{"time":"2026-13-01","page":"/a","visitor":"v"}`+"\n"), 0o600)
			return path
		}, "lines.ndjson:3: time: The time must be a valid RFC 3339 date-time."},
		{"ndjson very long line", "ndjson", func(dir string) string {
			path := filepath.Join(dir, "long.ndjson")
			os.WriteFile(path, []byte(`{"time":"2026-10-01T10:00:00Z","page":"/a","visitor":"v"}`+"\n"+`{"page":"`+strings.Repeat("a", 2<<20)+`"}`+"\n"), 0o600)
			return path
		}, "long.ndjson:2: a line longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := newSiteDir(t)
			tmp := t.TempDir()
			// A good file first: nothing of it counts either.
			first := writeCSV(t, tmp, "first.csv", good)
			if tt.format == "ndjson" {
				first = filepath.Join(tmp, "first.ndjson")
				os.WriteFile(first, []byte(`{"time":"2026-10-02T10:00:00Z","page":"/ok","visitor":"v1"}`+"\n"), 0o600)
			}
			bad := tt.write(tmp)
			_, stderr, code := runCLI(t, t.Context(), nil, "import", "-data", dir, "-site", "example.com", "-from", tt.format, "-quiet", first, bad)
			if code != 1 || !strings.Contains(stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q: want 1 and %q", code, stderr, tt.wantErr)
			}
			if got := stats(t, dir, "pageviews", "event"); len(got["pageviews"])+len(got["event"]) > 0 {
				t.Errorf("counted %v", got)
			}
		})
	}
}

// badDateColumn is the byte column (1-based) where the Date field, the
// last, of a GoatCounter record starts in its CSV line.
func badDateColumn(rec []string) int {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write(rec)
	w.Flush()
	return strings.LastIndexByte(b.String(), ',') + 2
}

// TestImportOfflineExactlyOnce: an offline import (-data) killed after a
// chunk was counted and before the state file said so is started again:
// that chunk counts once (SPEC §14 "idempotent per chunk", §3.4 Retries).
// The kill is simulated by putting back the state file as it was before
// the last chunk, which is what such a run leaves on disk.
func TestImportOfflineExactlyOnce(t *testing.T) {
	dir := newSiteDir(t)
	var b strings.Builder
	want := map[string]int64{}
	for i := range 100 {
		at := time.Date(2026, 10, 1+i%5, 10, i, 0, 0, time.UTC)
		fmt.Fprintf(&b, `{"time":%q,"page":"/p%d","visitor":"v%d"}`+"\n", at.Format(time.RFC3339), i%7, i%13)
		want[at.Format("2006-01-02")]++
	}
	file := filepath.Join(t.TempDir(), "lines.ndjson")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"import", "-data", dir, "-site", "example.com", "-from", "ndjson", "-chunk", "10", "-quiet", file}
	if _, stderr, code := runCLI(t, t.Context(), nil, args...); code != 0 {
		t.Fatalf("import: %d %s", code, stderr)
	}
	state := file + ".webstats-import"
	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil || st["done"] != float64(10) {
		t.Fatalf("state %s: %v", raw, err)
	}
	st["done"] = 7 // chunks 8, 9 and 10 counted, the state not yet saved
	raw, _ = json.Marshal(st)
	if err := os.WriteFile(state, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, t.Context(), nil, args...)
	if code != 0 || !strings.Contains(stderr, "resuming after chunk 7") {
		t.Fatalf("import again: %d %s", code, stderr)
	}
	if diff := cmp.Diff(want, stats(t, dir, "pageviews")["pageviews"]); diff != "" {
		t.Errorf("pageviews after the resumed import mismatch (-want +got):\n%s", diff)
	}
}

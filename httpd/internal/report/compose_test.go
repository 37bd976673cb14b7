package report

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

// The weekly report of the dataset, composed, sent through a real SMTP
// server and parsed back as a mail reader would.
func TestComposeAndSend(t *testing.T) {
	ctx := context.Background()
	clk := newClock("2026-11-16T07:00:00Z")
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	srv := startServer(t, serverConfig{})

	m, err := Compose(ctx, e, w, owner, Weekly, date("2026-11-09"), "https://stats.example.org/")
	if err != nil {
		t.Fatal(err)
	}
	m.From = "webstats <reports@example.org>"
	m.Date = clk.Now()
	if err := Send(ctx, SMTP{Addr: srv.addr}, nil, m); err != nil {
		t.Fatal(err)
	}
	msgs := srv.messages()
	if len(msgs) != 1 {
		t.Fatalf("server got %d messages, want 1", len(msgs))
	}
	got := msgs[0]
	if got.From != "reports@example.org" || len(got.To) != 1 || got.To[0] != owner {
		t.Errorf("envelope: from %q to %q, want reports@example.org to [%s]", got.From, got.To, owner)
	}
	pm := parseMail(t, got.Data)

	for name, want := range map[string]string{
		"From":           `"webstats" <reports@example.org>`,
		"To":             owner,
		"Message-Id":     "<report-1-weekly-2026-11-09@stats.example.org>",
		"Mime-Version":   "1.0",
		"Auto-Submitted": "auto-generated",
		"Date":           "Mon, 16 Nov 2026 07:00:00 +0000",
	} {
		if g := pm.Header.Get(name); g != want {
			t.Errorf("header %s = %q, want %q", name, g, want)
		}
	}
	if want := "Weekly statistics for example.com (9–15 November 2026): 5 visitors (+150%)"; pm.Subject != want {
		t.Errorf("subject = %q, want %q", pm.Subject, want)
	}
	golden(t, "weekly.txt", pm.Text)
	golden(t, "weekly.html", pm.HTML)

	for _, want := range []string{
		"<div style=\"font-size:24px;font-weight:600;\">5</div>",
		"<div style=\"font-size:24px;font-weight:600;\">7</div>",
		"&#43;150%", "&#43;133%", // html/template writes + as &#43;
		`href="https://stats.example.org/stats/example.com?from=2026-11-09&amp;to=2026-11-15"`,
		"https://stats.example.org/api/v1/websites/1",
		"set <code>email</code> to 0",
		"Google", "Hacker News", "Direct / None",
		"United States", "Australia", "Germany", "Japan",
	} {
		if !strings.Contains(pm.HTML, want) {
			t.Errorf("HTML part lacks %q", want)
		}
	}
}

// Pages and referrers come from tracking requests: the HTML part escapes
// them.
func TestComposeEscapesHTML(t *testing.T) {
	ctx := context.Background()
	clk := newClock("2026-11-16T07:00:00Z")
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	m, err := Compose(ctx, e, w, owner, Weekly, date("2026-11-09"), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, "/<script>x</script>") {
		t.Errorf("the text part should show the page as tracked:\n%s", m.Text)
	}
	if strings.Contains(m.HTML, "<script>") {
		t.Errorf("the HTML part holds an unescaped <script>:\n%s", m.HTML)
	}
	if !strings.Contains(m.HTML, "/&lt;script&gt;x&lt;/script&gt;") {
		t.Errorf("the HTML part lacks the escaped page:\n%s", m.HTML)
	}

	// Whatever a value holds, it stays text.
	d := &reportData{Title: "t", Domain: "example.com", Tables: []table{{
		Title: "Top pages",
		Rows: []row{
			{Value: `"><img src=x onerror=alert(1)>`, Count: "1"},
			{Value: showPage("/\u202eevil\x1b[31m"), Count: "1"},
		},
	}}}
	var b strings.Builder
	if err := htmlTmpl.Execute(&b, d); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<img") || strings.Contains(b.String(), "\u202e") || strings.Contains(b.String(), "\x1b") {
		t.Errorf("value not neutralised:\n%s", b.String())
	}
}

// Without a public URL the mail still says where the statistics are and
// how to stop the reports, and the Message-ID host is "webstats".
func TestComposeWithoutPublicURL(t *testing.T) {
	ctx := context.Background()
	clk := newClock("2026-11-16T07:00:00Z")
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	m, err := Compose(ctx, e, w, owner, Weekly, date("2026-11-09"), "")
	if err != nil {
		t.Fatal(err)
	}
	if m.MessageID != "<report-1-weekly-2026-11-09@webstats>" {
		t.Errorf("Message-ID = %q", m.MessageID)
	}
	for _, want := range []string{"/stats/example.com", `set "email" to 0`} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, m.Text)
		}
	}
	if strings.Contains(m.HTML, "href=") {
		t.Errorf("HTML without a public URL should have no links:\n%s", m.HTML)
	}
}

func TestComposeRejectsBadPeriodStart(t *testing.T) {
	clk := newClock("2026-11-16T07:00:00Z")
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	if _, err := Compose(context.Background(), e, w, owner, Weekly, date("2026-11-10"), ""); err == nil {
		t.Error("a weekly report starting on a Tuesday: want an error")
	}
	if _, err := Compose(context.Background(), e, w, owner, Monthly, date("2026-11-02"), ""); err == nil {
		t.Error("a monthly report starting on the 2nd: want an error")
	}
}

func TestChange(t *testing.T) {
	tests := []struct {
		cur, prev uint64
		want      string
	}{
		{cur: 112, prev: 100, want: "+12%"},
		{cur: 97, prev: 100, want: "−3%"},
		{cur: 5, prev: 0, want: "new"},
		{cur: 0, prev: 0, want: "±0%"},
		{cur: 0, prev: 7, want: "−100%"},
		{cur: 1001, prev: 1000, want: "±0%"},
		{cur: 3, prev: 1, want: "+200%"},
	}
	for _, tt := range tests {
		if got := change(tt.cur, tt.prev); got != tt.want {
			t.Errorf("change(%d, %d) = %q, want %q", tt.cur, tt.prev, got, tt.want)
		}
	}
}

func TestFormatCount(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", 100000: "100,000"} {
		if got := formatCount(n); got != want {
			t.Errorf("formatCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// The message itself: headers that cannot be injected, a folded subject,
// and the same bytes for the same message.
func TestMessageBytes(t *testing.T) {
	m := &Message{
		From:      "webstats <reports@example.org>",
		To:        "owner@example.com",
		Subject:   "Weekly statistics for a-rather-long-domain-name.example.com (28 December 2026 – 3 January 2027): 1,234,567 visitors (−3%)\r\nBcc: x@example.net",
		MessageID: "<report-1-weekly-2026-12-28@webstats>",
		Text:      "line\n" + strings.Repeat("x", 200) + "\n=_webstats_\n",
		HTML:      "<p>é</p>",
	}
	m.Date = at("2026-11-16T07:00:00Z")
	b := m.Bytes()
	if string(b) != string(m.Bytes()) {
		t.Error("Bytes is not deterministic")
	}
	pm := parseMail(t, b)
	for _, line := range strings.Split(string(b[:strings.Index(string(b), "\r\n\r\n")]), "\r\n") {
		// RFC 5322 recommends 78; an encoded-word alone may be 75.
		if len(line) > 85 {
			t.Errorf("header line of %d bytes: %q", len(line), line)
		}
	}
	if strings.Contains(string(b), "\r\nBcc:") {
		t.Error("a line break in the subject added a header")
	}
	if !strings.HasPrefix(pm.Subject, "Weekly statistics for a-rather-long-domain-name.example.com (28 December 2026 – 3 January 2027)") {
		t.Errorf("subject = %q", pm.Subject)
	}
	if pm.Text != strings.ReplaceAll(m.Text, "\n", "\r\n") || pm.HTML != m.HTML {
		t.Errorf("bodies changed: text %q, HTML %q", pm.Text, pm.HTML)
	}
	if m.ListUnsubscribe = "<https://stats.example.org/unsubscribe>"; !strings.Contains(string(m.Bytes()), "\r\nList-Unsubscribe: <https://stats.example.org/unsubscribe>\r\n") {
		t.Error("no List-Unsubscribe header")
	}
}

// isLoopback decides whether credentials may go in clear text.
func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "127.0.0.1": true, "::1": true, "127.0.0.2": true,
		"smtp.example.org": false, "192.0.2.1": false, "10.0.0.1": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

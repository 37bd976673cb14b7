package pages

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCSVCell(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{in: "", want: ""},
		{in: "/pricing", want: "/pricing"},
		{in: "Chrome", want: "Chrome"},
		{in: "a=b", want: "a=b"},
		{in: "=HYPERLINK(\"x\")", want: "'=HYPERLINK(\"x\")"},
		{in: "+1", want: "'+1"},
		{in: "-1", want: "'-1"},
		{in: "@SUM(A1)", want: "'@SUM(A1)"},
		{in: "\tx", want: "'\tx"},
		{in: "\rx", want: "'\rx"},
		// After leading (Unicode) spaces.
		{in: " =1+1", want: "' =1+1"},
		{in: "  \n@x", want: "'  \n@x"},
		{in: "\u00a0=1", want: "'\u00a0=1"},
		{in: "\u3000=1", want: "'\u3000=1"},
		{in: "   ", want: "   "},
		{in: " x=1", want: " x=1"},
		// Full-width and small forms.
		{in: "＝1+1", want: "'＝1+1"},
		{in: "＋1", want: "'＋1"},
		{in: "－1", want: "'－1"},
		{in: "＠x", want: "'＠x"},
		{in: "﹦1", want: "'﹦1"},
		{in: " ＝1", want: "' ＝1"},
		{in: "x＝1", want: "x＝1"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, csvCell(tt.in)); diff != "" {
				t.Errorf("csvCell(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSafeNext(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{in: "/", want: "/"},
		{in: "/stats/example.com?from=2026-01-01&to=2026-01-31", want: "/stats/example.com?from=2026-01-01&to=2026-01-31"},
		{in: "/stats/b%C3%BCcher.de", want: "/stats/b%C3%BCcher.de"},
		{in: "/stats/bücher.de", want: "/stats/bücher.de"},
		{in: "", want: "DEF"},
		{in: "stats", want: "DEF"},
		{in: "https://evil.example/", want: "DEF"},
		{in: "//evil.example", want: "DEF"},
		{in: "///evil.example", want: "DEF"},
		{in: "/\\evil.example", want: "DEF"},
		{in: "\\/evil.example", want: "DEF"},
		{in: "/a\\b", want: "DEF"},
		{in: "/a//b", want: "DEF"},
		{in: "/a?u=https://x.example/", want: "/a?u=https://x.example/"},
		{in: "/a?u=\x0b", want: "DEF"},
		{in: " /a", want: "DEF"},
		{in: "/\t/evil.example", want: "DEF"},
		{in: "/\r\nSet-Cookie: x=1", want: "DEF"},
		{in: "/\x00", want: "DEF"},
		{in: "/\v/evil.example", want: "DEF"},
		{in: "/\f/evil.example", want: "DEF"},
		{in: "/\b/evil.example", want: "DEF"},
		{in: "/\x1f/evil.example", want: "DEF"},
		{in: "/\x7f/evil.example", want: "DEF"},
		{in: "/\u0085/evil.example", want: "DEF"},
		{in: "/\u202e/evil.example", want: "DEF"},
		{in: "/\xff", want: "DEF"},
		{in: "/" + string(make([]byte, 2048)), want: "DEF"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, safeNext(tt.in, "DEF")); diff != "" {
				t.Errorf("safeNext(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestPublicRowCaps checks that visitors who are not the owner read at most
// publicRows rows of a statistic, on its pages and in its CSV, while the
// owner reads everything (SPEC §13: a 26 MB page.csv went to an anonymous
// client).
func TestPublicRowCaps(t *testing.T) {
	const pagesTracked = publicRows + 500
	f := newFixture(t)
	hits := make([]hit, pagesTracked)
	for i := range hits {
		hits[i] = hit{url: fmt.Sprintf("https://public.example/p%04d", i)}
	}
	f.track(hits...)
	anon := f.client()
	owner := f.client()
	owner.signIn(f.ownerKey)

	csvRows := func(c *client) (int, string) {
		t.Helper()
		res := c.get("/stats/public.example/page.csv?range=7d")
		if res.status != 200 {
			t.Fatalf("csv: status %d", res.status)
		}
		rows, err := csv.NewReader(strings.NewReader(res.body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return len(rows) - 1, res.header.Get("X-Webstats-Row-Cap")
	}
	if n, capped := csvRows(anon); n != publicRows || capped != strconv.Itoa(publicRows) {
		t.Errorf("anonymous csv: %d rows, X-Webstats-Row-Cap %q; want %d, %q", n, capped, publicRows, strconv.Itoa(publicRows))
	}
	if n, capped := csvRows(owner); n != pagesTracked || capped != "" {
		t.Errorf("owner's csv: %d rows, X-Webstats-Row-Cap %q; want %d, none", n, capped, pagesTracked)
	}

	// Rows are by count (all 1), then by value: row 1,001 is /p1000.
	beyond := fmt.Sprintf("/p%04d", publicRows)
	last := fmt.Sprintf("/p%04d", publicRows-1)
	res := anon.get("/stats/public.example/page?range=7d&page=11")
	if res.status != 200 || strings.Contains(res.body, beyond) || !strings.Contains(res.body, last) {
		t.Errorf("anonymous page 11: status %d, shows %s: %v, %s: %v; want the last public page",
			res.status, beyond, strings.Contains(res.body, beyond), last, strings.Contains(res.body, last))
	}
	mustContain(t, "anonymous page 10", mainText(anon.get("/stats/public.example/page?range=7d&page=10").body),
		"Page 10 of 10", "the first 1,000 rows are public")
	res = owner.get("/stats/public.example/page?range=7d&page=11")
	if res.status != 200 || !strings.Contains(res.body, beyond) {
		t.Errorf("owner's page 11: status %d, shows %s: %v", res.status, beyond, strings.Contains(res.body, beyond))
	}
	mustContain(t, "owner's page 11", mainText(res.body), "Page 11 of 15")
}

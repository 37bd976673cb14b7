package pages

import (
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

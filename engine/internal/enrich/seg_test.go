package enrich

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSanitize checks sanitize against its definition: every control
// character (below U+0020, and U+007F) dropped, every invalid UTF-8 byte
// sequence replaced by U+FFFD, and nothing else changed.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "/blog/a-post", "x\x00y", "\x7f", "caf\xc3\xa9", "\xff\xfe", "a\tb\nc", "ü\x1f", "\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want strings.Builder
		invalid := false // in a run of invalid bytes, replaced once
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n == 1:
				if !invalid {
					want.WriteRune(utf8.RuneError)
				}
				invalid = true
			case r < 0x20 || r == 0x7f:
				invalid = false
			default:
				want.WriteRune(r)
				invalid = false
			}
			i += n
		}
		if got := sanitize(s); got != want.String() {
			t.Errorf("sanitize(%q) = %q, want %q", s, got, want.String())
		}
	})
}

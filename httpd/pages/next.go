package pages

import (
	"strings"
	"unicode/utf8"
)

// safeNext returns next when it is a path on this site, else def: it must
// start with a single '/', hold no '//' before its query (a browser reads
// "//host" and "/\\host" as another site), no backslash, no control
// character (C0, DEL, C1: browsers drop some of them, so "/\t/host" would be
// "//host"), no bidi control, be valid UTF-8 and at most 2,048 bytes long.
func safeNext(next, def string) string {
	path, _, _ := strings.Cut(next, "?")
	if len(next) > 2048 || !strings.HasPrefix(next, "/") || strings.Contains(path, "//") ||
		!utf8.ValidString(next) || strings.ContainsFunc(next, unsafeInNext) {
		return def
	}
	return next
}

// unsafeInNext reports whether r may not appear in a redirect target.
func unsafeInNext(r rune) bool {
	return r < 0x20 || 0x7f <= r && r <= 0x9f || r == '\\' ||
		r == 0x061C || r == 0x200E || r == 0x200F || 0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
}

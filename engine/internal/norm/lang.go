package norm

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/text/language"
)

// maxAcceptLanguage is how much of an Accept-Language header Language reads;
// an entry cut by it is skipped like any malformed one.
const maxAcceptLanguage = 4096

// Language returns the language statistic value of an Accept-Language header
// (SPEC §2.3): the primary language subtag, lower case, of the language with
// the highest weight (the first one among equals), when it has a 2-letter
// ISO 639-1 form ("en-US,en;q=0.9" → "en", "deu" → "de", "iw" → "he"); ""
// otherwise ("fil-PH,en;q=0.8", "*", garbage, no header). A "*" entry is
// skipped like a malformed one ("*,en;q=0.5" → "en").
//
// Entries are parsed with golang.org/x/text/language, like
// language.ParseAcceptLanguage, except that an entry that does not parse, or
// whose weight is not a number in (0, 1], is skipped instead of failing the
// whole header; a tag with an unknown subtag keeps its known part ("en-QQ"
// is "en"). A simple first entry without weight ("en", "en-US", "es-419"),
// which browsers always send, is decided without allocating.
func Language(acceptLanguage string) string {
	if v, ok := languageFast(acceptLanguage); ok {
		return v
	}
	return languageSlow(acceptLanguage)
}

// languageFast decides headers whose first entry is a 2-letter language,
// optionally with a 2-letter or 3-digit region, and no weight: such an entry
// has the highest possible weight (1) and comes first among equals. ok is
// false when the header needs the full parse.
func languageFast(h string) (string, bool) {
	s := strings.TrimLeft(h, " ")
	if len(s) < 2 || !isLetter(s[0]) || !isLetter(s[1]) {
		return "", false
	}
	primary := [2]byte{s[0] | 0x20, s[1] | 0x20}
	s = s[2:]
	if len(s) > 0 && (s[0] == '-' || s[0] == '_') {
		switch {
		case len(s) >= 3 && isLetter(s[1]) && isLetter(s[2]):
			s = s[3:]
		case len(s) >= 4 && isDigit(s[1]) && isDigit(s[2]) && isDigit(s[3]):
			s = s[4:]
		default:
			return "", false
		}
	}
	s = strings.TrimLeft(s, " ")
	if s != "" && s[0] != ',' {
		return "", false
	}
	return languages2()[int(primary[0]-'a')*26+int(primary[1]-'a')], true
}

// languages2 maps every pair of lower-case letters "aa"…"zz" to the result of
// the full parse of that primary subtag, computed once on first use.
var languages2 = sync.OnceValue(func() *[26 * 26]string {
	var t [26 * 26]string
	for i := range t {
		t[i] = languageOf(string([]byte{'a' + byte(i/26), 'a' + byte(i%26)}))
	}
	return &t
})

// languageSlow is the lenient ParseAcceptLanguage described at Language.
func languageSlow(h string) string {
	if len(h) > maxAcceptLanguage {
		h = h[:maxAcceptLanguage]
	}
	best, bestQ := "", 0.0
	for h != "" {
		var entry string
		entry, h, _ = strings.Cut(h, ",")
		tag, weight, _ := strings.Cut(entry, ";")
		tag = strings.TrimSpace(tag)
		if tag == "" {
			continue
		}
		q := 1.0
		if weight = strings.TrimSpace(weight); weight != "" {
			w, ok := strings.CutPrefix(weight, "q")
			if !ok {
				continue
			}
			w, ok = strings.CutPrefix(strings.TrimSpace(w), "=")
			if !ok {
				continue
			}
			var err error
			if q, err = strconv.ParseFloat(strings.TrimSpace(w), 32); err != nil {
				continue
			}
		}
		if !(q > 0 && q <= 1) || q <= bestQ {
			continue
		}
		t, err := language.Parse(tag)
		if err != nil {
			if _, ok := errors.AsType[language.ValueError](err); !ok {
				continue
			}
		}
		best, bestQ = baseOf(t), q
	}
	return best
}

// languageOf is the result for a single tag.
func languageOf(tag string) string {
	t, err := language.Parse(tag)
	if err != nil {
		if _, ok := errors.AsType[language.ValueError](err); !ok {
			return ""
		}
	}
	return baseOf(t)
}

// baseOf returns the 2-letter primary language of t, or "".
func baseOf(t language.Tag) string {
	b, conf := t.Base()
	if conf != language.Exact {
		return "" // "und", or a language only guessed from script or region
	}
	if s := b.String(); len(s) == 2 {
		return s
	}
	return ""
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// Resolution validates a screen resolution "WIDTHxHEIGHT" (SPEC §2.3): each
// side 1 to 5 digits, non-zero and without leading zeros (so that one screen
// is one row), separated by a lower-case 'x'. It returns s as sent when
// valid, else "".
func Resolution(s string) string {
	w, h, ok := strings.Cut(s, "x")
	if !ok || !resolutionSide(w) || !resolutionSide(h) {
		return ""
	}
	return s
}

func resolutionSide(s string) bool {
	return len(s) >= 1 && len(s) <= 5 && s[0] != '0' && allDigits(s)
}

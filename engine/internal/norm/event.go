package norm

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// MaxEventNameLen is the longest event name, in characters, that
	// EventName returns; longer names are cut. The SPEC sets no limit; the
	// page's is used.
	MaxEventNameLen = 255
	// MaxEventValueLen is the longest event value, in characters (SPEC §2.4).
	MaxEventValueLen = 10
	// MaxEventUnitLen is the longest event unit, in characters (SPEC §2.4).
	MaxEventUnitLen = 32
)

// EventName normalises an event name (SPEC §2.4): every ':' and every
// control character (C0, DEL, C1: tab, newline, NUL…) becomes a space, the
// bidirectional formatting characters (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069, which can make a name read backwards in a
// page or a spreadsheet) are removed, surrounding white space is trimmed,
// invalid UTF-8 is replaced by U+FFFD and the name is cut at MaxEventNameLen
// characters. ok is false when nothing is left: the name is required.
func EventName(s string) (name string, ok bool) {
	s = eventText(s, false)
	if s == "" {
		return "", false
	}
	return cutRunes(s, MaxEventNameLen), true
}

// EventNameExact normalises an event name as the segments store, goals and
// the Plausible APIs keep it (SPEC §2.4): like EventName, but every ':' is
// kept, so that Plausible's "Outbound Link: Click" stays itself. ok is false
// when nothing is left. StatName turns the result into EventName's.
func EventNameExact(s string) (name string, ok bool) {
	s = eventText(s, true)
	if s == "" {
		return "", false
	}
	return cutRunes(s, MaxEventNameLen), true
}

// StatName is the name of the phpAnalytics event statistic (SPEC §2.3) for
// a name from EventNameExact: every ':' a space, trimmed. It is "" for a
// name of only colons, which that statistic then counts under a blank name.
func StatName(exact string) string { return eventText(exact, false) }

// EventUnitExact is EventUnit keeping every ':' (the unit as the segments
// store keeps it: a revenue currency).
func EventUnitExact(s string) string {
	s = eventText(s, true)
	if utf8.RuneCountInString(s) > MaxEventUnitLen {
		return ""
	}
	return s
}

// EventUnit normalises an event unit (SPEC §2.4) like EventName; a unit longer
// than MaxEventUnitLen characters is dropped (""), not cut.
func EventUnit(s string) string {
	s = eventText(s, false)
	if utf8.RuneCountInString(s) > MaxEventUnitLen {
		return ""
	}
	return s
}

// eventText does the work of EventName but the cut; keepColon keeps
// every ':' (EventNameExact).
func eventText(s string, keepColon bool) string {
	plain := true // printable ASCII without ':', the common case
	for i := 0; i < len(s) && plain; i++ {
		plain = 0x20 <= s[i] && s[i] < 0x7f && (s[i] != ':' || keepColon)
	}
	if plain {
		return strings.TrimSpace(s)
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == ':' && !keepColon || r < 0x20 || 0x7f <= r && r <= 0x9f:
			return ' '
		case bidiControl(r):
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// bidiControl reports whether r is one of Unicode's bidirectional formatting
// characters (UAX #9): ALM, LRM, RLM, LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI,
// PDI.
func bidiControl(r rune) bool {
	return r == 0x061C || r == 0x200E || r == 0x200F || 0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
}

// EventValue normalises an event value given as its raw JSON token (SPEC
// §2.4). A JSON number is written in its shortest decimal form, without
// exponent (5 → "5", 5.50 → "5.5", 5.0 → "5", 1e3 → "1000"); a JSON string is
// taken as sent. The value is kept when it is then a decimal number — digits
// with an optional fraction, "12" or "0.5" — greater than zero and at most
// MaxEventValueLen characters long; otherwise, and for null, an absent value
// (nil) or any other JSON type, EventValue returns "".
//
// Numbers go through float64: a number token with more than about 15
// significant digits is rounded first ("0.30000000000000001" → "0.3").
func EventValue(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return ""
	}
	var s string
	switch c := b[0]; {
	case c == '"':
		if len(b) < 2 || b[len(b)-1] != '"' {
			return ""
		}
		if bytes.IndexByte(b, '\\') < 0 {
			s = string(b[1 : len(b)-1])
		} else if err := json.Unmarshal(b, &s); err != nil {
			return ""
		}
	case c == '-' || isDigit(c):
		if !jsonNumber(b) {
			return ""
		}
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil || !(f > 0) {
			return ""
		}
		// Outside [1e-8, 1e10) the shortest form has more than 10
		// characters; do not format huge or tiny numbers.
		if f < 1e-8 || f >= 1e10 {
			return ""
		}
		s = strconv.FormatFloat(f, 'f', -1, 64)
	default:
		return ""
	}
	if !decimalValue(s) {
		return ""
	}
	return s
}

// decimalValue reports whether s is digits with an optional fraction, greater
// than zero and at most MaxEventValueLen characters.
func decimalValue(s string) bool {
	if len(s) == 0 || len(s) > MaxEventValueLen {
		return false
	}
	nonZero, dot := false, -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.' && dot < 0:
			dot = i
		case isDigit(c):
			nonZero = nonZero || c != '0'
		default:
			return false
		}
	}
	return nonZero && dot != 0 && dot != len(s)-1
}

// jsonNumber reports whether b is a JSON number (RFC 8259 §6); ParseFloat
// alone would also take "0x1p3", "Inf" or "+5".
func jsonNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && isDigit(b[i]) {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// EventRow formats the event statistic value "name:value:unit" (SPEC §2.3):
// "Payment:5:USD", "Signup::". The parts are expected to come from EventName,
// EventValue and EventUnit, which cannot contain ':'.
func EventRow(name, value, unit string) string {
	return name + ":" + value + ":" + unit
}

package query

import (
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// elixirInspectBudget bounds one quoted value in a message (ours: Elixir bounds
// each collection to 50 items and each string to 4,096 bytes, which nested
// hostile input multiplies).
const elixirInspectBudget = 8192

// elixirInspect writes a decoded JSON value as Elixir's inspect/2 does with
// charlists: :as_lists.
func elixirInspect(v any) string {
	var b strings.Builder
	elixirInspectTo(&b, v)
	return b.String()
}

func elixirInspectTo(b *strings.Builder, v any) {
	if b.Len() > elixirInspectBudget {
		b.WriteString("...")
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("nil")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		elixirInspectString(b, v)
	case json.Number:
		if isJSONInteger(v) {
			s := strings.TrimPrefix(string(v), "-")
			if s = strings.TrimLeft(s, "0"); s == "" {
				s = "0"
			} else if strings.HasPrefix(string(v), "-") {
				s = "-" + s
			}
			b.WriteString(s)
			return
		}
		f, _ := strconv.ParseFloat(string(v), 64)
		b.WriteString(elixirFloat(f))
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == 50 {
				b.WriteString("...")
				break
			}
			elixirInspectTo(b, x)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("%{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == 50 {
				b.WriteString("...")
				break
			}
			elixirInspectString(b, k)
			b.WriteString(" => ")
			elixirInspectTo(b, v[k])
		}
		b.WriteByte('}')
	}
}

// elixirInspectString quotes s as Elixir does: escapes in a printable string,
// else the bytes as a bitstring <<…>>.
func elixirInspectString(b *strings.Builder, s string) {
	printable := utf8.ValidString(s)
	for _, r := range s {
		if r < 0x20 && !strings.ContainsRune("\n\r\t\v\b\f\x1b\a", r) || r >= 0x7f && r < 0xa0 {
			printable = false
			break
		}
	}
	if !printable {
		b.WriteString("<<")
		for i := 0; i < len(s); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == 50 {
				b.WriteString("...")
				break
			}
			b.WriteString(strconv.Itoa(int(s[i])))
		}
		b.WriteString(">>")
		return
	}
	tail := ""
	if len(s) > 4096 {
		cut := 4096
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, tail = s[:cut], " <> ..."
	}
	b.WriteByte('"')
	for i, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\x1b':
			b.WriteString(`\e`)
		case '\a':
			b.WriteString(`\a`)
		case '#':
			if strings.HasPrefix(s[i:], "#{") {
				b.WriteString(`\#`)
			} else {
				b.WriteByte('#')
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	b.WriteString(tail)
}

// elixirFloat formats f as Erlang's shortest round-trip form: the shorter
// of plain ("100.0") and scientific ("1.0e3") notation, plain on a tie.
func elixirFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // -1.2345e+06
	mant, exp, _ := strings.Cut(sci, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	sciForm := mant + "e" + strconv.Itoa(e)
	plain := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(plain, ".") {
		plain += ".0"
	}
	if len(sciForm) < len(plain) {
		return sciForm
	}
	return plain
}

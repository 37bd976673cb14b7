package pages

import (
	"html/template"
	"strconv"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"

	"github.com/webstats/webstats/engine"
)

// table describes how a statistic is shown.
type table struct {
	Name   string // the engine's name
	Title  string // heading
	Column string // the value column's heading
	Counts string // the count column's heading
}

// tables are the overview's top-10 tables, in page order.
var tables = []table{
	{"page", "Pages", "Page", "Pageviews"},
	{"landing_page", "Landing pages", "Page", "Visits"},
	{"referrer", "Referrers", "Source", "Visits"},
	{"campaign", "Campaigns", "Campaign", "Visits"},
	{"country", "Countries", "Country", "Visitors"},
	{"city", "Cities", "City", "Visitors"},
	{"continent", "Continents", "Continent", "Visitors"},
	{"language", "Languages", "Language", "Visitors"},
	{"browser", "Browsers", "Browser", "Visitors"},
	{"os", "Operating systems", "Operating system", "Visitors"},
	{"device", "Devices", "Device", "Visitors"},
	{"resolution", "Screen resolutions", "Resolution", "Visitors"},
	{"event", "Events", "Event", "Events"},
}

// tableOf returns how statistic name is shown; ok=false for an unknown name.
func tableOf(name string) (table, bool) {
	for _, t := range tables {
		if t.Name == name {
			return t, true
		}
	}
	switch name {
	case engine.StatPageviews, "pageviews_hour", engine.StatPageviewsHours:
		col := "Day"
		if name != engine.StatPageviews {
			col = "Hour"
		}
		return table{name, "Pageviews by " + strings.ToLower(col), col, "Pageviews"}, true
	case engine.StatVisitors, "visitors_hour", engine.StatVisitorsHours:
		col := "Day"
		if name != engine.StatVisitors {
			col = "Hour"
		}
		return table{name, "Visitors by " + strings.ToLower(col), col, "Visitors"}, true
	}
	return table{}, false
}

// cell is a value as shown: the main text and a muted note.
type cell struct {
	Text, Note string
	Empty      bool // the value is "" (direct, unknown)
}

// display shows a tracked value of statistic name. The result is plain text:
// templates escape it.
func displayValue(name, v string) cell {
	if v == "" {
		switch name {
		case "referrer":
			return cell{Text: "Direct / none", Empty: true}
		case "campaign":
			return cell{Text: "(none)", Empty: true}
		}
		return cell{Text: "Unknown", Empty: true}
	}
	switch name {
	case "country", "continent":
		if code, n, ok := strings.Cut(v, ":"); ok {
			return cell{Text: n, Note: code}
		}
	case "city":
		if code, n, ok := strings.Cut(v, ":"); ok {
			return cell{Text: n, Note: code}
		}
	case "language":
		return cell{Text: languageName(v), Note: v}
	case "event":
		parts := strings.SplitN(v, ":", 3)
		if len(parts) == 3 {
			return cell{Text: parts[0], Note: strings.TrimSpace(parts[1] + " " + parts[2])}
		}
	}
	return cell{Text: v}
}

var languageNames = display.English.Languages()

// languageName returns the English name of a 2-letter language code, or the
// code.
func languageName(code string) string {
	if len(code) > 8 {
		return code
	}
	tag, err := language.Parse(code)
	if err != nil {
		return code
	}
	if n := languageNames.Name(tag); n != "" {
		return n
	}
	return code
}

// formatInt writes n with thousands separators: 1,234,567.
func formatInt(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// change is a total's change against the previous period.
type change struct {
	Text  string // "+12%", "−3%", "new", "±0%", "" (no data either time)
	Class string // "up", "down" or "flat"
}

func changeOf(cur, prev uint64) change {
	switch {
	case prev == 0 && cur == 0:
		return change{Text: "", Class: "flat"}
	case prev == 0:
		return change{Text: "new", Class: "up"}
	}
	return signedChange((float64(cur)-float64(prev))/float64(prev)*100, "%")
}

// signedChange shows a difference d rounded to a whole number of unit
// ("%", " pt"): "+12%", "−3 pt", "±0%".
func signedChange(d float64, unit string) change {
	r := int64(d + 0.5)
	if d < 0 {
		r = int64(d - 0.5)
	}
	switch {
	case r > 0:
		return change{Text: "+" + strconv.FormatInt(r, 10) + unit, Class: "up"}
	case r < 0:
		return change{Text: "\u2212" + strconv.FormatInt(-r, 10) + unit, Class: "down"}
	}
	return change{Text: "±0" + unit, Class: "flat"}
}

// barClass quantises a share of the largest row into one of 21 CSS classes
// (w0 … w20), since the Content-Security-Policy allows no inline styles.
func barClass(n, max uint64) string {
	if max == 0 {
		return "w0"
	}
	q := (n*20 + max/2) / max
	return "w" + strconv.FormatUint(min(q, 20), 10)
}

var funcs = template.FuncMap{
	"int":   formatInt,
	"num":   func(n int) string { return formatInt(uint64(max(n, 0))) },
	"lower": strings.ToLower,
}

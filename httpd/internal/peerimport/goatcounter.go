package peerimport

import (
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/httpd/internal/importline"
)

// GoatCounter's CSV export, format version 2: one row per hit under the
// header its export writes (arp242/goatcounter, exportcsv.go:
// ExportCSVVersion "2" prefixed to the first column, ExportCSVRow's
// fields in order; the referrer schemes h, o, g and c are ref.go's):
//
//	2Path,Title,Event,UserAgent,Browser,System,Session,Bot,Referrer,Referrer scheme,Screen size,Location,FirstVisit,Date
var goatColumns = []string{"2Path", "Title", "Event", "UserAgent", "Browser", "System", "Session", "Bot",
	"Referrer", "Referrer scheme", "Screen size", "Location", "FirstVisit", "Date"}

// GoatCounter reads a GoatCounter CSV export named file from r and calls
// fn with the import line of each hit, in file order; nil fn checks the
// file only. Rows GoatCounter marked as bots (Bot not 0) are skipped, as
// GoatCounter does not count them; skipped says how many. What each column
// becomes is in the README's "Moving in and out".
func GoatCounter(file string, r io.Reader, fn Func) (n, skipped int, err error) {
	t, err := newTable(file, r, goatColumns[:1], goatColumns[1:])
	if err != nil {
		return 0, 0, err
	}
	for _, c := range goatColumns {
		if _, ok := t.col[strings.ToLower(c)]; !ok {
			return 0, 0, &Error{File: file, Line: 1, Msg: "wrong header: no column " + c + " (want GoatCounter's export format 2: " + strings.Join(goatColumns, ",") + ")"}
		}
	}
	for {
		ok, err := t.next()
		if err != nil || !ok {
			return n, skipped, err
		}
		l, skip, err := goatLine(t)
		if err != nil {
			return n, skipped, err
		}
		if skip {
			skipped++
			continue
		}
		n++
		if fn != nil {
			if err := fn(l, t.line); err != nil {
				return n, skipped, err
			}
		}
	}
}

// goatLine converts the current row of t.
func goatLine(t *table) (l importline.Line, skip bool, err error) {
	at, perr := time.Parse(time.RFC3339Nano, strings.TrimSpace(t.get("Date")))
	if perr != nil {
		return l, false, t.bad("Date", "not an RFC 3339 date-time: "+strconv.Quote(cut(t.get("Date"))))
	}
	if b := strings.TrimSpace(t.get("Bot")); b != "" && b != "0" {
		if _, err := strconv.Atoi(b); err != nil {
			return l, false, t.bad("Bot", "not a number: "+strconv.Quote(cut(b)))
		}
		return l, true, nil
	}
	path := t.get("2Path")
	event := false
	switch e := strings.TrimSpace(t.get("Event")); e {
	case "true", "1":
		event = true
	case "false", "0", "":
	default:
		return l, false, t.bad("Event", "not true or false: "+strconv.Quote(cut(e)))
	}
	if path == "" {
		return l, false, t.bad("2Path", "empty")
	}
	l.Time = importline.Time(at)
	l.Visitor = t.get("Session")
	if l.Visitor == "" {
		l.Visitor = "goatcounter-row-" + strconv.Itoa(t.line) // a visitor of its own
	} else {
		l.Visitor = "goatcounter:" + l.Visitor
	}
	page := path
	if event {
		l.Event = &importline.Event{Name: path}
		page = "/"
	} else if !strings.HasPrefix(page, "/") {
		page = "/" + page
	}
	ref := t.get("Referrer")
	switch scheme := t.get("Referrer scheme"); {
	case ref == "":
	case scheme == "h" || scheme == "":
		l.Referrer = "https://" + strings.TrimPrefix(strings.TrimPrefix(ref, "https://"), "http://")
	default: // "c" campaign, "g" generated, "o" other: a source name
		page = addParam(page, "utm_source", ref)
	}
	l.Page = page
	if ua := t.get("UserAgent"); ua != "" {
		l.UserAgent = ua
	} else {
		l.Browser, l.BrowserVersion = nameVersion(t.get("Browser"))
		l.OS, l.OSVersion = nameVersion(t.get("System"))
	}
	if s := t.get("Screen size"); s != "" {
		parts := strings.Split(s, ",")
		if len(parts) < 2 || !digits(parts[0]) || !digits(parts[1]) {
			return l, false, t.bad("Screen size", "not WIDTH,HEIGHT[,SCALE]: "+strconv.Quote(cut(s)))
		}
		l.Screen = parts[0] + "x" + parts[1]
	}
	if loc := strings.TrimSpace(t.get("Location")); loc != "" {
		country, _, _ := strings.Cut(loc, "-")
		if len(country) != 2 {
			return l, false, t.bad("Location", "not an ISO 3166 code: "+strconv.Quote(cut(loc)))
		}
		l.Country = strings.ToUpper(country)
		if strings.Contains(loc, "-") {
			l.Region = strings.ToUpper(loc)
		}
	}
	return l, false, nil
}

// nameVersion splits "Chrome 120.0" into its name and version; a name
// without a trailing version comes back whole.
func nameVersion(s string) (name, version string) {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, ' '); i > 0 && s[i+1] >= '0' && s[i+1] <= '9' {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// addParam appends k=v to a page's query.
func addParam(page, k, v string) string {
	sep := "?"
	if strings.Contains(page, "?") {
		sep = "&"
	}
	return page + sep + url.QueryEscape(k) + "=" + url.QueryEscape(v)
}

func digits(s string) bool {
	if s == "" || len(s) > 6 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// cut shortens a value quoted in a message.
func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

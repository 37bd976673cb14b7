package peerimport

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/httpd/internal/importline"
)

// Umami's tables, as umami-software/umami's prisma/schema.prisma names
// their columns (models Session, @@map("session"), WebsiteEvent,
// @@map("website_event"), and EventData; db/clickhouse/schema.sql has the
// same names but subdivision1 for region, event_id and event_key),
// exported as CSV with a header (psql's \copy … csv header, or any SQL
// client). Only the columns below are read; others are ignored.
var (
	umamiSessionRequired = []string{"session_id"}
	umamiSessionOptional = []string{"browser", "os", "device", "screen", "language", "country", "region", "subdivision1", "city"}
	umamiEventRequired   = []string{"session_id", "created_at", "url_path", "event_type"}
	umamiEventOptional   = []string{"event_id", "url_query", "hostname", "referrer_domain", "referrer_path", "event_name"}
)

// MaxUmamiSessions bounds the sessions an Umami import holds in memory
// (about 200 bytes each): a larger dump is imported in parts.
const MaxUmamiSessions = 5_000_000

// UmamiSession is what a website_event row takes from its session.
type UmamiSession struct {
	Browser, OS, Device, Screen, Language, Country, Region, City string
}

// UmamiSessions reads Umami's session table named file from r, checking
// every row.
func UmamiSessions(file string, r io.Reader) (map[string]UmamiSession, error) {
	t, err := newTable(file, r, umamiSessionRequired, umamiSessionOptional)
	if err != nil {
		return nil, err
	}
	out := make(map[string]UmamiSession)
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		id := t.get("session_id")
		if id == "" {
			return nil, t.bad("session_id", "empty")
		}
		if len(out) == MaxUmamiSessions {
			return nil, &Error{File: file, Line: t.line, Msg: "more than " + strconv.Itoa(MaxUmamiSessions) + " sessions: import the dump in parts"}
		}
		region := t.get("region")
		if region == "" {
			region = t.get("subdivision1")
		}
		c := strings.ToUpper(strings.TrimSpace(t.get("country")))
		if c != "" && len(c) != 2 {
			return nil, t.bad("country", "not an ISO 3166-1 code: "+strconv.Quote(cut(c)))
		}
		out[id] = UmamiSession{
			Browser: umamiBrowser(t.get("browser")), OS: umamiOS(t.get("os")), Device: umamiDevice(t.get("device")),
			Screen: t.get("screen"), Language: t.get("language"), Country: c, Region: strings.ToUpper(region), City: t.get("city"),
		}
	}
}

// UmamiEvents reads Umami's website_event table named file from r and
// calls fn with the import line of each row (nil fn: checks only). A row's
// session must be in sessions; its session id is the visitor. props, from
// UmamiEventData (nil: none), gives a custom event's properties by its
// event_id.
func UmamiEvents(file string, r io.Reader, sessions map[string]UmamiSession, props map[string][][2]string, fn Func) (int, error) {
	t, err := newTable(file, r, umamiEventRequired, umamiEventOptional)
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		ok, err := t.next()
		if err != nil || !ok {
			return n, err
		}
		sid := t.get("session_id")
		s, known := sessions[sid]
		if !known {
			return n, t.bad("session_id", "no such session in the session table: "+strconv.Quote(cut(sid)))
		}
		at, ok := umamiTime(t.get("created_at"))
		if !ok {
			return n, t.bad("created_at", "not a date-time: "+strconv.Quote(cut(t.get("created_at"))))
		}
		l := importline.Line{Time: importline.Time(at), Visitor: "umami:" + sid,
			Browser: s.Browser, OS: s.OS, Device: s.Device, Screen: s.Screen, Language: s.Language,
			Country: s.Country, City: s.City}
		switch {
		case s.Country == "" || s.Region == "":
		case strings.HasPrefix(s.Region, s.Country+"-"):
			l.Region = s.Region // "US-CA"
		case !strings.Contains(s.Region, "-"):
			l.Region = s.Country + "-" + s.Region // "CA" of US
		}
		path := t.get("url_path")
		if !strings.HasPrefix(path, "/") {
			return n, t.bad("url_path", "not a path: "+strconv.Quote(cut(path)))
		}
		l.Page = path
		if q := strings.TrimPrefix(t.get("url_query"), "?"); q != "" {
			l.Page += "?" + q
		}
		if h := t.get("hostname"); h != "" {
			l.Page = "https://" + h + l.Page
		}
		if d := t.get("referrer_domain"); d != "" {
			l.Referrer = "https://" + d + t.get("referrer_path")
		}
		switch et := strings.TrimSpace(t.get("event_type")); et {
		case "1":
		case "2":
			name := t.get("event_name")
			if strings.TrimSpace(name) == "" {
				return n, t.bad("event_name", "empty on a custom event (event_type 2)")
			}
			l.Event = &importline.Event{Name: name}
			l.Props = propsJSON(props[t.get("event_id")])
		default:
			return n, t.bad("event_type", "not 1 (pageview) or 2 (custom event): "+strconv.Quote(cut(et)))
		}
		n++
		if fn != nil {
			if err := fn(l, t.line); err != nil {
				return n, err
			}
		}
	}
}

// umamiTime reads a created_at as PostgreSQL, MySQL or ClickHouse write
// it; without a zone it is UTC (Umami stores UTC).
func umamiTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// Umami's browser, OS and device names (from the detect-browser names it
// stores) as webstats names them; others are kept as sent.
var (
	umamiBrowsers = map[string]string{"chrome": "Chrome", "crios": "Chrome", "firefox": "Firefox", "fxios": "Firefox",
		"safari": "Safari", "ios": "Safari", "ios-webview": "Safari", "edge": "Edge", "edge-chromium": "Edge", "edge-ios": "Edge",
		"opera": "Opera", "samsung": "Samsung Internet", "yandexbrowser": "Yandex Browser", "android": "Android Browser"}
	umamiOSes = map[string]string{"windows 10": "Windows", "windows 7": "Windows", "windows 8.1": "Windows", "windows 8": "Windows",
		"windows xp": "Windows", "mac os": "macOS", "android os": "Android", "ios": "iOS", "linux": "Linux", "chrome os": "ChromeOS"}
)

func umamiBrowser(s string) string {
	if v, ok := umamiBrowsers[strings.ToLower(s)]; ok {
		return v
	}
	return s
}

func umamiOS(s string) string {
	if v, ok := umamiOSes[strings.ToLower(s)]; ok {
		return v
	}
	return s
}

// umamiDevice maps Umami's devices (desktop, laptop, mobile, tablet) to
// webstats' three; a laptop is a desktop.
func umamiDevice(s string) string {
	switch strings.ToLower(s) {
	case "desktop", "laptop":
		return "desktop"
	case "mobile":
		return "mobile"
	case "tablet":
		return "tablet"
	}
	return ""
}

// Umami's event_data table: a custom event's properties, one row each.
// PostgreSQL and MySQL name its columns website_event_id and data_key
// (prisma/schema.prisma, model EventData), ClickHouse event_id and
// event_key (db/clickhouse/schema.sql); either is read.
var umamiDataOptional = []string{"website_event_id", "event_id", "data_key", "event_key", "string_value", "number_value", "date_value"}

// UmamiEventData reads Umami's event_data table named file from r: the
// properties of each event by its id, at most MaxUmamiSessions in all.
func UmamiEventData(file string, r io.Reader) (map[string][][2]string, error) {
	t, err := newTable(file, r, nil, umamiDataOptional)
	if err != nil {
		return nil, err
	}
	idCol, keyCol := "website_event_id", "data_key"
	if _, ok := t.col[idCol]; !ok {
		idCol = "event_id"
	}
	if _, ok := t.col[keyCol]; !ok {
		keyCol = "event_key"
	}
	for _, c := range []string{idCol, keyCol} {
		if _, ok := t.col[c]; !ok {
			return nil, &Error{File: file, Line: 1, Msg: "wrong header: no column website_event_id or event_id, data_key or event_key"}
		}
	}
	out := make(map[string][][2]string)
	n := 0
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		id, key := t.get(idCol), t.get(keyCol)
		if id == "" || key == "" {
			return nil, t.bad(keyCol, "an empty event id or key")
		}
		if n++; n > MaxUmamiSessions {
			return nil, &Error{File: file, Line: t.line, Msg: "more than " + strconv.Itoa(MaxUmamiSessions) + " event properties: import the dump in parts"}
		}
		v := t.get("string_value")
		if num := t.get("number_value"); v == "" && num != "" {
			if strings.Contains(num, ".") {
				num = strings.TrimRight(strings.TrimRight(num, "0"), ".")
			}
			v = num
		}
		if v == "" {
			v = t.get("date_value")
		}
		out[id] = append(out[id], [2]string{key, v})
	}
}

// propsJSON encodes properties as an import line's props object, in order.
func propsJSON(kv [][2]string) json.RawMessage {
	if len(kv) == 0 {
		return nil
	}
	b := []byte{'{'}
	for i, p := range kv {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(p[0])
		v, _ := json.Marshal(p[1])
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}')
}

package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/webstats/webstats/engine"
)

// Import limits (SPEC §3.4).
const (
	maxImportEvents = 10000
	// maxImportText bounds each text field of an event, in characters.
	maxImportText = 2048
	// maxImportUnit is the longest revenue currency, in characters: the
	// engine keeps no longer unit (SPEC §2.4).
	maxImportUnit = 32
	// maxFuture is how far in the future an event's time may be.
	maxFuture = 24 * time.Hour
)

var errTooManyEvents = &httpError{code: http.StatusRequestEntityTooLarge,
	msg: "Too many events: at most " + strconv.Itoa(maxImportEvents) + " per request."}

// importEvents serves POST /websites/{id}/events: an atomic import of events
// (SPEC §3.4). Every event is checked first; one invalid event answers 422
// and nothing is counted. Valid events are sorted by time (stably) and
// tracked in one engine.Track call under the website, whatever their host.
func (s *Server) importEvents(w http.ResponseWriter, r *http.Request, c *call) error {
	start := time.Now()
	defer func() { s.metrics.imports.Observe(time.Since(start).Seconds()) }()
	id, err := websiteID(c)
	if err != nil {
		return err
	}
	if _, err := s.e.Owner(c.account.ID).Website(r.Context(), id); err != nil {
		return err
	}
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	if res, ok := s.e.KeyResult(r.Context(), id, key); ok {
		// A repeat: the first import's answer, whatever this
		// body holds. One sent while the first is being counted waits
		// here, before its body (up to 10 MiB) is read.
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, dataBody{Data: importResult(res), Status: http.StatusOK})
		return nil
	}
	release, err := s.acquireImport(r.Context())
	if err != nil {
		return err
	}
	defer release()
	// The days the previous imports wrote leave memory before this body
	// is read, under a memory budget (SPEC §13).
	s.e.MakeRoom()
	if b, ok := r.Body.(*requestBody); ok {
		b.restartDeadline() // the wait for the slot and the room is not the client's time
	}
	hits, err := parseSorted(r.Body, id, s.now())
	if err != nil {
		// Refused before the body's end (a 422 or 413 found as it was
		// read): the rest is read first, as the whole body was before it
		// was read an event at a time, so that a client still sending
		// gets the answer rather than a reset connection, and a body that
		// fails to read (over the size limit, past its deadline) is
		// answered so, as before. Bounded by the route's size limit and
		// the body's deadline; a body that failed to read fails again at
		// once.
		if _, rerr := io.Copy(io.Discard, r.Body); rerr != nil {
			return rerr
		}
		return err
	}
	res, err := s.e.Import(r.Context(), key, hits)
	if kf := (*engine.KeysFullError)(nil); errors.As(err, &kf) {
		tooMany(w, r, kf.RetryAt.Sub(s.now()))
		return nil
	}
	if err != nil {
		return err
	}
	if res.Repeated {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusOK, dataBody{Data: importResult(res), Status: http.StatusOK})
	return nil
}

// idempotencyKey returns the request's Idempotency-Key (SPEC §3.4
// "Retries"): "" without the header; one that is empty, sent twice,
// longer than 128 or not printable ASCII is a 422 under its name.
func idempotencyKey(r *http.Request) (key string, err error) {
	vals, ok := r.Header["Idempotency-Key"]
	if !ok {
		return "", nil
	}
	if len(vals) != 1 || !engine.ValidKey(vals[0]) {
		return "", fieldErrors{{Field: "Idempotency-Key",
			Msg: "The Idempotency-Key header must be 1 to " + strconv.Itoa(engine.MaxKeyLen) + " printable ASCII characters."}}
	}
	return vals[0], nil
}

// importBody is the answer of an import.
type importBody struct {
	Accepted int          `json:"accepted"`
	Dropped  droppedCount `json:"dropped"`
}

// droppedCount lists bot and excluded_ip always, then the engine's other
// reasons that are not zero, so that accepted + dropped = events.
type droppedCount []struct {
	reason string
	n      int
}

// MarshalJSON writes the counts as an object, in order.
func (d droppedCount) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, c := range d {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, c.reason)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(c.n), 10)
	}
	return append(b, '}'), nil
}

// importReasons names the engine's drop reasons in import answers.
var importReasons = []struct {
	r    engine.DropReason
	name string
}{
	{engine.DropBot, "bot"},
	{engine.DropExcludedIP, "excluded_ip"},
	{engine.DropUnknownSite, "unknown_site"},
	{engine.DropInvalid, "invalid"},
	{engine.DropPrefetch, "prefetch"},
}

func importResult(res engine.TrackResult) importBody {
	out := importBody{Accepted: res.Accepted}
	for i, ir := range importReasons {
		n := 0
		if int(ir.r) < len(res.Dropped) {
			n = res.Dropped[ir.r]
		}
		if i < 2 || n > 0 {
			out.Dropped = append(out.Dropped, struct {
				reason string
				n      int
			}{ir.name, n})
		}
	}
	return out
}

// parseImport reads an import body (a JSON array, or NDJSON: one object
// per non-blank line) an event at a time (importread.go) and checks each.
// It returns the hits of website, or a 413 (too many events), a 422
// (every invalid field, named events.N.field with N the 0-based index of
// the event), or the body's read error.
func parseImport(body io.Reader, website uint32, now time.Time) ([]engine.Hit, error) {
	evs, err := newEventReader(body)
	if err != nil {
		return nil, err
	}
	var (
		hits  []engine.Hit
		fe    fieldErrors
		chunk []json.RawMessage
	)
	for {
		if chunk, err = evs.next(chunk[:0], importChunk); err != nil {
			return nil, err
		}
		if len(chunk) == 0 {
			break
		}
		from := len(hits)
		hits = slices.Grow(hits, len(chunk))[:from+len(chunk)]
		checkEvents(chunk, hits[from:], from, website, now, &fe)
	}
	if evs.n == 0 {
		fe.add("events", "The events field is required.")
	}
	if len(fe) > 0 {
		return nil, fe
	}
	return hits, nil
}

// checkEvents checks raws, the events from the first-th on, into hits
// (as many) and adds the messages of their invalid fields to fe.
// Decoding is most of an import's time: many events are decoded in parts
// at once, one per processor, and their messages joined in event order.
func checkEvents(raws []json.RawMessage, hits []engine.Hit, first int, website uint32, now time.Time, fe *fieldErrors) {
	check := func(from, to int, fe *fieldErrors) {
		for i := from; i < to; i++ {
			checkEvent(raws[i], "events."+strconv.Itoa(first+i), now, &hits[i], fe)
			hits[i].Website = website
		}
	}
	parts := min(runtime.GOMAXPROCS(0), len(raws)/importPart)
	if parts <= 1 {
		check(0, len(raws), fe)
		return
	}
	errs := make([]fieldErrors, parts)
	panics := make([]any, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			// A panic is the request's, which the server turns into a
			// 500, as on the request's own goroutine.
			defer func() { panics[p] = recover() }()
			check(p*len(raws)/parts, (p+1)*len(raws)/parts, &errs[p])
		})
	}
	wg.Wait()
	for _, v := range panics {
		if v != nil {
			panic(v)
		}
	}
	for _, e := range errs {
		*fe = append(*fe, e...)
	}
}

// parseSorted is parseImport with the hits sorted by time (stably): the
// order an import counts them in.
func parseSorted(body io.Reader, website uint32, now time.Time) ([]engine.Hit, error) {
	hits, err := parseImport(body, website, now)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(hits, func(a, b engine.Hit) int { return a.Time.Compare(b.Time) })
	return hits, nil
}

// importPart is the fewest events an import decodes in a part of its own.
const importPart = 500

// checkEvent checks one raw event, named at in messages, into h, and adds
// the messages of its invalid fields to fe.
func checkEvent(raw json.RawMessage, at string, now time.Time, h *engine.Hit, fe *fieldErrors) {
	obj, ok := flatObject(raw)
	if !ok {
		obj = nil
		ok = json.Unmarshal(raw, &obj) == nil
	}
	if !ok || obj == nil {
		msg := "The " + at + " must be a JSON object."
		if !json.Valid(raw) {
			msg = "The " + at + " must be valid JSON."
		}
		fe.add(at, msg)
		return
	}
	// (A field's name is put together only for its message: eight
	// concatenations an event were a tenth of an import's check.)
	str := func(name string, required bool) (string, bool) {
		v, present, ok := jsonString(obj[name])
		switch {
		case !ok:
			field := at + "." + name
			fe.add(field, "The "+field+" must be a string.")
			return "", false
		case !present || v == "":
			if required {
				field := at + "." + name
				fe.add(field, "The "+field+" field is required.")
			}
			return "", false
		case utf8.RuneCountInString(v) > maxImportText:
			field := at + "." + name
			fe.add(field, "The "+field+" must not be greater than "+strconv.Itoa(maxImportText)+" characters.")
			return "", false
		}
		return v, true
	}

	if v, ok := str("time", true); ok {
		t, err := time.Parse(time.RFC3339Nano, v)
		switch {
		case err != nil:
			fe.add(at+".time", "The "+at+".time must be a valid RFC 3339 date-time.")
		case t.After(now.Add(maxFuture)):
			fe.add(at+".time", "The "+at+".time must not be more than one day in the future.")
		default:
			h.Time = t
		}
	}
	if v, ok := str("page", true); ok {
		if validPage(v) {
			h.URL = v
		} else {
			fe.add(at+".page", "The "+at+".page must be a URL or a path starting with /.")
		}
	}
	h.Referrer, _ = str("referrer", false)
	h.UserAgent, _ = str("user_agent", false)
	h.Resolution, _ = str("screen_resolution", false)
	h.Language, _ = str("language", false)
	h.Visitor, _ = str("visitor", false)
	ip, hasIP := str("ip", false)
	if hasIP {
		a, err := netip.ParseAddr(ip)
		if err != nil || a.Zone() != "" {
			fe.add(at+".ip", "The "+at+".ip must be a valid IP address.")
		} else {
			h.IP = a.Unmap()
		}
	}
	vis, visSent, visOK := jsonString(obj["visitor"])
	ipv, ipSent, ipOK := jsonString(obj["ip"])
	if visOK && ipOK && (!visSent || vis == "") && (!ipSent || ipv == "") {
		fe.add(at+".visitor", "The "+at+".visitor field is required when "+at+".ip is not present.")
	}
	if raw, ok := obj["event"]; ok && !isNull(raw) {
		checkCustomEvent(raw, at+".event", h, fe)
	}
	checkPlausibleFields(obj, at, h, fe)
	checkGiven(obj, at, h, fe)
}

// checkPlausibleFields checks what a line may carry of the Plausible form
// (SPEC §3.4), as top-level keys: props, h (hash-based routing), and on
// a line with an event,
// revenue (its value and unit, as a live hit's revenue gives them) and
// interactive. Whatever a live /api/event records, an import records; but
// where the live endpoint drops a malformed value silently, as Plausible
// does, an import names it (422) and counts nothing.
func checkPlausibleFields(obj map[string]json.RawMessage, at string, h *engine.Hit, fe *fieldErrors) {
	if raw, ok := obj["props"]; ok && !isNull(raw) {
		h.Props = checkProps(raw, at+".props", fe)
	}
	if raw, ok := obj["h"]; ok && !isNull(raw) {
		// Hash-based routing, as the live form's "h": 1 keeps the page's
		// fragment (SPEC §2.4).
		// Read as the live form reads it (hashMode): a JSON number, 1.0
		// being 1.
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
		switch {
		case err != nil || raw[0] == '"' || (f != 0 && f != 1):
			fe.add(at+".h", "The "+at+".h field must be 0 or 1.")
		case f == 1:
			h.HashMode = true
		}
	}
	ev := h.Event
	if raw, ok := obj["revenue"]; ok && !isNull(raw) {
		field := at + ".revenue"
		rev, ok := checkRevenue(raw, field, fe)
		switch {
		case !ok:
		case ev == nil:
			fe.add(field, "The "+field+" field is only allowed with "+at+".event.")
		case ev.Value != nil || ev.Unit != "":
			fe.add(field, "The "+field+" field cannot be combined with "+at+".event.value or unit.")
		default:
			ev.Value, ev.Unit = rev.Amount, rev.Currency
		}
	}
	if raw, ok := obj["interactive"]; ok && !isNull(raw) {
		field := at + ".interactive"
		switch string(bytes.TrimSpace(raw)) {
		case "true":
		case "false":
			if ev == nil {
				fe.add(field, "The "+field+" field is only allowed with "+at+".event.")
			} else {
				ev.NonInteractive = true
			}
		default:
			fe.add(field, "The "+field+" field must be true or false.")
		}
	}
}

// checkProps checks an import line's props: an object whose values are
// strings, numbers or booleans, read as the live endpoint reads them
// (parseProps). The engine keeps them within SPEC §2.4's bounds.
func checkProps(raw json.RawMessage, at string, fe *fieldErrors) []engine.Prop {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		fe.add(at, "The "+at+" must be an object.")
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) { // messages in a stable order
		if v := bytes.TrimSpace(m[k]); len(v) == 0 || v[0] == '{' || v[0] == '[' || string(v) == "null" {
			field := at + "." + k
			fe.add(field, "The "+field+" must be a string, a number or a boolean.")
		}
	}
	return parseProps(raw)
}

// checkRevenue checks an import line's revenue: {"amount": number or
// numeric string, "currency": string}, both required.
func checkRevenue(raw json.RawMessage, at string, fe *fieldErrors) (revenue, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		fe.add(at, "The "+at+" must be an object with amount and currency.")
		return revenue{}, false
	}
	ok := true
	amount := bytes.TrimSpace(obj["amount"])
	switch {
	case len(amount) == 0 || isNull(amount):
		fe.add(at+".amount", "The "+at+".amount field is required.")
		ok = false
	case amount[0] != '"' && amount[0] != '-' && (amount[0] < '0' || amount[0] > '9'),
		len(amount) > maxImportText:
		fe.add(at+".amount", "The "+at+".amount must be a number or a numeric string.")
		ok = false
	case !positiveAmount(amount):
		// NaN, Infinity, 1e999, 0 or less: a live hit's revenue would
		// keep no value (SPEC §2.4), so an import says so.
		fe.add(at+".amount", "The "+at+".amount must be a finite number greater than 0.")
		ok = false
	}
	cur, present, isStr := jsonString(obj["currency"])
	switch {
	case !isStr:
		fe.add(at+".currency", "The "+at+".currency must be a string.")
		ok = false
	case !present || cur == "":
		fe.add(at+".currency", "The "+at+".currency field is required.")
		ok = false
	case utf8.RuneCountInString(cur) > maxImportUnit:
		// The engine keeps no longer unit (SPEC §2.4).
		fe.add(at+".currency", "The "+at+".currency must not be greater than "+strconv.Itoa(maxImportUnit)+" characters.")
		ok = false
	case strings.IndexFunc(cur, unicode.IsControl) >= 0:
		fe.add(at+".currency", "The "+at+".currency must not contain control characters.")
		ok = false
	}
	return revenue{Amount: amount, Currency: cur}, ok
}

// positiveAmount reports whether a revenue amount, a JSON number or a
// numeric string, is a finite number greater than 0.
func positiveAmount(amount json.RawMessage) bool {
	text := string(amount)
	if amount[0] == '"' {
		if json.Unmarshal(amount, &text) != nil {
			return false
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	return err == nil && f > 0 && !math.IsInf(f, 0)
}

// checkCustomEvent checks the event object of an event.
func checkCustomEvent(raw json.RawMessage, at string, h *engine.Hit, fe *fieldErrors) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		fe.add(at, "The "+at+" must be an object.")
		return
	}
	ev := &engine.Event{}
	name, present, ok := jsonString(obj["name"])
	switch {
	case !ok:
		fe.add(at+".name", "The "+at+".name must be a string.")
	case !present || strings.TrimSpace(name) == "":
		// A name of colons is a name (SPEC §2.4 keeps it as sent).
		fe.add(at+".name", "The "+at+".name field is required.")
	case utf8.RuneCountInString(name) > maxImportText:
		fe.add(at+".name", "The "+at+".name must not be greater than "+strconv.Itoa(maxImportText)+" characters.")
	default:
		ev.Name = name
	}
	if v, ok := obj["value"]; ok && !isNull(v) {
		v = bytes.TrimSpace(v)
		if v[0] == '"' || v[0] == '-' || '0' <= v[0] && v[0] <= '9' {
			if len(v) > maxImportText {
				fe.add(at+".value", "The "+at+".value must not be greater than "+strconv.Itoa(maxImportText)+" characters.")
			} else {
				ev.Value = v
			}
		} else {
			fe.add(at+".value", "The "+at+".value must be a number or a string.")
		}
	}
	unit, _, ok := jsonString(obj["unit"])
	if !ok {
		fe.add(at+".unit", "The "+at+".unit must be a string.")
	} else if utf8.RuneCountInString(unit) > maxImportText {
		fe.add(at+".unit", "The "+at+".unit must not be greater than "+strconv.Itoa(maxImportText)+" characters.")
	} else {
		ev.Unit = unit
	}
	h.Event = ev
}

// jsonString decodes an optional JSON string: present is false for an
// absent value or null; ok is false for another type.
func jsonString(raw json.RawMessage) (s string, present, ok bool) {
	if raw == nil || isNull(raw) {
		return "", false, true
	}
	if s, ok := plainString(raw); ok {
		return s, true, true
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, false
	}
	return s, true, true
}

// flatObject decodes raw when it is a JSON object whose keys and string
// values are plain (see plainString) and whose other values are numbers,
// true, false or null, the common event, as json.Unmarshal would into a
// map of raw values (the last of equal keys wins), without its validation
// pass and reflection. The values are slices of raw. ok is false for
// anything else (a nested object or array, an escape, invalid JSON), which
// json.Unmarshal then decodes.
func flatObject(raw []byte) (obj map[string]json.RawMessage, ok bool) {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, false
	}
	obj = make(map[string]json.RawMessage, 8)
	if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == '}' {
		if skipSpace(raw, i+1) != len(raw) {
			return nil, false // trailing bytes
		}
		return obj, true
	}
	for {
		key, end, ok := plainAt(raw, i)
		if !ok {
			return nil, false
		}
		if i = skipSpace(raw, end); i == len(raw) || raw[i] != ':' {
			return nil, false
		}
		start := skipSpace(raw, i+1)
		if start == len(raw) {
			return nil, false
		}
		switch c := raw[start]; {
		case c == '"':
			if _, end, ok = plainAt(raw, start); !ok {
				return nil, false
			}
		case c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
			end = start
			for end < len(raw) && raw[end] != ',' && raw[end] != '}' && !isSpace(raw[end]) {
				end++
			}
			if !json.Valid(raw[start:end]) {
				return nil, false
			}
		default:
			return nil, false
		}
		obj[string(key)] = raw[start:end]
		switch i = skipSpace(raw, end); {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			if skipSpace(raw, i+1) != len(raw) {
				return nil, false // trailing bytes
			}
			return obj, true
		default:
			return nil, false
		}
	}
}

// plainAt reads the plain string (see plainString) that starts at raw[i]:
// its content and the index after its closing quote.
func plainAt(raw []byte, i int) (body []byte, end int, ok bool) {
	if i >= len(raw) || raw[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			body = raw[i+1 : j]
			return body, j + 1, utf8.Valid(body)
		case c < 0x20 || c == '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

// plainString decodes raw when it is a JSON string without escapes,
// control characters or invalid UTF-8, the common case, as json.Unmarshal
// would, without its validation pass and reflection (a third of an
// import's time was spent decoding strings). ok is false for anything
// else, which json.Unmarshal then decodes.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// validPage reports whether page is a path ("/a?b=1") or an absolute http(s)
// URL with a host, as valid UTF-8 without control characters.
func validPage(page string) bool {
	if !utf8.ValidString(page) || strings.ContainsFunc(page, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return false
	}
	if page[0] == '/' {
		return true
	}
	u, err := url.Parse(page)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return false
	}
	return strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")
}

package httpd

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/webstats/webstats/engine"
)

// Tracking limits (SPEC §4).
const (
	// maxTrackBody bounds the body of POST /api/event; beyond it the answer
	// is 413.
	maxTrackBody = 16 << 10
	// maxTrackURL bounds the page (phpAnalytics) or url (Plausible), in
	// bytes; beyond it the answer is 400.
	maxTrackURL = 2 << 10
)

// The 400 answers of the tracking endpoint (malformed JSON is errBadJSON).
var (
	errTrackNoPage = &httpError{http.StatusBadRequest, "Bad request: the page (or url) is required."}
	errTrackLong   = &httpError{http.StatusBadRequest, "Bad request: the page (or url) is longer than 2048 bytes."}
	errTrackBadHit = &httpError{http.StatusBadRequest, "Bad request: the page must be an http(s) URL and an event needs a name."}
)

// trackAccepted is the body of every 202: Plausible's trackers and clients
// expect the text "ok".
var trackAccepted = []byte("ok")

// trackBody is the body of POST /api/event in either of its forms (SPEC §4).
// Where Plausible has a short and a long key, the short one wins, as in
// Plausible. Fields that webstats does not count (Plausible's "w", "v",
// …) are not declared, so any JSON value is accepted there.
type trackBody struct {
	// phpAnalytics form.
	Page             *string    `json:"page"`
	Referrer         *string    `json:"referrer"` // both forms
	ScreenResolution *string    `json:"screen_resolution"`
	Event            *eventBody `json:"event"`

	// Plausible Events API form.
	N      *string `json:"n"`
	Name   *string `json:"name"`
	U      *string `json:"u"`
	URL    *string `json:"url"`
	D      *string `json:"d"`
	Domain *string `json:"domain"`
	R      *string `json:"r"`
	// Revenue ("$" or "revenue") is {"amount": number|string, "currency":
	// string}, or that object JSON-encoded in a string, as Plausible accepts.
	Dollar  json.RawMessage `json:"$"`
	Revenue json.RawMessage `json:"revenue"`
	// Props ("p" or "props") are custom properties: an object of strings,
	// numbers or booleans, or that object JSON-encoded in a string.
	P     json.RawMessage `json:"p"`
	Props json.RawMessage `json:"props"`
	// Interactive ("i" or "interactive") false keeps an event from
	// ending a bounce.
	I           *bool `json:"i"`
	Interactive *bool `json:"interactive"`
	// Hash-based routing ("h" or "hashMode"): the number 1 keeps the URL's
	// fragment in the page (SPEC §2.4).
	H        json.RawMessage `json:"h"`
	HashMode json.RawMessage `json:"hashMode"`
	// Engagement of an "engagement" event: scroll depth in percent and
	// engaged time in milliseconds.
	SD *int64 `json:"sd"`
	E  *int64 `json:"e"`
}

// eventBody is the event of the phpAnalytics form.
type eventBody struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"` // a number or a string; the engine normalises it
	Unit  string          `json:"unit"`
}

// revenue is Plausible's revenue object.
type revenue struct {
	Amount   json.RawMessage `json:"amount"`
	Currency string          `json:"currency"`
}

// hit turns the body into an engine hit (without the request's headers).
// ignored names a Plausible event that webstats does not count ("engagement"
// or the legacy "pageleave", SPEC §2.4), else it is "".
func (b *trackBody) hit() (h engine.Hit, ignored string, err error) {
	if b.Page != nil || (b.U == nil && b.URL == nil) {
		// phpAnalytics form.
		h.URL = deref(b.Page)
		h.Referrer = deref(b.Referrer)
		h.Resolution = deref(b.ScreenResolution)
		if b.Event != nil {
			h.Event = &engine.Event{Name: b.Event.Name, Value: b.Event.Value, Unit: b.Event.Unit}
		}
	} else {
		// Plausible form: no screen height, so no resolution.
		h.URL = first(b.U, b.URL)
		h.Referrer = first(b.R, b.Referrer)
		h.Domain = first(b.D, b.Domain)
		switch name := first(b.N, b.Name); name {
		case "pageview":
		case "pageleave":
			// Older trackers' page leave: not a hit, and no engagement.
			ignored = name
		case "engagement":
			// Plausible's tracker (v2) sends engagement when a page is
			// left: counted only in time_on_page and scroll_depth (SPEC
			// §2.4, §10.2).
			ignored = name
			h.Engagement = &engine.Engagement{ScrollDepth: -1}
			if b.E != nil {
				h.Engagement.EngagedMs = *b.E
			}
			if b.SD != nil && *b.SD >= 0 && *b.SD <= 100 {
				h.Engagement.ScrollDepth = int(*b.SD)
			}
		default:
			h.Event = &engine.Event{Name: name}
			if rev, ok := parseRevenue(firstRaw(b.Dollar, b.Revenue)); ok {
				h.Event.Value, h.Event.Unit = rev.Amount, rev.Currency
			}
			if i := b.I; i != nil || b.Interactive != nil {
				if i == nil {
					i = b.Interactive
				}
				h.Event.NonInteractive = !*i
			}
		}
		h.Props = parseProps(firstRaw(b.P, b.Props))
		h.HashMode = hashMode(firstRaw(b.H, b.HashMode))
	}
	switch {
	case h.URL == "":
		return h, ignored, errTrackNoPage
	case len(h.URL) > maxTrackURL:
		return h, ignored, errTrackLong
	case !httpURL(h.URL):
		return h, ignored, errTrackBadHit
	case h.Event != nil && strings.TrimSpace(h.Event.Name) == "":
		return h, ignored, errTrackBadHit
	}
	return h, ignored, nil
}

// parseProps reads Plausible's props: an object whose values are strings,
// numbers or booleans (others are dropped, as Plausible does), or that
// object JSON-encoded in a string. The engine bounds their number and size.
func parseProps(raw json.RawMessage) []engine.Prop {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		raw = json.RawMessage(s)
	}
	var m map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	props := make([]engine.Prop, 0, min(len(m), engine.MaxProps))
	for k, v := range m {
		var val string
		switch {
		case len(v) > 0 && v[0] == '"':
			if json.Unmarshal(v, &val) != nil {
				continue
			}
		case string(v) == "true" || string(v) == "false" || len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9'):
			val = string(v)
		default:
			continue
		}
		props = append(props, engine.Prop{Key: k, Value: val})
	}
	// Map order is random: sorted, so that which props are kept over the
	// bound does not depend on it.
	slices.SortFunc(props, func(a, b engine.Prop) int { return strings.Compare(a.Key, b.Key) })
	return props
}

// hashMode reports whether Plausible's "h" is on: the JSON number 1
// (plausible/analytics lib/plausible/ingestion/request.ex keeps the
// fragment when hash_mode == 1, Elixir's == taking 1.0 too); anything else,
// true and "1" included, is off there, and so here.
func hashMode(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] < '0' || raw[0] > '9' {
		return false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return err == nil && f == 1
}

// parseRevenue reads Plausible's revenue: an object, or an object encoded as
// a JSON string. Anything else is ignored, as Plausible does.
func parseRevenue(raw json.RawMessage) (revenue, bool) {
	var rev revenue
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return rev, false
		}
		raw = json.RawMessage(s)
	}
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &rev) != nil {
		return revenue{}, false
	}
	return rev, true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// first returns the first non-nil string, or "".
func first(a, b *string) string {
	if a != nil {
		return *a
	}
	return deref(b)
}

func firstRaw(a, b json.RawMessage) json.RawMessage {
	if len(a) > 0 && string(a) != "null" {
		return a
	}
	return b
}

// httpURL reports whether s is an absolute http(s) URL with a host: the cheap
// check made before the engine parses the page. The engine decides the rest
// (its DropInvalid also answers 400).
func httpURL(s string) bool {
	var rest string
	switch {
	case len(s) > 7 && strings.EqualFold(s[:7], "http://"):
		rest = s[7:]
	case len(s) > 8 && strings.EqualFold(s[:8], "https://"):
		rest = s[8:]
	default:
		return false
	}
	return rest != "" && rest[0] != '/' && rest[0] != '?' && rest[0] != '#'
}

// isPrefetch reports whether the request is a browser prefetch or prerender
// (Sec-Purpose: prefetch[;prerender], Purpose: prefetch, X-Purpose:
// prefetch, X-Moz: prefetch).
func isPrefetch(h http.Header) bool {
	for _, k := range []string{"Sec-Purpose", "Purpose", "X-Purpose", "X-Moz"} {
		for _, v := range h.Values(k) {
			for tok := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
				if strings.EqualFold(tok, "prefetch") {
					return true
				}
			}
		}
	}
	return false
}

// trackCORS lets any site post events and read the answer's headers.
func trackCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "X-Webstats-Dropped, X-Webstats-Ignored, X-Plausible-Dropped, X-Request-Id")
}

// trackPreflight answers OPTIONS /api/event: any origin, POST, and the
// Content-Type header (application/json is not a CORS-safelisted type; the
// tracker sends text/plain and needs no preflight).
func trackPreflight(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	h := w.Header()
	trackCORS(h)
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type")
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

// trackEvent serves POST /api/event (SPEC §4): no authentication; a JSON
// body of at most 16 KiB in the phpAnalytics or the Plausible form, whatever
// its Content-Type. The hit is decoded and checked before anything else;
// then one engine.Track call decides the drops and makes the hit durable.
//
// Answers: 202 "ok" once Track returned; a dropped hit also answers 202,
// with X-Webstats-Dropped naming the reason (and X-Plausible-Dropped: 1, as
// Plausible does). 400 for malformed JSON, a missing page, a page over 2 KiB,
// a page that is not an http(s) URL and an event without a name (the last two
// also when the engine drops the hit as invalid, with X-Webstats-Dropped:
// invalid); 413 for a body over 16 KiB. A Plausible "engagement" or
// "pageleave" event is answered 202 with X-Webstats-Ignored naming it and is
// not tracked.
func (s *Server) trackEvent(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	trackCORS(w.Header())
	if r.ContentLength > maxTrackBody {
		writeError(w, r, errTooLarge) // before reading anything
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, r, err) // 400, 408 or 413: see requestBody
		return
	}
	var body trackBody
	if err := json.Unmarshal(raw, &body); err != nil {
		writeError(w, r, errBadJSON)
		return
	}
	hit, ignored, err := body.hit()
	if err != nil {
		writeError(w, r, err)
		return
	}
	if ignored != "" {
		w.Header().Set("X-Webstats-Ignored", ignored)
		if hit.Engagement == nil {
			writeAccepted(w)
			return
		}
	}
	hit.IP = s.clientIP(r)
	hit.UserAgent = r.Header.Get("User-Agent")
	hit.Language = r.Header.Get("Accept-Language")
	hit.SecCHUA = r.Header.Get("Sec-CH-UA")
	hit.Live = true
	hit.Prefetch = isPrefetch(r.Header)

	res, err := s.e.Track(r.Context(), hit)
	if err != nil {
		writeError(w, r, err)
		return
	}
	switch reason := res.Reasons[0]; reason {
	case engine.DropNone:
	case engine.DropInvalid:
		w.Header().Set("X-Webstats-Dropped", reason.String())
		writeError(w, r, errTrackBadHit)
		return
	default:
		w.Header().Set("X-Webstats-Dropped", reason.String())
		w.Header().Set("X-Plausible-Dropped", "1")
	}
	writeAccepted(w)
}

// writeAccepted answers 202 "ok".
func writeAccepted(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write(trackAccepted)
}

// trackRoutes registers the tracking endpoint and the tracker script.
func (s *Server) trackRoutes() {
	s.handle(http.MethodPost, "/api/event", maxTrackBody, s.trackEvent)
	s.handle(http.MethodOptions, "/api/event", maxTrackBody, trackPreflight)
	s.handle(http.MethodGet, "/js/script.js", maxBody, s.serveTracker)
	s.handle(http.MethodHead, "/js/script.js", maxBody, s.serveTracker)
}

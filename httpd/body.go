package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

// websiteFields are the body fields of a website create or update, and where
// each goes in an engine.WebsiteInput.
var websiteFields = []struct {
	name string
	ptr  func(in *engine.WebsiteInput) **string
	// nullClears: JSON null sends "" (clears the field) instead of nothing.
	nullClears bool
}{
	{"domain", func(in *engine.WebsiteInput) **string { return &in.Domain }, false},
	{"privacy", func(in *engine.WebsiteInput) **string { return &in.Privacy }, false},
	{"password", func(in *engine.WebsiteInput) **string { return &in.Password }, false},
	{"email", func(in *engine.WebsiteInput) **string { return &in.Email }, false},
	{"exclude_bots", func(in *engine.WebsiteInput) **string { return &in.ExcludeBots }, false},
	{"exclude_params", func(in *engine.WebsiteInput) **string { return &in.ExcludeParams }, true},
	{"exclude_ips", func(in *engine.WebsiteInput) **string { return &in.ExcludeIPs }, true},
	{"timezone", func(in *engine.WebsiteInput) **string { return &in.Timezone }, false},
}

// decodeWebsiteInput reads the fields of a website request: from the body
// (JSON, form-urlencoded or multipart) and, for the fields the body lacks,
// from the query string. The engine validates the values; this checks only
// their JSON types.
func decodeWebsiteInput(r *http.Request) (engine.WebsiteInput, error) {
	var in engine.WebsiteInput
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return in, err
	}
	set := func(name string, v *string) {
		for _, f := range websiteFields {
			if f.name == name {
				*f.ptr(&in) = v
			}
		}
	}
	sent := make(map[string]bool)
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	trimmed := bytes.TrimSpace(body)
	switch {
	case len(trimmed) == 0:
	case mt == "multipart/form-data":
		vals, err := multipartValues(body, params["boundary"])
		if err != nil {
			return in, err
		}
		for _, f := range websiteFields {
			if v, ok := vals[f.name]; ok {
				set(f.name, &v)
				sent[f.name] = true
			}
		}
	case mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		(mt != "application/x-www-form-urlencoded" && trimmed[0] == '{'):
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &obj); err != nil {
			return in, errBadJSON
		}
		var fe fieldErrors
		for _, f := range websiteFields {
			raw, ok := obj[f.name]
			if !ok {
				continue
			}
			sent[f.name] = true
			v, ok := jsonText(raw, f.nullClears)
			if f.name == "domain" && v != nil && !isJSONString(raw) {
				ok = false // a number is no domain: 1e999 must not create "1e999"
			}
			if !ok {
				fe.add(f.name, "The "+strings.ReplaceAll(f.name, "_", " ")+" must be a string.")
				continue
			}
			set(f.name, v)
		}
		if len(fe) > 0 {
			return in, fe
		}
	default:
		q := parseQuery(string(body))
		for _, f := range websiteFields {
			if q.has(f.name) {
				v := q.get(f.name)
				set(f.name, &v)
				sent[f.name] = true
			}
		}
	}
	if r.URL.RawQuery != "" {
		q := parseQuery(r.URL.RawQuery)
		for _, f := range websiteFields {
			if !sent[f.name] && q.has(f.name) {
				v := q.get(f.name)
				set(f.name, &v)
			}
		}
	}
	return in, nil
}

// jsonText turns a JSON value into the text the engine takes: a string as
// is, a number in decimal (an integral one without fraction), true "1",
// false "0". null is nil ("not sent"), or "" when nullClears. ok is false
// for an array or an object.
func jsonText(raw json.RawMessage, nullClears bool) (v *string, ok bool) {
	raw = bytes.TrimSpace(raw)
	var s string
	switch {
	case len(raw) == 0:
		return nil, false
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false
		}
	case string(raw) == "null":
		if nullClears {
			return &s, true
		}
		return nil, true
	case string(raw) == "true":
		s = "1"
	case string(raw) == "false":
		s = "0"
	case raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9':
		s = decimal(string(raw))
	default:
		return nil, false
	}
	return &s, true
}

// isJSONString reports whether raw is a JSON string.
func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

// decimal writes a JSON number in decimal without exponent: "1.0" and "1e0"
// are "1", "2.50" is "2.5". A number beyond float64 stays as sent.
func decimal(num string) string {
	if strings.IndexAny(num, ".eE") < 0 {
		return num
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return num
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// multipartValues reads the non-file fields of a multipart body (the first
// value of each).
func multipartValues(body []byte, boundary string) (map[string]string, error) {
	if boundary == "" {
		return nil, &httpError{code: http.StatusBadRequest, msg: "The multipart body has no boundary."}
	}
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	vals := make(map[string]string)
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			return vals, nil
		}
		if err != nil {
			return nil, &httpError{code: http.StatusBadRequest, msg: "The multipart body is malformed."}
		}
		name := p.FormName()
		if name == "" || p.FileName() != "" {
			continue
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, &httpError{code: http.StatusBadRequest, msg: "The multipart body is malformed."}
		}
		if _, ok := vals[name]; !ok {
			vals[name] = string(b)
		}
	}
}

// The answers to a body that cannot be read.
var (
	errBodyBroken  = &httpError{http.StatusBadRequest, "The request body is incomplete or malformed."}
	errBodyTimeout = &httpError{http.StatusRequestTimeout, "The request body was not received in time."}
)

// requestBody is a request body as every handler registered with
// Server.handle reads it. Its errors are answers: beyond the route's limit
// *http.MaxBytesError (413; at the first Read when Content-Length says so
// already, without waiting for the bytes), past the read deadline
// errBodyTimeout (408), and errBodyBroken (400) for a body cut short or
// with malformed chunks. Once the body is read to its end, net/http lifts
// the deadline itself (it then watches the connection, where a timeout
// would cancel the request's context), so the deadline cannot cut the
// handler's work short; TestBodyDeadlineLifted checks it.
type requestBody struct {
	body     io.ReadCloser // a MaxBytesReader
	declared int64         // Content-Length; -1 when unknown
	limit    int64         // the route's body limit

	rc      *http.ResponseController // sets the read deadline
	timeout time.Duration            // the deadline's distance; 0 when none was set
}

// newRequestBody wraps r's body with the limit and, when timeout > 0 and
// there is a body, sets a read deadline timeout from now, plus up to a
// quarter more at random: connections opened together by an attacker that
// sends nothing then time out spread over a while, not all in the same
// instant (20,000 at once held /healthz up for seconds).
func newRequestBody(w http.ResponseWriter, r *http.Request, limit int64, timeout time.Duration) *requestBody {
	b := &requestBody{body: http.MaxBytesReader(w, r.Body, limit), declared: r.ContentLength, limit: limit}
	if timeout > 0 && r.ContentLength != 0 {
		b.rc, b.timeout = http.NewResponseController(w), timeout+rand.N(timeout/4+1)
		b.restartDeadline()
	}
	return b
}

// restartDeadline sets the read deadline the body's timeout from now. A
// handler that waits before it reads the body (the import, for its slot)
// calls it once the wait is over: the client is given its whole time to
// send, whatever the server made it wait (a body sent whole, or cut
// short, is then 200 or 400, never a 408 of the server's making).
func (b *requestBody) restartDeadline() {
	if b.timeout > 0 {
		// Not supported by every ResponseWriter (httptest's): no deadline.
		_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	}
}

func (b *requestBody) Read(p []byte) (int, error) {
	if b.declared > b.limit {
		return 0, &http.MaxBytesError{Limit: b.limit}
	}
	n, err := b.body.Read(p)
	switch {
	case err == nil, err == io.EOF, errors.As(err, new(*http.MaxBytesError)):
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = errBodyTimeout
	default:
		err = errBodyBroken
	}
	return n, err
}

func (b *requestBody) Close() error { return b.body.Close() }

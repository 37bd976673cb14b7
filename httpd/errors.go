package httpd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// httpError is an error answered with a fixed status code and message.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return "httpd: " + strconv.Itoa(e.code) + " " + e.msg }

// The errors of the API, with their messages (SPEC §3.1).
var (
	errUnauthenticated = &httpError{http.StatusUnauthorized, "Unauthenticated."}
	errNotFound        = &httpError{http.StatusNotFound, "Resource not found."}
	errTooLarge        = &httpError{http.StatusRequestEntityTooLarge, "The request body is too large."}
	errTooManyAttempts = &httpError{http.StatusTooManyRequests, "Too Many Attempts."}
	errBadJSON         = &httpError{http.StatusBadRequest, "The request body must be a JSON object."}
	errUnavailable     = &httpError{http.StatusServiceUnavailable, "Service Unavailable."}
	errDiskFull        = &httpError{http.StatusServiceUnavailable, "Service Unavailable: the server's disk is full."}
)

// Retry-After, in seconds, of the 503 answers: a few password hashes finish
// within seconds; a full disk needs an operator.
const (
	busyRetryAfter     = "2"
	diskFullRetryAfter = "10"
)

// fieldErrors is a 422 answer built here (not by the engine): messages by
// field, in the order the fields were checked.
type fieldErrors []engine.FieldError

func (f fieldErrors) Error() string {
	return (&engine.ValidationError{Fields: f}).Error()
}

// add records msg for field.
func (f *fieldErrors) add(field, msg string) {
	*f = append(*f, engine.FieldError{Field: field, Msg: msg})
}

// MarshalJSON writes the Laravel shape {"field": ["msg", ...], ...}, fields
// in the order of their first message.
func (f fieldErrors) MarshalJSON() ([]byte, error) {
	// One pass groups the messages by field (an import of 10,000 invalid
	// events has 100,000 of them: a scan per field took 24 s).
	order := make([]string, 0, len(f))
	msgs := make(map[string][]string, len(f))
	for _, fe := range f {
		if _, ok := msgs[fe.Field]; !ok {
			order = append(order, fe.Field)
		}
		msgs[fe.Field] = append(msgs[fe.Field], fe.Msg)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, field := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, field)
		b.WriteString(":[")
		for j, m := range msgs[field] {
			if j > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, m)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // the newline Encode adds
}

// errorBody is the envelope of every error answer.
type errorBody struct {
	Message any `json:"message"` // a string, or fieldErrors for a 422
	Status  int `json:"status"`
}

// errorStatus maps err to the status code and message of its answer. It is
// the only place errors become status codes. internal reports an error the
// caller logs: an unexpected one (a 500), or a full disk (a 503 the
// operator must act on).
func errorStatus(err error) (code int, message any, internal bool) {
	var (
		he   *httpError
		fe   fieldErrors
		ve   *engine.ValidationError
		mbe  *http.MaxBytesError
		jerr *json.SyntaxError
	)
	switch {
	case errors.As(err, &he):
		return he.code, he.msg, false
	case errors.As(err, &fe):
		return http.StatusUnprocessableEntity, fe, false
	case errors.As(err, &ve):
		return http.StatusUnprocessableEntity, fieldErrors(ve.Fields), false
	case errors.As(err, &mbe), errors.Is(err, engine.ErrTooLarge):
		return errTooLarge.code, errTooLarge.msg, false
	case errors.Is(err, engine.ErrImportUnknown):
		// Published, applied (or refused) by the partition's holders:
		// not a 503, which clients retry, importing twice.
		return http.StatusAccepted, "The import change was published to the cluster but its outcome is not known on this node yet; list the website's imports before trying again.", false
	case errors.Is(err, engine.ErrNotFound):
		return errNotFound.code, errNotFound.msg, false
	case errors.Is(err, identity.ErrUnauthenticated):
		return errUnauthenticated.code, errUnauthenticated.msg, false
	case errors.As(err, &jerr):
		return errBadJSON.code, errBadJSON.msg, false
	case errors.Is(err, engine.ErrBusy), errors.Is(err, engine.ErrLogFailed), errors.Is(err, engine.ErrClusterUnavailable), errors.Is(err, engine.ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errUnavailable.code, errUnavailable.msg, false
	case errors.Is(err, engine.ErrDiskFull):
		// Not stored: a 503, never a false 202. The store refused the write before anything was logged or
		// counted (SPEC §13). Logged: the operator must free space (the
		// binary's log handler holds back repeated lines).
		return errDiskFull.code, errDiskFull.msg, true
	}
	return http.StatusInternalServerError, "Server Error.", true
}

// writeError answers err as JSON; an unexpected error is logged with the
// request id.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg, internal := errorStatus(err)
	switch {
	case errors.Is(err, engine.ErrBusy):
		w.Header().Set("Retry-After", busyRetryAfter) // too many password hashes at once
	case errors.Is(err, engine.ErrDiskFull):
		w.Header().Set("Retry-After", diskFullRetryAfter)
	}
	if internal {
		if st := stateOf(r.Context()); st != nil && st.log != nil {
			st.log.Error("request failed", "request_id", st.id, "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	writeJSON(w, code, errorBody{Message: msg, Status: code})
}

// writeJSON answers v as JSON with the status code. HTML characters are not
// escaped (the answers are served as application/json with nosniff).
func writeJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"message":"Server Error.","status":500}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// plausibleError is an error of the Plausible-compatible API, answered
// {"error": msg} with its status code (plausible-api.md §5, §7, §8).
type plausibleError struct {
	code int
	msg  string
}

func (e *plausibleError) Error() string { return "httpd: " + strconv.Itoa(e.code) + " " + e.msg }

// badRequest is a 400 of the Plausible-compatible API.
func badRequest(msg string) error { return &plausibleError{http.StatusBadRequest, msg} }

// The errors of the Plausible-compatible API, with Plausible's messages.
var (
	errPlausibleMissingKey = &plausibleError{http.StatusUnauthorized,
		"Missing API key. Please use a valid Plausible API key as a Bearer Token."}
	// errPlausibleInvalid answers a wrong key and an unknown or another
	// account's site_id alike, so that a key cannot probe which domains exist.
	errPlausibleInvalid = &plausibleError{http.StatusUnauthorized,
		"Invalid API key or site ID. Please make sure you're using a valid API key with access to the site you've requested."}
	errPlausibleMissingSite = &plausibleError{http.StatusBadRequest,
		"Missing site ID. Please provide the required site_id parameter with your request."}
	errSiteNotFound = &plausibleError{http.StatusNotFound, "Site could not be found"}
	errGoalNotFound = &plausibleError{http.StatusNotFound, "Goal could not be found"}
)

// plausibleErrorBody is the body of every error of the Plausible-compatible
// API.
type plausibleErrorBody struct {
	Error string `json:"error"`
}

// plausibleErrorStatus is errorStatus for the Plausible-compatible API: its
// own errors, an invalid query (*engine.QueryError) and a website's invalid
// fields are 400 with a message string; anything else is answered as the
// phpAnalytics API answers it (413, 503, 500), with its message.
func plausibleErrorStatus(err error) (code int, msg string, internal bool) {
	var (
		pe *plausibleError
		qe *engine.QueryError
		ve *engine.ValidationError
		fe fieldErrors
	)
	switch {
	case errors.As(err, &pe):
		return pe.code, pe.msg, false
	case errors.As(err, &qe):
		return http.StatusBadRequest, qe.Msg, false
	case errors.As(err, &ve):
		return http.StatusBadRequest, fieldMessages(ve.Fields), false
	case errors.As(err, &fe):
		return http.StatusBadRequest, fieldMessages(fe), false
	case errors.Is(err, engine.ErrNotFound):
		return errSiteNotFound.code, errSiteNotFound.msg, false
	}
	code, m, internal := errorStatus(err)
	msg, _ = m.(string)
	return code, msg, internal
}

// fieldMessages joins field errors as Plausible writes a changeset's:
// "field: message", one a line.
func fieldMessages(fields []engine.FieldError) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.Field + ": " + f.Msg)
	}
	return b.String()
}

// writePlausibleError answers err as {"error": msg}; an unexpected error is
// logged with the request id.
func writePlausibleError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg, internal := plausibleErrorStatus(err)
	switch {
	case errors.Is(err, engine.ErrBusy):
		w.Header().Set("Retry-After", busyRetryAfter)
	case errors.Is(err, engine.ErrDiskFull):
		w.Header().Set("Retry-After", diskFullRetryAfter)
	}
	if internal {
		if st := stateOf(r.Context()); st != nil && st.log != nil {
			st.log.Error("request failed", "request_id", st.id, "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	writeJSON(w, code, plausibleErrorBody{Error: msg})
}

package httpd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/webstats/webstats/engine"
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
	var b bytes.Buffer
	b.WriteByte('{')
	done := make(map[string]bool, len(f))
	for _, fe := range f {
		if done[fe.Field] {
			continue
		}
		done[fe.Field] = true
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		writeJSONString(&b, fe.Field)
		b.WriteString(":[")
		n := 0
		for _, g := range f {
			if g.Field == fe.Field {
				if n > 0 {
					b.WriteByte(',')
				}
				writeJSONString(&b, g.Msg)
				n++
			}
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
	case errors.As(err, &mbe):
		return errTooLarge.code, errTooLarge.msg, false
	case errors.Is(err, engine.ErrNotFound):
		return errNotFound.code, errNotFound.msg, false
	case errors.Is(err, engine.ErrUnauthenticated):
		return errUnauthenticated.code, errUnauthenticated.msg, false
	case errors.As(err, &jerr):
		return errBadJSON.code, errBadJSON.msg, false
	case errors.Is(err, engine.ErrBusy), errors.Is(err, engine.ErrLogFailed), errors.Is(err, engine.ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
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

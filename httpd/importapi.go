package httpd

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

// MaxImportLines is the most lines one import request (or one chunk of the
// command line's import) holds (SPEC §3.4).
const MaxImportLines = maxImportEvents

// ImportError is an import body refused: the invalid fields, named
// events.N.field with N the 0-based index of the line.
type ImportError struct {
	Fields []engine.FieldError
}

func (e *ImportError) Error() string { return (&engine.ValidationError{Fields: e.Fields}).Error() }

// CheckImport checks an import body (NDJSON or a JSON array, at most
// MaxImportLines lines) exactly as POST /websites/{id}/events does, and
// counts nothing: the command line checks a whole file with it before
// sending or counting any of it. An invalid body is an *ImportError.
func CheckImport(body []byte, now time.Time) error {
	_, err := parseImport(bytes.NewReader(body), 1, now)
	return importErr(err)
}

// ImportResult is what an import counted.
type ImportResult struct {
	Accepted int
	Repeated bool           // the key's first import's result: nothing counted now
	Dropped  map[string]int // by reason: bot, excluded_ip, ...
}

// Import counts an import body under website as POST /websites/{id}/events
// does (SPEC §3.4): every line checked first, then tracked in time order,
// atomically. For the command line's import into a data directory. A
// non-empty key is the request's Idempotency-Key (engine.TrackOnce): a body
// whose key was counted in the last engine.KeyTTL counts nothing again, so
// a chunk counted by a run killed before it saved its state is not counted
// twice by the next run.
func Import(ctx context.Context, e *engine.Engine, website uint32, body []byte, key string, now time.Time) (ImportResult, error) {
	if _, err := e.Unscoped().Website(ctx, website); err != nil {
		return ImportResult{}, err
	}
	// Under a memory budget, the days the previous chunks wrote leave
	// memory before this one is decoded (SPEC §13).
	e.MakeRoom()
	hits, err := parseSorted(bytes.NewReader(body), website, now)
	if err != nil {
		return ImportResult{}, importErr(err)
	}
	res, err := e.Import(ctx, key, hits)
	if err != nil {
		return ImportResult{}, err
	}
	out := ImportResult{Accepted: res.Accepted, Repeated: res.Repeated, Dropped: make(map[string]int)}
	for _, d := range importResult(res).Dropped {
		out.Dropped[d.reason] = d.n
	}
	return out, nil
}

func importErr(err error) error {
	var fe fieldErrors
	if errors.As(err, &fe) {
		return &ImportError{Fields: fe}
	}
	return err
}

// checkLines is pages.Options.CheckLines: the index of the first bad line
// of body and why (-1 when every line is good).
func (s *Server) checkLines(body []byte) (int, string, error) {
	err := CheckImport(body, s.now())
	var ie *ImportError
	if !errors.As(err, &ie) {
		return -1, "", err
	}
	f := ie.Fields[0]
	rest, ok := strings.CutPrefix(f.Field, "events.")
	if !ok {
		return 0, f.Field + ": " + f.Msg, nil
	}
	num, field, _ := strings.Cut(rest, ".")
	i, err := strconv.Atoi(num)
	if err != nil {
		return 0, f.Field + ": " + f.Msg, nil
	}
	return i, field + ": " + strings.ReplaceAll(f.Msg, "events."+num+".", ""), nil
}

// importLines is pages.Options.ImportLines. A chunk of an upload is an
// import like POST /websites/{id}/events, under the same one slot
// (importmem.go): it waits for it, as the upload runs in the background.
func (s *Server) importLines(ctx context.Context, website uint32, body []byte, key string) (int, error) {
	select {
	case s.imports <- struct{}{}:
		defer func() { <-s.imports }()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	res, err := Import(ctx, s.e, website, body, key, s.now())
	return res.Accepted, err
}

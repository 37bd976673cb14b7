package peerimport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/webstats/webstats/httpd/internal/importline"
)

// The files of an import, read by format: the command line's import and
// the web page's upload both read them here, so that a file gives the same
// lines, line numbers and errors (and so the same chunks and keys) either
// way. Each caller keeps its own file access (File.Open) and words its
// own messages from the typed errors below.

// File is one file of an import: the name its lines and errors are
// reported under, and how to open it (it is opened more than once: an
// Umami table once for its header, again for its rows).
type File struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// LineFunc receives an import line, encoded as NDJSON without its newline,
// with the file and the 1-based line it was read from. The line is only
// valid until LineFunc returns.
type LineFunc func(line []byte, file string, n int) error

// ErrUmamiTables is an Umami import without a session table or without a
// website_event table.
var ErrUmamiTables = errors.New("umami needs the session table and the website_event table")

// LongLineError is an NDJSON line over MaxLine bytes. (A CSV file's is an
// *Error.)
type LongLineError struct {
	File string
	Line int
}

func (e *LongLineError) Error() string {
	return fmt.Sprintf("%s:%d: a line longer than %d bytes", e.File, e.Line, MaxLine)
}

// ReadError is a file that opened but could not be read (a directory, an
// I/O error), outside the CSV readers (whose errors already name the file).
type ReadError struct {
	File string
	Err  error
}

// Error names the file once, as the command line always has.
func (e *ReadError) Error() string {
	if s := e.Err.Error(); strings.HasPrefix(s, e.File+":") {
		return s
	}
	return e.File + ": " + e.Err.Error()
}

func (e *ReadError) Unwrap() error { return e.Err }

// Lines calls fn with every import line of files of format ("ndjson",
// "goatcounter" or "umami"), in order. An error of fn is returned as it
// is; an error of Open too. Umami's tables are told apart by their headers
// and read event_data and session first, then website_event, whatever
// their order in files.
func Lines(format string, files []File, fn LineFunc) error {
	var each func(f File, r io.Reader) error
	switch format {
	case "ndjson":
		each = func(f File, r io.Reader) error { return ndjson(f.Name, r, fn) }
	case "goatcounter":
		each = func(f File, r io.Reader) error {
			_, _, err := GoatCounter(f.Name, r, encodeTo(f.Name, fn))
			return err
		}
	case "umami":
		return umamiFiles(files, fn)
	default:
		return fmt.Errorf("peerimport: no format %q", format)
	}
	for _, f := range files {
		if err := read(f, func(r io.Reader) error { return each(f, r) }); err != nil {
			return err
		}
	}
	return nil
}

// read opens f, calls fn with it and closes it.
func read(f File, fn func(io.Reader) error) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r)
}

// ndjson calls fn with each non-blank line of r, trimmed, and its line
// number. A line over MaxLine bytes is a *LongLineError; a failed read a
// *ReadError.
func ndjson(file string, r io.Reader, fn LineFunc) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			if err := fn(line, file, n); err != nil {
				return err
			}
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return &LongLineError{File: file, Line: n + 1}
	}
	if err := sc.Err(); err != nil {
		return &ReadError{File: file, Err: err}
	}
	return nil
}

// encodeTo returns a Func that encodes its lines for fn.
func encodeTo(file string, fn LineFunc) Func {
	return func(l importline.Line, line int) error {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		return fn(b, file, line)
	}
}

// umamiTable is which of Umami's tables a CSV file is.
type umamiTable int

const (
	umamiSessionTable umamiTable = iota
	umamiEventTable
	umamiEventDataTable
)

// classifyUmami tells an Umami table by its header line: website_event
// has url_path, event_data data_key (event_key in ClickHouse); anything
// else is taken for the session table (whose reader checks its columns).
func classifyUmami(header string) umamiTable {
	switch {
	case strings.Contains(header, "url_path"):
		return umamiEventTable
	case strings.Contains(header, "data_key"), strings.Contains(header, "event_key"):
		return umamiEventDataTable
	}
	return umamiSessionTable
}

// umamiFiles reads Umami's tables: event_data and session first (into
// memory, bounded by MaxUmamiSessions a file), then website_event.
func umamiFiles(files []File, fn LineFunc) error {
	var sessionFiles, eventFiles, dataFiles []File
	for _, f := range files {
		head, err := header(f)
		if err != nil {
			return err
		}
		switch classifyUmami(head) {
		case umamiEventTable:
			eventFiles = append(eventFiles, f)
		case umamiEventDataTable:
			dataFiles = append(dataFiles, f)
		default:
			sessionFiles = append(sessionFiles, f)
		}
	}
	if len(sessionFiles) == 0 || len(eventFiles) == 0 {
		return ErrUmamiTables
	}
	// The bounds of one file (MaxUmamiSessions) hold for all of them
	// together (umamiTotal): an upload of several tables is one import,
	// and its maps are its memory (about 300 bytes a session).
	props := make(map[string][][2]string)
	nprops := 0
	for _, f := range dataFiles {
		err := read(f, func(r io.Reader) error {
			m, err := UmamiEventData(f.Name, r)
			if err != nil {
				return err
			}
			for k, v := range m {
				props[k] = append(props[k], v...)
				if nprops += len(v); nprops > umamiTotal {
					return &Error{File: f.Name, Msg: "more than " + strconv.Itoa(umamiTotal) + " event properties in all the files: import the dump in parts"}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	sessions := make(map[string]UmamiSession)
	for _, f := range sessionFiles {
		err := read(f, func(r io.Reader) error {
			m, err := UmamiSessions(f.Name, r)
			if err != nil {
				return err
			}
			for k, v := range m {
				sessions[k] = v
			}
			if len(sessions) > umamiTotal {
				return &Error{File: f.Name, Msg: "more than " + strconv.Itoa(umamiTotal) + " sessions in all the files: import the dump in parts"}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, f := range eventFiles {
		err := read(f, func(r io.Reader) error {
			_, err := UmamiEvents(f.Name, r, sessions, props, encodeTo(f.Name, fn))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// header returns the first line of a file (its CSV header), at most
// 64 KiB; a failed read is a *ReadError.
func header(f File) (head string, err error) {
	err = read(f, func(r io.Reader) error {
		b, err := bufio.NewReaderSize(io.LimitReader(r, 64<<10), 64<<10).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return &ReadError{File: f.Name, Err: err}
		}
		head = b
		return nil
	})
	return head, err
}

// umamiTotal is MaxUmamiSessions, lowered by tests: the most sessions, and
// event properties, one import's files hold together.
var umamiTotal = MaxUmamiSessions

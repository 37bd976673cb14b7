package peerimport

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/webstats/webstats/httpd/internal/importline"
)

// MaxLine is the longest line of a peer's CSV file, in bytes: a row of a
// hit is a few hundred bytes; a longer one is a broken file, refused
// before it is held in memory.
const MaxLine = 1 << 20

// Error is a bad row: file, 1-based line and column (0 for the whole row).
type Error struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *Error) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// errLongLine reports a line over MaxLine.
var errLongLine = errors.New("line too long")

// lineLimit fails a read once a line passes MaxLine bytes.
type lineLimit struct {
	r     *bufio.Reader
	run   int
	lines int // newlines read
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			l.run = 0
			l.lines++
		} else if l.run++; l.run > MaxLine {
			return i, errLongLine
		}
	}
	return n, err
}

// table reads a CSV file with a header: the column index of each wanted
// name (required ones must be there) and then its rows.
type table struct {
	file  string
	r     *csv.Reader
	lim   *lineLimit
	col   map[string]int
	names []string
	line  int
	rec   []string
}

func newTable(file string, r io.Reader, required, optional []string) (*table, error) {
	lim := &lineLimit{r: bufio.NewReaderSize(r, 64<<10)}
	cr := csv.NewReader(lim)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	t := &table{file: file, r: cr, lim: lim, col: make(map[string]int)}
	head, err := cr.Read()
	if err != nil {
		return nil, t.fail(err, "cannot read the header")
	}
	t.names = append([]string(nil), head...)
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		t.col[strings.ToLower(h)] = i
	}
	// The wanted names as the caller spells them, so that get finds
	// them without lowering each (a tenth of an import's time).
	for _, name := range append(append([]string(nil), required...), optional...) {
		if i, ok := t.col[strings.ToLower(name)]; ok {
			t.col[name] = i
		}
	}
	var missing []string
	for _, name := range required {
		if _, ok := t.col[strings.ToLower(name)]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, &Error{File: file, Line: 1, Msg: "wrong header: no column " + strings.Join(missing, ", ") +
			" (want the columns " + strings.Join(append(required, optional...), ",") + ")"}
	}
	return t, nil
}

// next reads the next row; false at the end of the file.
func (t *table) next() (bool, error) {
	rec, err := t.r.Read()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, t.fail(err, "")
	}
	line, _ := t.r.FieldPos(0)
	t.line = line
	if len(rec) != len(t.names) {
		return false, &Error{File: t.file, Line: line, Msg: fmt.Sprintf("%d columns, want %d as in the header (a truncated file?)", len(rec), len(t.names))}
	}
	t.rec = rec
	return true, nil
}

// get returns the value of column name ("" when the file has none).
func (t *table) get(name string) string {
	if i, ok := t.col[name]; ok {
		return t.rec[i]
	}
	if i, ok := t.col[strings.ToLower(name)]; ok {
		return t.rec[i]
	}
	return ""
}

// bad is the Error of column name of the current row.
func (t *table) bad(name, msg string) *Error {
	i := t.col[strings.ToLower(name)]
	_, col := t.r.FieldPos(i)
	return &Error{File: t.file, Line: t.line, Column: col, Msg: "column " + name + ": " + msg}
}

func (t *table) fail(err error, what string) error {
	var pe *csv.ParseError
	switch {
	case errors.As(err, &pe):
		return &Error{File: t.file, Line: pe.Line, Column: pe.Column, Msg: pe.Err.Error()}
	case errors.Is(err, errLongLine):
		return &Error{File: t.file, Line: t.lim.lines + 1, Msg: fmt.Sprintf("a line longer than %d bytes", MaxLine)}
	case err == io.EOF:
		return &Error{File: t.file, Line: 1, Msg: "empty file: " + what}
	}
	return fmt.Errorf("%s: %w", t.file, err)
}

// Func receives the import lines of a file with the line of the file
// each was read from; nil checks only.
type Func func(l importline.Line, line int) error

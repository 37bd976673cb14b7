package plausiblezip

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/webstats/webstats/buckets"
)

// Bounds on what one export may hold: beyond them Read fails instead of
// growing without bound.
const (
	// MaxLine is the longest line of a CSV file, in bytes.
	MaxLine = 64 << 10
	// MaxRows is the most rows of all the files of a zip together (a
	// year of a site with 10k daily visitors is some 300,000).
	MaxRows = 5_000_000
	// MaxBytes is the most bytes the files of a zip may unpack to
	// together: a small zip that unpacks to much more is refused as it
	// is read, whatever its directory claims.
	MaxBytes = 2 << 30
	// MaxFiles is the most entries a zip may have.
	MaxFiles = 64
)

// Error is a refusal of an export: File is the zip entry (empty for the
// archive itself), Line and Column (1-based; 0 when not about a place in
// the file) where the problem is.
type Error struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *Error) Error() string {
	switch {
	case e.File == "":
		return "plausible export: " + e.Msg
	case e.Line == 0:
		return fmt.Sprintf("plausible export: %s: %s", e.File, e.Msg)
	case e.Column == 0:
		return fmt.Sprintf("plausible export: %s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("plausible export: %s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// Row is one daily aggregate of a table.
type Row struct {
	Date buckets.Date
	// Dims are the table's dimension values, in Table.Dims order ("" when
	// an optional column is absent; a city is its GeoNames id in decimal).
	Dims []string
	// M are the metrics, indexed by Visitors, Visits, … (0 when a table
	// has no such column).
	M [NumMetrics]uint64
}

// File is one table's file of an export.
type File struct {
	Name     string // the zip entry's base name
	Table    *Table
	From, To buckets.Date // the days the file name says it covers
	Rows     []Row
}

// Export is a whole export, every file valid.
type Export struct {
	Files    []*File
	From, To buckets.Date // the union of the files' ranges
}

// Rows returns the rows of table name ("imported_pages"), nil if the
// export has no such file.
func (x *Export) Rows(name string) []Row {
	for _, f := range x.Files {
		if f.Table.Name == name {
			return f.Rows
		}
	}
	return nil
}

// ReadFile reads the export zip at file.
func ReadFile(name string) (*Export, error) {
	f, err := openFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return Read(f, st.Size())
}

// Read reads an export zip of size bytes from r.
func Read(r io.ReaderAt, size int64) (*Export, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, &Error{Msg: "not a readable zip archive (" + err.Error() + ")"}
	}
	if len(zr.File) > MaxFiles {
		return nil, &Error{Msg: fmt.Sprintf("%d entries in the archive, at most %d", len(zr.File), MaxFiles)}
	}
	x := &Export{}
	seen := map[string]string{}
	rows := 0
	budget := int64(MaxBytes)
	for _, zf := range zr.File {
		if zf.FileInfo().IsDir() {
			continue
		}
		base := path.Base(zf.Name)
		t, from, to, err := parseName(base)
		if err != nil {
			return nil, &Error{File: zf.Name, Msg: err.Error()}
		}
		if other, dup := seen[t.Name]; dup {
			return nil, &Error{File: zf.Name, Msg: "a second file of " + t.Name + " (the first is " + other + ")"}
		}
		seen[t.Name] = zf.Name
		f := &File{Name: zf.Name, Table: t, From: from, To: to}
		if err := readEntry(zf, f, &rows, &budget); err != nil {
			return nil, err
		}
		if len(x.Files) == 0 || from < x.From {
			x.From = from
		}
		if len(x.Files) == 0 || to > x.To {
			x.To = to
		}
		x.Files = append(x.Files, f)
	}
	if len(x.Files) == 0 {
		return nil, &Error{Msg: "no imported_*.csv file in the archive"}
	}
	return x, nil
}

// parseName parses "imported_pages_20240101_20241231.csv" (the "imported_"
// is optional, as Plausible's CSVImporter.parse_filename! allows).
func parseName(base string) (*Table, buckets.Date, buckets.Date, error) {
	stem, ok := strings.CutSuffix(base, ".csv")
	if !ok || len(stem) < 18 || stem[len(stem)-18] != '_' || stem[len(stem)-9] != '_' {
		return nil, 0, 0, errors.New("not a file of a Plausible export: its name is not <table>_YYYYMMDD_YYYYMMDD.csv")
	}
	name := stem[:len(stem)-18]
	if !strings.HasPrefix(name, "imported_") {
		name = "imported_" + name
	}
	t := Tables[name]
	if t == nil {
		return nil, 0, 0, fmt.Errorf("unknown table %q in the file name", name)
	}
	from, err1 := parseCompact(stem[len(stem)-17 : len(stem)-9])
	to, err2 := parseCompact(stem[len(stem)-8:])
	if err := errors.Join(err1, err2); err != nil {
		return nil, 0, 0, fmt.Errorf("bad date in the file name: %v", err)
	}
	if to < from {
		return nil, 0, 0, errors.New("the file name's range ends before it starts")
	}
	return t, from, to, nil
}

// parseCompact parses YYYYMMDD.
func parseCompact(s string) (buckets.Date, error) {
	if len(s) != 8 {
		return 0, fmt.Errorf("%q is not YYYYMMDD", s)
	}
	return buckets.ParseDate(s[:4] + "-" + s[4:6] + "-" + s[6:])
}

// readEntry reads and validates one CSV entry into f.
func readEntry(zf *zip.File, f *File, rows *int, budget *int64) error {
	rc, err := zf.Open()
	if err != nil {
		return &Error{File: f.Name, Msg: "cannot read it from the archive: " + err.Error()}
	}
	defer rc.Close()
	lr := &lineLimit{r: rc, budget: budget}
	cr := csv.NewReader(lr)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return readError(f, cr, lr, err, "the header")
	}
	cols, err := headerColumns(f, header)
	if err != nil {
		return err
	}
	p := &rowParser{f: f, cols: cols, strs: map[string]string{}}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return readError(f, cr, lr, err, "a row")
		}
		if *rows++; *rows > MaxRows {
			line, _ := cr.FieldPos(0)
			return &Error{File: f.Name, Line: line, Msg: fmt.Sprintf("more than %d rows in the export", MaxRows)}
		}
		if err := p.row(cr, rec); err != nil {
			return err
		}
	}
}

// readError is the *Error of a failed read of what.
func readError(f *File, cr *csv.Reader, lr *lineLimit, err error, what string) error {
	var pe *csv.ParseError
	switch {
	case errors.Is(err, errTooBig):
		return &Error{File: f.Name, Line: lr.line, Msg: fmt.Sprintf("the export unpacks to more than %d bytes", int64(MaxBytes))}
	case errors.Is(err, errLongLine):
		return &Error{File: f.Name, Line: lr.line, Msg: fmt.Sprintf("line longer than %d bytes", MaxLine)}
	case errors.As(err, &pe):
		return &Error{File: f.Name, Line: pe.Line, Column: pe.Column, Msg: pe.Err.Error()}
	case err == io.EOF:
		return &Error{File: f.Name, Line: 1, Msg: "empty file: no header"}
	}
	return &Error{File: f.Name, Line: lr.line, Msg: "cannot read " + what + ": " + err.Error() + " (truncated archive?)"}
}

// headerColumns maps the header's fields to the table's columns.
func headerColumns(f *File, header []string) ([]*column, error) {
	cols := make([]*column, len(header))
	col := 1
	for i, name := range header {
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		for j := range f.Table.cols {
			if f.Table.cols[j].name == name {
				cols[i] = &f.Table.cols[j]
			}
		}
		if cols[i] == nil {
			return nil, &Error{File: f.Name, Line: 1, Column: col, Msg: fmt.Sprintf("unknown column %q for %s", name, f.Table.Name)}
		}
		for _, prev := range cols[:i] {
			if prev == cols[i] {
				return nil, &Error{File: f.Name, Line: 1, Column: col, Msg: fmt.Sprintf("column %q twice", name)}
			}
		}
		col += len(header[i]) + 1
	}
	for j := range f.Table.cols {
		c := &f.Table.cols[j]
		found := false
		for _, h := range cols {
			found = found || h == c
		}
		if !found && !c.optional {
			return nil, &Error{File: f.Name, Line: 1, Msg: fmt.Sprintf("missing column %q of %s", c.name, f.Table.Name)}
		}
	}
	return cols, nil
}

// rowParser parses the rows of one file.
type rowParser struct {
	f    *File
	cols []*column
	strs map[string]string // interned dimension values (bounded by the file's size)
}

// row parses one record into p.f.Rows.
func (p *rowParser) row(cr *csv.Reader, rec []string) error {
	if len(rec) != len(p.cols) {
		line, _ := cr.FieldPos(0)
		return &Error{File: p.f.Name, Line: line, Msg: fmt.Sprintf("%d fields, the header has %d", len(rec), len(p.cols))}
	}
	r := Row{Dims: make([]string, len(p.f.Table.Dims))}
	for i, c := range p.cols {
		v := rec[i]
		bad := func(msg string) error {
			line, col := cr.FieldPos(i)
			return &Error{File: p.f.Name, Line: line, Column: col, Msg: fmt.Sprintf("%s: %s %q", c.name, msg, clip(v))}
		}
		switch {
		case c.name == "date":
			d, err := buckets.ParseDate(v)
			if err != nil || len(v) != 10 {
				return bad("not a date YYYY-MM-DD")
			}
			if d < p.f.From || d > p.f.To {
				return bad("outside the file's range " + p.f.From.String() + " to " + p.f.To.String())
			}
			r.Date = d
		case c.kind == kindDim:
			s, ok := p.strs[v]
			if !ok {
				s = strings.Clone(v)
				p.strs[s] = s
			}
			r.Dims[c.dim] = s
		default:
			if c.kind == kindNull && (v == "" || v == `\N`) {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return bad("not an unsigned integer")
			}
			if c.kind == kindDimUint {
				r.Dims[c.dim] = strconv.FormatUint(n, 10)
			} else if c.metric >= 0 {
				r.M[c.metric] = n
			}
		}
	}
	p.f.Rows = append(p.f.Rows, r)
	return nil
}

// clip shortens a value for a message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// lineLimit's errors: a line over MaxLine, the zip over MaxBytes.
var (
	errLongLine = errors.New("line too long")
	errTooBig   = errors.New("export too big")
)

// lineLimit passes r's bytes through, failing with errLongLine once a line
// is longer than MaxLine, so that no line is ever held whole in memory
// beyond that; line counts the lines started.
type lineLimit struct {
	r      io.Reader
	cur    int // bytes of the current line so far
	line   int
	budget *int64 // bytes the zip may still unpack to
}

func (l *lineLimit) Read(b []byte) (int, error) {
	n, err := l.r.Read(b)
	if *l.budget -= int64(n); *l.budget < 0 {
		return 0, errTooBig
	}
	rest := b[:n]
	for len(rest) > 0 {
		if l.cur == 0 {
			l.line++
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			l.cur += len(rest)
			break
		}
		if l.cur+i > MaxLine {
			return 0, errLongLine
		}
		l.cur = 0
		rest = rest[i+1:]
	}
	if l.cur > MaxLine {
		return 0, errLongLine
	}
	return n, err
}

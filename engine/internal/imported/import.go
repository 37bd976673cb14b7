package imported

import (
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/plausiblezip"
)

// Bounds on a website's imports.
const (
	// MaxImports bounds the imports of one website.
	MaxImports = 100
	// MaxRows bounds the rows of all the imports of one website
	// together: what one query with include.imports holds in memory.
	MaxRows = plausiblezip.MaxRows
	// MaxFile is the most bytes of an import's file name kept: a longer
	// one (from an upload's header, the CLI's argument) is cut there, at
	// a character's boundary. It is a label, and in cluster mode it
	// travels in the import's first message.
	MaxFile = 255
)

// Import is one import of a website's imported layer.
type Import struct {
	ID uint32 `json:"id"`
	// Source is where it came from: "plausible".
	Source string `json:"source"`
	// File is the name of the imported file, as given.
	File string `json:"file"`
	// From and To are the first and last day the export covers.
	From buckets.Date `json:"from"`
	To   buckets.Date `json:"to"`
	// Rows counts the daily aggregates of every table.
	Rows    int       `json:"rows"`
	Created time.Time `json:"created_at"`
}

// Data is an import in memory: its record and its tables' rows, never
// modified once built (its ID is set before it is shared).
type Data struct {
	Import
	tables map[string][]plausiblezip.Row
	bytes  int64 // rowBytes of its rows
}

// New builds an import of x (its id 0: given when stored), named file
// (cut to MaxFile bytes) and created at now (to the second). The import
// holds x's rows.
func New(x *plausiblezip.Export, file string, now time.Time) *Data {
	file = fileName(file)
	d := &Data{Import: Import{Source: "plausible", File: file, From: x.From, To: x.To,
		Created: now.UTC().Truncate(time.Second)}, tables: map[string][]plausiblezip.Row{}}
	for _, f := range x.Files {
		d.tables[f.Table.Name] = f.Rows
		d.Rows += len(f.Rows)
		d.bytes += rowBytes(f.Rows)
	}
	return d
}

// fileName cuts file to MaxFile bytes.
func fileName(file string) string {
	if len(file) <= MaxFile {
		return file
	}
	n := MaxFile
	for n > 0 && !utf8.RuneStart(file[n]) {
		n--
	}
	return file[:n]
}

// Rows returns the rows of all of list's imports together.
func Rows(list []*Data) int {
	n := 0
	for _, d := range list {
		n += d.Rows
	}
	return n
}

// Earliest returns the first day of the imports of list; false if there
// are none.
func Earliest(list []*Data) (buckets.Date, bool) {
	if len(list) == 0 {
		return 0, false
	}
	d := list[0].From
	for _, x := range list[1:] {
		d = min(d, x.From)
	}
	return d, true
}

// rowBytes estimates the memory rows hold: each row, its slice of values
// and their bytes (read from the store, values are not shared).
func rowBytes(rows []plausiblezip.Row) int64 {
	n := int64(0)
	for i := range rows {
		n += int64(unsafe.Sizeof(rows[i])) + int64(len(rows[i].Dims))*int64(unsafe.Sizeof(""))
		for _, v := range rows[i].Dims {
			n += int64(len(v))
		}
	}
	return n
}

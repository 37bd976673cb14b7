package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/httpd"
	"github.com/webstats/webstats/httpd/internal/peerimport"
)

// defaultChunk is how many lines one request of an import carries.
const defaultChunk = 5000

// chunkBytes bounds a chunk's encoded body too: the server refuses a body
// over 10 MiB (413), and 5,000 lines of events with large props pass that
// long before the line bound. 8 MiB leaves room for the last line added
// (at most peerimport.MaxLine, 1 MiB) over the bound's check.
const chunkBytes = 8 << 20

// importCmd imports files of one format into a website: every file is
// checked whole first (nothing is sent if any line is bad), then sent in
// chunks, each with an Idempotency-Key derived from the files' content,
// the chunking and the chunk's number (source.key), and the chunks done are kept in a state file beside
// the first file, so that a run started again after an interruption goes
// on where it stopped.
func (c *cli) importCmd(fs *flag.FlagSet) func(context.Context) error {
	tf := registerTarget(fs)
	format := fs.String("from", "", "the files' `format`: goatcounter, umami, ndjson or plausible (required)")
	chunk := fs.Int("chunk", defaultChunk, "`lines` per request, 1 to 10000")
	quiet := fs.Bool("quiet", false, "no progress bar")
	return func(ctx context.Context) error {
		files := fs.Args()
		if len(files) == 0 {
			return usagef("import: no file given")
		}
		if *chunk < 1 || *chunk > httpd.MaxImportLines {
			return usagef("import: -chunk must be 1 to %d", httpd.MaxImportLines)
		}
		var src *source
		switch *format {
		case "plausible":
			return tf.with(ctx, c, func(t *target) error {
				return importPlausibleFiles(ctx, t, *tf.site, files, c.stderr)
			})
		case "goatcounter", "umami", "ndjson":
			src = &source{format: *format, files: files, chunk: *chunk, chunkBytes: chunkBytes}
		default:
			return usagef("import: -from must be goatcounter, umami, ndjson or plausible")
		}
		progress := io.Writer(c.stderr)
		if *quiet {
			progress = io.Discard
		}
		fmt.Fprintf(progress, "checking %s…\n", strings.Join(files, ", "))
		if err := src.check(); err != nil {
			return err
		}
		return tf.with(ctx, c, func(t *target) error { return src.send(ctx, t, progress, c.stderr) })
	}
}

// source is the files of one import and how they split into chunks.
type source struct {
	format string
	files  []string
	chunk  int // lines per chunk, at most
	// chunkBytes bounds a chunk's body: a chunk ends before the line that
	// would take it past this many bytes (a line longer than it goes
	// alone). 0 is no bound: the chunking of state files written before
	// the bound, kept so that their resumes split as the first run did.
	chunkBytes int

	// Set by check.
	lines  int
	chunks int
	id     string // hex digest of the format and the lines: the keys' stem
}

// at is where a line came from.
type at struct {
	file string
	line int
}

// check reads every file and checks every line as the import endpoint
// would, chunk by chunk, without counting anything.
func (s *source) check() error {
	h := sha256.New()
	h.Write([]byte(s.format + "\n"))
	err := s.chunks0(func(body []byte, where []at) error {
		h.Write(body)
		return checkChunk(body, where)
	})
	if err != nil {
		return err
	}
	s.id = hex.EncodeToString(h.Sum(nil))[:32]
	return nil
}

// key is chunk i's Idempotency-Key. It must name exactly the lines the
// chunk carries, since the server answers a repeated key with the first
// request's counts and counts nothing: the content's digest alone with
// the chunk's number would, in a run with another -chunk (and no state
// file), name other lines, and those would be lost while reported as
// counted. The digest, the lines per chunk and the byte bound fix the
// split, so with i they fix the lines. A state file of a run from before
// the byte bound (chunkBytes 0) goes on with that run's keys, the digest
// and the number only, so that its chunk in flight is not counted twice.
func (s *source) key(i int) string {
	if s.chunkBytes == 0 {
		return s.id + "-" + strconv.Itoa(i)
	}
	return s.id + "-" + strconv.Itoa(s.chunk) + "-" + strconv.Itoa(s.chunkBytes) + "-" + strconv.Itoa(i)
}

// count counts s.lines and s.chunks again (after a change of s.chunk or
// s.chunkBytes).
func (s *source) count() error {
	return s.chunks0(func([]byte, []at) error { return nil })
}

// checkChunk checks one chunk with the import endpoint's own checks and
// names the first bad line by its file and line.
func checkChunk(body []byte, where []at) error {
	err := httpd.CheckImport(body, time.Now())
	var ie *httpd.ImportError
	if !errors.As(err, &ie) {
		return err
	}
	f := ie.Fields[0]
	rest, ok := strings.CutPrefix(f.Field, "events.")
	if ok {
		num, field, _ := strings.Cut(rest, ".")
		if i, err := strconv.Atoi(num); err == nil && i < len(where) {
			w := where[i]
			// The chunk's index means nothing to the user: the file's line does.
			msg := strings.ReplaceAll(f.Msg, "events."+num+".", "")
			return fmt.Errorf("%s:%d: %s: %s (nothing was imported)", w.file, w.line, field, msg)
		}
	}
	return fmt.Errorf("%s: %s (nothing was imported)", f.Field, f.Msg)
}

// chunks0 calls fn with each chunk of the import: NDJSON bodies of
// s.chunk lines or fewer, at most s.chunkBytes bytes (unless one line is
// longer), and where each line came from. It counts s.lines and s.chunks.
func (s *source) chunks0(fn func(body []byte, where []at) error) error {
	var buf bytes.Buffer
	where := make([]at, 0, s.chunk)
	s.lines, s.chunks = 0, 0
	flush := func() error {
		if len(where) == 0 {
			return nil
		}
		err := fn(buf.Bytes(), where)
		buf.Reset()
		where = where[:0]
		s.chunks++
		return err
	}
	add := func(line []byte, w at) error {
		if s.chunkBytes > 0 && len(where) > 0 && buf.Len()+len(line)+1 > s.chunkBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		buf.Write(line)
		buf.WriteByte('\n')
		where = append(where, w)
		s.lines++
		if len(where) == s.chunk {
			return flush()
		}
		return nil
	}
	if err := s.each(add); err != nil {
		return err
	}
	return flush()
}

// each calls add with every import line of the files, encoded, in order.
func (s *source) each(add func(line []byte, w at) error) error {
	files := make([]peerimport.File, len(s.files))
	for i, name := range s.files {
		files[i] = peerimport.File{Name: name, Open: func() (io.ReadCloser, error) {
			f, err := openFile(name)
			if err != nil {
				return nil, err
			}
			return f, nil
		}}
	}
	err := peerimport.Lines(s.format, files, func(line []byte, file string, n int) error {
		err := add(line, at{file, n})
		if s.format != "ndjson" {
			// As the CSV readers' errors always were, add's named by the
			// file being read (a chunk's error may be of an earlier file's
			// line: its message names that one too).
			return fileError(file, err)
		}
		return err
	})
	var long *peerimport.LongLineError
	switch {
	case errors.As(err, &long):
		return fmt.Errorf("%s (nothing was imported)", long)
	case errors.Is(err, peerimport.ErrUmamiTables):
		return usagef("import: -from umami needs the session table and the website_event table (and, for event properties, event_data), each as a CSV file with a header")
	}
	return err
}

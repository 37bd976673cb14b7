package httpd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode"
)

// Reading an import body (SPEC §3.4: a JSON array of events, or NDJSON,
// one event per non-blank line) an event at a time, as it arrives: the
// body is never whole in memory, only the events of the chunk being
// checked (importChunk) and the hits checked so far (SPEC §13: an import
// of 10,000 events grows memory by a bounded amount; a 10 MiB body held
// beside its hits was a third of what one import held at its peak).

// importChunk is how many raw events an import reads before it checks
// them (in parts at once, importPart).
const importChunk = 2000

// eventReader reads the raw events of an import body.
type eventReader struct {
	src *bodyErr
	br  *bufio.Reader
	dec *json.Decoder // a JSON array; nil for NDJSON
	n   int           // events read
	end bool          // nothing more to read
}

// bodyErr is a body's reader that remembers the error it returned other
// than io.EOF: a decoding error after one is the body's (too large, cut,
// timed out: the server answers 413, 400 or 408), not the JSON's (422).
type bodyErr struct {
	r   io.Reader
	err error
}

func (b *bodyErr) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// newEventReader starts reading body: its first rune that is not white
// space (unicode.IsSpace, as bytes.TrimSpace of the whole body was)
// decides its form ('[': a JSON array).
func newEventReader(body io.Reader) (*eventReader, error) {
	src := &bodyErr{r: body}
	ev := &eventReader{src: src, br: bufio.NewReaderSize(src, 64<<10)}
	c, err := skipSpaces(ev.br)
	switch {
	case err == io.EOF:
		ev.end = true
		return ev, nil
	case err != nil:
		return nil, err
	case c != '[':
		return ev, nil
	}
	ev.dec = json.NewDecoder(ev.br)
	if _, err := ev.dec.Token(); err != nil { // the '['
		return nil, ev.syntax("events", "The events must be a JSON array or NDJSON.")
	}
	return ev, nil
}

// skipSpaces reads r up to its first rune that is not white space, left
// unread, and returns it.
func skipSpaces(r *bufio.Reader) (rune, error) {
	for {
		c, _, err := r.ReadRune()
		if err != nil {
			return 0, err
		}
		if !unicode.IsSpace(c) {
			return c, r.UnreadRune() // cannot fail after a ReadRune
		}
	}
}

// next appends to raws the next events, up to limit, and returns them; none
// at the end of the body. Each event is its own copy. More than
// maxImportEvents events is a 413 (found before the one too many is
// decoded); a JSON syntax error a 422 naming the
// event where it happened; a read error of the body is returned as is.
func (ev *eventReader) next(raws []json.RawMessage, limit int) ([]json.RawMessage, error) {
	for range limit {
		raw, err := ev.read()
		if err != nil || raw == nil {
			return raws, err
		}
		ev.n++
		raws = append(raws, raw)
	}
	return raws, nil
}

// read returns the next raw event, or nil at the end.
func (ev *eventReader) read() (json.RawMessage, error) {
	if ev.end {
		return nil, nil
	}
	if ev.dec != nil {
		return ev.element()
	}
	return ev.line()
}

// element reads the next element of a JSON array.
func (ev *eventReader) element() (json.RawMessage, error) {
	at := "events." + strconv.Itoa(ev.n)
	if ev.dec.More() {
		if ev.n == maxImportEvents {
			return nil, errTooManyEvents
		}
		var raw json.RawMessage
		if err := ev.dec.Decode(&raw); err != nil {
			return nil, ev.syntax(at, "The "+at+" must be valid JSON.")
		}
		return raw, nil
	}
	ev.end = true
	if _, err := ev.dec.Token(); err != nil { // the closing ']'
		return nil, ev.syntax(at, "The "+at+" must be valid JSON.")
	}
	// Nothing but white space after it.
	if _, err := skipSpaces(bufio.NewReader(io.MultiReader(ev.dec.Buffered(), ev.br))); err != io.EOF {
		return nil, ev.syntax("events", "The events must be a JSON array or NDJSON.")
	}
	return nil, nil
}

// line reads the next non-blank line of NDJSON.
func (ev *eventReader) line() (json.RawMessage, error) {
	var long []byte // a line longer than the reader's buffer
	for {
		frag, err := ev.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, frag...)
			continue
		}
		if err == io.EOF {
			ev.end = true
		} else if err != nil {
			return nil, err
		}
		line, own := frag, long != nil
		if own {
			line = append(long, frag...) // a copy already
		}
		long = nil
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if ev.n == maxImportEvents {
				return nil, errTooManyEvents
			}
			if !own {
				line = bytes.Clone(line) // frag is the reader's buffer
			}
			return line, nil
		}
		if ev.end {
			return nil, nil
		}
	}
}

// syntax is a decoding error of the body: its read error if it had one,
// or else a 422 under field.
func (ev *eventReader) syntax(field, msg string) error {
	if ev.src.err != nil {
		return ev.src.err
	}
	return fieldErrors{{Field: field, Msg: msg}}
}

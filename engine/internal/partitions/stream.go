package partitions

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/webstats/webstats/engine/internal/wire"
)

// The state of a partition as a node that holds it sends it: magic, the
// trim point T of the store's view it was read from (uvarint), then for
// each website its id (uvarint, never 0) and its keys, each as key length,
// key, value length, value (uvarint lengths), ended by a key length 0; a
// website id 0 ends it. All of a website's records up to T are in its
// keys. The keys travel as the store holds them: the magic names the
// store's key layout, so that a node of another one refuses the state
// instead of storing keys it cannot read ("wsp2": snapshot format version
// 2, a day's value in pieces).
var magic = []byte("wsp2")

// Bounds of what a reader reads: a key is a few dozen bytes; a value is a
// day, a strings chunk or a period-state chunk.
const (
	maxKey   = 64
	maxValue = 1 << 30
)

// Writer writes a partition's state.
type Writer struct {
	bw  *bufio.Writer
	buf []byte
}

// NewWriter starts the state of a partition read from a view of trim
// point trim.
func NewWriter(w io.Writer, trim uint64) (*Writer, error) {
	sw := &Writer{bw: bufio.NewWriterSize(w, 64<<10)}
	sw.buf = binary.AppendUvarint(append(sw.buf, magic...), trim)
	_, err := sw.bw.Write(sw.buf)
	return sw, err
}

// Website writes website id (not 0), then the keys keys gives to the
// function it is called with, then the end of the website's keys.
func (w *Writer) Website(id uint32, keys func(key func(k, v []byte) error) error) error {
	if _, err := w.bw.Write(binary.AppendUvarint(w.buf[:0], uint64(id))); err != nil {
		return err
	}
	err := keys(func(k, v []byte) error {
		w.buf = binary.AppendUvarint(w.buf[:0], uint64(len(k)))
		w.buf = append(w.buf, k...)
		w.buf = binary.AppendUvarint(w.buf, uint64(len(v)))
		if _, err := w.bw.Write(w.buf); err != nil {
			return err
		}
		_, err := w.bw.Write(v)
		return err
	})
	if err != nil {
		return err
	}
	return w.bw.WriteByte(0)
}

// Close ends the state and flushes it (it does not close the writer
// NewWriter was given).
func (w *Writer) Close() error {
	if err := w.bw.WriteByte(0); err != nil {
		return err
	}
	return w.bw.Flush()
}

// reader reads a partition's state.
type reader struct {
	br       *bufio.Reader
	p, n     int
	key, val []byte
}

// newReader starts reading the state of partition p of n, and returns its
// trim point.
func newReader(r io.Reader, p, n int) (*reader, uint64, error) {
	sr := &reader{br: bufio.NewReaderSize(r, 64<<10), p: p, n: n}
	var m [4]byte
	if _, err := io.ReadFull(sr.br, m[:]); err != nil || !bytes.Equal(m[:], magic) {
		return nil, 0, fmt.Errorf("not a partition's state: %w", errors.Join(err, wire.ErrRecord))
	}
	trim, err := binary.ReadUvarint(sr.br)
	if err != nil {
		return nil, 0, err
	}
	return sr, trim, nil
}

// Website returns the id of the next website, whose keys Next reads (or
// Skip skips); 0 when there is none. A website of another partition is
// an error wrapping wire.ErrRecord.
func (r *reader) Website() (uint32, error) {
	id, err := binary.ReadUvarint(r.br)
	if err != nil {
		return 0, err
	}
	if id > 1<<32-1 || id != 0 && Of(uint32(id), r.n) != r.p {
		return 0, fmt.Errorf("website %d is not of it: %w", id, wire.ErrRecord)
	}
	return uint32(id), nil
}

// Next returns the website's next key and its value, valid until the next
// call; ok is false after its last.
func (r *reader) Next() (key, val []byte, ok bool, err error) {
	kl, err := binary.ReadUvarint(r.br)
	switch {
	case err != nil:
		return nil, nil, false, err
	case kl == 0:
		return nil, nil, false, nil
	case kl > maxKey:
		return nil, nil, false, fmt.Errorf("a key of %d bytes: %w", kl, wire.ErrRecord)
	}
	r.key = slices.Grow(r.key[:0], int(kl))[:kl]
	if _, err := io.ReadFull(r.br, r.key); err != nil {
		return nil, nil, false, err
	}
	vl, err := binary.ReadUvarint(r.br)
	if err != nil {
		return nil, nil, false, err
	}
	if vl > maxValue {
		return nil, nil, false, fmt.Errorf("a value of %d bytes: %w", vl, wire.ErrRecord)
	}
	r.val = slices.Grow(r.val[:0], int(vl))[:vl]
	if _, err := io.ReadFull(r.br, r.val); err != nil {
		return nil, nil, false, err
	}
	return r.key, r.val, true, nil
}

// Skip skips the website's keys.
func (r *reader) Skip() error {
	for {
		_, _, ok, err := r.Next()
		if err != nil || !ok {
			return err
		}
	}
}

package imported

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/webstats/webstats/engine/plausiblezip"
)

// chunkRows is how many rows one stored chunk holds.
const chunkRows = 50_000

// importChunk is how a chunk of rows is stored. Its name is in the stored
// bytes (gob writes the type's name): it stays importChunk.
type importChunk struct {
	Table string
	Rows  []plausiblezip.Row
}

// RowTooLargeError is Chunks's refusal of a row whose chunk alone takes
// more than the limit.
type RowTooLargeError struct {
	Size, Limit int
}

func (e *RowTooLargeError) Error() string {
	return fmt.Sprintf("a row of the import takes %d bytes; the cluster's log takes %d", e.Size, e.Limit)
}

// Chunks returns the chunks d is stored as: chunk 0 its record, then its
// tables' rows, by table name. With limit > 0, each chunk of rows holds
// at most limit bytes (fewer rows than chunkRows when needed), or it
// fails with a *RowTooLargeError.
func (d *Data) Chunks(limit int) ([][]byte, error) {
	rec, err := json.Marshal(d.Import)
	if err != nil {
		return nil, err
	}
	chunks := [][]byte{rec}
	names := make([]string, 0, len(d.tables))
	for name := range d.tables {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rows := d.tables[name]
		for len(rows) > 0 {
			b, n, err := encodeChunk(name, rows, limit)
			if err != nil {
				return nil, err
			}
			chunks = append(chunks, b)
			rows = rows[n:]
		}
	}
	return chunks, nil
}

// encodeChunk encodes the first rows of table name as one chunk, at most
// chunkRows of them and, with limit > 0, as many as fit in limit bytes
// (halving them until they do); it returns the chunk and its rows.
func encodeChunk(name string, rows []plausiblezip.Row, limit int) ([]byte, int, error) {
	n := min(len(rows), chunkRows)
	var b bytes.Buffer
	for {
		b.Reset()
		if err := gob.NewEncoder(&b).Encode(importChunk{Table: name, Rows: rows[:n]}); err != nil {
			return nil, 0, err
		}
		if limit <= 0 || b.Len() <= limit {
			return b.Bytes(), n, nil
		}
		if n == 1 {
			return nil, 0, &RowTooLargeError{Size: b.Len(), Limit: limit}
		}
		n /= 2
	}
}

// Scan reads a website's imports back from its stored chunks: Chunk takes
// each, in the store's order (snapshot's ScanImports: by import, then
// chunk).
type Scan struct {
	// Website names the website in errors.
	Website uint32
	// Pending is set in cluster mode: the chunks of an import without a
	// record are a pending import's (its record comes with its last
	// message) and are skipped; else they are corrupt.
	Pending bool
	// List holds the imports read, oldest first.
	List []*Data
	// Last is the last id given, as the store records it (0 if it does
	// not).
	Last uint32
	cur  *Data
}

// Chunk reads chunk n of import id.
func (s *Scan) Chunk(id, n uint32, data []byte) error {
	if id == 0 { // the last id given (snapshot.PutImport), the cluster's state
		if n == 0 && len(data) == 4 {
			s.Last = binary.BigEndian.Uint32(data)
		}
		return nil
	}
	if n == 0 {
		s.cur = &Data{tables: map[string][]plausiblezip.Row{}}
		if err := json.Unmarshal(data, &s.cur.Import); err != nil {
			return fmt.Errorf("engine: import %d of website %d: %w", id, s.Website, err)
		}
		s.List = append(s.List, s.cur)
		return nil
	}
	if s.cur == nil || s.cur.ID != id {
		if s.Pending {
			return nil
		}
		return fmt.Errorf("engine: import %d of website %d has no record", id, s.Website)
	}
	var c importChunk
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		return fmt.Errorf("engine: import %d of website %d, chunk %d: %w", id, s.Website, n, err)
	}
	s.cur.tables[c.Table] = append(s.cur.tables[c.Table], c.Rows...)
	s.cur.bytes += rowBytes(c.Rows)
	return nil
}

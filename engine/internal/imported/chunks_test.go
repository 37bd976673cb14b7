package imported

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/plausiblezip"
)

// sample is an import of two tables, its name with characters JSON
// escapes.
func sample() *Data {
	return &Data{Import: Import{ID: 3, Source: "plausible", File: "f<&>.zip", From: buckets.DateOf(2024, 1, 1), To: buckets.DateOf(2024, 1, 2), Rows: 3,
		Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}, tables: map[string][]plausiblezip.Row{
		"imported_visitors": {
			{Date: buckets.DateOf(2024, 1, 1), M: [plausiblezip.NumMetrics]uint64{5, 6, 7, 1, 100, 0}},
			{Date: buckets.DateOf(2024, 1, 2), M: [plausiblezip.NumMetrics]uint64{1, 2, 3, 4, 5, 6}},
		},
		"imported_pages": {{Date: buckets.DateOf(2024, 1, 2), Dims: []string{"example.com", "/a"}, M: [plausiblezip.NumMetrics]uint64{9, 8, 7, 0, 0, 0}}},
	}}
}

// TestChunksGolden: the stored bytes of an import are those stores
// already hold (written before the imported layer left package engine):
// the record's JSON, then gob chunks whose type is named importChunk.
func TestChunksGolden(t *testing.T) {
	want := []string{
		"7b226964223a332c22736f75726365223a22706c61757369626c65222c2266696c65223a22665c75303033635c75303032365c75303033652e7a6970222c2266726f6d223a22323032342d30312d3031222c22746f223a22323032342d30312d3032222c22726f7773223a332c22637265617465645f6174223a22323032352d30312d30325430333a30343a30355a227d",
		"2c7f0301010b696d706f72744368756e6b01ff8000010201055461626c65010c000104526f777301ff8800000021ff87020101125b5d706c61757369626c657a69702e526f7701ff880001ff8200002bff8103010103526f7701ff82000103010444617465010400010444696d7301ff840001014d01ff8600000016ff83020101085b5d737472696e6701ff8400010c000019ff85010101095b365d75696e74363401ff86000106010c000033ff80010e696d706f727465645f7061676573010101fe9a1801020b6578616d706c652e636f6d022f6101060908070000000000",
		"2c7f0301010b696d706f72744368756e6b01ff8000010201055461626c65010c000104526f777301ff8800000021ff87020101125b5d706c61757369626c657a69702e526f7701ff880001ff8200002bff8103010103526f7701ff82000103010444617465010400010444696d7301ff840001014d01ff8600000016ff83020101085b5d737472696e6701ff8400010c000019ff85010101095b365d75696e74363401ff86000106010c000032ff800111696d706f727465645f76697369746f7273010201fe9a1602060506070164000001fe9a1802060102030405060000",
	}
	chunks, err := sample().Chunks(0)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(chunks))
	for i, c := range chunks {
		got[i] = hex.EncodeToString(c)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunks mismatch (-want +got):\n%s", diff)
	}
}

// TestChunksScan: an import read back from its chunks is the import
// stored, whatever the chunks' limit; a row larger than the limit alone
// is refused.
func TestChunksScan(t *testing.T) {
	d := sample()
	for _, limit := range []int{0, 230, 300} {
		chunks, err := d.Chunks(limit)
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		s := Scan{Website: 1}
		for n, c := range chunks {
			if err := s.Chunk(d.ID, uint32(n), c); err != nil {
				t.Fatalf("limit %d, chunk %d: %v", limit, n, err)
			}
		}
		if len(s.List) != 1 {
			t.Fatalf("limit %d: %d imports read", limit, len(s.List))
		}
		got := s.List[0]
		if diff := cmp.Diff(d.Import, got.Import); diff != "" {
			t.Errorf("limit %d: record mismatch (-want +got):\n%s", limit, diff)
		}
		if diff := cmp.Diff(d.tables, got.tables); diff != "" {
			t.Errorf("limit %d: rows mismatch (-want +got):\n%s", limit, diff)
		}
	}
	_, err := d.Chunks(150)
	var tooLarge *RowTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 150 {
		t.Fatalf("limit 150: %v, want a *RowTooLargeError", err)
	}
}

// TestScanPending: rows of an import without a record are a pending
// import's in cluster mode (skipped) and corrupt otherwise; import 0's
// chunk 0 is the last id given.
func TestScanPending(t *testing.T) {
	chunks, err := sample().Chunks(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, pending := range []bool{false, true} {
		s := Scan{Website: 1, Pending: pending}
		if err := s.Chunk(0, 0, []byte{0, 0, 0, 9}); err != nil {
			t.Fatal(err)
		}
		err := s.Chunk(4, 1, chunks[1])
		if pending != (err == nil) || len(s.List) != 0 || s.Last != 9 {
			t.Errorf("pending %v: %v, %d imports, last %d", pending, err, len(s.List), s.Last)
		}
	}
}

// TestFileName: a name is cut to MaxFile bytes at a character's
// boundary.
func TestFileName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{in: "export.zip", want: "export.zip"},
		{in: strings.Repeat("a", MaxFile+1), want: strings.Repeat("a", MaxFile)},
		{in: "a" + strings.Repeat("é", MaxFile), want: "a" + strings.Repeat("é", (MaxFile-1)/2)},
	} {
		if got := fileName(c.in); got != c.want {
			t.Errorf("fileName of %d bytes: %d bytes, want %d", len(c.in), len(got), len(c.want))
		}
	}
}

// FuzzScan: a chunk of any bytes is read or refused, never a panic, and a
// chunk read whole after its record adds its rows to the import.
func FuzzScan(f *testing.F) {
	chunks, err := sample().Chunks(0)
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range chunks[1:] {
		f.Add(chunks[0], c)
	}
	f.Fuzz(func(t *testing.T, record, chunk []byte) {
		s := Scan{Website: 1}
		if err := s.Chunk(3, 0, record); err != nil || s.List[0].ID != 3 {
			return
		}
		if err := s.Chunk(3, 1, chunk); err != nil {
			return
		}
		n := 0
		for _, rows := range s.List[0].tables {
			n += len(rows)
		}
		if s.List[0].bytes < 0 || n > 0 && s.List[0].bytes == 0 {
			t.Fatalf("%d rows of %d bytes", n, s.List[0].bytes)
		}
	})
}

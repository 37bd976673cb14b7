package visitors

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
)

// TestPeriodChunks: visitors are numbered densely, a change marks its
// chunk only, and the changed chunks read back, in order, into the same
// period.
func TestPeriodChunks(t *testing.T) {
	var p Period
	n := 2*chunkVisitors + 10
	for i := range n {
		id, added, ok := p.Visitor(uint64(1000 + i))
		if id != uint32(i) || !added || !ok {
			t.Fatalf("Visitor #%d = %d, %v, %v", i, id, added, ok)
		}
		p.MarkDirty(id)
	}
	if id, added, _ := p.Visitor(1005); id != 5 || added {
		t.Errorf("Visitor(known) = %d, %v; want 5, false", id, added)
	}
	if p.Len() != n || p.Dirty() != 3 {
		t.Fatalf("Len, Dirty = %d, %d; want %d, 3", p.Len(), p.Dirty(), n)
	}
	p.Visit(7).Row, p.Visit(7).Day = 3, 19000
	chunks := p.TakeDirty()
	if p.Dirty() != 0 || len(chunks) != 3 {
		t.Fatalf("after TakeDirty: Dirty %d, %d chunks", p.Dirty(), len(chunks))
	}
	var q Period
	for _, c := range chunks {
		if err := q.AddChunk(c.Index, c.AppendBinary(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(p, q, cmp.AllowUnexported(Period{}, chunk{}), cmpopts.IgnoreFields(Period{}, "dirty")); diff != "" {
		t.Errorf("read back: mismatch (-want +got):\n%s", diff)
	}
	if id, v, ok := q.Find(1007); !ok || id != 7 || v.Row != 3 {
		t.Errorf("Find(1007) = %d, %+v, %v", id, v, ok)
	}
	if _, _, ok := q.Find(1); ok {
		t.Error("Find of an unknown hash found it")
	}
	// A visitor of the last chunk changes: that chunk only.
	p.MarkDirty(uint32(n - 1))
	if c := p.TakeDirty(); len(c) != 1 || c[0].Index != 2 || len(c[0].hashes) != 10 {
		t.Errorf("TakeDirty after one change: %d chunks", len(c))
	}
	p.MarkChunkDirty(1)
	if c := p.TakeDirty(); len(c) != 1 || c[0].Index != 1 {
		t.Errorf("TakeDirty after MarkChunkDirty(1): %+v", c)
	}
}

// TestAddChunkRefused: chunks out of order, cut short or repeating a
// visitor are errors.
func TestAddChunkRefused(t *testing.T) {
	var p Period
	for i := range chunkVisitors + 1 {
		id, _, _ := p.Visitor(uint64(i + 1))
		p.MarkDirty(id)
	}
	c := p.TakeDirty()
	b0, b1 := c[0].AppendBinary(nil), c[1].AppendBinary(nil)
	for _, tt := range []struct {
		name string
		add  func(q *Period) error
	}{
		{"second first", func(q *Period) error { return q.AddChunk(1, b1) }},
		{"twice", func(q *Period) error { q.AddChunk(0, b0); return q.AddChunk(0, b0) }},
		{"truncated", func(q *Period) error { return q.AddChunk(0, b0[:len(b0)-1]) }},
		{"trailing", func(q *Period) error { return q.AddChunk(0, append(b0[:len(b0):len(b0)], 0)) }},
		{"version 1", func(q *Period) error { return q.AddChunk(0, append([]byte{1}, b0[1:]...)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.add(new(Period)); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestPageview: the day buckets' visit rule.
func TestPageview(t *testing.T) {
	const m = 60 * 1000
	for _, tt := range []struct {
		name     string
		v        Visit
		ms       int64
		host     uint64
		want     bool
		wantLast int64
		wantHost uint64
	}{
		{name: "first", v: Visit{}, ms: 100 * m, want: true, wantLast: 100 * m},
		{name: "within gap", v: Visit{Last: 100 * m, Host: 5}, ms: 129 * m, wantLast: 129 * m, wantHost: 5},
		{name: "after gap", v: Visit{Last: 100 * m, Host: 5}, ms: 131 * m, want: true, wantLast: 131 * m},
		{name: "earlier within gap", v: Visit{Last: 100 * m}, ms: 71 * m, wantLast: 100 * m},
		{name: "earlier past gap", v: Visit{Last: 100 * m}, ms: 69 * m, want: true, wantLast: 100 * m},
		{name: "same host", v: Visit{Last: 100 * m, Host: 5}, ms: 101 * m, host: 5, wantLast: 101 * m, wantHost: 5},
		{name: "other host", v: Visit{Last: 100 * m, Host: 5}, ms: 101 * m, host: 6, want: true, wantLast: 101 * m, wantHost: 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.v
			if got := v.Pageview(tt.ms, tt.host); got != tt.want || v.Last != tt.wantLast || v.Host != tt.wantHost {
				t.Errorf("Pageview = %v (last %d, host %d); want %v (%d, %d)", got, v.Last, v.Host, tt.want, tt.wantLast, tt.wantHost)
			}
		})
	}
}

// TestForgetRowsBefore: rows in days before the cut are forgotten, the
// visits themselves kept; no chunk is marked changed.
func TestForgetRowsBefore(t *testing.T) {
	var p Period
	for i := range 3 {
		id, _, _ := p.Visitor(uint64(i + 1))
		*p.Visit(id) = Visit{Last: 9, Day: buckets.Date(100 + 10*i), Row: uint32(i)}
	}
	p.ForgetRowsBefore(110)
	want := []uint32{segments.NoVisit, 1, 2}
	for i, w := range want {
		if v := p.Visit(uint32(i)); v.Row != w || v.Last != 9 {
			t.Errorf("visitor %d: %+v, want row %d", i, v, w)
		}
	}
	if p.Dirty() != 0 {
		t.Errorf("Dirty = %d, want 0", p.Dirty())
	}
}

// TestDecodeLegacy: a period of format version 1 reads with its hosts
// mapped through the string table, every chunk dirty.
func TestDecodeLegacy(t *testing.T) {
	b := []byte{1}
	b = binary.AppendUvarint(b, 4) // first id
	b = binary.AppendUvarint(b, 2) // visitors
	b = binary.LittleEndian.AppendUint64(b, 0xa)
	b = binary.AppendVarint(b, 1000)
	b = binary.AppendUvarint(b, 0) // direct
	b = binary.LittleEndian.AppendUint64(b, 0xb)
	b = binary.AppendVarint(b, 2000)
	b = binary.AppendUvarint(b, 1+3) // string 3
	p, err := DecodeLegacy(b, func(id uint32) string {
		if id != 3 {
			t.Errorf("host(%d), want host(3)", id)
		}
		return "example.org"
	})
	if err != nil {
		t.Fatal(err)
	}
	if id, v, ok := p.Find(0xb); !ok || id != 5 || *v != (Visit{Last: 2000, Host: HostKey("example.org"), SegLast: 2000, SegHost: HostKey("example.org"), Row: segments.NoVisit}) {
		t.Errorf("Find(0xb) = %d, %+v, %v", id, v, ok)
	}
	if p.Dirty() != 1 {
		t.Errorf("Dirty = %d, want 1", p.Dirty())
	}
	if _, err := DecodeLegacy(b[:len(b)-1], func(uint32) string { return "" }); err == nil {
		t.Error("a truncated period decoded")
	}
}

func FuzzAddChunk(f *testing.F) {
	var p Period
	for i := range 3 {
		id, _, _ := p.Visitor(uint64(i))
		p.Visit(id).Row = uint32(i)
		p.MarkDirty(id)
	}
	f.Add(p.TakeDirty()[0].AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var q Period
		if q.AddChunk(0, b) != nil {
			return
		}
		for id := range uint32(q.Len()) {
			q.MarkDirty(q.first + id)
		}
		var r Period
		if err := r.AddChunk(0, q.TakeDirty()[0].AppendBinary(nil)); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(q.chunks[0].visits, r.chunks[0].visits); diff != "" {
			t.Errorf("round trip: mismatch (-want +got):\n%s", diff)
		}
	})
}

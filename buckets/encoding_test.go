package buckets

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
)

// sampleDay returns a small day using every part of the format.
func sampleDay() *Day {
	d := NewDay(DateOf(2024, 3, 25))
	d.Visits, d.Events = 3, 2
	d.AddPageview(9)
	d.AddPageview(9)
	d.AddPageview(23)
	d.Add(Page, "/", 2, 0)
	d.Add(Page, "/blog/2024/03/spring?utm_source=x", 1, 0)
	d.Add(LandingPage, "/", 3, 0)
	d.Add(Referrer, "", 2, 0)
	d.Add(Referrer, "news.example.com", 1, 0)
	d.Add(Event, "signup:plan:", 2, 0)
	d.Add(Browser, "Firefox", 2, 0)
	d.Add(City, "Zürich", 1<<35, 0) // beyond uint32
	d.AddVisitor(9, 0)
	d.AddVisitor(9, 1)
	d.AddVisitor(23, 100000)
	for id := range uint32(5000) { // a bitmap container and a run
		d.AddVisitor(12, 200000+2*id)
		d.AddVisitor(13, 300000+id)
	}
	return d
}

func TestDayEncoding(t *testing.T) {
	d := sampleDay()
	b, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 2 {
		t.Errorf("version byte = %d, want 2", b[0])
	}
	var got Day
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	checkDay(t, dump(d), &got)
	// The decoded day does not retain its input.
	clear(b)
	checkDay(t, dump(d), &got)
	// Nor does it alias it when updated.
	got.Add(Page, "/", 1, 0)
	got.AddVisitor(12, 7)
	if d.Count(Page, "/") != 2 || d.HasVisitor(7) {
		t.Error("the decoded day shares memory with the original")
	}
	// AppendBinary appends.
	prefix := []byte("key")
	ab, _ := d.AppendBinary(prefix)
	mb, _ := d.MarshalBinary()
	if string(ab) != "key"+string(mb) {
		t.Error("AppendBinary(prefix) != prefix + MarshalBinary()")
	}
	// MarshalBinary does not compact or otherwise change the day.
	before := d.Clone()
	if d.optimized || d.cols[Page].m == nil {
		t.Fatal("sample day unexpectedly compacted")
	}
	if !d.Equal(before) || d.cols[Page].m == nil {
		t.Error("MarshalBinary changed the day")
	}
}

func TestDayDecodeErrors(t *testing.T) {
	good, _ := sampleDay().MarshalBinary()
	v1, err := os.ReadFile("testdata/day-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	// head is a version 2 day up to its strings.
	head := binary.AppendVarint([]byte{2}, 0)
	head = append(head, make([]byte, 2+24)...)
	tooManyDims := binary.AppendUvarint(append(slices.Clone(head), 0), uint64(NumDims)+1)
	// withDims returns a day of no strings and one dimension, page.
	withDims := func(cols ...byte) []byte {
		b := append(slices.Clone(head), 0, 1)
		return append(b, cols...)
	}
	// withStrings returns a day of the strings and one column of page, and
	// no visitor.
	withStrings := func(strs []string, col ...byte) []byte {
		b := binary.AppendUvarint(slices.Clone(head), uint64(len(strs)))
		for _, v := range strs {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
		b = append(b, 1)
		b = append(b, col...)
		return append(b, 0, 0) // no visitor, no hour
	}
	both := []byte{2, 0, 0, 1, 1} // ids 0 and 1, counts 1 and 1
	tests := []struct {
		name    string
		in      []byte
		want    error
		wantMsg string
	}{
		{name: "valid", in: withStrings([]string{"a", "b"}, both...), want: nil},
		{name: "empty", in: nil, want: ErrCorrupt, wantMsg: "buckets: decode day: empty input"},
		{name: "newer version", in: append([]byte{3}, good[1:]...), want: ErrVersion},
		{name: "version zero", in: append([]byte{0}, good[1:]...), want: ErrCorrupt},
		{
			name: "version 1", in: v1,
			want: ErrVersion1, wantMsg: "buckets: decode day: format version 1 needs its website's strings",
		},
		{name: "trailing byte", in: append(slices.Clone(good), 0), want: ErrCorrupt},
		{name: "more dims than known", in: tooManyDims, want: ErrVersion},
		{
			name: "truncated counts", in: withDims(2, 0, 0, 1),
			want: ErrCorrupt, wantMsg: "buckets: decode day: truncated counts of dim page",
		},
		{name: "count claims too much", in: withDims(100, 0, 0), want: ErrCorrupt},
		{name: "zero count", in: withDims(1, 5, 0, 0, 0), want: ErrCorrupt},
		{name: "id beyond uint32", in: withDims(2, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 1, 1, 0, 0), want: ErrCorrupt},
		{name: "bitmap longer than input", in: withDims(0, 50, 1, 2), want: ErrCorrupt},
		{name: "hour bitmap of length zero", in: withDims(0, 0, 1, 0), want: ErrCorrupt},
		{name: "hour beyond 23", in: withDims(0, 0, 0x80, 0x80, 0x80, 0x08), want: ErrCorrupt},
		{
			name: "strings out of order", in: withStrings([]string{"b", "a"}, both...),
			want: ErrCorrupt, wantMsg: "buckets: decode day: string 1 out of order",
		},
		{name: "duplicate string", in: withStrings([]string{"a", "a"}, both...), want: ErrCorrupt},
		{name: "empty string after another", in: withStrings([]string{"a", ""}, both...), want: ErrCorrupt},
		{
			name: "string counted nowhere", in: withStrings([]string{"a", "b"}, 1, 0, 1),
			want: ErrCorrupt, wantMsg: "buckets: decode day: string 1 counted nowhere",
		},
		{
			name: "id beyond the strings", in: withStrings([]string{"a"}, 1, 1, 1),
			want: ErrCorrupt, wantMsg: "buckets: decode day: id 1 beyond the 1 strings in dim page",
		},
		{name: "id beyond the strings, none", in: withDims(1, 0, 1, 0, 0), want: ErrCorrupt},
		{name: "more strings than bytes", in: append(slices.Clone(head), 100, 1, 'a'), want: ErrCorrupt},
		{name: "string longer than input", in: append(slices.Clone(head), 1, 100, 'a'), want: ErrCorrupt},
		{name: "string length overflows", in: append(slices.Clone(head), 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), want: ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := sampleDay()
			want := dump(d)
			err := d.UnmarshalBinary(tt.in)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("UnmarshalBinary = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("UnmarshalBinary = %v, want %v", err, tt.want)
			}
			if tt.wantMsg != "" && err.Error() != tt.wantMsg {
				t.Errorf("error = %q, want %q", err, tt.wantMsg)
			}
			checkDay(t, want, d) // unchanged on error
		})
	}
	// Every proper prefix of a valid encoding is an error.
	for i := range len(good) {
		var d Day
		if err := d.UnmarshalBinary(good[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: %v, want ErrCorrupt", i, err)
		}
	}
}

// TestDayDecodeV1Golden decodes a day written by the version 1 encoder
// (testdata, written before version 2 existed) with its website's strings.
func TestDayDecodeV1Golden(t *testing.T) {
	day, err := os.ReadFile("testdata/day-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	chunk, err := os.ReadFile("testdata/strings-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	var strs Strings
	if err := strs.UnmarshalBinary(chunk); err != nil {
		t.Fatal(err)
	}
	var d Day
	if err := d.UnmarshalBinaryV1(day, strs.Value); err != nil {
		t.Fatal(err)
	}
	want := dayDump{
		Period: DateOf(2025, 6, 30),
		Visits: 4,
		Events: 1,
		Hours:  [24]uint64{8: 2, 9: 1, 13: 3},
		Counts: map[Dim]map[string]uint64{
			Page:        {"/": 3, "/about": 2, "/pricing": 1},
			LandingPage: {"/": 3, "/blog/a?x=1": 1},
			Referrer:    {"news.example.com": 2},
			Event:       {"signup::": 1},
			Browser:     {"Firefox": 3},
			Country:     {"DE": 3},
			Continent:   {"Europe": 3},
			City:        {"Berlin": 1 << 33},
		},
		Visitors:     []uint32{0, 1, 2},
		HourVisitors: map[int][]uint32{8: {0}, 9: {1}, 13: {0, 2}},
	}
	checkDay(t, want, &d)
	// Re-encoded, it is a version 2 day with the same contents.
	again := roundTrip(t, &d)
	checkDay(t, want, again)
	// The day keeps none of the table's memory.
	table := map[*byte]bool{}
	for _, v := range values(&strs) {
		table[unsafe.StringData(v)] = true
	}
	for _, v := range d.dict.values {
		if table[unsafe.StringData(v)] {
			t.Errorf("value %q shares memory with the Strings table", v)
		}
	}
}

// TestDayDecodeV1 migrates random days written in version 1 with a table
// shared by all of them, as a website's was.
func TestDayDecodeV1(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	var strs Strings
	days := randomDays(r, 30, []Date{3, 4})
	encoded := make([][]byte, len(days))
	for i, d := range days {
		encoded[i] = appendV1(nil, d, &strs)
	}
	var table Strings
	if err := table.UnmarshalBinary(strs.appendChunk(nil, 0)); err != nil {
		t.Fatal(err)
	}
	for i, d := range days {
		var got Day
		if err := got.UnmarshalBinaryV1(encoded[i], table.Value); err != nil {
			t.Fatalf("day %d: %v", i, err)
		}
		checkDay(t, dump(d), &got)
		if !got.Equal(d) {
			t.Fatalf("day %d not Equal", i)
		}
		// Decoded days are compacted: their encoding is the one of d.
		a, _ := got.MarshalBinary()
		b, _ := d.MarshalBinary()
		if string(a) != string(b) {
			t.Fatalf("day %d: version 2 encodings differ", i)
		}
		// UnmarshalBinaryV1 reads version 2 too, without asking for values.
		var v2 Day
		if err := v2.UnmarshalBinaryV1(b, func(uint32) (string, bool) { panic("called for version 2") }); err != nil {
			t.Fatal(err)
		}
		checkDay(t, dump(d), &v2)
	}

	sample := sampleDay()
	var s Strings
	v1 := appendV1(nil, sample, &s)
	tests := []struct {
		name  string
		value func(uint32) (string, bool)
		want  error
		check func(t *testing.T, d *Day)
	}{
		{name: "unknown id", value: func(id uint32) (string, bool) { return s.Value(id - 1) }, want: ErrCorrupt},
		{name: "no table", value: nil, want: ErrCorrupt},
		{
			name:  "two ids, one string",
			value: func(uint32) (string, bool) { return "same", true },
			check: func(t *testing.T, d *Day) {
				if got := d.Count(Referrer, "same"); got != 3 {
					t.Errorf("Count(Referrer, same) = %d, want 3 (2 + 1)", got)
				}
				if got := d.Len(Page); got != 1 {
					t.Errorf("Len(Page) = %d, want 1", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDay(99)
			err := d.UnmarshalBinaryV1(v1, tt.value)
			if !errors.Is(err, tt.want) {
				t.Fatalf("UnmarshalBinaryV1 = %v, want %v", err, tt.want)
			}
			if err != nil {
				if d.Period != 99 {
					t.Error("failed decode changed the day")
				}
				return
			}
			tt.check(t, d)
		})
	}
}

// TestDecodeBitmap feeds hand-made roaring bitmaps, valid and not, to the
// guarded decoder.
func TestDecodeBitmap(t *testing.T) {
	le16 := func(b []byte, vs ...uint16) []byte {
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
		return b
	}
	le32 := binary.LittleEndian.AppendUint32
	// runBitmap: cookie with one container, run flag set, one key.
	runs := func(key uint16, ivs ...uint16) []byte {
		b := le32(nil, roaringCookie) // size-1 = 0 in the high bits
		b = append(b, 1)              // run flags
		b = le16(b, key, 0)           // key, card-1 (ignored for runs)
		b = le16(b, uint16(len(ivs)/2))
		return le16(b, ivs...)
	}
	array := func(vs ...uint16) []byte {
		b := le32(nil, roaringCookieNoRun)
		b = le32(b, 1)
		b = le16(b, 0, uint16(len(vs)-1))
		b = le32(b, 0) // offset
		return le16(b, vs...)
	}
	valid := func(ids ...uint32) []byte {
		bm := roaring.BitmapOf(ids...)
		bm.RunOptimize()
		b, _ := bm.ToBytes()
		return b
	}
	dense := make([]uint32, 5000)
	for i := range dense {
		dense[i] = uint32(i * 3)
	}
	bitmapContainer := valid(dense...)
	badPopcount := slices.Clone(bitmapContainer)
	badPopcount[len(badPopcount)-1] ^= 0x80

	tests := []struct {
		name    string
		in      []byte
		wantErr bool
		want    []uint32
	}{
		{name: "empty bitmap", in: valid(), want: []uint32{}},
		{name: "array", in: array(1, 5, 9), want: []uint32{1, 5, 9}},
		{name: "runs", in: runs(1, 0, 2, 10, 0), want: []uint32{65536, 65537, 65538, 65546}},
		{name: "adjacent runs", in: runs(0, 0, 1, 2, 1), want: []uint32{0, 1, 2, 3}},
		{name: "roaring's own", in: valid(1, 2, 3, 1<<20, 1<<31), want: []uint32{1, 2, 3, 1 << 20, 1 << 31}},
		{name: "bitmap container", in: bitmapContainer, want: dense},
		{name: "nothing", in: nil, wantErr: true},
		{name: "bad cookie", in: le32(nil, 7), wantErr: true},
		{name: "huge size", in: le32(le32(nil, roaringCookieNoRun), 1<<20), wantErr: true},
		{name: "size without header", in: le32(le32(nil, roaringCookieNoRun), 1<<16), wantErr: true},
		{name: "array unsorted", in: array(5, 1), wantErr: true},
		{name: "array duplicate", in: array(5, 5), wantErr: true},
		{name: "array truncated", in: array(1, 2, 3)[:20], wantErr: true},
		{name: "overlapping runs", in: runs(0, 0, 5, 3, 1), wantErr: true},
		{name: "run beyond container", in: runs(0, 65535, 1), wantErr: true},
		{name: "empty run container", in: runs(0), wantErr: true},
		{name: "bitmap popcount mismatch", in: badPopcount, wantErr: true},
		{name: "trailing bytes", in: append(valid(1), 0), wantErr: true},
		{name: "keys unsorted", in: func() []byte {
			b := le32(nil, roaringCookieNoRun)
			b = le32(b, 2)
			b = le16(b, 5, 0, 3, 0)
			b = le32(le32(b, 0), 0)
			return le16(b, 1, 1)
		}(), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bm, err := decodeBitmap(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("decodeBitmap = %v, want an error", bm.ToArray())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := bm.ToArray(); !slices.Equal(got, tt.want) {
				t.Fatalf("decodeBitmap = %v, want %v", got, tt.want)
			}
			// The bitmap does not alias the input.
			clear(tt.in)
			if got := bm.ToArray(); !slices.Equal(got, tt.want) {
				t.Fatalf("after clearing the input: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDecodeAllocations checks that small malicious inputs cannot make the
// decoders allocate much more than their size.
func TestDecodeAllocations(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var inputs [][]byte
	good, _ := sampleDay().MarshalBinary()
	var strs Strings
	goodV1 := appendV1(nil, sampleDay(), &strs)
	for i := range 400 {
		b := slices.Clone(good)
		if i%2 == 1 {
			b = slices.Clone(goodV1)
		}
		for range 1 + r.IntN(4) {
			b[r.IntN(len(b))] = byte(r.Uint32())
		}
		inputs = append(inputs, b)
	}
	// Bitmaps that claim many containers or long runs.
	le32 := binary.LittleEndian.AppendUint32
	inputs = append(inputs,
		le32(le32(nil, roaringCookieNoRun), 1<<16),
		le32(nil, roaringCookie|0xffff<<16),
		[]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
	)
	total := 0
	for _, in := range inputs {
		total += len(in)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, in := range inputs {
		var d Day
		_ = d.UnmarshalBinary(in)
		_ = d.UnmarshalBinaryV1(in, func(id uint32) (string, bool) { return "v", id < 1000 })
		var s Strings
		_ = s.UnmarshalBinary(in)
		_, _ = decodeBitmap(in)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d inputs of %d bytes in all: %d bytes allocated", len(inputs), total, allocated)
	if limit := uint64(64*total + 1<<20); allocated > limit {
		t.Errorf("decoding allocated %d bytes for %d bytes of input, limit %d", allocated, total, limit)
	}
}

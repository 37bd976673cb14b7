package stored

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/idem"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/snapshot"
)

// TestMeta: a meta record is written with the lowest version that holds
// its keys (1 without keys, 2 with whole keys, 3 with a key of a call in
// parts not all applied) and reads back; version 1's bytes are those
// every earlier version wrote.
func TestMeta(t *testing.T) {
	dates := map[buckets.Date]struct{}{20000: {}, 19990: {}, 20010: {}}
	var none idem.Table
	v1 := AppendMeta(nil, 42, dates, &none)
	// version 1, seq 42, 3 dates delta-coded: 19990, +10, +10.
	if want := []byte{1, 42, 3, 0xac, 0xb8, 0x02, 20, 20}; !bytes.Equal(v1, want) {
		t.Errorf("version 1 record %x, want %x", v1, want)
	}
	whole := &idem.Mark{Website: 1, Key: idem.Digest("a"), Ms: 1000}
	part := &idem.Mark{Website: 1, Key: idem.Digest("b"), Ms: 1000, Part: 0, Parts: 3}
	for _, c := range []struct {
		marks   []*idem.Mark
		version byte
	}{{nil, 1}, {[]*idem.Mark{whole}, 2}, {[]*idem.Mark{whole, part}, 3}} {
		var keys idem.Table
		for _, m := range c.marks {
			keys.Add(m, 100)
		}
		b := AppendMeta(nil, 42, dates, &keys)
		if b[0] != c.version {
			t.Errorf("%d keys: version %d, want %d", len(c.marks), b[0], c.version)
		}
		got := map[buckets.Date]struct{}{}
		var gotKeys idem.Table
		seq, err := DecodeMeta(b, got, &gotKeys)
		if err != nil || seq != 42 || !maps.Equal(got, dates) || gotKeys.Len() != len(c.marks) {
			t.Errorf("version %d read back: seq %d, dates %v, %d keys, %v", c.version, seq, got, gotKeys.Len(), err)
		}
		if e, ok := gotKeys.Lookup(part.Key, 1000); c.version == 3 && (!ok || !e.Partial() || e.Done != 1 || e.Parts != 3) {
			t.Errorf("the partial key read back: %+v, %v; want done 1 of 3", e, ok)
		}
		for _, bad := range [][]byte{b[:len(b)-1], append(bytes.Clone(b), 0), append([]byte{4}, b[1:]...), {}} {
			if _, err := DecodeMeta(bad, map[buckets.Date]struct{}{}, &gotKeys); !errors.Is(err, snapshot.ErrCorrupt) {
				t.Errorf("DecodeMeta(%x) = %v, want ErrCorrupt", bad, err)
			}
		}
	}
}

// TestDay: a day value holds its buckets and segments in one envelope and
// reads back with or without the segments; a value without the envelope
// (a store older than the segments) is a buckets day with empty segments.
func TestDay(t *testing.T) {
	d := buckets.NewDay(0)
	d.AddPageview(10)
	seg := segments.NewDay()
	b, err := EncodeDay(d, seg)
	if err != nil {
		t.Fatal(err)
	}
	got, gotSeg, err := DecodeDay(b, true)
	if err != nil || got.Pageviews() != 1 || gotSeg == nil || gotSeg.Hits() != 0 {
		t.Fatalf("DecodeDay: %v, %v, %v", got, gotSeg, err)
	}
	if _, gotSeg, err := DecodeDay(b, false); err != nil || gotSeg != nil {
		t.Errorf("DecodeDay without segments: %v, %v", gotSeg, err)
	}
	legacy, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if got, gotSeg, err := DecodeDay(legacy, true); err != nil || got.Pageviews() != 1 || gotSeg == nil {
		t.Errorf("a buckets day alone: %v, %v, %v", got, gotSeg, err)
	}
	for _, bad := range [][]byte{{dayEnvelope}, {dayEnvelope, 0x7f, 1}} {
		if _, _, err := DecodeDay(bad, true); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("DecodeDay(%x) = %v, want ErrCorrupt", bad, err)
		}
	}
}

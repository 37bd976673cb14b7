package record

import (
	"bytes"
	"testing"
)

// FuzzDecode checks that a record of any bytes is decoded or refused,
// never a panic, and that what decodes encodes back to a record that
// decodes alike (older versions re-encode as the current one).
func FuzzDecode(f *testing.F) {
	r := Hit{Website: 3, Date: 20000, Period: 19999, Hour: 7, Event: true, Ms: 1_728_000_000_123, Hash: 42,
		Page: "/pricing", EventRow: "Signup:1:", Seg: Seg{Path: "/pricing", Landing: "utm_source=x", Props: []Prop{{"plan", "pro"}},
			Scroll: 80, Name: "Signup"}}
	f.Add(r.AppendBinary(nil))
	f.Add([]byte{1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Hit
		if h.Decode(b) != nil {
			return
		}
		enc := h.AppendBinary(nil)
		var h2 Hit
		if err := h2.Decode(enc); err != nil {
			t.Fatalf("re-encoded record refused: %v", err)
		}
		if !bytes.Equal(h2.AppendBinary(nil), enc) {
			t.Fatal("decode(encode(r)) encodes differently")
		}
	})
}

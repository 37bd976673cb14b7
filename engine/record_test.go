package engine

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/wire"
)

// TestRecordDecodeInterned checks that decoding with an interner gives the
// record decode gives, and shares one string per value across records.
func TestRecordDecodeInterned(t *testing.T) {
	r := record{website: 3, date: 20000, period: 19999, hour: 7, ms: 1_728_000_000_123, hash: 42,
		page: "/pricing", refHost: "www.google.com", browser: "Chrome", os: "Windows", device: "desktop",
		resolution: "1920x1080", language: "de", country: "DE:Germany", continent: "EU:Europe",
		seg: segFields{path: "/pricing", host: "example.com", refURL: "google.com/search", browserVer: "120", landing: "utm_source=news&gclid=abc123",
			osVer: "10", cityID: 2950159, props: []Prop{{Key: "plan", Value: "pro"}}, engagedMs: 1500, scroll: 80}}
	enc := r.appendBinary(nil)
	var want record
	if err := want.decode(enc); err != nil {
		t.Fatal(err)
	}
	var in wire.Interner
	var a, b record
	if err := a.decodeWith(enc, &in); err != nil {
		t.Fatal(err)
	}
	if err := b.decodeWith(enc, &in); err != nil {
		t.Fatal(err)
	}
	opt := cmp.AllowUnexported(record{}, segFields{})
	if diff := cmp.Diff(want, a, opt); diff != "" {
		t.Errorf("decodeWith differs from decode (-decode +decodeWith):\n%s", diff)
	}
	if diff := cmp.Diff(want, b, opt); diff != "" {
		t.Errorf("the second decodeWith differs from decode (-decode +decodeWith):\n%s", diff)
	}
	if unsafe.StringData(a.browser) != unsafe.StringData(b.browser) || unsafe.StringData(a.seg.props[0].Value) != unsafe.StringData(b.seg.props[0].Value) {
		t.Error("the second record's strings were allocated again")
	}
	if in.Holds(a.seg.landing) {
		t.Error("the landing parameters, unique to a visit, were interned")
	}
	// Decoding from a buffer that is then overwritten must not change the
	// strings handed out: they are copies.
	buf := append([]byte(nil), enc...)
	var c record
	if err := c.decodeWith(buf, &wire.Interner{}); err != nil {
		t.Fatal(err)
	}
	clear(buf)
	if diff := cmp.Diff(want, c, opt); diff != "" {
		t.Errorf("the strings share the decoded buffer (-want +got):\n%s", diff)
	}
}

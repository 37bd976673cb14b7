package record

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/wire"
)

// TestRecordDecodeInterned checks that decoding with an interner gives the
// record decode gives, and shares one string per value across records.
func TestRecordDecodeInterned(t *testing.T) {
	r := Hit{Website: 3, Date: 20000, Period: 19999, Hour: 7, Ms: 1_728_000_000_123, Hash: 42,
		Page: "/pricing", RefHost: "www.google.com", Browser: "Chrome", OS: "Windows", Device: "desktop",
		Resolution: "1920x1080", Language: "de", Country: "DE:Germany", Continent: "EU:Europe",
		Seg: Seg{Path: "/pricing", Host: "example.com", RefURL: "google.com/search", BrowserVer: "120", Landing: "utm_source=news&gclid=abc123",
			OSVer: "10", CityID: 2950159, Props: []Prop{{Key: "plan", Value: "pro"}}, EngagedMs: 1500, Scroll: 80}}
	enc := r.AppendBinary(nil)
	var want Hit
	if err := want.Decode(enc); err != nil {
		t.Fatal(err)
	}
	var in wire.Interner
	var a, b Hit
	if err := a.DecodeWith(enc, &in); err != nil {
		t.Fatal(err)
	}
	if err := b.DecodeWith(enc, &in); err != nil {
		t.Fatal(err)
	}
	opt := cmp.AllowUnexported(Hit{}, Seg{})
	if diff := cmp.Diff(want, a, opt); diff != "" {
		t.Errorf("decodeWith differs from decode (-decode +decodeWith):\n%s", diff)
	}
	if diff := cmp.Diff(want, b, opt); diff != "" {
		t.Errorf("the second decodeWith differs from decode (-decode +decodeWith):\n%s", diff)
	}
	if unsafe.StringData(a.Browser) != unsafe.StringData(b.Browser) || unsafe.StringData(a.Seg.Props[0].Value) != unsafe.StringData(b.Seg.Props[0].Value) {
		t.Error("the second record's strings were allocated again")
	}
	if in.Holds(a.Seg.Landing) {
		t.Error("the landing parameters, unique to a visit, were interned")
	}
	// Decoding from a buffer that is then overwritten must not change the
	// strings handed out: they are copies.
	buf := append([]byte(nil), enc...)
	var c Hit
	if err := c.DecodeWith(buf, &wire.Interner{}); err != nil {
		t.Fatal(err)
	}
	clear(buf)
	if diff := cmp.Diff(want, c, opt); diff != "" {
		t.Errorf("the strings share the decoded buffer (-want +got):\n%s", diff)
	}
}

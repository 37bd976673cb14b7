package engine

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
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
	var in interner
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
	if _, kept := in.m[a.seg.landing]; kept {
		t.Error("the landing parameters, unique to a visit, were interned")
	}
	// Decoding from a buffer that is then overwritten must not change the
	// strings handed out: they are copies.
	buf := append([]byte(nil), enc...)
	var c record
	if err := c.decodeWith(buf, &interner{}); err != nil {
		t.Fatal(err)
	}
	clear(buf)
	if diff := cmp.Diff(want, c, opt); diff != "" {
		t.Errorf("the strings share the decoded buffer (-want +got):\n%s", diff)
	}
}

// TestInternerBounded checks the interner's limits: long strings are not
// kept, and it never holds more than maxInterned strings.
func TestInternerBounded(t *testing.T) {
	var in interner
	long := []byte(strings.Repeat("x", maxInternLen+1))
	if s := in.get(long); s != string(long) || len(in.m) != 0 {
		t.Errorf("a string of %d bytes: got %d bytes back, %d kept", len(long), len(s), len(in.m))
	}
	for i := range 3 * maxInterned {
		v := []byte{byte(i), byte(i >> 8), byte(i >> 16)}
		if s := in.get(v); s != string(v) {
			t.Fatalf("get(%q) = %q", v, s)
		}
		if len(in.m) > maxInterned || len(in.m) == 0 {
			t.Fatalf("%d strings kept after %d distinct values", len(in.m), i+1)
		}
	}
	// After it forgot everything, it shares again.
	a, b := in.get([]byte("Chrome")), in.get([]byte("Chrome"))
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("a value got twice after a reset was allocated twice")
	}
}

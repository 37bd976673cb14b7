package wire

import (
	"strings"
	"testing"
	"unsafe"
)

// TestInternerBounded checks the interner's limits: long strings are not
// kept, and it never holds more than maxInterned strings.
func TestInternerBounded(t *testing.T) {
	var in Interner
	long := []byte(strings.Repeat("x", maxInternLen+1))
	if s := in.Get(long); s != string(long) || len(in.m) != 0 {
		t.Errorf("a string of %d bytes: got %d bytes back, %d kept", len(long), len(s), len(in.m))
	}
	for i := range 3 * maxInterned {
		v := []byte{byte(i), byte(i >> 8), byte(i >> 16)}
		if s := in.Get(v); s != string(v) {
			t.Fatalf("get(%q) = %q", v, s)
		}
		if len(in.m) > maxInterned || len(in.m) == 0 {
			t.Fatalf("%d strings kept after %d distinct values", len(in.m), i+1)
		}
	}
	// After it forgot everything, it shares again.
	a, b := in.Get([]byte("Chrome")), in.Get([]byte("Chrome"))
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("a value got twice after a reset was allocated twice")
	}
}

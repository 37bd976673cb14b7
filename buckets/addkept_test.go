package buckets

import (
	"strings"
	"testing"
	"unsafe"
)

// TestAddKept: AddKept counts as Add does and returns the day's own copy
// of the value (equal, never the caller's memory), the same copy for a
// value counted again, and Other once the dimension is full.
func TestAddKept(t *testing.T) {
	d := NewDay(0)
	buf := "/a/page/from/a/larger/buffer?q=1"
	v := buf[:len("/a/page")]
	kept, other := d.AddKept(Page, v, 1, 2)
	if other || kept != v || unsafe.StringData(kept) == unsafe.StringData(v) {
		t.Fatalf("AddKept(%q) = %q, %v: want an equal copy of the day's own", v, kept, other)
	}
	again, _ := d.AddKept(Page, strings.Clone(v), 1, 2)
	if unsafe.StringData(again) != unsafe.StringData(kept) {
		t.Errorf("a value counted again: another copy returned, want the day's one")
	}
	if _, other := d.AddKept(Page, "/b", 1, 2); other {
		t.Fatal("the second value was counted under Other with a limit of 2")
	}
	if kept, other := d.AddKept(Page, "/c", 1, 2); !other || kept != Other {
		t.Errorf("a value over the limit: %q, %v, want Other", kept, other)
	}
	if got := d.Count(Page, "/a/page"); got != 2 {
		t.Errorf("count of /a/page = %d, want 2", got)
	}
	d.Compact()
	kept, _ = d.AddKept(Page, "/a/page", 1, 2)
	if kept != "/a/page" || d.Count(Page, "/a/page") != 3 {
		t.Errorf("after Compact: %q, count %d", kept, d.Count(Page, "/a/page"))
	}
}

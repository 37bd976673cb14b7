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
	// Compacted, the day's values are one allocation: a slice of it would
	// keep all of them alive, so the caller keeps its own.
	d.Compact()
	mine := strings.Clone("/a/page")
	kept, _ = d.AddKept(Page, mine, 1, 2)
	if unsafe.StringData(kept) != unsafe.StringData(mine) || d.Count(Page, "/a/page") != 3 {
		t.Errorf("after Compact: %q (the caller's: %v), count %d, want the caller's own string and 3", kept, unsafe.StringData(kept) == unsafe.StringData(mine), d.Count(Page, "/a/page"))
	}
	// A value new since is an allocation of its own again.
	kept, _ = d.AddKept(Page, buf[:2], 1, 0)
	if kept != "/a" || unsafe.StringData(kept) == unsafe.StringData(buf) {
		t.Errorf("a value new since Compact: %q, want the day's own copy", kept)
	}
}

package segments

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLRU: the bounds on the size and on the number of entries hold,
// evicting the least recently used; a value over the size bound is not
// kept; Get's valid decides a hit.
func TestLRU(t *testing.T) {
	keys := func(c *LRU[string, int]) []string {
		var ks []string
		for k := range c.m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	c := NewLRU[string, int](3, 10)
	c.Put("a", 1, 4)
	c.Put("b", 2, 4)
	if _, ok := c.Get("a", nil); !ok { // a is now used after b
		t.Fatal("a not found")
	}
	c.Put("c", 3, 4) // 12 > 10: b goes
	if diff := cmp.Diff([]string{"a", "c"}, keys(c)); diff != "" {
		t.Errorf("after the size bound: mismatch (-want +got):\n%s", diff)
	}
	c.Put("d", 4, 1)
	c.Put("e", 5, 1) // a fourth entry: a, the least recently used, goes
	if diff := cmp.Diff([]string{"c", "d", "e"}, keys(c)); diff != "" {
		t.Errorf("after the count bound: mismatch (-want +got):\n%s", diff)
	}
	c.Put("big", 6, 11)
	if c.Has("big") || c.Size() != 6 || c.Len() != 3 {
		t.Errorf("a value over the bound: kept %v, size %d, %d entries", c.Has("big"), c.Size(), c.Len())
	}
	if _, ok := c.Get("d", func(v int) bool { return v != 4 }); ok {
		t.Error("Get found a value valid refused")
	}
	c.Put("d", 7, 2) // replaces
	if v, ok := c.Get("d", nil); !ok || v != 7 || c.Size() != 7 {
		t.Errorf("replaced d: %d, %v, size %d", v, ok, c.Size())
	}
	c.DeleteFunc(func(k string, _ int) bool { return k != "d" })
	if diff := cmp.Diff([]string{"d"}, keys(c)); diff != "" || c.Size() != 2 || c.Hits() != 2 {
		t.Errorf("after DeleteFunc: size %d, hits %d; mismatch (-want +got):\n%s", c.Size(), c.Hits(), diff)
	}
}

// TestLRUExactBounds: the bounds are inclusive (entries filling the size
// bound exactly are all kept, and so is one value of exactly the bound); a
// Get that valid refuses does not count as a use; a value over the bound
// leaves the entry under its key in place.
func TestLRUExactBounds(t *testing.T) {
	c := NewLRU[string, int](0, 10)
	c.Put("a", 1, 4)
	c.Put("b", 2, 4)
	c.Put("c", 3, 2)
	if c.Len() != 3 || c.Size() != 10 {
		t.Fatalf("4+4+2 under a bound of 10: %d entries, size %d; want all 3 kept", c.Len(), c.Size())
	}
	if _, ok := c.Get("a", func(int) bool { return false }); ok {
		t.Fatal("Get found a value valid refused")
	}
	c.Put("d", 4, 1) // a is still the least recently used: the refused Get did not use it
	if c.Has("a") || !c.Has("b") {
		t.Errorf("after a refused Get of a: a kept %v, b kept %v; want a evicted, b kept", c.Has("a"), c.Has("b"))
	}
	c.Put("b", 5, 11) // over the bound: not kept, and b stays as it was
	if v, ok := c.Get("b", nil); !ok || v != 2 {
		t.Errorf("a value over the bound under b: b is %d, %v; want the old 2 kept", v, ok)
	}
	c.Put("whole", 6, 10) // exactly the bound: kept, every other entry evicted
	if !c.Has("whole") || c.Len() != 1 || c.Size() != 10 {
		t.Errorf("a value of exactly the bound: kept %v, %d entries, size %d", c.Has("whole"), c.Len(), c.Size())
	}
	c.Put("x", 7, 1) // 10+1 is over the bound by one: whole goes
	if c.Has("whole") || c.Size() != 1 {
		t.Errorf("one over the bound: whole kept %v, size %d; want it evicted, size 1", c.Has("whole"), c.Size())
	}
	n := NewLRU[int, int](2, 100)
	n.Put(1, 1, 1)
	n.Put(2, 2, 1)
	if n.Len() != 2 {
		t.Errorf("2 entries under a count bound of 2: %d kept", n.Len())
	}
}

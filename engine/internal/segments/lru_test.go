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

package segments

import (
	"reflect"
	"slices"
	"testing"
)

// TestPartCache: a part decodes as DecodePart does, once; the cache keeps
// within its bound, evicting the least recently used; a part is checked
// against the dictionary of the day asking for it.
func TestPartCache(t *testing.T) {
	d := sampleDay()
	part := d.AppendPart(nil)
	want, err := DecodePart(part, len(d.Strs))
	if err != nil {
		t.Fatal(err)
	}
	size := want.Estimate()
	c := NewPartCache(2 * size)
	got, err := c.Decode(part, len(d.Strs))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cached decode:\n got %+v\nwant %+v", got, want)
	}
	again, err := c.Decode(slices.Clone(part), len(d.Strs))
	if err != nil || again != got {
		t.Errorf("the same bytes decoded again (%p, then %p; %v)", got, again, err)
	}
	// A dictionary too small for the part's ids is an error, cached or not.
	if _, err := c.Decode(part, 1); err == nil {
		t.Error("a part with ids beyond the dictionary decoded from the cache")
	}
	// Other bytes are another part; a third evicts the least recently used.
	d2 := sampleDay()
	d2.VPageviews[0] = 9
	part2 := d2.AppendPart(nil)
	d3 := sampleDay()
	d3.VPageviews[0] = 5
	part3 := d3.AppendPart(nil)
	p2, err := c.Decode(part2, len(d2.Strs))
	if err != nil || p2 == got || p2.VPageviews[0] != 9 {
		t.Fatalf("another part: %+v, %v", p2, err)
	}
	c.Decode(part, len(d.Strs)) // part is now used more recently than part2
	if _, err := c.Decode(part3, len(d3.Strs)); err != nil {
		t.Fatal(err)
	}
	if c.lru.Size() > c.max || c.lru.Len() != 2 {
		t.Errorf("%d parts of %d bytes cached, bound %d", c.lru.Len(), c.lru.Size(), c.max)
	}
	if again, _ := c.Decode(part, len(d.Strs)); again != got {
		t.Error("the most recently used part was evicted")
	}
	if again, _ := c.Decode(part2, len(d2.Strs)); again == p2 {
		t.Error("the least recently used part was kept")
	}
	// A part larger than the bound is decoded, never cached.
	small := NewPartCache(size - 1)
	if _, err := small.Decode(part, len(d.Strs)); err != nil || small.lru.Len() != 0 {
		t.Errorf("a part over the bound: %d cached, %v", small.lru.Len(), err)
	}
}

// TestWholeCache: a cached whole day is found only for the same live
// segments with the rows they had when it was made (a row added since, or
// other segments of the day, is a miss), and Drop forgets only its
// website's days.
func TestWholeCache(t *testing.T) {
	c := NewWholeCache(1 << 20)
	live := sampleDay()
	w := live.Clone()
	c.Put(1, 20410, live, live.Visits(), live.Hits(), live.RowBytes(), w)
	c.Put(2, 20410, live, live.Visits(), live.Hits(), live.RowBytes(), w)
	if got := c.Get(1, 20410, live); got != w {
		t.Fatalf("the same live day, unchanged: %p, want %p", got, w)
	}
	if got := c.Get(1, 20410, sampleDay()); got != nil {
		t.Error("other segments of the day found the whole day made of the first")
	}
	if got := c.Get(1, 20411, live); got != nil {
		t.Error("another date found the whole day")
	}
	live.AddHit(&Hit{Visit: NoVisit, Ms: 1, Kind: KindEvent, Scroll: -1})
	if got := c.Get(1, 20410, live); got != nil {
		t.Error("a hit added to the live day since: the whole day still found")
	}
	live2 := sampleDay()
	c.Put(1, 20410, live2, live2.Visits(), live2.Hits(), live2.RowBytes(), w)
	live2.AddVisit(20410, 8, 1, new([NumAttrs]uint32), 0, 0, 0)
	if got := c.Get(1, 20410, live2); got != nil {
		t.Error("a visit added to the live day since: the whole day still found")
	}
	l3 := sampleDay()
	c.Put(2, 20410, l3, l3.Visits(), l3.Hits(), l3.RowBytes(), w)
	c.Put(3, 20410, l3, l3.Visits(), l3.Hits(), l3.RowBytes(), w)
	c.Drop(3)
	if c.Get(2, 20410, l3) != w || c.Get(3, 20410, l3) != nil {
		t.Error("Drop(3) did not forget only website 3's days")
	}
}

package realtime

import "testing"

const minuteMs = 60000

// TestWindow: pageviews a minute over the last 30, distinct visitors over
// the last 5, nothing of minutes that left the window.
func TestWindow(t *testing.T) {
	var w Window
	now := int64(1_000_000) // Unix minute
	for ago, keys := range map[int64][]uint64{0: {1, 1, 2}, 4: {2, 3}, 5: {4}, 29: {5}, 30: {6}} {
		for _, k := range keys {
			w.Add((now-ago)*minuteMs+123, k)
		}
	}
	pv, visitors, over := w.Read(now)
	want := [30]uint64{0: 1, 24: 1, 25: 2, 29: 3}
	if pv != want || visitors != 3 || over {
		t.Errorf("Read = %v, %d, %v; want %v, 3, false", pv, visitors, over, want)
	}
	// A minute later, minute now-4 (visitor 3) has left the visitors'.
	if _, visitors, _ := w.Read(now + 1); visitors != 2 {
		t.Errorf("visitors a minute later = %d, want 2", visitors)
	}
	if _, visitors, _ := w.Read(now + 5); visitors != 0 {
		t.Errorf("visitors 5 minutes later = %d, want 0", visitors)
	}
	if n := w.Reset(); n <= 0 {
		t.Errorf("Reset = %d bytes, want > 0", n)
	}
	if pv, visitors, over := w.Read(now); pv != ([30]uint64{}) || visitors != 0 || over {
		t.Errorf("after Reset: %v, %d, %v", pv, visitors, over)
	}
}

// TestWindowOver: a minute of more distinct visitors than a slot keeps is
// over, its pageviews still counted, its bytes bounded; repeats of few
// visitors are not.
func TestWindowOver(t *testing.T) {
	var w Window
	now := int64(500)
	var grew int64
	for i := range 2 * SlotKeys {
		grew += w.Add(now*minuteMs, uint64(i%(SlotKeys/2))) // repeats: half a slot of visitors
	}
	if pv, visitors, over := w.Read(now); pv[29] != 2*SlotKeys || visitors != SlotKeys/2 || over {
		t.Errorf("repeats: %d pageviews, %d visitors, over %v", pv[29], visitors, over)
	}
	for i := range 2 * SlotKeys {
		grew += w.Add(now*minuteMs, uint64(SlotKeys+i))
	}
	if _, _, over := w.Read(now); !over {
		t.Error("a flood of visitors: not over")
	}
	if grew > SlotKeys*8*2 {
		t.Errorf("slot grew by %d bytes, want at most %d", grew, SlotKeys*8*2)
	}
	if _, _, over := w.Read(now + 5); over {
		t.Error("over once the minute left the window")
	}
}

// TestWindowFutureDrop: a pageview of a minute older than one a slot
// already holds is not counted, and the visitors are reported over until
// that minute leaves the 5-minute window.
func TestWindowFutureDrop(t *testing.T) {
	var w Window
	now := int64(700)
	w.Add((now+5)*minuteMs, 1) // ahead of now, in now's slot
	if n := w.Add(now*minuteMs, 2); n != 0 {
		t.Errorf("Add of a minute a slot has moved past = %d bytes", n)
	}
	if _, _, over := w.Read(now); !over {
		t.Error("not over after a dropped key")
	}
	if _, _, over := w.Read(now + 5); over {
		t.Error("still over after the dropped minute left the window")
	}
}

func TestKey(t *testing.T) {
	if Key(-1, 7) != 0xffffffff_00000007 || Key(3, 1) == Key(1, 3) {
		t.Errorf("Key(-1, 7) = %#x", Key(-1, 7))
	}
}

// TestRebuild: a window rebuilt from pageviews in any order, sorted by
// SortPageviews, reads as one fed them in order, and the bytes it reports
// add up. Unsorted, a pageview 5 minutes before one given first would
// find its visitors' slot moved past it: dropped, and the window over.
func TestRebuild(t *testing.T) {
	now := int64(1_000_000)
	pvs := []Pageview{{now*60000 + 5, Key(1, 2)}, {(now-5)*60000 + 7, Key(1, 4)}, {(now-1)*60000 + 7, Key(1, 3)}, {now * 60000, Key(1, 2)}}
	SortPageviews(pvs)
	var fed Window
	for _, p := range pvs {
		fed.Add(p.Ms, p.Key)
	}
	var w Window
	before := w.Add((now-2)*60000, Key(1, 9))
	delta := w.Rebuild(pvs)
	pv, vis, over := w.Read(now)
	fpv, fvis, _ := fed.Read(now)
	if pv != fpv || vis != fvis || vis != 2 || over || pv[24] != 1 {
		t.Errorf("rebuilt %v %d (over %v), fed %v %d; want 4 pageviews, 2 visitors, not over", pv, vis, over, fpv, fvis)
	}
	ahead := []Pageview{{(now + 5) * 60000, Key(1, 5)}, {now * 60000, Key(1, 6)}}
	SortPageviews(ahead)
	var w2 Window
	w2.Rebuild(ahead)
	if _, _, over := w2.Read(now); over {
		t.Error("a window rebuilt from pageviews given later minute first is over: they were not sorted")
	}
	if held := w.Reset(); before+delta != held {
		t.Errorf("held %d bytes, then grew by %d, but holds %d", before, delta, held)
	}
}

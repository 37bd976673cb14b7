package segments

import (
	"testing"
)

// TestDistinctVisitorsBounded checks that counting a group's visitors
// without a bitmap stays within a few words a row whatever the ids (the
// store's decoding accepts any), and counts right both ways.
func TestDistinctVisitorsBounded(t *testing.T) {
	sd := &Day{VVisitor: []uint32{7, 1 << 30, 7, 3, 1 << 30, 0}}
	p := &Plan{}
	if n := p.distinctVisitors(sd, []uint32{0, 1, 2, 3, 4, 5}); n != 4 {
		t.Errorf("sparse ids: %d visitors, want 4", n)
	}
	if len(p.stamp) > 1<<16 {
		t.Errorf("a stamp array of %d entries for 6 rows", len(p.stamp))
	}
	if n := p.distinctVisitors(sd, []uint32{0, 2, 3, 5}); n != 3 {
		t.Errorf("dense ids: %d visitors, want 3", n)
	}
	if n := p.distinctVisitors(sd, []uint32{3, 0}); n != 2 { // a new generation
		t.Errorf("dense ids again: %d visitors, want 2", n)
	}
	p.stampGen = ^uint32(0) // the next count wraps
	if n := p.distinctVisitors(sd, []uint32{0, 0, 5}); n != 2 {
		t.Errorf("after the generation wraps: %d visitors, want 2", n)
	}
}

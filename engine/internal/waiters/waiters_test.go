package waiters

import "testing"

func TestSet(t *testing.T) {
	var s Set[int]
	a, doneA := s.Add([16]byte{1})
	s.Notify([16]byte{1}, 7)
	s.Notify([16]byte{1}, 8) // the first answer stands
	s.Notify([16]byte{2}, 9) // nobody waits
	if got := <-a; got != 7 {
		t.Errorf("told %d, want 7", got)
	}
	select {
	case v := <-a:
		t.Errorf("told twice: %d", v)
	default:
	}
	doneA()
	s.Notify([16]byte{1}, 10) // done: nobody waits
	select {
	case v := <-a:
		t.Errorf("told after done: %d", v)
	default:
	}
	if len(s.m) != 0 {
		t.Errorf("%d ids kept after done", len(s.m))
	}
}

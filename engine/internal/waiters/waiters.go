// Package waiters is the calls of a node that published a message to the
// cluster's log and wait, by the message's id, for what the node's
// follower decided when it applied it.
package waiters

import "sync"

// Set holds the waiting calls by id, each told at most one T. The zero
// Set is ready to use.
type Set[T any] struct {
	mu sync.Mutex
	m  map[[16]byte]chan T
}

// Add starts waiting for id: what is decided comes on the channel; done
// stops waiting.
func (s *Set[T]) Add(id [16]byte) (decided <-chan T, done func()) {
	c := make(chan T, 1)
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[[16]byte]chan T)
	}
	s.m[id] = c
	s.mu.Unlock()
	return c, func() {
		s.mu.Lock()
		delete(s.m, id)
		s.mu.Unlock()
	}
}

// Notify tells the call waiting for id, if any, v. An id the log holds
// twice is answered once: the first answer stands.
func (s *Set[T]) Notify(id [16]byte, v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.m[id]; c != nil {
		select {
		case c <- v:
		default:
		}
	}
}

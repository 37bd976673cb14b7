package regtx

import "sync"

// waiters are the transactions a node published and waits for, by id: the
// follower tells each whether it applied.
type waiters struct {
	mu sync.Mutex
	m  map[[16]byte]chan bool
}

// Add starts waiting for transaction id: its outcome comes on the channel
// (true: applied). done stops waiting.
func (w *waiters) Add(id [16]byte) (outcome <-chan bool, done func()) {
	c := make(chan bool, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[[16]byte]chan bool)
	}
	w.m[id] = c
	w.mu.Unlock()
	return c, func() {
		w.mu.Lock()
		delete(w.m, id)
		w.mu.Unlock()
	}
}

// Decided tells the node waiting for transaction id, if any, whether it
// was applied. An id the log holds twice is answered once: the first
// answer stands.
func (w *waiters) Decided(id [16]byte, applied bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.m[id]; c != nil {
		select {
		case c <- applied:
		default:
		}
	}
}

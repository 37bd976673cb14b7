package importlog

import (
	"sync"

	"github.com/webstats/webstats/engine/internal/imported"
)

// Result is what applying an import's message decided, for the node that
// published it.
type Result struct {
	Import imported.Import
	Err    error
}

// Waiters are the imports and deletions a node published and waits for,
// by token. The zero Waiters is ready to use.
type Waiters struct {
	mu sync.Mutex
	m  map[[16]byte]chan Result
}

// Add registers token and returns the channel its first Result comes on.
func (w *Waiters) Add(token [16]byte) <-chan Result {
	ch := make(chan Result, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[[16]byte]chan Result)
	}
	w.m[token] = ch
	w.mu.Unlock()
	return ch
}

// Remove forgets token.
func (w *Waiters) Remove(token [16]byte) {
	w.mu.Lock()
	delete(w.m, token)
	w.mu.Unlock()
}

// Notify tells token's waiter r, if it waits and was told nothing yet.
func (w *Waiters) Notify(token [16]byte, r Result) {
	w.mu.Lock()
	if ch := w.m[token]; ch != nil {
		select {
		case ch <- r:
		default: // the first answer stands
		}
	}
	w.mu.Unlock()
}

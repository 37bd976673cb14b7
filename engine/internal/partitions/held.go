package partitions

import (
	"context"
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Held is the partitions a node holds (applies the records of), those of
// them it answers for (ready: caught up with), and the answers being
// computed, by partition. It is safe for concurrent use; the zero value
// holds none.
//
// A partition gained (or held at Open) is answered for once the node has
// applied the log up to the partition's last message at that time
// (the Mover's gained, learn, promote): before, its answers would lag.
// Ready is always within the held mask. The Mover changes what is held;
// the engine reads it.
type Held struct {
	held, ready atomic.Uint64
	gen         atomic.Uint64 // counts the changes of held
	inflight    [Max]atomic.Int64
	mu          sync.Mutex // guards waiting, and ready's changes against held's
	// waiting holds the gained partitions not yet answered for, with
	// the log position the node must reach first (unknownLast: not asked
	// yet).
	waiting map[int]uint64
}

// unknownLast marks a partition waiting whose last message is not known.
const unknownLast = math.MaxUint64

// Init sets the partitions held at Open; each is answered for once the
// node has caught up with it (it may be far behind).
func (h *Held) Init(held uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held.Store(held)
	for p := range each(held) {
		h.gainedLocked(p)
	}
}

// Mask returns the partitions held.
func (h *Held) Mask() uint64 { return h.held.Load() }

// Has reports whether partition p is held.
func (h *Held) Has(p int) bool { return h.held.Load()&(1<<p) != 0 }

// Ready returns the partitions answered for.
func (h *Held) Ready() uint64 { return h.ready.Load() }

// Gen counts the changes of the held mask: a reader that saw p held and
// the same Gen later knows p was held all along.
func (h *Held) Gen() uint64 { return h.gen.Load() }

// set makes held the partitions held. Those no longer held are no longer
// answered for; it returns the partitions answered for now.
func (h *Held) set(held uint64) (ready uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held.Store(held)
	h.gen.Add(1)
	ready = h.ready.Load() & held
	h.ready.Store(ready)
	return ready
}

// gained makes partition p, just gained, answered for once the node has
// caught up with it (learn, promote).
func (h *Held) gained(p int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gainedLocked(p)
}

func (h *Held) gainedLocked(p int) {
	if h.waiting == nil {
		h.waiting = make(map[int]uint64)
	}
	h.waiting[p] = unknownLast
}

// unknown returns the partitions waiting to be answered for whose last
// message the node has not learnt yet (learn).
func (h *Held) unknown() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int
	for p, seq := range h.waiting {
		if seq == unknownLast {
			out = append(out, p)
		}
	}
	return out
}

// learn records last, the log position of partition p's last message (and
// the registry's) now: once the node has applied it, p is answered for.
func (h *Held) learn(p int, last uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.waiting[p]; ok {
		h.waiting[p] = last
	}
}

// promote makes the partitions waiting whose last message the node has
// applied (at log position pos) answered for, and forgets those no longer
// held. It returns the partitions answered for, and whether they changed.
func (h *Held) promote(pos uint64) (ready uint64, changed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ready = h.ready.Load()
	for p, seq := range h.waiting {
		if !h.Has(p) {
			delete(h.waiting, p)
		} else if pos >= seq {
			ready |= 1 << p
			delete(h.waiting, p)
		}
	}
	changed = ready != h.ready.Load()
	h.ready.Store(ready)
	return ready, changed
}

// Answering reports whether partition p is answered for; if so, done must
// be called once the answer is computed: a drop of p waits for it (drain).
func (h *Held) Answering(p int) (done func(), ok bool) {
	h.inflight[p].Add(1) // before the check: see Drain
	if h.ready.Load()&(1<<p) != 0 {
		return func() { h.inflight[p].Add(-1) }, true
	}
	h.inflight[p].Add(-1)
	return nil, false
}

// drain waits, at most max or until ctx is done, for the answers computed
// from partition p to finish. p must no longer be answered for (set): no
// answer starts after.
func (h *Held) drain(ctx context.Context, p int, max time.Duration) {
	for wait := time.Now(); h.inflight[p].Load() > 0 && time.Since(wait) < max && ctx.Err() == nil; {
		time.Sleep(time.Millisecond)
	}
}

// Record is the stored form of the partitions held: the partition count,
// then the mask (8 bytes, big-endian).
func Record(n int, held uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{byte(n)}, held)
}

// ParseRecord reads a Record: ok is false when v is not 9 bytes.
func ParseRecord(v []byte) (n int, held uint64, ok bool) {
	if len(v) != 9 {
		return 0, 0, false
	}
	return int(v[0]), binary.BigEndian.Uint64(v[1:]), true
}

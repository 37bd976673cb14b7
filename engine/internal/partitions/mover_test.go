package partitions

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeCluster is a cluster of n partitions whose holders send states.
type fakeCluster struct {
	mu      sync.Mutex
	n       int
	target  uint64
	covered map[int]bool
	told    uint64 // the last SetHeld
	last    uint64
	first   uint64
	states  map[int][]byte // what Fetch returns; none: ErrNoHolder
	busy    map[int]int    // ErrBusy this many times first
	fetched []int
}

func (c *fakeCluster) Count() int { return c.n }
func (c *fakeCluster) Target() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.target
}
func (c *fakeCluster) Covered(p int) bool { return c.covered[p] }
func (c *fakeCluster) SetHeld(held uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.told = held
}
func (c *fakeCluster) Last(context.Context, uint64) (uint64, error) { return c.last, nil }
func (c *fakeCluster) First(context.Context) (uint64, error)        { return c.first, nil }
func (c *fakeCluster) Fetch(_ context.Context, p int) (io.ReadCloser, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetched = append(c.fetched, p)
	if c.busy[p] > 0 {
		c.busy[p]--
		return nil, errBusy
	}
	st, ok := c.states[p]
	if !ok {
		return nil, ErrNoHolder
	}
	return io.NopCloser(bytes.NewReader(st)), nil
}

var errBusy = errors.New("busy")

// fakeNode holds websites' statistics as their keys.
type fakeNode struct {
	pos   uint64
	sites map[uint32]map[string]string // by website: its keys
	n     int
	held  []byte
	trim  uint64
}

func (n *fakeNode) Position() uint64       { return n.pos }
func (n *fakeNode) SetPosition(seq uint64) { n.pos = seq }
func (n *fakeNode) Websites(p int) []uint32 {
	var out []uint32
	for id := range n.sites {
		if Of(id, n.n) == p {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
func (n *fakeNode) Replace(website uint32, next func() ([]byte, []byte, bool, error)) error {
	keys := make(map[string]string)
	for next != nil {
		k, v, ok, err := next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		keys[string(k)] = string(v)
	}
	n.sites[website] = keys
	return nil
}
func (n *fakeNode) SaveHeld(record []byte) error { n.held = record; return nil }
func (n *fakeNode) LowerTrim(seq uint64) error   { n.trim = seq; return nil }

// state is a partition's state of trim point trim, its websites' keys.
func state(t *testing.T, trim uint64, sites map[uint32]map[string]string) []byte {
	var b bytes.Buffer
	w, err := NewWriter(&b, trim)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint32, 0, len(sites))
	for id := range sites {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		err := w.Website(id, func(key func(k, v []byte) error) error {
			for k, v := range sites[id] {
				if err := key([]byte(k), []byte(v)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func newTestMover(t *testing.T, c *fakeCluster, n *fakeNode, held uint64) (*Mover, *Held) {
	h := new(Held)
	h.Init(held)
	m := NewMover(Config{Cluster: c, Node: n, Held: h, Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler), ErrBusy: errBusy})
	t.Cleanup(m.Close)
	return m, h
}

// fetchAll starts the fetches and waits until those started are done.
func fetchAll(t *testing.T, m *Mover) {
	t.Helper()
	m.StartFetches(context.Background())
	m.wg.Wait()
}

// TestMoverGain: a partition fetched from its holder replaces the
// statistics of the websites the node knows (those the state lacks are
// emptied, those the node does not know yet skipped), the follower resumes
// from the state's trim point, which the store's trim point is lowered to,
// and the partition is answered for once the follower caught up with it.
func TestMoverGain(t *testing.T) {
	c := &fakeCluster{n: 4, target: 1 << 2, first: 50, last: 120, states: map[int][]byte{
		2: state(t, 90, map[uint32]map[string]string{
			2:  {"d1": "a", "d2": "b"},
			6:  {"d1": "c"},
			14: {"d1": "unknown here"},
		}),
	}}
	n := &fakeNode{n: 4, pos: 100, sites: map[uint32]map[string]string{
		2: {"old": "x"}, 6: nil, 10: {"old": "y"}, 3: {"other": "partition"},
	}}
	m, h := newTestMover(t, c, n, 0)
	if m.Planned() {
		t.Error("planned before anything was fetched")
	}
	fetchAll(t, m)
	if !m.Planned() {
		t.Fatal("a fetched partition is not planned")
	}
	select {
	case <-m.Fetched():
	default:
		t.Error("Fetched did not receive")
	}
	from, err := m.Rebalance(context.Background())
	if err != nil || from != 90 {
		t.Fatalf("Rebalance: from %d, %v", from, err)
	}
	want := map[uint32]map[string]string{
		2: {"d1": "a", "d2": "b"}, 6: {"d1": "c"}, 10: {}, 3: {"other": "partition"},
	}
	if diff := cmp.Diff(want, n.sites); diff != "" {
		t.Errorf("statistics mismatch (-want +got):\n%s", diff)
	}
	if n.trim != 90 || !bytes.Equal(n.held, Record(4, 1<<2)) || h.Mask() != 1<<2 {
		t.Errorf("trim %d, held record %x, mask %b", n.trim, n.held, h.Mask())
	}
	if h.Ready() != 0 || c.told != 0 {
		t.Errorf("answered for before catching up: ready %b, told %b", h.Ready(), c.told)
	}
	n.pos = 119
	m.Promote(context.Background())
	if h.Ready() != 0 {
		t.Errorf("answered for at 119 of 120: %b", h.Ready())
	}
	n.pos = 120
	m.Promote(context.Background())
	if h.Ready() != 1<<2 || c.told != 1<<2 {
		t.Errorf("not answered for once caught up: ready %b, told %b", h.Ready(), c.told)
	}
	if m.Planned() {
		t.Error("planned with nothing to do")
	}
}

// TestMoverRebuild: a partition no node holds is rebuilt from the log if
// it was never trimmed (its websites emptied, the follower from the start);
// otherwise it waits, fetched again after the backoff only.
func TestMoverRebuild(t *testing.T) {
	c := &fakeCluster{n: 2, target: 0b11, first: 1, last: 7}
	n := &fakeNode{n: 2, pos: 40, sites: map[uint32]map[string]string{1: {"k": "v"}, 2: {"k": "v"}}}
	m, h := newTestMover(t, c, n, 0)
	fetchAll(t, m)
	from, err := m.Rebalance(context.Background())
	if err != nil || from != 0 || n.pos != 0 || h.Mask() != 0b11 {
		t.Fatalf("Rebalance: from %d, pos %d, mask %b, %v", from, n.pos, h.Mask(), err)
	}
	if diff := cmp.Diff(map[uint32]map[string]string{1: {}, 2: {}}, n.sites); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}

	c = &fakeCluster{n: 2, target: 0b1, first: 5}
	n = &fakeNode{n: 2, pos: 40, sites: map[uint32]map[string]string{}}
	m, h = newTestMover(t, c, n, 0)
	fetchAll(t, m)
	if m.Planned() || h.Mask() != 0 {
		t.Fatalf("a partition that cannot be rebuilt: planned %v, mask %b", m.Planned(), h.Mask())
	}
	fetchAll(t, m)
	if len(c.fetched) != 1 {
		t.Errorf("fetched again within the backoff: %v", c.fetched)
	}
}

// TestMoverBusy: a holder that is busy is asked again at the next start.
func TestMoverBusy(t *testing.T) {
	c := &fakeCluster{n: 1, target: 1, first: 1, busy: map[int]int{0: 1},
		states: map[int][]byte{0: state(t, 3, nil)}}
	n := &fakeNode{n: 1, pos: 3, sites: map[uint32]map[string]string{}}
	m, h := newTestMover(t, c, n, 0)
	fetchAll(t, m)
	fetchAll(t, m)
	if _, err := m.Rebalance(context.Background()); err != nil || h.Mask() != 1 {
		t.Fatalf("mask %b, %v (fetched %v)", h.Mask(), err, c.fetched)
	}
}

// TestMoverGainFails: a state the log has been trimmed past is not gained:
// the position goes back to where it was, what was imported is emptied,
// and the partition is fetched again after the backoff.
func TestMoverGainFails(t *testing.T) {
	c := &fakeCluster{n: 1, target: 1, first: 20, states: map[int][]byte{
		0: state(t, 10, map[uint32]map[string]string{4: {"k": "v"}}),
	}}
	n := &fakeNode{n: 1, pos: 30, sites: map[uint32]map[string]string{4: {"old": "x"}}}
	m, h := newTestMover(t, c, n, 0)
	fetchAll(t, m)
	from, err := m.Rebalance(context.Background())
	if err == nil || from != 30 || n.pos != 30 || h.Mask() != 0 {
		t.Fatalf("Rebalance: from %d, pos %d, mask %b, %v", from, n.pos, h.Mask(), err)
	}
	if diff := cmp.Diff(map[uint32]map[string]string{4: {}}, n.sites); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	fetchAll(t, m)
	if len(c.fetched) != 1 {
		t.Errorf("fetched again within the backoff: %v", c.fetched)
	}
}

// TestMoverDrop: a partition no longer in the target is kept until every
// node of its target holds it, then no longer answered for, the answers
// in flight finish, and its websites are emptied.
func TestMoverDrop(t *testing.T) {
	c := &fakeCluster{n: 2, target: 0b01, covered: map[int]bool{}}
	n := &fakeNode{n: 2, pos: 9, sites: map[uint32]map[string]string{1: {"k": "v"}, 2: {"k": "w"}}}
	m, h := newTestMover(t, c, n, 0b11)
	h.learn(0, 0)
	h.learn(1, 0)
	h.promote(9)
	if m.Planned() {
		t.Fatal("planned while the partition is not covered")
	}
	if _, err := m.Rebalance(context.Background()); err != nil || h.Mask() != 0b11 {
		t.Fatalf("dropped before covered: %b, %v", h.Mask(), err)
	}
	c.covered[1] = true
	if !m.Planned() {
		t.Fatal("a covered partition is not planned")
	}
	done, ok := h.Answering(1)
	if !ok {
		t.Fatal("not answered for")
	}
	early := make(chan bool, 1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		// (Read without a lock: under the race detector, a drop that
		// does not wait is a race too.)
		early <- len(n.sites[1]) == 0
		done()
	}()
	if _, err := m.Rebalance(context.Background()); err != nil {
		t.Fatal(err)
	}
	if <-early {
		t.Error("emptied with an answer in flight")
	}
	if h.Mask() != 0b01 || h.Ready() != 0b01 || c.told != 0b01 || !bytes.Equal(n.held, Record(2, 0b01)) {
		t.Errorf("mask %b, ready %b, told %b, record %x", h.Mask(), h.Ready(), c.told, n.held)
	}
	if diff := cmp.Diff(map[uint32]map[string]string{1: {}, 2: {"k": "w"}}, n.sites); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

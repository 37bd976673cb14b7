package partitions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/wire"
)

func TestOfAndEach(t *testing.T) {
	if got := Of(130, 64); got != 2 {
		t.Errorf("Of(130, 64) = %d, want 2", got)
	}
	if got := Of(130, 3); got != 2 {
		t.Errorf("Of(130, 3) = %d, want 2 (130 mod 64 = 2)", got)
	}
	if got := slices.Collect(each(1<<0 | 1<<5 | 1<<63)); !slices.Equal(got, []int{0, 5, 63}) {
		t.Errorf("each: %v", got)
	}
	for p := range each(All(3)) {
		if p > 0 {
			break // stops when asked
		}
	}
	if All(64) != 1<<64-1 || All(1) != 1 {
		t.Errorf("All(64) %x, All(1) %x", All(64), All(1))
	}
}

// TestHeld walks a partition through its states: held at Open, caught
// up with, answered for, dropped (answers in flight drained); gained.
func TestHeld(t *testing.T) {
	var h Held
	h.Init(0b101)
	if h.Mask() != 0b101 || !h.Has(2) || h.Has(1) || h.Ready() != 0 {
		t.Fatalf("after Init: mask %b, ready %b", h.Mask(), h.Ready())
	}
	if _, ok := h.Answering(0); ok {
		t.Error("a partition not caught up with is answered for")
	}
	unknown := h.unknown()
	slices.Sort(unknown)
	if !slices.Equal(unknown, []int{0, 2}) {
		t.Fatalf("Unknown %v", unknown)
	}
	h.learn(0, 10)
	h.learn(2, 20)
	h.learn(1, 5) // not waiting: ignored
	if ready, changed := h.promote(15); ready != 0b001 || !changed {
		t.Errorf("Promote(15): %b, %v", ready, changed)
	}
	if ready, changed := h.promote(15); ready != 0b001 || changed {
		t.Errorf("Promote(15) again: %b, %v", ready, changed)
	}
	if len(h.unknown()) != 0 {
		t.Errorf("Unknown after Learn: %v", h.unknown())
	}
	done, ok := h.Answering(0)
	if !ok {
		t.Fatal("a partition caught up with is not answered for")
	}
	gen := h.Gen()
	if ready := h.set(0b100); ready != 0 || h.Gen() == gen {
		t.Errorf("Set(0b100): ready %b, gen %d → %d", ready, gen, h.Gen())
	}
	drained := make(chan struct{})
	go func() {
		h.drain(context.Background(), 0, time.Minute)
		close(drained)
	}()
	select {
	case <-drained:
		t.Fatal("Drain returned with an answer in flight")
	case <-time.After(20 * time.Millisecond):
	}
	done()
	<-drained
	// Partition 2, still held, is answered for once caught up with.
	if ready, _ := h.promote(20); ready != 0b100 {
		t.Errorf("Promote(20): %b", ready)
	}
	h.set(0b110)
	h.gained(1)
	h.set(0b100) // dropped before it was caught up with
	if ready, changed := h.promote(1000); ready != 0b100 || changed {
		t.Errorf("a partition no longer held was promoted: %b, %v", ready, changed)
	}
	if len(h.unknown()) != 0 {
		t.Errorf("a partition no longer held waits: %v", h.unknown())
	}
}

func TestDrainBounded(t *testing.T) {
	var h Held
	h.Init(1)
	h.learn(0, 0)
	h.promote(0)
	if _, ok := h.Answering(0); !ok {
		t.Fatal("not answered for")
	}
	t0 := time.Now()
	h.drain(context.Background(), 0, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.drain(ctx, 0, time.Minute)
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Drain took %v", d)
	}
}

func TestRecord(t *testing.T) {
	v := Record(8, 0b1001)
	if diff := cmp.Diff([]byte{8, 0, 0, 0, 0, 0, 0, 0, 0b1001}, v); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if n, held, ok := ParseRecord(v); n != 8 || held != 0b1001 || !ok {
		t.Errorf("ParseRecord: %d %b %v", n, held, ok)
	}
	if _, _, ok := ParseRecord(v[:8]); ok {
		t.Error("8 bytes parsed")
	}
}

// TestFetches: at most maxFetching at once; a failed one waits backoff, a
// busy one starts again at once; a done one is taken once; Close removes
// the files not taken, and newFetches a crash's.
func TestFetches(t *testing.T) {
	dir := t.TempDir()
	left := filepath.Join(dir, filePrefix+"old")
	if err := os.WriteFile(left, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFetches(dir)
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a crash's file was left: %v", err)
	}
	if got := f.Start(0b1111); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("Start: %v", got)
	}
	if got := f.Start(0b1111); len(got) != 0 {
		t.Fatalf("Start with two fetching: %v", got)
	}
	f.Retry(0) // busy
	f.Failed(1)
	if got := f.Start(0b1111); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("Start after a retry and a failure: %v", got)
	}
	if f.AnyDone() {
		t.Error("done before Done")
	}
	path, err := f.Spool(strings.NewReader("state"))
	if err != nil {
		t.Fatal(err)
	}
	f.Done(0, path, nil)
	f.Done(2, "", errors.New("no holder"))
	select {
	case <-f.Ready():
	default:
		t.Error("Ready did not receive")
	}
	if !f.AnyDone() {
		t.Error("not done after Done")
	}
	fe := f.Take(0)
	if fe == nil || fe.Path != path || fe.Err != nil || f.Take(0) != nil {
		t.Fatalf("Take: %+v", fe)
	}
	if b, err := os.ReadFile(fe.Path); err != nil || string(b) != "state" {
		t.Errorf("the file: %q, %v", b, err)
	}
	fe.Discard()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Discard left the file: %v", err)
	}
	if got := f.Start(0b1111); !slices.Equal(got, []int{0, 3}) {
		t.Fatalf("Start after a take (1 waits backoff, 2 is done): %v", got)
	}
	path, _ = f.Spool(strings.NewReader("x"))
	f.Done(3, path, nil)
	f.Close()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Close left the file: %v", err)
	}
}

// TestStream: a partition's state reads back as written; its bytes are
// pinned (nodes of different versions send it to each other).
func TestStream(t *testing.T) {
	type kv struct{ K, V string }
	sites := map[uint32][]kv{
		2:   {{"a", "1"}, {"bb", strings.Repeat("v", 300)}},
		66:  nil,
		130: {{"c", ""}},
	}
	var b bytes.Buffer
	w, err := NewWriter(&b, 300)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint32{2, 66, 130} {
		err := w.Website(id, func(key func(k, v []byte) error) error {
			for _, e := range sites[id] {
				if err := key([]byte(e.K), []byte(e.V)); err != nil {
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
	head := []byte{'w', 's', 'p', '2', 0xac, 0x02, 2, 1, 'a', 1, '1', 2, 'b', 'b', 0xac, 0x02}
	if !bytes.HasPrefix(b.Bytes(), head) {
		t.Errorf("the stream starts % x, want % x", b.Bytes()[:len(head)], head)
	}
	tail := []byte{0, 66, 0, 0x82, 0x01, 1, 'c', 0, 0, 0}
	if !bytes.HasSuffix(b.Bytes(), tail) {
		t.Errorf("the stream ends % x, want % x", b.Bytes()[b.Len()-len(tail):], tail)
	}
	r, trim, err := newReader(bytes.NewReader(b.Bytes()), 2, 64)
	if err != nil || trim != 300 {
		t.Fatalf("newReader: %d, %v", trim, err)
	}
	got := make(map[uint32][]kv)
	for {
		id, err := r.Website()
		if err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			break
		}
		if id == 66 {
			if err := r.Skip(); err != nil {
				t.Fatal(err)
			}
			got[id] = nil
			continue
		}
		for {
			k, v, ok, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got[id] = append(got[id], kv{string(k), string(v)})
		}
	}
	if diff := cmp.Diff(sites, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestStreamRefused: what is not a partition's state, or not this
// partition's, or with keys out of bounds, is refused.
func TestStreamRefused(t *testing.T) {
	// The state of a node of format version 1 (its days whole), or of a
	// later one.
	for _, m := range []string{"wsp1", "wsp3"} {
		if _, _, err := newReader(strings.NewReader(m+"\x00"), 0, 1); !errors.Is(err, wire.ErrRecord) {
			t.Errorf("another magic %q: %v", m, err)
		}
	}
	if _, _, err := newReader(strings.NewReader("ws"), 0, 1); !errors.Is(err, wire.ErrRecord) {
		t.Errorf("cut short: %v", err)
	}
	for _, c := range []struct {
		name, body string
	}{
		{"another partition's website", "\x03"},
		{"an id over 32 bits", "\x80\x80\x80\x80\x10"},
	} {
		r, _, err := newReader(strings.NewReader("wsp2\x00"+c.body), 2, 4)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Website(); !errors.Is(err, wire.ErrRecord) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	for _, c := range []struct {
		name, body string
	}{
		{"a key too long", fmt.Sprintf("%c", maxKey+1)},
		{"a value too long", "\x01k\x81\x80\x80\x80\x08"},
	} {
		r, _, _ := newReader(strings.NewReader("wsp2\x00\x02"+c.body), 2, 4)
		if id, err := r.Website(); id != 2 || err != nil {
			t.Fatal(id, err)
		}
		if _, _, _, err := r.Next(); !errors.Is(err, wire.ErrRecord) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

package regtx

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/snapshot"
)

var (
	errUnavailable = errors.New("unavailable")
	errTooLarge    = errors.New("too large")
)

// fakeLog is a log followed by one node: it applies a transaction if its
// version is still the registry's, as the engine's follower does. Before
// each of the node's transactions, it may append another node's.
type fakeLog struct {
	mu      sync.Mutex
	version uint64 // the registry's: the position of the last applied
	seq     uint64
	others  int // transactions of other nodes to come first
	r       *Runner
	msgs    int
}

func (l *fakeLog) publish(ctx context.Context, msg []byte) error {
	m, err := Decode(msg)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.msgs++
	if l.others > 0 { // another node's, made on the same version, first
		l.others--
		l.seq++
		l.version = l.seq
	}
	l.seq++
	applied := m.Base == l.version
	if applied {
		l.version = l.seq
	}
	l.mu.Unlock()
	go l.r.Decided(m.ID, applied)
	return nil
}

func (l *fakeLog) base() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

func newRunner(l *fakeLog, limit int) *Runner {
	r := NewRunner(Config{
		Publish: l.publish, MaxMessage: func() int { return limit }, Rand: rand.Reader,
		Unavailable: errUnavailable, TooLarge: errTooLarge,
	})
	l.r = r
	return r
}

// TestRunnerConflicts: a change another node's came before is dry run
// again on the newer registry until it applies.
func TestRunnerConflicts(t *testing.T) {
	l := &fakeLog{others: 2}
	r := newRunner(l, 1<<20)
	runs := 0
	err := r.Do(context.Background(), func() (*Tx, error) {
		runs++
		tx := New(l.base())
		tx.Put(snapshot.KindSecret, 1, []byte("s"))
		return tx, nil
	})
	if err != nil || runs != 3 || r.Conflicts() != 2 || l.version != 5 {
		t.Errorf("err %v, %d runs, %d conflicts, version %d", err, runs, r.Conflicts(), l.version)
	}
}

// TestRunnerNothingToPublish: a dry run that fails or writes nothing
// publishes nothing.
func TestRunnerNothingToPublish(t *testing.T) {
	l := &fakeLog{}
	r := newRunner(l, 1<<20)
	if err := r.Do(context.Background(), func() (*Tx, error) { return New(0), nil }); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if err := r.Do(context.Background(), func() (*Tx, error) { return New(0), refused }); !errors.Is(err, refused) {
		t.Fatalf("the dry run's error: %v", err)
	}
	if l.msgs != 0 {
		t.Errorf("%d messages published", l.msgs)
	}
}

// TestRunnerTooLarge: a transaction larger than the log takes is refused,
// not published.
func TestRunnerTooLarge(t *testing.T) {
	l := &fakeLog{}
	r := newRunner(l, 64)
	err := r.Do(context.Background(), func() (*Tx, error) {
		tx := New(0)
		tx.Put(snapshot.KindSecret, 1, make([]byte, 64))
		return tx, nil
	})
	if !errors.Is(err, errTooLarge) || l.msgs != 0 {
		t.Errorf("%v, %d messages", err, l.msgs)
	}
}

// TestRunnerOneAtATime: a node's changes queue; a caller gone does not
// cut its change short.
func TestRunnerOneAtATime(t *testing.T) {
	l := &fakeLog{}
	r := newRunner(l, 1<<20)
	var mu sync.Mutex
	running, most := 0, 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := r.Do(ctx, func() (*Tx, error) {
				mu.Lock()
				running++
				most = max(most, running)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				running--
				mu.Unlock()
				tx := New(l.base())
				tx.Put(snapshot.KindSecret, uint64(i), []byte("s"))
				return tx, nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if most != 1 || r.Conflicts() != 0 || l.version != 8 {
		t.Errorf("%d at once, %d conflicts, version %d", most, r.Conflicts(), l.version)
	}
}

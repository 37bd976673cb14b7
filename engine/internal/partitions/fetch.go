package partitions

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const (
	// maxFetching bounds the fetches a node makes at once (a holder
	// sends two at a time, and answers more with ErrBusy).
	maxFetching = 2
	// backoff is how long a partition whose fetch or gain failed waits
	// before it is fetched again.
	backoff = 10 * time.Second
	// filePrefix starts the names of the files fetches write.
	filePrefix = "webstats-partition-"
)

// fetches are the partitions a node is fetching to gain them, each into a
// file, until the node takes it. It is safe for concurrent use.
type fetches struct {
	dir string
	mu  sync.Mutex
	m   map[int]*fetched
	// failed holds when each partition's last fetch or gain failed: it
	// is fetched again backoff later.
	failed map[int]time.Time
	ready  chan struct{}
}

// fetched is a partition fetched: Path holds its state (Writer's stream),
// or Err says why there is none (no node holds the partition).
type fetched struct {
	Path  string
	Err   error
	ready bool
}

// newFetches returns fetches that write their files in dir, and removes
// the files a crash left there. With dir "", they go to the system's
// temporary directory, which is shared: a crash's are left alone.
func newFetches(dir string) *fetches {
	if dir != "" {
		names, _ := filepath.Glob(filepath.Join(dir, filePrefix+"*"))
		for _, n := range names {
			os.Remove(n)
		}
	}
	return &fetches{dir: dir, m: make(map[int]*fetched), failed: make(map[int]time.Time), ready: make(chan struct{}, 1)}
}

// Start returns the partitions of want to start fetching now: those not
// being fetched or fetched already, not failed within backoff, up to
// maxFetching fetches at once. each must end with Done, Retry or Failed.
func (f *fetches) Start(want uint64) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	fetching := 0
	for _, fe := range f.m {
		if !fe.ready {
			fetching++
		}
	}
	var out []int
	for p := range each(want) {
		if fetching >= maxFetching {
			break
		}
		if f.m[p] != nil || time.Since(f.failed[p]) < backoff {
			continue
		}
		fetching++
		f.m[p] = &fetched{}
		out = append(out, p)
	}
	return out
}

// Spool copies r into a new file for a fetch, and returns its name.
func (f *fetches) Spool(r io.Reader) (string, error) {
	file, err := os.CreateTemp(f.dir, filePrefix+"*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(file, r)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file.Name())
		return "", err
	}
	return file.Name(), nil
}

// Done ends partition p's fetch: its state is in the file path, or err
// says why it has none. The node is told (Ready), and takes it (Take).
func (f *fetches) Done(p int, path string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fe := f.m[p]
	if fe == nil { // (Close came first)
		if path != "" {
			os.Remove(path)
		}
		return
	}
	fe.ready, fe.Path, fe.Err = true, path, err
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// Retry ends partition p's fetch without a result: it may start again at
// once (its holder was busy).
func (f *fetches) Retry(p int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, p)
}

// Failed ends partition p's fetch, or its gain, as failed: it starts again
// after backoff.
func (f *fetches) Failed(p int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, p)
	f.failed[p] = time.Now()
}

// Ready receives when a fetch is done.
func (f *fetches) Ready() <-chan struct{} { return f.ready }

// AnyDone reports whether a fetch is done and not taken.
func (f *fetches) AnyDone() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fe := range f.m {
		if fe.ready {
			return true
		}
	}
	return false
}

// Take returns partition p's fetch if it is done, and forgets it: the
// caller removes its file (Discard).
func (f *fetches) Take(p int) *fetched {
	f.mu.Lock()
	defer f.mu.Unlock()
	fe := f.m[p]
	if fe == nil || !fe.ready {
		return nil
	}
	delete(f.m, p)
	return fe
}

// Discard removes the file of a fetch taken.
func (fe *fetched) Discard() {
	if fe.Path != "" {
		os.Remove(fe.Path)
	}
}

// Close removes the files of the fetches done and not taken; the fetches
// in progress must have ended.
func (f *fetches) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, fe := range f.m {
		fe.Discard()
		delete(f.m, p)
	}
}

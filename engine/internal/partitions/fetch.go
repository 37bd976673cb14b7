package partitions

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const (
	// MaxFetching bounds the fetches a node makes at once (a holder
	// sends two at a time, and answers more with ErrBusy).
	MaxFetching = 2
	// Backoff is how long a partition whose fetch or gain failed waits
	// before it is fetched again.
	Backoff = 10 * time.Second
	// filePrefix starts the names of the files fetches write.
	filePrefix = "webstats-partition-"
)

// Fetches are the partitions a node is fetching to gain them, each into a
// file, until the node takes it. It is safe for concurrent use.
type Fetches struct {
	dir string
	mu  sync.Mutex
	m   map[int]*Fetch
	// failed holds when each partition's last fetch or gain failed: it
	// is fetched again Backoff later.
	failed map[int]time.Time
	ready  chan struct{}
}

// Fetch is a partition fetched: Path holds its state (Writer's stream),
// or Err says why there is none (no node holds the partition).
type Fetch struct {
	Path  string
	Err   error
	ready bool
}

// NewFetches returns fetches that write their files in dir, and removes
// the files a crash left there. With dir "", they go to the system's
// temporary directory, which is shared: a crash's are left alone.
func NewFetches(dir string) *Fetches {
	if dir != "" {
		names, _ := filepath.Glob(filepath.Join(dir, filePrefix+"*"))
		for _, n := range names {
			os.Remove(n)
		}
	}
	return &Fetches{dir: dir, m: make(map[int]*Fetch), failed: make(map[int]time.Time), ready: make(chan struct{}, 1)}
}

// Start returns the partitions of want to start fetching now: those not
// being fetched or fetched already, not failed within Backoff, up to
// MaxFetching fetches at once. Each must end with Done, Retry or Failed.
func (f *Fetches) Start(want uint64) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	fetching := 0
	for _, fe := range f.m {
		if !fe.ready {
			fetching++
		}
	}
	var out []int
	for p := range Each(want) {
		if fetching >= MaxFetching {
			break
		}
		if f.m[p] != nil || time.Since(f.failed[p]) < Backoff {
			continue
		}
		fetching++
		f.m[p] = &Fetch{}
		out = append(out, p)
	}
	return out
}

// Spool copies r into a new file for a fetch, and returns its name.
func (f *Fetches) Spool(r io.Reader) (string, error) {
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
func (f *Fetches) Done(p int, path string, err error) {
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
func (f *Fetches) Retry(p int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, p)
}

// Failed ends partition p's fetch, or its gain, as failed: it starts again
// after Backoff.
func (f *Fetches) Failed(p int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, p)
	f.failed[p] = time.Now()
}

// Ready receives when a fetch is done.
func (f *Fetches) Ready() <-chan struct{} { return f.ready }

// AnyDone reports whether a fetch is done and not taken.
func (f *Fetches) AnyDone() bool {
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
func (f *Fetches) Take(p int) *Fetch {
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
func (fe *Fetch) Discard() {
	if fe.Path != "" {
		os.Remove(fe.Path)
	}
}

// Close removes the files of the fetches done and not taken; the fetches
// in progress must have ended.
func (f *Fetches) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, fe := range f.m {
		fe.Discard()
		delete(f.m, p)
	}
}

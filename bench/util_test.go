package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestDirSizeWhileFilesChange: measuring a directory whose files come and
// go meanwhile (an open store compacting) counts what is there and never
// fails on a file removed after it was listed.
func TestDirSizeWhileFilesChange(t *testing.T) {
	dir := t.TempDir()
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; !stop.Load(); i++ {
			p := filepath.Join(dir, fmt.Sprint(i%50))
			if i%2 == 0 {
				os.WriteFile(p, []byte("data"), 0o600)
			} else {
				os.Remove(filepath.Join(dir, fmt.Sprint((i-1)%50)))
			}
		}
	}()
	defer func() { stop.Store(true); <-done }()
	for range 2000 {
		if _, err := dirSize(dir); err != nil {
			t.Fatalf("dirSize: %v", err)
		}
		if _, err := dirAllocated(dir); err != nil {
			t.Fatalf("dirAllocated: %v", err)
		}
	}
}

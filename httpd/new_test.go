package httpd

import (
	"errors"
	"testing"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// New opens identity on an engine that has none attached yet; when that
// fails (here: the engine is closed) it returns the error instead of
// panicking in the caller's goroutine.
func TestNewIdentityError(t *testing.T) {
	e, err := engine.Open(&engine.Options{FS: snapshot.NewMemFS(), NoSync: true, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := New(e, &Options{RateLimit: -1})
	if !errors.Is(err, engine.ErrClosed) || s != nil {
		t.Fatalf("New on a closed engine = %v, %v; want nil, engine.ErrClosed", s, err)
	}
}

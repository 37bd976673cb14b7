package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/webstats/webstats/snapshot"
)

// TestRegistryWritesOnlyAttachedRecords: the seam writes the attached
// package's records only; a website, the website counter, a salt or any
// other kind of the engine's is refused (it would change the store behind
// the engine's memory), through Do, PutMany and DeleteNow alike.
func TestRegistryWritesOnlyAttachedRecords(t *testing.T) {
	e, err := Open(&Options{FS: snapshot.NewMemFS(), NoSync: true, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	d := "example.org"
	w, err := e.Owner(1).CreateWebsite(ctx, WebsiteInput{Domain: &d})
	if err != nil {
		t.Fatal(err)
	}
	reg := e.Registry()
	for _, r := range []struct {
		kind snapshot.Kind
		id   uint64
	}{{snapshot.KindWebsite, uint64(w.ID)}, {snapshot.KindGoals, uint64(w.ID)}, {snapshot.KindCounter, 2}, {snapshot.KindSalt, 1}, {snapshot.KindCluster, 1}} {
		if err := reg.Do(ctx, LockWrite, func() error { return reg.Put(r.kind, r.id, []byte("{}")) }); !errors.Is(err, ErrNotAttachedRecord) {
			t.Errorf("Put %s %d: %v, want ErrNotAttachedRecord", r.kind, r.id, err)
		}
		if err := reg.Do(ctx, LockWrite, func() error { return reg.Delete(r.kind, r.id) }); !errors.Is(err, ErrNotAttachedRecord) {
			t.Errorf("Delete %s %d: %v, want ErrNotAttachedRecord", r.kind, r.id, err)
		}
		if err := reg.PutMany(r.kind, []uint64{r.id}, [][]byte{[]byte("{}")}); !errors.Is(err, ErrNotAttachedRecord) {
			t.Errorf("PutMany %s %d: %v, want ErrNotAttachedRecord", r.kind, r.id, err)
		}
		if err := reg.DeleteNow(r.kind, r.id); !errors.Is(err, ErrNotAttachedRecord) {
			t.Errorf("DeleteNow %s %d: %v, want ErrNotAttachedRecord", r.kind, r.id, err)
		}
	}
	if got, err := e.Owner(1).Website(ctx, w.ID); err != nil || got.Domain != d {
		t.Errorf("the website after the refused writes: %+v, %v", got, err)
	}
	if v, err := reg.Get(snapshot.KindWebsite, uint64(w.ID)); err != nil || string(v) == "{}" {
		t.Errorf("the stored website: %q, %v", v, err)
	}
	// The attached package's kinds go through.
	if err := reg.Do(ctx, LockWrite, func() error { return reg.Put(snapshot.KindSecret, 7, []byte("s")) }); err != nil {
		t.Errorf("Put of a secret: %v", err)
	}
	if v, err := reg.Get(snapshot.KindSecret, 7); err != nil || string(v) != "s" {
		t.Errorf("the secret stored: %q, %v", v, err)
	}
}

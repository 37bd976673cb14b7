package identity_test

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// TestUsageSurvivesCrash: the last uses of keys and sessions recorded
// before a snapshot are on disk once it returns, so a crash after it (no
// Close: what was not synced is lost) keeps them; a crash before it loses
// only the uses since the last snapshot, never a record.
func TestUsageSurvivesCrash(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, o := openMem(t, c, func(o *engine.Options) { o.FS = vfs.NewCrashableMem() })
	ctx := context.Background()
	id := identity.Must(e)
	a, key, err := id.CreateAccount(ctx, "A", "a@example.org")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(2 * time.Minute)
	used := c.Now()
	acc, err := id.Authenticate(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := id.CreateSession(ctx, acc, identity.SessionClient{})
	if err != nil {
		t.Fatal(err)
	}
	c.Add(2 * time.Minute)
	seen := c.Now()
	if _, err := id.SessionAccount(ctx, tok); err != nil {
		t.Fatal(err)
	}
	fs := o.FS.(*vfs.MemFS)
	before := fs.CrashClone(vfs.CrashCloneCfg{}) // a crash before the snapshot
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	after := fs.CrashClone(vfs.CrashCloneCfg{})
	reopen := func(fs *vfs.MemFS) (identity.Account, []identity.Session) {
		t.Helper()
		o := *o
		o.FS = fs
		e, err := engine.Open(&o)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		id := identity.Must(e)
		acc, err := id.Account(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		return acc, id.Sessions(ctx, a.ID)
	}
	acc, ss := reopen(after)
	if len(acc.Keys) != 1 || !acc.Keys[0].LastUsed.Equal(used) {
		t.Errorf("crash after the snapshot: keys %+v, want one used at %v", acc.Keys, used)
	}
	if len(ss) != 1 || !ss[0].LastSeen.Equal(seen) {
		t.Errorf("crash after the snapshot: sessions %+v, want one seen at %v", ss, seen)
	}
	acc, ss = reopen(before)
	if len(acc.Keys) != 1 || !acc.Keys[0].LastUsed.IsZero() {
		t.Errorf("crash before the snapshot: keys %+v, want one never used (the use was in memory)", acc.Keys)
	}
	if len(ss) != 1 || ss[0].LastSeen.After(used) {
		t.Errorf("crash before the snapshot: sessions %+v, want one last seen at its creation", ss)
	}
}

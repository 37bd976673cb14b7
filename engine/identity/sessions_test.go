package identity_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// TestSession checks the life of sign-in sessions: sign-out, key rotation,
// expiry, the per-account bound and a restart (real Pebble on disk).
func TestSession(t *testing.T) {
	ctx := context.Background()
	c := newClock("2026-11-21T12:00:00Z")
	dir := t.TempDir()
	open := func() *engine.Engine {
		t.Helper()
		e, err := engine.Open(&engine.Options{Dir: dir, Now: c.Now, SnapshotEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open()
	defer func() { e.Close() }()
	alice, _, err := identity.Must(e).CreateAccount(ctx, "Alice", "alice@example.org")
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := identity.Must(e).CreateAccount(ctx, "Bob", "bob@example.org")
	if err != nil {
		t.Fatal(err)
	}
	create := func(a identity.Account) string {
		t.Helper()
		tok, err := identity.Must(e).CreateSession(ctx, a, identity.SessionClient{})
		if err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		return tok
	}
	// who returns the account id of tok's session, or 0.
	who := func(tok string) uint32 {
		t.Helper()
		a, err := identity.Must(e).SessionAccount(ctx, tok)
		if errors.Is(err, identity.ErrUnauthenticated) {
			return 0
		}
		if err != nil {
			t.Fatalf("SessionAccount: %v", err)
		}
		return a.ID
	}

	t.Run("sign out", func(t *testing.T) {
		a1, a2 := create(alice), create(alice)
		if who(a1) != alice.ID || who(a2) != alice.ID {
			t.Fatal("a new session does not open its account")
		}
		if err := identity.Must(e).EndSession(ctx, a1); err != nil {
			t.Fatal(err)
		}
		if who(a1) != 0 {
			t.Error("a session still opens its account after sign-out")
		}
		if who(a2) != alice.ID {
			t.Error("signing out one session ended another")
		}
		if err := identity.Must(e).EndSession(ctx, a1); err != nil {
			t.Errorf("ending an ended session: %v", err)
		}
		for _, bad := range []string{"", "x", a2 + "x", strings.Repeat("A", 43), strings.Repeat("A", 1<<16)} {
			if who(bad) != 0 {
				t.Errorf("token %.20q opens an account", bad)
			}
		}
	})

	t.Run("rotate key", func(t *testing.T) {
		a1, a2, b1 := create(alice), create(alice), create(bob)
		if _, err := identity.Must(e).RotateKey(ctx, alice.ID); err != nil {
			t.Fatal(err)
		}
		if who(a1) != 0 || who(a2) != 0 {
			t.Error("a session survived the key rotation")
		}
		if who(b1) != bob.ID {
			t.Error("another account's session ended with the rotation")
		}
		// A sign-in that authenticated with the old key cannot start a
		// session after the rotation.
		if _, err := identity.Must(e).CreateSession(ctx, alice, identity.SessionClient{}); !errors.Is(err, identity.ErrUnauthenticated) {
			t.Errorf("CreateSession with the rotated key: %v, want ErrUnauthenticated", err)
		}
		var err error
		if alice, err = identity.Must(e).Account(ctx, alice.ID); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("end sessions", func(t *testing.T) {
		a1, b1 := create(alice), create(bob)
		if err := identity.Must(e).EndSessions(ctx, alice.ID); err != nil {
			t.Fatal(err)
		}
		if who(a1) != 0 || who(b1) != bob.ID {
			t.Errorf("after EndSessions(alice): alice %d, bob %d", who(a1), who(b1))
		}
	})

	t.Run("expiry", func(t *testing.T) {
		tok := create(alice)
		c.Add(identity.SessionLife - time.Second)
		if who(tok) != alice.ID {
			t.Error("expired before SessionLife")
		}
		c.Add(time.Second)
		if who(tok) != 0 {
			t.Error("still open after SessionLife")
		}
	})

	t.Run("bounded per account", func(t *testing.T) {
		first := create(bob)
		var toks []string
		for range identity.MaxSessionsPerAccount {
			toks = append(toks, create(bob))
		}
		if who(first) != 0 {
			t.Errorf("the oldest session survived %d newer ones", identity.MaxSessionsPerAccount)
		}
		for i, tok := range toks {
			if who(tok) != bob.ID {
				t.Fatalf("session %d of the newest %d ended", i, identity.MaxSessionsPerAccount)
			}
		}
	})

	t.Run("restart", func(t *testing.T) {
		keep, ended := create(alice), create(alice)
		short := create(bob)
		if err := identity.Must(e).EndSession(ctx, ended); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Hour)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		e = open()
		if who(keep) != alice.ID {
			t.Error("a session did not survive a restart")
		}
		if who(ended) != 0 {
			t.Error("an ended session came back after a restart")
		}
		if who(short) != bob.ID {
			t.Error("bob's session did not survive a restart")
		}
		// Expired sessions are dropped on open.
		c.Add(identity.SessionLife)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		e = open()
		if who(keep) != 0 || who(short) != 0 {
			t.Error("an expired session survived a restart")
		}
	})

	if _, err := identity.Must(e).CreateSession(ctx, identity.Account{ID: 99}, identity.SessionClient{}); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("CreateSession for an unknown account: %v, want ErrUnauthenticated", err)
	}
}

func TestLastReport(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, opts := openMem(t, c)
	w := newSite(t, e, "example.com")
	ctx := context.Background()
	if _, ok, err := identity.Must(e).LastReport(ctx, w.ID, identity.ReportWeekly); ok || err != nil {
		t.Fatalf("LastReport of a new website = %v, %v", ok, err)
	}
	if err := identity.Must(e).SetLastReport(ctx, w.ID, identity.ReportWeekly, date("2026-11-16")); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err := engine.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, ok, err := identity.Must(e).LastReport(ctx, w.ID, identity.ReportWeekly)
	if !ok || err != nil || got != date("2026-11-16") {
		t.Errorf("LastReport after reopen = %v, %v, %v", got, ok, err)
	}
	if _, ok, _ := identity.Must(e).LastReport(ctx, w.ID, identity.ReportMonthly); ok {
		t.Error("monthly report recorded")
	}
	if err := identity.Must(e).SetLastReport(ctx, 999, identity.ReportWeekly, 1); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("unknown website: %v", err)
	}
}

func TestSecret(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, opts := openMem(t, c)
	ctx := context.Background()
	a, err := identity.Must(e).Secret(ctx, "cookies")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := identity.Must(e).Secret(ctx, "other")
	if a == b || a == [32]byte{} {
		t.Errorf("secrets %x %x", a, b)
	}
	e.Close()
	e, err = engine.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if again, _ := identity.Must(e).Secret(ctx, "cookies"); again != a {
		t.Error("secret changed across a restart")
	}
}

// TestRevokeSessionKey (#38): in an account without a password, a session
// revokes a key older than (or equal to) its sign-in key only with proof, a
// key of the account of an id at most its own; keys it could have made need
// none; an account with a password needs none.
func TestRevokeSessionKey(t *testing.T) {
	ctx := context.Background()
	e, _ := openMem(t, newClock("2026-11-21T12:00:00Z"))
	id := identity.Must(e)
	acc, first, err := id.CreateAccount(ctx, "Key only", "k@example.org")
	if err != nil {
		t.Fatal(err)
	}
	_, second, err := id.CreateKey(ctx, acc.ID, "second")
	if err != nil {
		t.Fatal(err)
	}
	a, err := id.Authenticate(ctx, second) // the session signs in with key 2
	if err != nil {
		t.Fatal(err)
	}
	tok, err := id.CreateSession(ctx, a, identity.SessionClient{})
	if err != nil {
		t.Fatal(err)
	}
	made, _, err := id.CreateKey(ctx, acc.ID, "made by the session")
	if err != nil {
		t.Fatal(err)
	}
	var verr *engine.ValidationError
	for _, proof := range []string{"", "ws_nope"} {
		if err := id.RevokeSessionKey(ctx, tok, 1, proof); !errors.As(err, &verr) || verr.Fields[0].Msg != identity.MsgRevokeProof {
			t.Errorf("revoke key 1 with proof %q: %v, want MsgRevokeProof", proof, err)
		}
	}
	if err := id.RevokeSessionKey(ctx, tok, made.ID, ""); err != nil {
		t.Errorf("revoke the key the session made: %v", err)
	}
	if err := id.RevokeSessionKey(ctx, tok, 1, second); err != nil {
		t.Errorf("revoke key 1 with key 2 as proof: %v", err)
	}
	if _, err := id.Authenticate(ctx, first); err == nil {
		t.Error("key 1 works after its revocation")
	}
	// With a password, no proof.
	if _, err := id.SetPassword(ctx, acc.ID, "", "a long password", true); err != nil {
		t.Fatal(err)
	}
	a, err = id.Authenticate(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err = id.CreateSession(ctx, a, identity.SessionClient{}); err != nil {
		t.Fatal(err)
	}
	if err := id.RevokeSessionKey(ctx, tok, a.ViaKey, ""); err != nil {
		t.Errorf("revoke in an account with a password: %v", err)
	}
}

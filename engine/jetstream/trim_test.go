package jetstream_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/webstats/webstats/engine/jetstream"
)

// TestTrim: the stream is purged only behind what every node and the
// oldest seed need; never without a seed or without a node's position; a
// node that stopped updating its position is forgotten after MaxAge.
func TestTrim(t *testing.T) {
	c := startNATS(t, 1)
	openNamed := func(name string, maxAge time.Duration, node string) *jetstream.Log {
		conn, err := nats.Connect(c.url(0), nats.ReconnectBufSize(-1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		l, err := jetstream.New(ctx, conn, jetstream.Options{Name: name, Replicas: 1, MaxAge: maxAge, Duplicates: time.Second, PublishTimeout: 500 * time.Millisecond, Node: node})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	open := func(name string, maxAge time.Duration) *jetstream.Log {
		return openNamed(name, maxAge, "")
	}
	a, b := open("trim", time.Hour), open("trim", time.Hour)
	publish := func(n int) {
		t.Helper()
		for range n {
			if err := a.Publish(ctx, 1, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	trim := func(what string, want, first uint64) {
		t.Helper()
		got, err := a.Trim(ctx)
		if err != nil {
			t.Fatalf("%s: Trim: %v", what, err)
		}
		f, err := a.First(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || f != first {
			t.Errorf("%s: trimmed to %d, first message %d; want %d and %d", what, got, f, want, first)
		}
	}
	publish(30)
	trim("no seed, no node", 0, 1)
	if err := a.PutPosition(ctx, 20); err != nil {
		t.Fatal(err)
	}
	if err := b.PutPosition(ctx, 10); err != nil {
		t.Fatal(err)
	}
	trim("nodes but no seed", 0, 1)
	if _, err := a.PutSeed(ctx, 15, strings.NewReader("seed at 15")); err != nil {
		t.Fatal(err)
	}
	trim("node b at 10, seed at 15", 10, 11)
	if err := b.PutPosition(ctx, 25); err != nil {
		t.Fatal(err)
	}
	trim("nodes at 20 and 25, seed at 15", 15, 16)
	if _, err := a.PutSeed(ctx, 28, strings.NewReader("seed at 28")); err != nil {
		t.Fatal(err)
	}
	trim("nodes at 20 and 25, seeds at 15 and 28", 0, 16) // the older seed is kept a while

	// A node with a name of its own (kept across restarts) replaces its
	// position when it starts again, instead of holding the trim back.
	a = open("trimnode", time.Hour)
	if _, err := a.PutSeed(ctx, 30, strings.NewReader("seed at 30")); err != nil {
		t.Fatal(err)
	}
	if err := a.PutPosition(ctx, 40); err != nil {
		t.Fatal(err)
	}
	if err := openNamed("trimnode", time.Hour, "n1").PutPosition(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if cut, ok, err := a.Unneeded(ctx); err != nil || !ok || cut != 10 {
		t.Fatalf("unneeded with n1 at 10: %d, %v, %v; want 10", cut, ok, err)
	}
	if err := openNamed("trimnode", time.Hour, "n1").PutPosition(ctx, 35); err != nil { // n1 started again
		t.Fatal(err)
	}
	if cut, ok, err := a.Unneeded(ctx); err != nil || !ok || cut != 30 {
		t.Fatalf("unneeded with n1 restarted at 35: %d, %v, %v; want 30 (the seed)", cut, ok, err)
	}

	// Nodes of a stream that keeps 2 s: b stops updating its position,
	// which expires then.
	a, b = open("trimage", 2*time.Second), open("trimage", 2*time.Second)
	if _, err := a.PutSeed(ctx, 30, strings.NewReader("seed at 30")); err != nil {
		t.Fatal(err)
	}
	if err := b.PutPosition(ctx, 10); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := a.PutPosition(ctx, 20); err != nil {
			t.Fatal(err)
		}
		cut, ok, err := a.Unneeded(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || cut != 10 && cut != 20 {
			t.Fatalf("unneeded: %d, %v; want 10 (b's) or 20 (a's, b's expired)", cut, ok)
		}
		if cut == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b's position did not expire")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

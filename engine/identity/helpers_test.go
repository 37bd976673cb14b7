package identity_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/snapshot"
)

// clock is a settable clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(s string) *clock {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &clock{t: t}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(s string) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// openMem opens an engine on a fresh in-memory file system with no
// background snapshots.
func openMem(t testing.TB, c *clock, mod ...func(*engine.Options)) (*engine.Engine, *engine.Options) {
	t.Helper()
	o := &engine.Options{FS: snapshot.NewMemFS(), Dir: "data", Now: c.Now, SnapshotEvery: -1}
	for _, m := range mod {
		m(o)
	}
	e, err := engine.Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e, o
}

// newSite creates an account (owner@example.org, the first time) and a
// website of it.
func newSite(t testing.TB, e *engine.Engine, domain string) engine.Website {
	t.Helper()
	ctx := context.Background()
	id := identity.Must(e)
	acc, err := id.AccountByEmail(ctx, "owner@example.org")
	if err != nil {
		acc, _, err = id.CreateAccount(ctx, "Owner", "owner@example.org")
		if err != nil {
			t.Fatalf("CreateAccount: %v", err)
		}
	}
	w, err := e.Owner(acc.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
	if err != nil {
		t.Fatalf("CreateWebsite(%s): %v", domain, err)
	}
	return w
}

func date(s string) buckets.Date {
	d, err := buckets.ParseDate(s)
	if err != nil {
		panic(err)
	}
	return d
}

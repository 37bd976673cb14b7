package report

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// TestTickIdentityError: a Tick that cannot open identity (the engine
// was closed, identity never opened on it) returns the error, where it
// used to panic in the scheduler's goroutine (identity.Must).
func TestTickIdentityError(t *testing.T) {
	created := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	e, err := engine.Open(&engine.Options{FS: snapshot.NewMemFS(), NoSync: true, SnapshotEvery: -1, Now: func() time.Time { return created }})
	if err != nil {
		t.Fatal(err)
	}
	domain, on := "example.org", "1"
	// No identity attached: any account id owns websites.
	if _, err := e.Owner(1).CreateWebsite(context.Background(), engine.WebsiteInput{Domain: &domain, Email: &on}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	log, _ := testLogger()
	s := NewScheduler(e, Options{
		Period: Weekly,
		SMTP:   SMTP{Addr: "127.0.0.1:1", From: "reports@example.org"},
		Now:    func() time.Time { return time.Date(2026, 10, 5, 7, 0, 0, 0, time.UTC) }, // a Monday
		Logger: log,
	})
	if err := s.Tick(context.Background()); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("Tick on a closed engine without identity: %v, want engine.ErrClosed", err)
	}
}

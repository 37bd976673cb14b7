package identity_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// legacyFixture is what testdata/legacy/fixture.json says was made in
// testdata/legacy/data by the engine before identity left it (#39): the
// secrets the records were made with.
type legacyFixture struct {
	AdminID     uint32    `json:"admin_id"`
	AdminKey    string    `json:"admin_key"`
	BobID       uint32    `json:"bob_id"`
	BobKey      string    `json:"bob_key"`
	BobPassword string    `json:"bob_password"`
	CIKey       string    `json:"ci_key"`
	Invite      string    `json:"invite"`
	PagesCookie string    `json:"pages_cookie"`
	Recovery    string    `json:"recovery"`
	Session     string    `json:"session"`
	TOTPSecret  string    `json:"totp_secret"`
	Website     uint32    `json:"website"`
	WrittenAt   time.Time `json:"written_at"`
}

// TestLegacyDataDirectory opens a data directory written by the engine
// before identity moved out of it (#39: "existing data directories open
// unchanged") and finds its accounts, API keys, password, 2FA, session,
// invitation, report claim and cookie secret.
func TestLegacyDataDirectory(t *testing.T) {
	b, err := os.ReadFile("testdata/legacy/fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx legacyFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.CopyFS(dir, os.DirFS("testdata/legacy/data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	now := fx.WrittenAt.Add(time.Hour)
	e, err := engine.Open(&engine.Options{Dir: dir, Now: func() time.Time { return now }, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	id, err := identity.Open(e)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	accs := id.Accounts(ctx)
	if len(accs) != 2 || accs[0].ID != fx.AdminID || accs[1].ID != fx.BobID {
		t.Fatalf("accounts %+v, want ids %d and %d", accs, fx.AdminID, fx.BobID)
	}
	if !accs[0].Admin || accs[1].Admin {
		t.Errorf("admin flags %v %v, want the first account only", accs[0].Admin, accs[1].Admin)
	}
	bob := accs[1]
	if bob.Email != "bob@example.org" || !bob.Password || !bob.TwoFactor || bob.RecoveryCodes != 10 || len(bob.Keys) != 2 {
		t.Errorf("bob = %+v, want a password, 2FA, 10 recovery codes and 2 keys", bob)
	}
	for key, want := range map[string]uint32{fx.AdminKey: fx.AdminID, fx.BobKey: fx.BobID, fx.CIKey: fx.BobID} {
		if a, err := id.Authenticate(ctx, key); err != nil || a.ID != want {
			t.Errorf("Authenticate(%.8s…) = %d, %v; want %d", key, a.ID, err, want)
		}
	}
	if _, err := id.Authenticate(ctx, fx.AdminKey+"x"); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("a wrong key: %v", err)
	}
	a, err := id.SignIn(ctx, "bob@example.org", fx.BobPassword)
	if !errors.Is(err, identity.ErrSecondFactor) {
		t.Fatalf("SignIn = %v, want ErrSecondFactor (2FA is on)", err)
	}
	code, err := totp.GenerateCode(fx.TOTPSecret, now)
	if err != nil {
		t.Fatal(err)
	}
	if a, err = id.CheckSecondFactor(ctx, a, code); err != nil || a.ID != fx.BobID {
		t.Errorf("CheckSecondFactor with the app's code: %d, %v", a.ID, err)
	}
	if a, err := id.SessionAccount(ctx, fx.Session); err != nil || a.ID != fx.AdminID {
		t.Errorf("SessionAccount = %d, %v; want the admin", a.ID, err)
	}
	if ss := id.Sessions(ctx, fx.AdminID); len(ss) != 1 || ss[0].Browser != "Firefox on Linux" || ss[0].IP != "203.0.113.0/24" {
		t.Errorf("Sessions = %+v", ss)
	}
	if !id.CheckInvite(ctx, fx.Invite) {
		t.Error("the invitation is not found")
	}
	if d, ok, err := id.LastReport(ctx, fx.Website, identity.ReportWeekly); err != nil || !ok || d != buckets.DateOf(2026, 11, 16) {
		t.Errorf("LastReport = %v, %v, %v; want 2026-11-16", d, ok, err)
	}
	want, _ := hex.DecodeString(fx.PagesCookie)
	if got, err := id.Secret(ctx, "pages-cookie"); err != nil || string(got[:]) != string(want) {
		t.Errorf("Secret(pages-cookie) = %x, %v; want the stored %x", got, err, want)
	}
	if w, err := e.Owner(fx.BobID).Website(ctx, fx.Website); err != nil || w.Domain != "legacy.example" {
		t.Errorf("bob's website: %+v, %v", w, err)
	}
	// A recovery code is spent once.
	if _, err := id.CheckSecondFactor(ctx, a, fx.Recovery); err != nil {
		t.Errorf("a recovery code: %v", err)
	}
}

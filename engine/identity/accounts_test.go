package identity_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/snapshot"
)

// totpCode computes an RFC 6238 code (SHA-1, 6 digits, 30 s) from the
// RFC, independently of the engine's library.
func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(secret))
	if err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(at.Unix()/30))
	m := hmac.New(sha1.New, key)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[off:]) & 0x7fffffff
	return fmt.Sprintf("%06d", v%1_000_000)
}

// TestTOTPReference checks totpCode against RFC 6238's test vector (the
// 8-digit code 94287082 at 59 s ends in 287082).
func TestTOTPReference(t *testing.T) {
	secret := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte("12345678901234567890"))
	if got := totpCode(t, secret, time.Unix(59, 0)); got != "287082" {
		t.Fatalf("totpCode = %s, want 287082", got)
	}
}

func fieldErrs(t *testing.T, err error) []engine.FieldError {
	t.Helper()
	var ve *engine.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a validation error", err)
	}
	return ve.Fields
}

// TestAccountKeys: several named keys, each revocable; LastUsed written
// at most once a minute; the key limit; the first account is an admin.
func TestAccountKeys(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, o := openMem(t, c)
	ctx := context.Background()
	a, k1, err := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := identity.Must(e).CreateAccount(ctx, "B", "b@example.org")
	if err != nil {
		t.Fatal(err)
	}
	if !a.Admin || b.Admin {
		t.Errorf("admin: first %v, second %v; want true, false", a.Admin, b.Admin)
	}
	k2info, k2, err := identity.Must(e).CreateKey(ctx, a.ID, "  CI  ")
	if err != nil {
		t.Fatal(err)
	}
	if k2info.Name != "CI" || k2 == k1 {
		t.Errorf("new key %+v %q", k2info, k2)
	}
	for _, k := range []string{k1, k2} {
		if got, err := identity.Must(e).Authenticate(ctx, k); err != nil || got.ID != a.ID {
			t.Errorf("Authenticate = %d, %v; want account %d", got.ID, err, a.ID)
		}
	}
	acc, _ := identity.Must(e).Account(ctx, a.ID)
	if len(acc.Keys) != 2 || !acc.Keys[0].LastUsed.Equal(c.Now()) || !acc.Keys[1].LastUsed.Equal(c.Now()) {
		t.Errorf("keys after use: %+v", acc.Keys)
	}
	c.Add(30 * time.Second)
	identity.Must(e).Authenticate(ctx, k2)
	acc, _ = identity.Must(e).Account(ctx, a.ID)
	if !acc.Keys[1].LastUsed.Equal(c.Now().Add(-30 * time.Second)) {
		t.Errorf("LastUsed moved within a minute: %v", acc.Keys[1].LastUsed)
	}
	c.Add(31 * time.Second)
	identity.Must(e).Authenticate(ctx, k2)
	acc, _ = identity.Must(e).Account(ctx, a.ID)
	if !acc.Keys[1].LastUsed.Equal(c.Now()) {
		t.Errorf("LastUsed after a minute = %v, want %v", acc.Keys[1].LastUsed, c.Now())
	}
	// Another account cannot revoke a's key; a can.
	if err := identity.Must(e).RevokeKey(ctx, b.ID, k2info.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("RevokeKey by another account: %v, want ErrNotFound", err)
	}
	if err := identity.Must(e).RevokeKey(ctx, a.ID, k2info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).Authenticate(ctx, k2); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("revoked key: %v, want ErrUnauthenticated", err)
	}
	if _, err := identity.Must(e).Authenticate(ctx, k1); err != nil {
		t.Errorf("the other key after a revocation: %v", err)
	}
	// Validation and the limit.
	if _, _, err := identity.Must(e).CreateKey(ctx, a.ID, " "); err == nil || fieldErrs(t, err)[0].Msg != "The name field is required." {
		t.Errorf("empty name: %v", err)
	}
	for i := 1; i < identity.MaxKeysPerAccount; i++ {
		if _, _, err := identity.Must(e).CreateKey(ctx, a.ID, fmt.Sprint("k", i)); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if _, _, err := identity.Must(e).CreateKey(ctx, a.ID, "one too many"); err == nil || !strings.Contains(fieldErrs(t, err)[0].Msg, "at most 20") {
		t.Errorf("key over the limit: %v", err)
	}
	// Keys survive a restart; the revoked one stays revoked.
	e.Close()
	e2, err := engine.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if _, err := identity.Must(e2).Authenticate(ctx, k1); err != nil {
		t.Errorf("after reopen: %v", err)
	}
	if _, err := identity.Must(e2).Authenticate(ctx, k2); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("revoked key after reopen: %v", err)
	}
	// RotateKey replaces every key by one.
	nk, err := identity.Must(e2).RotateKey(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	acc, _ = identity.Must(e2).Account(ctx, a.ID)
	if len(acc.Keys) != 1 || acc.Keys[0].Name != "default" {
		t.Errorf("keys after rotation: %+v", acc.Keys)
	}
	if _, err := identity.Must(e2).Authenticate(ctx, k1); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("old key after rotation: %v", err)
	}
	if _, err := identity.Must(e2).Authenticate(ctx, nk); err != nil {
		t.Errorf("new key: %v", err)
	}
}

// TestLegacyAccount: a format-1 account record (one key_hash) opens with
// that key as "default", and becomes an admin when no account is one.
func TestLegacyAccount(t *testing.T) {
	fs := snapshot.NewMemFS()
	st, err := snapshot.Open(&snapshot.Options{FS: fs, Dir: "data"})
	if err != nil {
		t.Fatal(err)
	}
	// The key "ws_legacy" hashed with SHA-256, as the old engine stored it.
	rec := `{"id":3,"name":"Old","email":"old@example.org","created_at":"2026-01-01T00:00:00Z","key_hash":[` +
		strings.Trim(strings.Join(strings.Fields(fmt.Sprint(sha256Of("ws_legacy"))), ","), "[]") + `]}`
	if err := st.Put(snapshot.KindAccount, 3, []byte(rec)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	c := newClock("2026-11-27T10:00:00Z")
	e, err := engine.Open(&engine.Options{FS: fs, Dir: "data", Now: c.Now, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, err := identity.Must(e).Authenticate(context.Background(), "ws_legacy")
	if err != nil {
		t.Fatalf("legacy key: %v", err)
	}
	if !a.Admin || len(a.Keys) != 1 || a.Keys[0].Name != "default" || a.Password {
		t.Errorf("migrated account: %+v", a)
	}
	// A new account gets the next id.
	b, _, err := identity.Must(e).CreateAccount(context.Background(), "", "new@example.org")
	if err != nil || b.ID != 4 || b.Admin {
		t.Errorf("next account: %+v, %v", b, err)
	}
	// The migration was written: a second open finds the same, and does
	// not promote anyone else.
	e.Close()
	e, err = engine.Open(&engine.Options{FS: fs, Dir: "data", Now: c.Now, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, acc := range identity.Must(e).Accounts(context.Background()) {
		if acc.Admin != (acc.ID == 3) || acc.ID == 3 && (len(acc.Keys) != 1 || acc.Keys[0].Name != "default") {
			t.Errorf("after reopening: %+v", acc)
		}
	}
	if _, err := identity.Must(e).Authenticate(context.Background(), "ws_legacy"); err != nil {
		t.Errorf("legacy key after reopening: %v", err)
	}
}

// TestPasswordSignIn: setting, checking and changing a password; what a
// change ends; a disabled account.
func TestPasswordSignIn(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	a, key, _ := identity.Must(e).CreateAccount(ctx, "A", "A@Example.org")
	b, _, _ := identity.Must(e).CreateAccount(ctx, "B", "b@example.org")
	if _, err := identity.Must(e).SignIn(ctx, "a@example.org", "whatever1"); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("no password set: %v", err)
	}
	for _, tc := range []struct{ pw, msg string }{
		{"", "The password field is required."},
		{"short", "The password must be at least 8 characters."},
		{"bad\npassword", "The password must not contain control characters."},
		{strings.Repeat("x", 129), "The password must not be greater than 128 characters."},
	} {
		_, err := identity.Must(e).SetPassword(ctx, a.ID, "", tc.pw, false)
		if diff := cmp.Diff([]engine.FieldError{{Field: "password", Msg: tc.msg}}, fieldErrs(t, err)); diff != "" {
			t.Errorf("password %q mismatch (-want +got):\n%s", tc.pw, diff)
		}
	}
	if _, err := identity.Must(e).SetPassword(ctx, a.ID, "", "correct horse", false); err == nil || fieldErrs(t, err)[0].Msg != identity.MsgWrongKey {
		t.Errorf("first password without the API key: %v", err)
	}
	if _, err := identity.Must(e).SetPassword(ctx, a.ID, "not the key", "correct horse", false); err == nil || fieldErrs(t, err)[0].Msg != identity.MsgWrongKey {
		t.Errorf("first password with a wrong key: %v", err)
	}
	if _, err := identity.Must(e).SetPassword(ctx, a.ID, key, "correct horse", false); err != nil {
		t.Fatal(err)
	}
	got, err := identity.Must(e).SignIn(ctx, " a@EXAMPLE.org ", "correct horse")
	if err != nil || got.ID != a.ID || !got.Password {
		t.Fatalf("SignIn = %+v, %v", got, err)
	}
	for _, tc := range []struct{ email, pw string }{
		{"a@example.org", "correct horsE"}, {"b@example.org", "correct horse"}, {"nobody@example.org", "correct horse"},
	} {
		if _, err := identity.Must(e).SignIn(ctx, tc.email, tc.pw); !errors.Is(err, identity.ErrUnauthenticated) {
			t.Errorf("SignIn(%s, %s): %v, want ErrUnauthenticated", tc.email, tc.pw, err)
		}
	}
	// A session made before a password change ends with it, and a
	// sign-in read before it cannot make one.
	tok, err := identity.Must(e).CreateSession(ctx, got, identity.SessionClient{UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0", IP: netip.MustParseAddr("192.0.2.77")})
	if err != nil {
		t.Fatal(err)
	}
	ss := identity.Must(e).Sessions(ctx, a.ID)
	if len(ss) != 1 || ss[0].Browser != "Firefox on Linux" || ss[0].IP != "192.0.2.0/24" || ss[0].ID != identity.SessionID(tok) {
		t.Errorf("sessions: %+v", ss)
	}
	if _, err := identity.Must(e).SetPassword(ctx, a.ID, "wrong one", "new password", false); err == nil || fieldErrs(t, err)[0].Field != "current_password" {
		t.Errorf("wrong current password: %v", err)
	}
	if _, err := identity.Must(e).SetPassword(ctx, a.ID, "correct horse", "new password", false); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).SessionAccount(ctx, tok); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("session after a password change: %v", err)
	}
	if _, err := identity.Must(e).CreateSession(ctx, got, identity.SessionClient{}); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("session from a sign-in before the change: %v", err)
	}
	// Email change needs the password, and a free address.
	if _, err := identity.Must(e).ChangeEmail(ctx, a.ID, "b@example.org", "new password"); err == nil || fieldErrs(t, err)[0].Msg != "The email has already been taken." {
		t.Errorf("taken email: %v", err)
	}
	if _, err := identity.Must(e).ChangeEmail(ctx, a.ID, "a2@example.org", "correct horse"); err == nil || fieldErrs(t, err)[0].Msg != "The password is incorrect." {
		t.Errorf("email change with the old password: %v", err)
	}
	if _, err := identity.Must(e).ChangeEmail(ctx, b.ID, "b2@example.org", "x"); err == nil || fieldErrs(t, err)[0].Msg != "Set a password first." {
		t.Errorf("email change without a password: %v", err)
	}
	if _, err := identity.Must(e).ChangeEmail(ctx, a.ID, "a2@example.org", "new password"); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).SignIn(ctx, "a@example.org", "new password"); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("old email: %v", err)
	}
	if _, err := identity.Must(e).SignIn(ctx, "a2@example.org", "new password"); err != nil {
		t.Errorf("new email: %v", err)
	}
	// Disabling: sessions end, keys and password are refused; enabling
	// brings them back. An admin cannot disable itself.
	ad, err := identity.Must(e).Admin(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).Admin(b.ID); !errors.Is(err, identity.ErrForbidden) {
		t.Errorf("Admin(non-admin): %v", err)
	}
	if _, err := ad.SetDisabled(ctx, a.ID, true); !errors.Is(err, identity.ErrForbidden) {
		t.Errorf("self-disable: %v", err)
	}
	got, _ = identity.Must(e).SignIn(ctx, "a2@example.org", "new password")
	tok, _ = identity.Must(e).CreateSession(ctx, got, identity.SessionClient{})
	ad2, _ := ad.SetAdmin(ctx, b.ID, true)
	if !ad2.Admin {
		t.Error("SetAdmin")
	}
	adB, err := identity.Must(e).Admin(b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adB.SetDisabled(ctx, a.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).SessionAccount(ctx, tok); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("session of a disabled account: %v", err)
	}
	if _, err := identity.Must(e).Authenticate(ctx, key); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("key of a disabled account: %v", err)
	}
	if _, err := identity.Must(e).SignIn(ctx, "a2@example.org", "new password"); !errors.Is(err, identity.ErrDisabled) {
		t.Errorf("password of a disabled account: %v", err)
	}
	if _, err := identity.Must(e).SignIn(ctx, "a2@example.org", "wrong password"); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("wrong password of a disabled account: %v (must not tell it is disabled)", err)
	}
	if _, err := identity.Must(e).Admin(a.ID); !errors.Is(err, identity.ErrForbidden) {
		t.Errorf("a disabled admin: %v", err)
	}
	if _, err := adB.SetDisabled(ctx, a.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).Authenticate(ctx, key); err != nil {
		t.Errorf("key after enabling: %v", err)
	}
}

// TestTwoFactor: setup, sign-in with a code, no replay, recovery codes
// used once, turning it off.
func TestTwoFactor(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, o := openMem(t, c)
	ctx := context.Background()
	a, aKey, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	if _, err := identity.Must(e).SetPassword(ctx, a.ID, aKey, "correct horse", false); err != nil {
		t.Fatal(err)
	}
	secret, url, err := identity.Must(e).NewTOTPKey(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "otpauth://totp/webstats:a@example.org?") || !strings.Contains(url, "secret="+secret) {
		t.Errorf("url %q", url)
	}
	wrong := totpCode(t, secret, c.Now().Add(-5*time.Minute))
	if _, err := identity.Must(e).EnableTOTP(ctx, a.ID, secret, wrong, "correct horse"); err == nil || fieldErrs(t, err)[0].Field != "code" {
		t.Errorf("EnableTOTP with an old code: %v", err)
	}
	if _, err := identity.Must(e).EnableTOTP(ctx, a.ID, secret, totpCode(t, secret, c.Now()), "wrong password"); err == nil || fieldErrs(t, err)[0].Msg != "The password is incorrect." {
		t.Errorf("EnableTOTP with a wrong password: %v", err)
	}
	codes, err := identity.Must(e).EnableTOTP(ctx, a.ID, secret, totpCode(t, secret, c.Now()), "correct horse")
	if err != nil || len(codes) != 10 {
		t.Fatalf("EnableTOTP = %v, %v", codes, err)
	}
	pending, err := identity.Must(e).SignIn(ctx, "a@example.org", "correct horse")
	if !errors.Is(err, identity.ErrSecondFactor) || pending.ID != a.ID || !pending.TwoFactor {
		t.Fatalf("SignIn with 2FA = %+v, %v", pending, err)
	}
	// A second secret cannot replace the first, even with the password.
	s2, _, _ := identity.Must(e).NewTOTPKey(ctx, a.ID)
	if _, err := identity.Must(e).EnableTOTP(ctx, a.ID, s2, totpCode(t, s2, c.Now()), "correct horse"); err == nil || !strings.Contains(fieldErrs(t, err)[0].Msg, "Turn it off first") {
		t.Errorf("EnableTOTP over a working one: %v", err)
	}
	// The code that enabled 2FA was used: the same step is refused.
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, totpCode(t, secret, c.Now())); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("replayed setup code: %v", err)
	}
	c.Add(30 * time.Second)
	code := totpCode(t, secret, c.Now())
	got, err := identity.Must(e).CheckSecondFactor(ctx, pending, code)
	if err != nil || got.ID != a.ID {
		t.Fatalf("CheckSecondFactor = %+v, %v", got, err)
	}
	if _, err := identity.Must(e).CreateSession(ctx, got, identity.SessionClient{}); err != nil {
		t.Errorf("session after 2FA: %v", err)
	}
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, code); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("replayed code: %v", err)
	}
	// A code a step late is accepted (clock skew), two steps late not:
	// the last code used was at step S; now is S+3, and the code of S+1,
	// never used, is outside the skew.
	c.Add(90 * time.Second)
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, totpCode(t, secret, c.Now().Add(-60*time.Second))); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("code two steps old: %v", err)
	}
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, totpCode(t, secret, c.Now().Add(-30*time.Second))); err != nil {
		t.Errorf("code one step old: %v", err)
	}
	// Recovery codes: once each, spaces and case forgiven.
	rc := " " + strings.ToUpper(codes[3]) + " "
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, rc); err != nil {
		t.Errorf("recovery code: %v", err)
	}
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, rc); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("recovery code used twice: %v", err)
	}
	// It all survives a restart.
	e.Close()
	e, err = engine.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	acc, _ := identity.Must(e).Account(ctx, a.ID)
	if !acc.TwoFactor || acc.RecoveryCodes != 9 {
		t.Errorf("after reopen: 2FA %v, %d recovery codes; want true, 9", acc.TwoFactor, acc.RecoveryCodes)
	}
	if _, err := identity.Must(e).CheckSecondFactor(ctx, acc, codes[3]); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("used recovery code after reopen: %v", err)
	}
	// Turning it off needs the password, and ends a pending sign-in.
	if _, err := identity.Must(e).DisableTOTP(ctx, a.ID, "nope"); err == nil {
		t.Error("DisableTOTP with a wrong password")
	}
	if _, err := identity.Must(e).DisableTOTP(ctx, a.ID, "correct horse"); err != nil {
		t.Fatal(err)
	}
	c.Add(30 * time.Second)
	if _, err := identity.Must(e).CheckSecondFactor(ctx, acc, totpCode(t, secret, c.Now())); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("code after 2FA off: %v", err)
	}
	if got, err := identity.Must(e).SignIn(ctx, "a@example.org", "correct horse"); err != nil || got.TwoFactor {
		t.Errorf("SignIn after 2FA off = %+v, %v", got, err)
	}
}

// TestInvitesAndRegistration: invitations are single-use, expire, and
// are the only way in when required.
func TestInvitesAndRegistration(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, o := openMem(t, c)
	ctx := context.Background()
	admin, _, _ := identity.Must(e).CreateAccount(ctx, "Admin", "admin@example.org")
	ad, err := identity.Must(e).Admin(admin.ID)
	if err != nil {
		t.Fatal(err)
	}
	reg := identity.Registration{Name: "New", Email: "new@example.org", Password: "long enough", RequireInvite: true}
	if _, err := identity.Must(e).RegisterAccount(ctx, reg); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("no invitation: %v", err)
	}
	reg.Invite = "made-up"
	if _, err := identity.Must(e).RegisterAccount(ctx, reg); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("made-up invitation: %v", err)
	}
	tok, inv, err := ad.CreateInvite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ad.Invites(ctx); len(got) != 1 || got[0].ID != inv.ID || got[0].By != admin.ID {
		t.Errorf("Invites = %+v", got)
	}
	// Validation comes first and leaves the invitation unused.
	reg.Invite = tok
	bad := reg
	bad.Email = "admin@EXAMPLE.org"
	if _, err := identity.Must(e).RegisterAccount(ctx, bad); err == nil || fieldErrs(t, err)[0].Msg != "The email has already been taken." {
		t.Errorf("taken email: %v", err)
	}
	// The invitation survives a restart.
	e.Close()
	if e, err = engine.Open(o); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !identity.Must(e).CheckInvite(ctx, tok) {
		t.Fatal("invitation lost by a restart")
	}
	a, err := identity.Must(e).RegisterAccount(ctx, reg)
	if err != nil || a.Admin || !a.Password || len(a.Keys) != 0 {
		t.Fatalf("RegisterAccount = %+v, %v", a, err)
	}
	reg.Email = "again@example.org"
	if _, err := identity.Must(e).RegisterAccount(ctx, reg); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("invitation used twice: %v", err)
	}
	// Expiry.
	ad, _ = identity.Must(e).Admin(admin.ID)
	tok2, _, _ := ad.CreateInvite(ctx)
	c.Add(identity.InviteLife)
	reg.Invite = tok2
	if _, err := identity.Must(e).RegisterAccount(ctx, reg); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("expired invitation: %v", err)
	}
	// Open registration needs none; deleting an invitation ends it.
	tok3, inv3, _ := ad.CreateInvite(ctx)
	if err := ad.DeleteInvite(ctx, inv3.ID); err != nil {
		t.Fatal(err)
	}
	if identity.Must(e).CheckInvite(ctx, tok3) {
		t.Error("deleted invitation still valid")
	}
	if _, err := identity.Must(e).RegisterAccount(ctx, identity.Registration{Email: "open@example.org", Password: "long enough"}); err != nil {
		t.Errorf("open registration: %v", err)
	}
}

// TestResetToken: a reset link works once, for ResetLife, and only for
// its account.
func TestResetToken(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	a, _, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	if _, _, err := identity.Must(e).CreateResetToken(ctx, "nobody@example.org"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("unknown email: %v", err)
	}
	tok, acc, err := identity.Must(e).CreateResetToken(ctx, "A@example.org")
	if err != nil || acc.ID != a.ID {
		t.Fatalf("CreateResetToken = %v, %v", acc, err)
	}
	if _, err := identity.Must(e).CheckResetToken(ctx, tok[:len(tok)-2]+"xx"); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("forged token: %v", err)
	}
	if _, err := identity.Must(e).ResetPassword(ctx, tok, "short"); err == nil || fieldErrs(t, err)[0].Field != "password" {
		t.Errorf("short password: %v", err)
	}
	if _, err := identity.Must(e).ResetPassword(ctx, tok, "brand new pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).SignIn(ctx, "a@example.org", "brand new pw"); err != nil {
		t.Errorf("sign in with the reset password: %v", err)
	}
	if _, err := identity.Must(e).ResetPassword(ctx, tok, "another one"); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("token used twice: %v", err)
	}
	tok2, _, _ := identity.Must(e).CreateResetToken(ctx, "a@example.org")
	c.Add(identity.ResetLife)
	if _, err := identity.Must(e).CheckResetToken(ctx, tok2); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("expired token: %v", err)
	}
}

// TestSessionsList: sessions of an account, ending one by id, and no
// reach into another account's.
func TestSessionsList(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	a, _, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	b, _, _ := identity.Must(e).CreateAccount(ctx, "B", "b@example.org")
	t1, _ := identity.Must(e).CreateSession(ctx, a, identity.SessionClient{IP: netip.MustParseAddr("2001:db8:1:2:3::4")})
	c.Add(time.Minute)
	t2, _ := identity.Must(e).CreateSession(ctx, a, identity.SessionClient{})
	tb, _ := identity.Must(e).CreateSession(ctx, b, identity.SessionClient{})
	ss := identity.Must(e).Sessions(ctx, a.ID)
	if len(ss) != 2 || ss[0].ID != identity.SessionID(t2) || ss[1].ID != identity.SessionID(t1) || ss[1].IP != "2001:db8:1::/48" {
		t.Fatalf("Sessions = %+v", ss)
	}
	if err := identity.Must(e).EndSessionID(ctx, b.ID, ss[0].ID); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("ending another account's session: %v", err)
	}
	// LastSeen moves at most once a minute.
	c.Add(2 * time.Minute)
	identity.Must(e).SessionAccount(ctx, t1)
	if ss := identity.Must(e).Sessions(ctx, a.ID); !ss[1].LastSeen.Equal(c.Now()) {
		t.Errorf("LastSeen = %v, want %v", ss[1].LastSeen, c.Now())
	}
	if err := identity.Must(e).EndSessionID(ctx, a.ID, identity.SessionID(t1)); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).SessionAccount(ctx, t1); err == nil {
		t.Error("ended session still works")
	}
	if _, err := identity.Must(e).SessionAccount(ctx, t2); err != nil {
		t.Errorf("the other session: %v", err)
	}
	if _, err := identity.Must(e).SessionAccount(ctx, tb); err != nil {
		t.Errorf("b's session: %v", err)
	}
}

func sha256Of(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// TestRevokedKeyEndsSessions: a session signed in with a key ends with
// the key, and a sign-in with it cannot start one after (the answer to a
// leaked key). Other sessions go on.
func TestRevokedKeyEndsSessions(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	a, main, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	info, leaked, err := identity.Must(e).CreateKey(ctx, a.ID, "CI")
	if err != nil {
		t.Fatal(err)
	}
	viaLeaked, _ := identity.Must(e).Authenticate(ctx, leaked)
	viaMain, _ := identity.Must(e).Authenticate(ctx, main)
	tLeaked, err := identity.Must(e).CreateSession(ctx, viaLeaked, identity.SessionClient{})
	if err != nil {
		t.Fatal(err)
	}
	tMain, _ := identity.Must(e).CreateSession(ctx, viaMain, identity.SessionClient{})
	if err := identity.Must(e).RevokeKey(ctx, a.ID, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).SessionAccount(ctx, tLeaked); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("session of the revoked key: %v", err)
	}
	if _, err := identity.Must(e).CreateSession(ctx, viaLeaked, identity.SessionClient{}); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("CreateSession after the key was revoked: %v", err)
	}
	if _, err := identity.Must(e).SessionAccount(ctx, tMain); err != nil {
		t.Errorf("the other key's session: %v", err)
	}
}

// TestLastAdmin: the admins cannot leave the server without one, even
// two at once; a demoted admin's Admin view stops working.
func TestLastAdmin(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	a, _, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	b, _, _ := identity.Must(e).CreateAccount(ctx, "B", "b@example.org")
	adA, _ := identity.Must(e).Admin(a.ID)
	if _, err := adA.SetAdmin(ctx, b.ID, true); err != nil {
		t.Fatal(err)
	}
	adB, _ := identity.Must(e).Admin(b.ID) // two requests in flight
	if _, err := adA.SetAdmin(ctx, b.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := adB.SetAdmin(ctx, a.ID, false); !errors.Is(err, identity.ErrForbidden) {
		t.Errorf("a demoted admin's request: %v, want ErrForbidden", err)
	}
	if _, _, err := adB.CreateInvite(ctx); !errors.Is(err, identity.ErrForbidden) {
		t.Errorf("a demoted admin's invitation: %v, want ErrForbidden", err)
	}
	// With b an admin again, a cannot take b's rights... b can take a's
	// only while another enabled admin remains.
	adA.SetAdmin(ctx, b.ID, true)
	adB, _ = identity.Must(e).Admin(b.ID)
	if _, err := adB.SetDisabled(ctx, a.ID, true); err != nil {
		t.Fatal(err)
	}
	adA2, err := identity.Must(e).Admin(a.ID)
	if err == nil {
		if _, err := adA2.SetAdmin(ctx, b.ID, false); err == nil {
			t.Error("a disabled admin took the last enabled admin's rights")
		}
	}
	n := 0
	for _, acc := range identity.Must(e).Accounts(ctx) {
		if acc.Admin && !acc.Disabled {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d enabled admins, want 1", n)
	}
}

// TestResetLinksSpent: a new email, a disable or a new password spends
// earlier reset links; a reset ends the account's sessions.
func TestResetLinksSpent(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	a, aKey, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	b, _, _ := identity.Must(e).CreateAccount(ctx, "B", "b@example.org")
	identity.Must(e).SetPassword(ctx, a.ID, aKey, "correct horse", false)
	tok, _, _ := identity.Must(e).CreateResetToken(ctx, "a@example.org")
	if _, err := identity.Must(e).ChangeEmail(ctx, a.ID, "new@example.org", "correct horse"); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).CheckResetToken(ctx, tok); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("link to the old address after an email change: %v", err)
	}
	ad, _ := identity.Must(e).Admin(a.ID)
	tokB, _, _ := identity.Must(e).CreateResetToken(ctx, "b@example.org")
	ad.SetDisabled(ctx, b.ID, true)
	ad.SetDisabled(ctx, b.ID, false)
	if _, err := identity.Must(e).CheckResetToken(ctx, tokB); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("link from before a disable: %v", err)
	}
	sess, _ := identity.Must(e).CreateSession(ctx, mustAccount(t, e, a.ID), identity.SessionClient{})
	tok, _, _ = identity.Must(e).CreateResetToken(ctx, "new@example.org")
	if _, err := identity.Must(e).ResetPassword(ctx, tok, "brand new pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).SessionAccount(ctx, sess); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("session after a reset: %v", err)
	}
}

func mustAccount(t *testing.T, e *engine.Engine, id uint32) identity.Account {
	t.Helper()
	a, err := identity.Must(e).Account(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestCodeWait: from the sixth wrong code in a row, the account waits
// 1, 2, 4 … minutes (at most an hour) before the next try; the count
// survives a restart; a right code resets it.
func TestCodeWait(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, o := openMem(t, c)
	ctx := context.Background()
	a, aKey, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	identity.Must(e).SetPassword(ctx, a.ID, aKey, "correct horse", false)
	secret, _, _ := identity.Must(e).NewTOTPKey(ctx, a.ID)
	if _, err := identity.Must(e).EnableTOTP(ctx, a.ID, secret, totpCode(t, secret, c.Now()), "correct horse"); err != nil {
		t.Fatal(err)
	}
	pending, _ := identity.Must(e).SignIn(ctx, "a@example.org", "correct horse")
	for i := range 5 {
		if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, "000000"); !errors.Is(err, identity.ErrUnauthenticated) {
			t.Fatalf("wrong code %d: %v", i, err)
		}
	}
	// The fifth set a wait of a minute: even a right code waits.
	c.Add(30 * time.Second)
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, totpCode(t, secret, c.Now())); !errors.Is(err, identity.ErrCodeWait) {
		t.Fatalf("right code while waiting: %v, want ErrCodeWait", err)
	}
	e.Close()
	e, err := engine.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, "000000"); !errors.Is(err, identity.ErrCodeWait) {
		t.Fatalf("after a restart: %v, want ErrCodeWait", err)
	}
	c.Add(31 * time.Second)
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, "000000"); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Fatalf("wrong code after the wait: %v", err)
	}
	// That was the sixth: two minutes now.
	c.Add(time.Minute + 30*time.Second)
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, "000000"); !errors.Is(err, identity.ErrCodeWait) {
		t.Fatalf("within the second wait: %v", err)
	}
	c.Add(time.Minute)
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, totpCode(t, secret, c.Now())); err != nil {
		t.Fatalf("right code after the wait: %v", err)
	}
	c.Add(30 * time.Second)
	if _, err := identity.Must(e).CheckSecondFactor(ctx, pending, "000000"); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("a wrong code after a right one: %v (the count was reset)", err)
	}
}

// TestInviteLimits: at most MaxInvites unused invitations.
func TestInviteLimits(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	a, _, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	ad, _ := identity.Must(e).Admin(a.ID)
	for i := range identity.MaxInvites {
		if _, _, err := ad.CreateInvite(ctx); err != nil {
			t.Fatalf("invitation %d: %v", i, err)
		}
	}
	if _, _, err := ad.CreateInvite(ctx); err == nil {
		t.Error("an invitation over the limit")
	}
	// Expired ones make room.
	c.Add(identity.InviteLife)
	if _, _, err := ad.CreateInvite(ctx); err != nil {
		t.Errorf("after the others expired: %v", err)
	}
}

// TestUsagePersisted: key and session last-use times are written at a
// snapshot and survive a reopen; a key revoked and a session ended before
// the snapshot do not come back.
func TestUsagePersisted(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, o := openMem(t, c)
	ctx := context.Background()
	a, k1, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	info, k2, _ := identity.Must(e).CreateKey(ctx, a.ID, "gone")
	c.Add(2 * time.Minute)
	used := c.Now()
	acc1, _ := identity.Must(e).Authenticate(ctx, k1)
	identity.Must(e).Authenticate(ctx, k2)
	tok, _ := identity.Must(e).CreateSession(ctx, acc1, identity.SessionClient{})
	ended, _ := identity.Must(e).CreateSession(ctx, acc1, identity.SessionClient{})
	c.Add(2 * time.Minute)
	seen := c.Now()
	identity.Must(e).SessionAccount(ctx, tok)
	identity.Must(e).SessionAccount(ctx, ended)
	identity.Must(e).RevokeKey(ctx, a.ID, info.ID) // ends `ended`? no: it signed in with k1
	identity.Must(e).EndSession(ctx, ended)
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err := engine.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	acc, _ := identity.Must(e).Account(ctx, a.ID)
	if len(acc.Keys) != 1 || !acc.Keys[0].LastUsed.Equal(used) {
		t.Errorf("keys after reopen: %+v, want one used at %v", acc.Keys, used)
	}
	ss := identity.Must(e).Sessions(ctx, a.ID)
	if len(ss) != 1 || ss[0].ID != identity.SessionID(tok) || !ss[0].LastSeen.Equal(seen) {
		t.Errorf("sessions after reopen: %+v, want %s seen at %v", ss, identity.SessionID(tok), seen)
	}
	if _, err := identity.Must(e).Authenticate(ctx, k2); err == nil {
		t.Error("the revoked key came back")
	}
	if _, err := identity.Must(e).SessionAccount(ctx, ended); err == nil {
		t.Error("the ended session came back")
	}
}

// TestAddressProof: a registration link proves its address and cannot be
// forged or outlive ProofLife; an email-change link changes the address
// once, spends earlier reset links and is spent itself by the change; a
// reset revokes every API key.
func TestAddressProof(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	a, aKey, _ := identity.Must(e).CreateAccount(ctx, "A", "a@example.org")
	identity.Must(e).SetPassword(ctx, a.ID, aKey, "correct horse", false)

	tok, taken, err := identity.Must(e).RegistrationToken(ctx, "New@Example.org", "")
	if err != nil || taken {
		t.Fatalf("registration token: %v, taken %v", err, taken)
	}
	if _, taken, _ := identity.Must(e).RegistrationToken(ctx, "A@example.org", ""); !taken {
		t.Error("a taken address not reported")
	}
	if email, _, err := identity.Must(e).CheckRegistrationToken(ctx, tok); err != nil || email != "New@Example.org" {
		t.Errorf("check: %q %v", email, err)
	}
	forged := strings.Replace(tok, ".", ".x", 1)
	if _, _, err := identity.Must(e).CheckRegistrationToken(ctx, forged); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("forged token: %v", err)
	}

	reset, _, _ := identity.Must(e).CreateResetToken(ctx, "a@example.org")
	change, err := identity.Must(e).EmailChangeToken(ctx, a.ID, "moved@example.org", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if acc := mustAccount(t, e, a.ID); acc.Email != "a@example.org" {
		t.Errorf("the address changed before its link was used: %q", acc.Email)
	}
	if _, err := identity.Must(e).ConfirmEmailChange(ctx, change); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).ConfirmEmailChange(ctx, change); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("an email link used twice: %v", err)
	}
	back, _ := identity.Must(e).EmailChangeToken(ctx, a.ID, "a@example.org", "correct horse")
	if _, err := identity.Must(e).ConfirmEmailChange(ctx, back); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).CheckResetToken(ctx, reset); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("a reset link after the email changed and back: %v", err)
	}

	reset, _, _ = identity.Must(e).CreateResetToken(ctx, "a@example.org")
	if _, err := identity.Must(e).ResetPassword(ctx, reset, "brand new pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.Must(e).Authenticate(ctx, aKey); !errors.Is(err, identity.ErrUnauthenticated) {
		t.Errorf("a key from before the reset: %v", err)
	}
	if acc := mustAccount(t, e, a.ID); len(acc.Keys) != 0 {
		t.Errorf("%d keys after a reset, want 0", len(acc.Keys))
	}
	c.Add(identity.ProofLife)
	if _, _, err := identity.Must(e).CheckRegistrationToken(ctx, tok); !errors.Is(err, identity.ErrInvite) {
		t.Errorf("an expired registration link: %v", err)
	}
}

// TestAddressControlChars: an address with a control character (NUL, the
// separator of a proof token's MAC fields; CR or LF, a mail header's end)
// is not an address: no link is mailed to it, no account has it.
func TestAddressControlChars(t *testing.T) {
	c := newClock("2026-11-27T10:00:00Z")
	e, _ := openMem(t, c)
	ctx := context.Background()
	for _, email := range []string{"v@example.org\x00x", "v\x00@example.org", "v@example.org\x7f", "v@exa\u0085mple.org", "v@example.org\r\nBcc: x@evil.example"} {
		if _, _, err := identity.Must(e).RegistrationToken(ctx, email, ""); err == nil || fieldErrs(t, err)[0].Field != "email" {
			t.Errorf("RegistrationToken(%q): %v, want an email error", email, err)
		}
		if _, _, err := identity.Must(e).CreateAccount(ctx, "X", email); err == nil {
			t.Errorf("CreateAccount(%q) took it", email)
		}
	}
}

// TestCreateWebsiteUnknownAccount: with identity attached, the engine
// creates a website only for an account that exists (as before identity
// left the engine), and for one that does.
func TestCreateWebsiteUnknownAccount(t *testing.T) {
	ctx := context.Background()
	e, _ := openMem(t, newClock("2026-11-21T12:00:00Z"))
	id := identity.Must(e)
	a, _, err := id.CreateAccount(ctx, "A", "a@example.org")
	if err != nil {
		t.Fatal(err)
	}
	domain := "unknown.example"
	if _, err := e.Owner(a.ID+1).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("CreateWebsite for an unknown account = %v, want ErrNotFound", err)
	}
	if _, err := e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain}); err != nil {
		t.Errorf("CreateWebsite for the account: %v", err)
	}
}

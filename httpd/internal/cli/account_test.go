package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd/internal/report"
)

// TestUserSetPassword: the password comes from stdin, is validated like
// the web form's, and signs in afterwards.
func TestUserSetPassword(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	if _, _, code := runCLI(t, ctx, nil, "user", "add", "-data", dir, "-email", "a@example.org"); code != 0 {
		t.Fatal("user add failed")
	}
	run := func(stdin string, args ...string) (string, int) {
		var out, errb bytes.Buffer
		c := &cli{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, lookupEnv: func(string) (string, bool) { return "", false }}
		code := c.main(ctx, append([]string{"user", "set-password", "-data", dir}, args...))
		return errb.String(), code
	}
	tests := []struct {
		name, stdin, email string
		code               int
		stderr             string
	}{
		{name: "no email", stdin: "long enough\n", code: 2, stderr: "-email is required"},
		{name: "unknown email", stdin: "long enough\n", email: "b@example.org", code: 1, stderr: `no account has the email "b@example.org"`},
		{name: "short", stdin: "short\n", email: "a@example.org", code: 1, stderr: "The password must be at least 8 characters."},
		{name: "right", stdin: "long enough\r\n", email: "A@example.org", code: 0, stderr: "password of a@example.org set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args []string
			if tt.email != "" {
				args = []string{"-email", tt.email}
			}
			stderr, code := run(tt.stdin, args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.stderr)
			}
		})
	}
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := identity.Must(e).SignIn(ctx, "a@example.org", "long enough"); err != nil {
		t.Errorf("sign in with the password set: %v", err)
	}
}

// TestUserSetEmail: the operator changes an address (the only way without
// mail); a taken address is refused.
func TestUserSetEmail(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	for _, e := range []string{"a@example.org", "b@example.org"} {
		if _, _, code := runCLI(t, ctx, nil, "user", "add", "-data", dir, "-email", e); code != 0 {
			t.Fatal("user add failed")
		}
	}
	if _, stderr, code := runCLI(t, ctx, nil, "user", "set-email", "-data", dir, "-email", "a@example.org", "-new", "b@example.org"); code != 1 || !strings.Contains(stderr, "The email has already been taken.") {
		t.Errorf("a taken address: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := runCLI(t, ctx, nil, "user", "set-email", "-data", dir, "-email", "A@example.org", "-new", "new@example.org"); code != 0 || !strings.Contains(stderr, "new@example.org") {
		t.Fatalf("set-email: exit %d, stderr %q", code, stderr)
	}
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if a, err := identity.Must(e).AccountByEmail(ctx, "new@example.org"); err != nil || a.ID != 1 {
		t.Errorf("the new address: %+v %v", a, err)
	}
}

// TestMailer sends a notice through a real SMTP server.
func TestMailer(t *testing.T) {
	if report.Mailer(report.SMTP{}, "") != nil {
		t.Error("a mailer without an SMTP server")
	}
	mb, addr := startMailbox(t)
	send := report.Mailer(report.SMTP{Addr: addr}, "https://stats.example.org")
	if err := send(context.Background(), "owner@example.org", "Reset your webstats password", "Open https://stats.example.org/reset/x <b>"); err != nil {
		t.Fatal(err)
	}
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if len(mb.msgs) != 1 {
		t.Fatalf("%d messages", len(mb.msgs))
	}
	m := mb.msgs[0]
	for _, want := range []string{"From: webstats@stats.example.org", "To: owner@example.org", "Subject: Reset your webstats password", "https://stats.example.org/reset/x", "&lt;b&gt;"} {
		if !strings.Contains(m, want) {
			t.Errorf("message lacks %q:\n%s", want, m)
		}
	}
}

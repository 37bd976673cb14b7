package cli

import (
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// mailbox is a real SMTP server (go-smtp's) on loopback that keeps what it
// accepts.
type mailbox struct {
	mu   sync.Mutex
	msgs []string
}

type mailSession struct{ mb *mailbox }

func (s *mailSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *mailSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *mailSession) Reset()                               {}
func (s *mailSession) Logout() error                        { return nil }
func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.mb.mu.Lock()
	s.mb.msgs = append(s.mb.msgs, string(b))
	s.mb.mu.Unlock()
	return err
}

func startMailbox(t *testing.T) (*mailbox, string) {
	mb := &mailbox{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &mailSession{mb}, nil }))
	srv.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return mb, ln.Addr().String()
}

func TestReportCommand(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	acc, _, err := identity.Must(e).CreateAccount(ctx, "Owner", "owner@example.org")
	if err != nil {
		t.Fatal(err)
	}
	domain := "example.com"
	_, err = e.Owner(acc.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	mb, addr := startMailbox(t)

	_, stderr, code := runCLI(t, ctx, nil, "report", "-data", dir, "-website", "1", "-period", "week")
	if code != 2 || !strings.Contains(stderr, "-smtp-addr") {
		t.Errorf("without -smtp-addr: exit %d, stderr %q; want 2 naming -smtp-addr", code, stderr)
	}
	_, stderr, code = runCLI(t, ctx, nil, "report", "-data", dir, "-website", "7", "-period", "week", "-smtp-addr", addr)
	if code != 1 || !strings.Contains(stderr, "no website 7") {
		t.Errorf("unknown website: exit %d, stderr %q", code, stderr)
	}
	stdout, stderr, code := runCLI(t, ctx, map[string]string{"WEBSTATS_SMTP_ADDR": addr, "WEBSTATS_PUBLIC_URL": "https://stats.example.org"},
		"report", "-data", dir, "-website", "1", "-period", "month", "-to", "me@example.net")
	if code != 0 {
		t.Fatalf("report: exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "sent the monthly report of website 1") {
		t.Errorf("stdout %q", stdout)
	}
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if len(mb.msgs) != 1 {
		t.Fatalf("%d messages arrived, want 1", len(mb.msgs))
	}
	msg := mb.msgs[0]
	for _, want := range []string{"To: me@example.net", "Monthly statistics for example.com", "https://stats.example.org/stats/example.com"} {
		if !strings.Contains(msg, want) && !bytes.Contains([]byte(strings.ReplaceAll(msg, "=\r\n", "")), []byte(want)) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

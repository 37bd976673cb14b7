package report

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

func testMessage() *Message {
	return &Message{
		From:      "reports@example.org",
		To:        owner,
		Subject:   "Weekly statistics for example.com",
		MessageID: "<report-1-weekly-2026-11-09@webstats>",
		Text:      "text",
		HTML:      "<p>html</p>",
	}
}

// STARTTLS with a self-signed certificate the client trusts, and AUTH PLAIN
// (offered by the server only over TLS).
func TestSendSTARTTLSAuth(t *testing.T) {
	srv := startServer(t, serverConfig{startTLS: true, user: "reports", pass: "s3cret"})
	s := SMTP{Addr: srv.addr, User: "reports", Pass: "s3cret"}
	if err := Send(context.Background(), s, srv.clientTLS(), testMessage()); err != nil {
		t.Fatal(err)
	}
	msgs := srv.messages()
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	if !msgs[0].TLS || msgs[0].User != "reports" {
		t.Errorf("TLS %v, user %q; want TLS and user reports", msgs[0].TLS, msgs[0].User)
	}
	pm := parseMail(t, msgs[0].Data)
	if pm.Text != "text" {
		t.Errorf("text = %q", pm.Text)
	}

	// A wrong password is the server's 535, and nothing is sent.
	s.Pass = "wrong"
	err := Send(context.Background(), s, srv.clientTLS(), testMessage())
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 535 {
		t.Errorf("wrong password: err = %v, want SMTP 535", err)
	}
	// A certificate that is not trusted fails the handshake.
	if err := Send(context.Background(), SMTP{Addr: srv.addr}, nil, testMessage()); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Errorf("untrusted certificate: err = %v, want a STARTTLS error", err)
	}
	if n := len(srv.messages()); n != 1 {
		t.Errorf("server got %d messages, want still 1", n)
	}
}

// STARTTLS is used whenever the server offers it, credentials or not.
func TestSendSTARTTLSWithoutAuth(t *testing.T) {
	srv := startServer(t, serverConfig{startTLS: true})
	if err := Send(context.Background(), SMTP{Addr: srv.addr}, srv.clientTLS(), testMessage()); err != nil {
		t.Fatal(err)
	}
	if msgs := srv.messages(); len(msgs) != 1 || !msgs[0].TLS {
		t.Fatalf("messages %+v, want one over TLS", msgs)
	}
}

// Port 465 means TLS from the first byte; the test server cannot listen on
// 465, so it calls send with the choice made.
func TestSendImplicitTLS(t *testing.T) {
	srv := startServer(t, serverConfig{implicitTLS: true, user: "reports", pass: "s3cret"})
	s := SMTP{Addr: srv.addr, User: "reports", Pass: "s3cret"}
	if err := send(context.Background(), s, srv.clientTLS(), testMessage(), true); err != nil {
		t.Fatal(err)
	}
	if msgs := srv.messages(); len(msgs) != 1 || !msgs[0].TLS || msgs[0].User != "reports" {
		t.Fatalf("messages %+v, want one over TLS, authenticated", msgs)
	}
}

// Credentials go in clear text only to a loopback server.
func TestSendCleartextAuth(t *testing.T) {
	srv := startServer(t, serverConfig{user: "reports", pass: "s3cret", insecureAuth: true})
	s := SMTP{Addr: srv.addr, User: "reports", Pass: "s3cret"}
	if err := Send(context.Background(), s, nil, testMessage()); err != nil {
		t.Fatalf("loopback: %v", err)
	}
	if msgs := srv.messages(); len(msgs) != 1 || msgs[0].TLS || msgs[0].User != "reports" {
		t.Fatalf("messages %+v, want one authenticated in clear text", msgs)
	}

	ip := nonLoopbackIP(t)
	remote := startServer(t, serverConfig{user: "reports", pass: "s3cret", insecureAuth: true, listen: net.JoinHostPort(ip, "0")})
	s.Addr = remote.addr
	if err := Send(context.Background(), s, nil, testMessage()); !errors.Is(err, ErrInsecureAuth) {
		t.Errorf("non-loopback %s: err = %v, want ErrInsecureAuth", remote.addr, err)
	}
	if n := len(remote.messages()); n != 0 {
		t.Errorf("server got %d messages, want 0", n)
	}
}

// nonLoopbackIP returns an address of this machine that is not a loopback
// one, or skips the test.
func nonLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address")
	return ""
}

// A temporary failure is an *smtp.SMTPError with its code.
func TestSendTemporaryFailure(t *testing.T) {
	srv := startServer(t, serverConfig{failFirst: 1})
	err := Send(context.Background(), SMTP{Addr: srv.addr}, nil, testMessage())
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 451 {
		t.Fatalf("err = %v, want SMTP 451", err)
	}
	if err := Send(context.Background(), SMTP{Addr: srv.addr}, nil, testMessage()); err != nil {
		t.Fatal(err)
	}
}

func TestSendErrors(t *testing.T) {
	ctx := context.Background()
	if err := Send(ctx, SMTP{}, nil, testMessage()); !errors.Is(err, ErrNoSMTP) {
		t.Errorf("no address: err = %v, want ErrNoSMTP", err)
	}
	m := testMessage()
	m.From = ""
	if err := Send(ctx, SMTP{Addr: "127.0.0.1:1"}, nil, m); err == nil || !strings.Contains(err.Error(), "sender") {
		t.Errorf("no sender: err = %v", err)
	}
	// A server that accepts the connection and never answers: the context
	// ends the attempt.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = Send(ctx, SMTP{Addr: ln.Addr().String()}, nil, testMessage())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("silent server: err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("silent server: Send took %v", d)
	}
}

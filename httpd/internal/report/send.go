package report

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"net"
	"net/mail"
	"net/netip"
	"net/textproto"
	"os"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// SMTP holds the settings of the submission server reports go through.
type SMTP struct {
	// Addr is the server's host:port. Port 465 means implicit TLS; on any
	// other port the connection switches to TLS with STARTTLS when the
	// server offers it. "" turns the reports off.
	Addr string
	// User and Pass, when User is set, authenticate with AUTH PLAIN. They are
	// sent only over TLS, or over a loopback connection.
	User, Pass string
	// From is the sender address, optionally with a display name
	// ("webstats <reports@example.org>"). Default: User when it is an
	// address, else "webstats@" and the host of the public URL (or
	// "localhost").
	From string
}

// Errors of Send; use errors.Is.
var (
	// ErrNoSMTP means that no SMTP server is configured (SMTP.Addr is "").
	ErrNoSMTP = errors.New("report: no SMTP server configured")
	// ErrInsecureAuth means that credentials would have been sent in clear
	// text: the server offers no STARTTLS and is not on a loopback address.
	ErrInsecureAuth = errors.New("report: refusing to send SMTP credentials over an unencrypted connection")
)

// Timeouts of one delivery.
const (
	// sendTimeout bounds a delivery when the caller's context has no deadline.
	sendTimeout = 2 * time.Minute
	// dialTimeout bounds the TCP connection.
	dialTimeout = 30 * time.Second
	// commandTimeout bounds each SMTP command.
	commandTimeout = time.Minute
)

// Send delivers m through the SMTP server of s, to m.To, from m.From (or
// s.From when m.From is empty). tlsConf, when not nil, is the TLS
// configuration (tests use it to trust their server's certificate); its
// ServerName defaults to the host of s.Addr. Send returns nil once the
// server has accepted the message; an SMTP error is a *smtp.SMTPError
// (errors.As) whose Code tells temporary (4xx) from permanent (5xx)
// failures. Send gives up when ctx is done, and after 2 minutes when ctx has
// no deadline.
func Send(ctx context.Context, s SMTP, tlsConf *tls.Config, m *Message) error {
	if s.Addr == "" {
		return ErrNoSMTP
	}
	_, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return fmt.Errorf("report: SMTP address %q: %w", s.Addr, err)
	}
	return send(ctx, s, tlsConf, m, port == "465")
}

// send is Send with the choice of implicit TLS made.
func send(ctx context.Context, s SMTP, tlsConf *tls.Config, m *Message, implicitTLS bool) (err error) {
	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return fmt.Errorf("report: SMTP address %q: %w", s.Addr, err)
	}
	msg := *m
	if msg.From == "" {
		msg.From = s.From
	}
	from, err := mail.ParseAddress(msg.From)
	if err != nil {
		return fmt.Errorf("report: sender address %q: %w", msg.From, err)
	}
	to, err := mail.ParseAddress(msg.To)
	if err != nil {
		return fmt.Errorf("report: recipient address %q: %w", msg.To, err)
	}
	if msg.Date.IsZero() {
		msg.Date = time.Now()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sendTimeout)
		defer cancel()
	}
	defer func() {
		if err != nil {
			if ctx.Err() != nil { // the connection was closed under us
				err = errors.Join(ctx.Err(), err)
			}
			err = fmt.Errorf("report: send to %s via %s: %w", to.Address, s.Addr, err)
		}
	}()

	d := net.Dialer{Timeout: dialTimeout}
	raw, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return err
	}
	defer raw.Close()
	// The SMTP client has no context: closing the connection aborts it.
	defer context.AfterFunc(ctx, func() { raw.Close() })()

	conf := clientTLSConfig(tlsConf, host)
	conn, encrypted := net.Conn(raw), false
	if implicitTLS {
		tc := tls.Client(raw, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("TLS: %w", err)
		}
		conn, encrypted = tc, true
	} else if conn, encrypted, err = startTLS(ctx, raw, conf); err != nil {
		return err
	}

	c := smtp.NewClient(conn)
	c.CommandTimeout = commandTimeout
	c.SubmissionTimeout = sendTimeout
	defer c.Close()
	if err := c.Hello(localName()); err != nil {
		return err
	}
	if s.User != "" {
		if !encrypted && !isLoopback(host) {
			return ErrInsecureAuth
		}
		if !c.SupportsAuth(sasl.Plain) {
			return errors.New("the server does not offer AUTH PLAIN")
		}
		if err := c.Auth(sasl.NewPlainClient("", s.User, s.Pass)); err != nil {
			return err
		}
	}
	if err := c.SendMail(from.Address, []string{to.Address}, bytes.NewReader(msg.Bytes())); err != nil {
		return err
	}
	c.Quit() // the message is accepted: a failed QUIT changes nothing
	return nil
}

// startTLS reads the greeting of the server on conn and says EHLO; when the
// server offers STARTTLS it switches to TLS. It returns the connection to
// hand to an smtp.Client, and whether it is encrypted.
//
// go-smtp's client can only start TLS unconditionally (DialStartTLS fails
// when the server does not offer it), so the first exchange is done here.
// The smtp.Client then expects a greeting of its own: the returned
// connection replays one before the server's data, and the client says EHLO
// again, which RFC 5321 allows (and requires after STARTTLS).
func startTLS(ctx context.Context, conn net.Conn, conf *tls.Config) (net.Conn, bool, error) {
	conn.SetDeadline(time.Now().Add(commandTimeout))
	tp := textproto.NewConn(conn) // not closed: that would close conn
	if _, _, err := tp.ReadResponse(220); err != nil {
		return nil, false, fmt.Errorf("greeting: %w", err)
	}
	if _, err := tp.Cmd("EHLO %s", localName()); err != nil {
		return nil, false, err
	}
	_, ext, err := tp.ReadResponse(250)
	var perr *textproto.Error
	if errors.As(err, &perr) {
		// No EHLO (a HELO-only server): no STARTTLS either. The client will
		// try EHLO and fall back to HELO.
		ext, err = "", nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("EHLO: %w", err)
	}
	conn.SetDeadline(time.Time{})
	if !offers(ext, "STARTTLS") {
		return &greetedConn{Conn: conn, pending: []byte(greeting)}, false, nil
	}
	// The server sends nothing more before our command, so tp's reader holds
	// no bytes that the TLS layer would miss.
	conn.SetDeadline(time.Now().Add(commandTimeout))
	if _, err := tp.Cmd("STARTTLS"); err != nil {
		return nil, false, err
	}
	if _, _, err := tp.ReadResponse(220); err != nil {
		return nil, false, fmt.Errorf("STARTTLS: %w", err)
	}
	conn.SetDeadline(time.Time{})
	tc := tls.Client(conn, conf)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, false, fmt.Errorf("STARTTLS: %w", err)
	}
	return &greetedConn{Conn: tc, pending: []byte(greeting)}, true, nil
}

// greeting is the greeting a greetedConn replays to the smtp.Client.
const greeting = "220 webstats: connection already greeted\r\n"

// greetedConn is a connection whose first reads return pending.
type greetedConn struct {
	net.Conn
	pending []byte
}

func (c *greetedConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// offers reports whether the EHLO response ext (one keyword and its
// parameters per line, the first line being the greeting) lists keyword.
func offers(ext, keyword string) bool {
	lines := strings.Split(ext, "\n")
	for _, l := range lines[min(1, len(lines)):] {
		if f := strings.Fields(l); len(f) > 0 && strings.EqualFold(f[0], keyword) {
			return true
		}
	}
	return false
}

// clientTLSConfig returns a copy of conf (or a new configuration) that
// verifies host and requires TLS 1.2.
func clientTLSConfig(conf *tls.Config, host string) *tls.Config {
	if conf == nil {
		conf = new(tls.Config)
	}
	conf = conf.Clone()
	if conf.ServerName == "" {
		conf.ServerName = host
	}
	if conf.MinVersion == 0 {
		conf.MinVersion = tls.VersionTLS12
	}
	return conf
}

// isLoopback reports whether host is "localhost" or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// localName is the name said in EHLO: the host name, when it is a valid
// domain, else "localhost".
func localName() string {
	h, err := os.Hostname()
	if err != nil || h == "" || len(h) > 253 || strings.Trim(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != "" {
		return "localhost"
	}
	return h
}

// Mailer returns a function that sends a plain-text notice (a password
// reset link) through the SMTP server of s, from s.From or the default
// sender of s.User and publicURL. A nil function means s.Addr is "": no
// mail.
func Mailer(s SMTP, publicURL string) func(ctx context.Context, to, subject, text string) error {
	if s.Addr == "" {
		return nil
	}
	if s.From == "" {
		s.From = defaultFrom(s.User, publicURL)
	}
	return func(ctx context.Context, to, subject, text string) error {
		var id [12]byte
		rand.Read(id[:])
		host := "localhost"
		if _, h, ok := strings.Cut(s.From, "@"); ok {
			host = strings.Trim(h, "> ")
		}
		m := &Message{
			To: to, Subject: subject, Text: text,
			HTML:      "<pre>" + html.EscapeString(text) + "</pre>",
			MessageID: "<notice-" + hex.EncodeToString(id[:]) + "@" + host + ">",
		}
		return Send(ctx, s, nil, m)
	}
}

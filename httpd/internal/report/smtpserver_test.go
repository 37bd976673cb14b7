package report

import (
	"bytes"
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// A real SMTP server (go-smtp's), on 127.0.0.1, that records what it
// accepts.

// received is one message the test server accepted.
type received struct {
	From string
	To   []string
	Data []byte
	User string // the AUTH PLAIN user, "" without authentication
	TLS  bool   // whether the connection was encrypted
}

// serverConfig configures a test server.
type serverConfig struct {
	startTLS     bool   // offer STARTTLS
	implicitTLS  bool   // TLS from the first byte (like port 465)
	user, pass   string // when set, AUTH PLAIN is required
	insecureAuth bool   // allow AUTH without TLS
	failFirst    int    // the first failFirst DATA commands answer 451
	listen       string // listen address; default 127.0.0.1:0
}

type testServer struct {
	addr string
	pool *x509.CertPool // trusts the server's certificate

	mu        sync.Mutex
	cfg       serverConfig
	msgs      []received
	dataCalls int
}

// startServer starts an SMTP server for the test; it stops at the end of
// the test.
func startServer(t *testing.T, cfg serverConfig) *testServer {
	t.Helper()
	ts := &testServer{cfg: cfg}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &testSession{ts: ts, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = cfg.insecureAuth
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	addr := cmp.Or(cfg.listen, "127.0.0.1:0")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.startTLS || cfg.implicitTLS {
		cert, pool := testCert(t, ln.Addr().(*net.TCPAddr).IP)
		ts.pool = pool
		conf := &tls.Config{Certificates: []tls.Certificate{cert}}
		if cfg.implicitTLS {
			ln = tls.NewListener(ln, conf)
		} else {
			srv.TLSConfig = conf
		}
	}
	ts.addr = ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ts
}

// clientTLS returns a client configuration that trusts the server.
func (ts *testServer) clientTLS() *tls.Config { return &tls.Config{RootCAs: ts.pool} }

// messages returns the messages accepted so far.
func (ts *testServer) messages() []received {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]received(nil), ts.msgs...)
}

// attempts returns the number of DATA commands so far.
func (ts *testServer) attempts() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.dataCalls
}

type testSession struct {
	ts   *testServer
	conn *smtp.Conn
	cur  received
}

func (s *testSession) AuthMechanisms() []string {
	if s.ts.cfg.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *testSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		if user != s.ts.cfg.user || pass != s.ts.cfg.pass {
			return smtp.ErrAuthFailed
		}
		s.cur.User = user
		return nil
	}), nil
}

func (s *testSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.ts.cfg.user != "" && s.cur.User == "" {
		return smtp.ErrAuthRequired
	}
	s.cur.From = from
	return nil
}

func (s *testSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.To = append(s.cur.To, to)
	return nil
}

func (s *testSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ts := s.ts
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.dataCalls++
	if ts.dataCalls <= ts.cfg.failFirst {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Try again later"}
	}
	m := s.cur
	m.Data = b
	_, m.TLS = s.conn.TLSConnectionState()
	ts.msgs = append(ts.msgs, m)
	return nil
}

func (s *testSession) Reset()        { s.cur = received{User: s.cur.User} }
func (s *testSession) Logout() error { return nil }

// testCert returns a self-signed certificate for localhost and ip, and a
// pool that trusts it.
func testCert(t *testing.T, ip net.IP) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{ip},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// parsedMail is a received message, parsed as a mail reader would.
type parsedMail struct {
	Header  mail.Header
	Subject string // decoded
	Text    string
	HTML    string
}

// parseMail parses a multipart/alternative message with net/mail and
// mime/multipart (which undoes the quoted-printable encoding).
func parseMail(t *testing.T, data []byte) parsedMail {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("read message: %v", err)
	}
	var pm parsedMail
	pm.Header = msg.Header
	if pm.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil {
		t.Fatalf("subject: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next part: %v", err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			t.Fatalf("read part: %v", err)
		}
		ct, cparams, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if cparams["charset"] != "utf-8" {
			t.Errorf("part %s: charset %q, want utf-8", ct, cparams["charset"])
		}
		switch ct {
		case "text/plain":
			pm.Text = string(body)
		case "text/html":
			pm.HTML = string(body)
		default:
			t.Errorf("unexpected part %q", ct)
		}
	}
	if pm.Text == "" || pm.HTML == "" {
		t.Fatalf("want a text and an HTML part; text %d bytes, HTML %d bytes", len(pm.Text), len(pm.HTML))
	}
	for i, line := range strings.Split(string(data), "\r\n") {
		if len(line) > 998 {
			t.Errorf("line %d is %d bytes long (RFC 5322 allows 998)", i, len(line))
		}
	}
	return pm
}

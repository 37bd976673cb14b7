package main

import (
	"fmt"
	"html"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Hostile tests of the accounts (SPEC §11, §13; issue #38 rows 1 to 6),
// against the built binary, with a real SMTP server (go-smtp's) receiving
// its mails.

// publicURL is the -public-url of the servers here: the links in mails
// are built from it, and the tests follow them at the server's address.
const publicURL = "https://stats.example.org"

// mailbox is a real SMTP server on loopback that keeps what it accepts.
type mailbox struct {
	addr string
	mu   sync.Mutex
	msgs []mailMsg
}

// mailMsg is one accepted message: its recipient, subject and text part.
type mailMsg struct{ To, Subject, Text string }

type mailSession struct{ mb *mailbox }

func (s *mailSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *mailSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *mailSession) Reset()                               {}
func (s *mailSession) Logout() error                        { return nil }
func (s *mailSession) Data(r io.Reader) error {
	m, err := readMail(r)
	if err != nil {
		return err
	}
	s.mb.mu.Lock()
	s.mb.msgs = append(s.mb.msgs, m)
	s.mb.mu.Unlock()
	return nil
}

// readMail parses a message and decodes its text/plain part.
func readMail(r io.Reader) (mailMsg, error) {
	msg, err := mail.ReadMessage(r)
	if err != nil {
		return mailMsg{}, err
	}
	dec := new(mime.WordDecoder)
	subject, _ := dec.DecodeHeader(msg.Header.Get("Subject"))
	m := mailMsg{To: msg.Header.Get("To"), Subject: subject}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return m, err
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart() // decodes quoted-printable
		if err != nil {
			return m, fmt.Errorf("no text/plain part: %w", err)
		}
		if strings.HasPrefix(p.Header.Get("Content-Type"), "text/plain") {
			b, err := io.ReadAll(p)
			m.Text = string(b)
			return m, err
		}
	}
}

func startMailbox(t *testing.T) *mailbox {
	t.Helper()
	mb := &mailbox{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &mailSession{mb}, nil }))
	srv.Domain = "localhost"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	mb.addr = ln.Addr().String()
	return mb
}

// wait returns the first message to to whose text matches re (after the
// first skip such), waiting up to 10 s.
func (mb *mailbox) wait(t *testing.T, to string, re *regexp.Regexp) mailMsg {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mb.mu.Lock()
		for _, m := range mb.msgs {
			if strings.Contains(m.To, to) && re.MatchString(m.Text) {
				mb.mu.Unlock()
				return m
			}
		}
		mb.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no mail to %s matching %s in 10 s; got %+v", to, re, mb.all())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (mb *mailbox) all() []mailMsg {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return append([]mailMsg(nil), mb.msgs...)
}

// link returns the path of the first link of m under prefix (a path).
func link(t *testing.T, m mailMsg, prefix string) string {
	t.Helper()
	got := regexp.MustCompile(regexp.QuoteMeta(publicURL+prefix) + `\S+`).FindString(m.Text)
	if got == "" {
		t.Fatalf("no %s link in the mail to %s:\n%s", prefix, m.To, m.Text)
	}
	return strings.TrimPrefix(got, publicURL)
}

// startAccounts starts a server on a fresh data directory that trusts the
// loopback proxy of the tests (-trust-proxy), mails through mb (nil: no
// mail), with the extra flags.
func startAccounts(t *testing.T, mb *mailbox, extra ...string) *server {
	t.Helper()
	args := []string{"-trust-proxy", "-reports", "off"}
	if mb != nil {
		args = append(args, "-smtp-addr", mb.addr, "-public-url", publicURL)
	}
	return startServer(t, buildBinary(t), filepath.Join(t.TempDir(), "data"), append(args, extra...)...)
}

// csrfRe finds the CSRF token of the form posting to an action.
func csrfOf(body, action string) string {
	re := regexp.MustCompile(`<form method="post" action="` + regexp.QuoteMeta(html.EscapeString(action)) + `"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]*)"`)
	if m := re.FindStringSubmatch(body); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// post loads page and posts form (with the CSRF token of its form to
// action) from c.
func (c *pageClient) postForm(t *testing.T, base, page, action string, form url.Values) (*http.Response, string) {
	t.Helper()
	_, body, err := c.do("GET", base+page, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := csrfOf(body, action)
	if tok == "" {
		t.Fatalf("GET %s: no form to %s:\n%s", page, action, body)
	}
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", tok)
	resp, body, err := c.do("POST", base+action, form)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// signInKey signs c in with an API key.
func (c *pageClient) signInKey(t *testing.T, base, key string) {
	t.Helper()
	if resp, body := c.postForm(t, base, "/login", "/login", url.Values{"key": {key}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in with the key: %d\n%s", resp.StatusCode, body)
	}
}

// signInPassword posts the password form and returns the status.
func (c *pageClient) signInPassword(t *testing.T, base, email, pw string) int {
	t.Helper()
	resp, _ := c.postForm(t, base, "/login", "/login", url.Values{"email": {email}, "password": {pw}})
	return resp.StatusCode
}

// firstPassword sets the first password of the key-only account of key.
func firstPassword(t *testing.T, base, xff, key, pw string) *pageClient {
	t.Helper()
	c := newPageClient(xff, nil)
	c.signInKey(t, base, key)
	resp, body := c.postForm(t, base, "/account", "/account/password", url.Values{"current_password": {key}, "password": {pw}, "password_confirmation": {pw}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("set the first password: %d\n%s", resp.StatusCode, body)
	}
	return c
}

// TestHostileAccountGuessing (issue #38 row 1, SPEC §13: "a right password
// signs in during a password-guessing attack on that account"): eight
// clients send wrong passwords for the admin's address every 0.1 s while
// the owner signs in from her own address every 2 s. Every one of her
// sign-ins succeeds; the attackers get at most the per-client-and-account
// budget checked; and an attacker's 429s cost it its per-client tokens
// (a guess at another address from it is refused too).
//
// Reproduce: go test ./httpd/cmd/webstatsd -run TestHostileAccountGuessing -v
func TestHostileAccountGuessing(t *testing.T) {
	const (
		attackers = 8
		perPair   = 5  // httpd/pages: signInFailuresPerPair
		perClient = 10 // httpd/pages: signInFailuresPerIP
	)
	attack := 8 * time.Second
	if *hostileLong {
		attack = 27 * time.Second
	}
	srv := startAccounts(t, nil)
	base, key := srv.base(), srv.adminKey(t)
	const email, pw = "admin@localhost", "right password"
	firstPassword(t, base, "203.0.113.7", key, pw)

	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		checked, errors int
		statuses        = map[int]int{}
	)
	stop := time.Now().Add(attack)
	for i := range attackers {
		c := newPageClient(fmt.Sprintf("198.51.100.%d", i+1), nil)
		_, body, err := c.do("GET", base+"/login", nil)
		if err != nil {
			t.Fatal(err)
		}
		tok := csrfOf(body, "/login")
		wg.Go(func() {
			for n := 0; time.Now().Before(stop); n++ {
				resp, _, err := c.do("POST", base+"/login", url.Values{"csrf": {tok}, "email": {email}, "password": {fmt.Sprintf("guess %d", n)}})
				mu.Lock()
				if err != nil {
					errors++
				} else {
					statuses[resp.StatusCode]++
					if resp.StatusCode == http.StatusUnauthorized {
						checked++
					}
				}
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	var tries, ok int
	var refused []int
	for time.Now().Before(stop) {
		tries++
		started := time.Now()
		if st := newPageClient("203.0.113.7", nil).signInPassword(t, base, email, pw); st == http.StatusSeeOther {
			ok++
		} else {
			refused = append(refused, st)
		}
		time.Sleep(max(0, 2*time.Second-time.Since(started)))
	}
	wg.Wait()
	t.Logf("owner: %d of %d sign-ins; attackers: %v, %d errors", ok, tries, statuses, errors)
	if ok != tries {
		t.Errorf("the owner signed in %d times of %d during the attack (refused: %v); want every time", ok, tries, refused)
	}
	// Each attacking client gets perPair guesses, then one more per
	// 60/perPair s.
	if limit := attackers * (perPair + int(attack.Seconds())*perPair/60 + 1); checked > limit {
		t.Errorf("%d wrong passwords checked, want at most %d (the per-client-and-account limit)", checked, limit)
	}
	if statuses[http.StatusInternalServerError] > 0 || errors > 0 {
		t.Errorf("attack answers %v, %d errors: want no 5xx or error", statuses, errors)
	}
	// A 429 kept the attacker's per-client token: its guess at another
	// address is refused as well.
	if st := newPageClient("198.51.100.1", nil).signInPassword(t, base, "someone@example.org", "guess"); st != http.StatusTooManyRequests {
		t.Errorf("an attacker past its limits guesses at another address: %d, want 429 (a 429 must not refund its per-client token, %d a minute)", st, perClient)
	}
}

// TestHostileRegistrationProof (issue #38 row 2 and the mail greeting,
// SPEC §13): open registration needs mail to start; an attacker who
// registers a victim's address gets no account (a link goes to the
// victim); the victim registers from the link; a reset revokes every API
// key and session the reset did not create and says so (page and mail);
// and no mail carries an account's name to an address.
func TestHostileRegistrationProof(t *testing.T) {
	bin := buildBinary(t)
	// Without -smtp-addr, open registration refuses to start.
	s := launch(t, bin, filepath.Join(t.TempDir(), "data"), "-registration", "open")
	select {
	case err := <-s.done:
		s.done <- err
		if err == nil || !strings.Contains(s.stderr.String(), "-smtp-addr") {
			t.Errorf("-registration open without -smtp-addr: exit %v, stderr %q; want a failure naming -smtp-addr", err, s.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("-registration open without -smtp-addr started")
	}

	mb := startMailbox(t)
	srv := startAccounts(t, mb, "-registration", "open")
	base := srv.base()
	const victim, evil = "victim@corp.example", "Wire 5000 EUR to IBAN XX00 EVIL"

	// The attacker registers the victim's address: no account, no session.
	att := newPageClient("198.51.100.66", nil)
	resp, body := att.postForm(t, base, "/register", "/register", url.Values{"name": {evil}, "email": {victim}, "password": {"attacker pw"}, "password_confirmation": {"attacker pw"}})
	if resp.StatusCode == http.StatusSeeOther {
		t.Errorf("registering an address nobody proved signed the attacker in (%s)", resp.Header.Get("Location"))
	}
	if st := newPageClient("198.51.100.66", nil).signInPassword(t, base, victim, "attacker pw"); st == http.StatusSeeOther {
		t.Errorf("the attacker signs in with the victim's address")
	}
	// The victim registers from the link mailed to her.
	vc := newPageClient("203.0.113.50", nil)
	resp, body = vc.postForm(t, base, "/register", "/register", url.Values{"email": {victim}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "on its way") {
		t.Fatalf("the victim's registration: %d\n%s", resp.StatusCode, body)
	}
	path := link(t, mb.wait(t, victim, regexp.MustCompile(`/register/`)), "/register/")
	resp, body = vc.postForm(t, base, path, path, url.Values{"name": {"Victim"}, "password": {"victim pw 1"}, "password_confirmation": {"victim pw 1"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("register from the link: %d\n%s", resp.StatusCode, body)
	}
	resetRevokes(t, base, mb, vc, victim)
	noNameInMails(t, srv, mb, evil)
}

// resetRevokes makes an API key and a second session of the account of
// email (signed in on vc, password "victim pw 1"), resets its password
// from the mailed link, and checks that the key and the session ended,
// the reset's own session did not, and the page and a mail say so.
func resetRevokes(t *testing.T, base string, mb *mailbox, vc *pageClient, victim string) {
	t.Helper()
	resp, body := vc.postForm(t, base, "/account/keys", "/account/keys", url.Values{"name": {"laptop"}})
	m := regexp.MustCompile(`id="new-key" type="text" readonly value="([^"]+)"`).FindStringSubmatch(body)
	if resp.StatusCode != http.StatusCreated || m == nil {
		t.Fatalf("create a key: %d\n%s", resp.StatusCode, body)
	}
	oldKey := m[1]
	if st := apiStatus(t, base, oldKey); st != http.StatusOK {
		t.Fatalf("the new key: %d", st)
	}
	other := newPageClient("203.0.113.51", nil)
	if st := other.signInPassword(t, base, victim, "victim pw 1"); st != http.StatusSeeOther {
		t.Fatalf("second session: %d", st)
	}
	rc := newPageClient("203.0.113.52", nil)
	if resp, body := rc.postForm(t, base, "/reset", "/reset", url.Values{"email": {victim}}); resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d\n%s", resp.StatusCode, body)
	}
	path := link(t, mb.wait(t, victim, regexp.MustCompile(`/reset/`)), "/reset/")
	resp, _ = rc.postForm(t, base, path, path, url.Values{"password": {"victim pw 2"}, "password_confirmation": {"victim pw 2"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("set the password from the reset link: %d", resp.StatusCode)
	}
	_, page, err := rc.do("GET", base+resp.Header.Get("Location"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, "Every API key of the account was revoked") {
		t.Errorf("the page after the reset does not say that the keys were revoked:\n%s", page)
	}
	mb.wait(t, victim, regexp.MustCompile(`Every API key of the account was revoked`))
	if st := apiStatus(t, base, oldKey); st != http.StatusUnauthorized {
		t.Errorf("a key made before the reset: %d, want 401", st)
	}
	if r, _, _ := other.do("GET", base+"/account", nil); r.StatusCode == http.StatusOK {
		t.Errorf("a session from before the reset still opens /account")
	}
	if r, _, _ := rc.do("GET", base+"/account", nil); r.StatusCode != http.StatusOK {
		t.Errorf("the session the reset created: /account %d, want 200", r.StatusCode)
	}
}

// noNameInMails has an admin make an account named evil and asks for its
// reset link: no mail the server sent carries the name.
func noNameInMails(t *testing.T, srv *server, mb *mailbox, evil string) {
	t.Helper()
	base := srv.base()
	ac := newPageClient("203.0.113.53", nil)
	ac.signInKey(t, base, srv.adminKey(t))
	if resp, body := ac.postForm(t, base, "/admin", "/admin/accounts", url.Values{"name": {evil}, "email": {"target@corp.example"}}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("admin creates an account: %d\n%s", resp.StatusCode, body)
	}
	newPageClient("203.0.113.54", nil).postForm(t, base, "/reset", "/reset", url.Values{"email": {"target@corp.example"}})
	mb.wait(t, "target@corp.example", regexp.MustCompile(`/reset/`))
	for _, m := range mb.all() {
		if strings.Contains(m.Text, evil) || strings.Contains(m.Subject, evil) {
			t.Errorf("a mail to %s carries an account's name:\n%s", m.To, m.Text)
		}
	}
}

// apiStatus is the status of GET /api/v1/websites with key.
func apiStatus(t *testing.T, base, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/websites", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	drain(resp)
	return resp.StatusCode
}

// TestHostileFirstPassword (issue #38 row 3, SPEC §13: "setting the first
// password of a key-only account asks for the API key"): a stolen session
// of the default first admin cannot set a password (nor, so, turn on
// two-factor authentication); the key still signs in.
func TestHostileFirstPassword(t *testing.T) {
	srv := startAccounts(t, nil)
	base, key := srv.base(), srv.adminKey(t)
	thief := newPageClient("198.51.100.70", nil)
	thief.signInKey(t, base, key) // the session the thief holds
	// A key the stolen session makes itself proves nothing.
	resp, body := thief.postForm(t, base, "/account/keys", "/account/keys", url.Values{"name": {"thief"}})
	m := regexp.MustCompile(`id="new-key" type="text" readonly value="([^"]+)"`).FindStringSubmatch(body)
	if resp.StatusCode != http.StatusCreated || m == nil {
		t.Fatalf("the thief makes a key: %d\n%s", resp.StatusCode, body)
	}
	for _, proof := range []string{"", "not the key", m[1]} {
		resp, _ := thief.postForm(t, base, "/account", "/account/password", url.Values{"current_password": {proof}, "password": {"thief password"}, "password_confirmation": {"thief password"}})
		if resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("first password with proof %q: %d, want 422", proof, resp.StatusCode)
		}
	}
	if st := newPageClient("198.51.100.71", nil).signInPassword(t, base, "admin@localhost", "thief password"); st == http.StatusSeeOther {
		t.Errorf("the thief's password signs in")
	}
	newPageClient("203.0.113.70", nil).signInKey(t, base, key) // the owner's key still opens the browser
	firstPassword(t, base, "203.0.113.70", key, "owner password")
}

// TestHostileEmailForms (issue #38 rows 4 and 5, SPEC §11, §13): the
// account-email form is limited like registration (50 probes in a burst
// get at most 3 answers); and changing the email to another address and
// back spends an outstanding reset link.
func TestHostileEmailForms(t *testing.T) {
	const registrationsPerIP = 3 // httpd/pages
	mb := startMailbox(t)
	srv := startAccounts(t, mb)
	base, key := srv.base(), srv.adminKey(t)
	const email, pw = "admin@localhost", "owner password"
	c := firstPassword(t, base, "203.0.113.80", key, pw)

	// Row 5: a reset link, then the email changed and back.
	newPageClient("203.0.113.81", nil).postForm(t, base, "/reset", "/reset", url.Values{"email": {email}})
	reset := link(t, mb.wait(t, email, regexp.MustCompile(`/reset/`)), "/reset/")
	for i, to := range []string{"moved@example.org", email} {
		c.xff = fmt.Sprintf("203.0.113.%d", 90+i) // the email form's own limit is not this test's
		resp, body := c.postForm(t, base, "/account", "/account/email", url.Values{"email": {to}, "current_password": {pw}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("change the email to %s: %d\n%s", to, resp.StatusCode, body)
		}
		if !strings.Contains(resp.Header.Get("Location"), "done=email-sent") {
			continue // changed at once (no proof asked)
		}
		path := link(t, mb.wait(t, to, regexp.MustCompile(`/account/email/`)), "/account/email/")
		if resp, body := c.postForm(t, base, path, path, nil); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("confirm %s: %d\n%s", to, resp.StatusCode, body)
		}
	}
	if r, _, _ := newPageClient("203.0.113.82", nil).do("GET", base+reset, nil); r.StatusCode != http.StatusGone {
		t.Errorf("a reset link from before an email change and back: %d, want 410", r.StatusCode)
	}

	// Row 4: 50 probes of the email form from one client.
	c.xff = "198.51.100.80"
	_, body, _ := c.do("GET", base+"/account", nil)
	tok := csrfOf(body, "/account/email")
	answered := 0
	for i := range 50 {
		to := fmt.Sprintf("probe%d@example.org", i)
		if i%10 == 0 {
			to = email
		}
		resp, _, err := c.do("POST", base+"/account/email", url.Values{"csrf": {tok}, "email": {to}, "current_password": {pw}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusTooManyRequests {
			answered++
		}
	}
	if answered > registrationsPerIP {
		t.Errorf("%d of 50 probes of /account/email answered, want at most %d (limited like registration)", answered, registrationsPerIP)
	}
}

// TestHostileForwardedFor (issue #38 row 6, SPEC §13: "the client is the
// right-most X-Forwarded-For entry that is not a trusted proxy"): with
// -trusted-proxies naming only the loopback proxy, a client at 10.0.0.5
// rotating the entry left of its own cannot pass for new clients (the
// sign-in, reset and API limits hold); with a proxy list that leaves
// loopback out, the header is not read at all.
func TestHostileForwardedFor(t *testing.T) {
	const (
		signInPerIP = 10 // httpd/pages: signInFailuresPerIP
		resetsPerIP = 5  // httpd/pages
		authPerIP   = 20 // httpd: authFailuresPerMinute
	)
	mb := startMailbox(t)
	for _, proxies := range []string{"127.0.0.0/8,::1/128", "192.0.2.0/24"} {
		t.Run(proxies, func(t *testing.T) {
			srv := startAccounts(t, mb, "-trusted-proxies", proxies)
			base := srv.base()
			count := func(n int, send func(xff string) int) (limited int) {
				for i := range n {
					if send(fmt.Sprintf("198.51.100.%d, 10.0.0.5", i+1)) == http.StatusTooManyRequests {
						limited++
					}
				}
				return limited
			}
			if l := count(signInPerIP+5, func(xff string) int {
				resp, _ := newPageClient(xff, nil).postForm(t, base, "/login", "/login", url.Values{"key": {"wrong key"}})
				return resp.StatusCode
			}); l < 5 {
				t.Errorf("wrong keys on the sign-in form, rotating X-Forwarded-For: %d limited, want 5", l)
			}
			if l := count(resetsPerIP+3, func(xff string) int {
				resp, _ := newPageClient(xff, nil).postForm(t, base, "/reset", "/reset", url.Values{"email": {"nobody@example.org"}})
				return resp.StatusCode
			}); l < 3 {
				t.Errorf("reset requests, rotating X-Forwarded-For: %d limited, want 3", l)
			}
			if l := count(authPerIP+5, func(xff string) int {
				req, _ := http.NewRequest("GET", base+"/api/v1/websites", nil)
				req.Header.Set("Authorization", "Bearer wrong")
				req.Header.Set("X-Forwarded-For", xff)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				drain(resp)
				return resp.StatusCode
			}); l < 5 {
				t.Errorf("wrong API keys, rotating X-Forwarded-For: %d limited, want 5", l)
			}
		})
	}
}

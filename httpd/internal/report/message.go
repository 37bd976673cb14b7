package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strings"
	"time"
)

// Message is one composed report. Compose fills every field but From and
// Date, which the sender sets (Send fills an empty From from its SMTP
// settings and an empty Date with the current time).
type Message struct {
	// From and To are addresses, optionally with a display name
	// ("webstats <reports@example.org>").
	From, To string
	// Subject is the subject, in UTF-8; Bytes encodes it.
	Subject string
	// MessageID is the Message-ID header's value, angle brackets included:
	// "<report-1-weekly-2026-11-02@stats.example.org>". It is the same for
	// every mail of one website and period, so a resent report can be
	// recognised as a duplicate.
	MessageID string
	// Date is the Date header; the zero Time means the time Bytes runs.
	Date time.Time
	// Text and HTML are the two alternative bodies, in UTF-8.
	Text, HTML string
	// ListUnsubscribe, when not empty, is the List-Unsubscribe header's value
	// ("<https://…>, <mailto:…>"). Compose leaves it empty: webstats has no
	// unsubscribe endpoint; every mail says in its body how to stop reports.
	ListUnsubscribe string
}

// Bytes returns the message in the RFC 5322 format, with CRLF line endings:
// the headers (Date, From, To, Subject, Message-ID, MIME-Version,
// Auto-Submitted, List-Unsubscribe when set) and a multipart/alternative
// body holding the text part and then the HTML part, both UTF-8 and
// quoted-printable. The boundary is derived from MessageID and Subject, so
// the same message always gives the same bytes. The result is the caller's.
func (m *Message) Bytes() []byte {
	var b bytes.Buffer
	date := m.Date
	if date.IsZero() {
		date = time.Now()
	}
	raw := func(name, value string) {
		b.WriteString(name)
		b.WriteString(": ")
		b.WriteString(value)
		b.WriteString("\r\n")
	}
	header := func(name, value string) { raw(name, headerValue(value)) }
	header("Date", date.Format(time.RFC1123Z))
	header("From", formatAddress(m.From))
	header("To", formatAddress(m.To))
	// Long subjects are split into several encoded-words; fold between them.
	raw("Subject", strings.ReplaceAll(mime.QEncoding.Encode("utf-8", headerValue(m.Subject)), "?= =?", "?=\r\n =?"))
	if m.MessageID != "" {
		header("Message-ID", m.MessageID)
	}
	header("MIME-Version", "1.0")
	// RFC 3834: no vacation or out-of-office replies to a report.
	header("Auto-Submitted", "auto-generated")
	if m.ListUnsubscribe != "" {
		header("List-Unsubscribe", m.ListUnsubscribe)
	}
	boundary := m.boundary()
	raw("Content-Type", "multipart/alternative;\r\n "+strings.TrimPrefix(mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": boundary}), "multipart/alternative; "))
	b.WriteString("\r\n")

	mw := multipart.NewWriter(&b)
	if err := mw.SetBoundary(boundary); err != nil {
		panic("report: invalid boundary: " + err.Error()) // boundary is built to be valid
	}
	part := func(mediaType, body string) {
		h := make(textproto.MIMEHeader)
		h.Set("Content-Type", mediaType+"; charset=utf-8")
		h.Set("Content-Transfer-Encoding", "quoted-printable")
		pw, _ := mw.CreatePart(h) // writes to a bytes.Buffer: no error
		qw := quotedprintable.NewWriter(pw)
		qw.Write([]byte(body))
		qw.Close()
	}
	part("text/plain", m.Text)
	part("text/html", m.HTML)
	mw.Close()
	return b.Bytes()
}

// boundary returns the MIME boundary of m. It holds "=_", which a
// quoted-printable body cannot contain, so it never occurs in a part.
func (m *Message) boundary() string {
	h := sha256.Sum256([]byte(m.MessageID + "\x00" + m.Subject))
	return "=_webstats_" + hex.EncodeToString(h[:12])
}

// formatAddress writes an address for a header: parsed and re-encoded when
// it parses (so a display name is quoted or encoded as needed), as given
// otherwise.
func formatAddress(s string) string {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return s
	}
	if a.Name == "" {
		return a.Address
	}
	return a.String()
}

// headerValue removes line breaks and other control characters from a
// header value, so no value can add a header.
func headerValue(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

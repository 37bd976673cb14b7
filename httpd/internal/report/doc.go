// Package report sends the periodic email reports of webstats (SPEC §8):
// every website whose email setting is 1 gets, at its owner's address, a
// weekly or monthly summary of its statistics.
//
// # Parts
//
//   - [Compose] builds the mail of one website and period: unique visitors,
//     pageviews and visits with their change against the previous period, the
//     top 5 pages, sources and countries, a link to the statistics page and
//     how to stop the reports. Every figure is the Stats API v2's answer
//     ([engine.Owner.Query]) to the same question, so the statistics pages
//     show the same numbers (SPEC §10.2). [Message.Bytes] writes it as an RFC 5322
//     multipart/alternative message (text and HTML, quoted-printable).
//   - [Send] delivers a Message through an SMTP submission server, with
//     STARTTLS when offered, implicit TLS on port 465 and AUTH PLAIN.
//   - [Scheduler] sends the reports that are due, exactly once per website
//     and period as far as SMTP allows; [SendNow] sends one at once (the
//     `webstatsd report` command).
//
// # When reports go out
//
// A weekly report covers Monday to Sunday and is due from Monday 06:00; a
// monthly report covers a calendar month and is due from the 1st at 06:00;
// days and times are those of the website's time zone. The first day of
// the last period sent is stored per website, claimed before the mail is
// composed ([github.com/webstats/webstats/engine/identity.Service.ClaimReport]: in a cluster only one node's claim
// commits, and only that node sends) and released if the SMTP server does
// not accept it ([github.com/webstats/webstats/engine/identity.Service.ReleaseReport]), so a restart does not
// repeat a report. Only the latest due period is ever sent: a report less
// than one period late (the server was down at 06:00) goes out at the next
// tick, older unsent periods are skipped and logged. A crash between the
// claim and the server's answer leaves that period unsent (at most once;
// a reply lost after the server took the mail sends it again).
//
// A failed delivery is retried with exponential backoff (1m, 2m, 4m, …, at
// most 1h, see [Options.Backoff]) until it succeeds or a newer period is due.
// The scheduler runs in its own goroutine ([Scheduler.Run]); it only reads
// statistics through the engine's query API, so it never holds up tracking
// or the HTTP API.
package report

package report

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/snapshot"
)

// schedulerFor returns a scheduler sending through srv on clk, logging into
// the returned buffer.
func schedulerFor(e *engine.Engine, srv *testServer, clk *clock, p Period) (*Scheduler, *syncBuffer) {
	log, buf := testLogger()
	return NewScheduler(e, Options{
		Period:    p,
		SMTP:      SMTP{Addr: srv.addr, From: "reports@example.org"},
		PublicURL: "https://stats.example.org",
		Now:       clk.Now,
		Logger:    log,
		Backoff:   func(int) time.Duration { return time.Millisecond },
	}), buf
}

// tick runs one Tick and checks that the server then holds want messages.
func tick(t *testing.T, s *Scheduler, srv *testServer, want int) {
	t.Helper()
	if err := s.Tick(context.Background()); err != nil {
		t.Fatalf("Tick: %v", err)
	}
	if got := len(srv.messages()); got != want {
		t.Fatalf("after Tick: %d messages, want %d", got, want)
	}
}

// subjectOf returns the decoded subject of the i-th message of srv.
func subjectOf(t *testing.T, srv *testServer, i int) string {
	t.Helper()
	return parseMail(t, srv.messages()[i].Data).Subject
}

func lastReport(t *testing.T, e *engine.Engine, website uint32, p Period) string {
	t.Helper()
	d, ok, err := identity.Must(e).LastReport(context.Background(), website, p.kind())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return "none"
	}
	return d.String()
}

// Nothing before Monday 06:00; one report at 06:00; none on the next tick.
func TestSchedulerWeekly(t *testing.T) {
	clk := newClock("2026-11-16T02:00:00Z")
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	addWebsite(t, e, "quiet.example", "UTC", false) // email = 0: never a report
	srv := startServer(t, serverConfig{})
	s, log := schedulerFor(e, srv, clk, Weekly)

	// The website was created on 1 October; its first due week is 2–8 Nov.
	// Mark it sent, as a server running then would have.
	if err := identity.Must(e).SetLastReport(context.Background(), w.ID, identity.ReportWeekly, date("2026-11-02")); err != nil {
		t.Fatal(err)
	}
	clk.Set("2026-11-16T05:59:59Z")
	tick(t, s, srv, 0)
	clk.Set("2026-11-16T06:00:00Z")
	tick(t, s, srv, 1)
	m := srv.messages()[0]
	if m.To[0] != owner {
		t.Errorf("sent to %v, want the owner %s", m.To, owner)
	}
	pm := parseMail(t, m.Data)
	if want := "Weekly statistics for example.com (9–15 November 2026): 5 visitors (+150%)"; pm.Subject != want {
		t.Errorf("subject = %q, want %q", pm.Subject, want)
	}
	if pm.Header.Get("Date") != "Mon, 16 Nov 2026 06:00:00 +0000" {
		t.Errorf("Date = %q, want the scheduler's clock", pm.Header.Get("Date"))
	}
	if got := lastReport(t, e, w.ID, Weekly); got != "2026-11-09" {
		t.Errorf("LastReport = %s, want 2026-11-09", got)
	}
	tick(t, s, srv, 1)
	clk.Set("2026-11-22T23:59:00Z")
	tick(t, s, srv, 1)
	if !strings.Contains(log.String(), "email report sent") {
		t.Errorf("log lacks the report:\n%s", log)
	}
}

// A website never reported on gets the latest due period; one created
// after that period ended gets nothing until its first period is due.
func TestSchedulerNewWebsites(t *testing.T) {
	clk := newClock("2026-11-11T12:00:00Z")
	e := newEngine(t, clk)
	exampleSite(t, e, clk, "UTC") // created 1 October
	addWebsite(t, e, "new.example", "UTC", true)
	srv := startServer(t, serverConfig{})
	s, _ := schedulerFor(e, srv, clk, Weekly)
	tick(t, s, srv, 1) // example.com: 2–8 November
	if got := subjectOf(t, srv, 0); !strings.HasPrefix(got, "Weekly statistics for example.com (2–8 November 2026)") {
		t.Errorf("subject = %q", got)
	}
	clk.Set("2026-11-16T06:00:00Z") // both: 9–15 November
	tick(t, s, srv, 3)
}

// A restart (engine closed and reopened on the same store, a new
// scheduler) neither repeats the report sent nor skips the next one.
func TestSchedulerRestart(t *testing.T) {
	fs := snapshot.NewMemFS()
	clk := newClock("2026-11-16T06:30:00Z")
	e := openEngine(t, clk, fs)
	w := exampleSite(t, e, clk, "UTC")
	srv := startServer(t, serverConfig{})
	s, _ := schedulerFor(e, srv, clk, Weekly)
	tick(t, s, srv, 1)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e = openEngine(t, clk, fs)
	defer e.Close()
	s, _ = schedulerFor(e, srv, clk, Weekly)
	clk.Set("2026-11-16T07:00:00Z")
	tick(t, s, srv, 1) // no duplicate
	clk.Set("2026-11-23T06:00:00Z")
	tick(t, s, srv, 2) // no gap
	ids := []string{
		parseMail(t, srv.messages()[0].Data).Header.Get("Message-ID"),
		parseMail(t, srv.messages()[1].Data).Header.Get("Message-ID"),
	}
	want := []string{"<report-1-weekly-2026-11-09@stats.example.org>", "<report-1-weekly-2026-11-16@stats.example.org>"}
	if ids[0] != want[0] || ids[1] != want[1] {
		t.Errorf("Message-IDs %q, want %q", ids, want)
	}
	if got := lastReport(t, e, w.ID, Weekly); got != "2026-11-16" {
		t.Errorf("LastReport = %s, want 2026-11-16", got)
	}
}

// The server was down on Monday 06:00: the report, less than one period
// late, goes out at the next start. A report more than one period late is
// skipped and logged.
func TestSchedulerLateReports(t *testing.T) {
	ctx := context.Background()
	clk := newClock("2026-11-19T10:00:00Z") // Thursday
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	if err := identity.Must(e).SetLastReport(ctx, w.ID, identity.ReportWeekly, date("2026-11-02")); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, serverConfig{})

	// Down from Sunday 15 to Thursday 19 November: 9–15 November is sent.
	s, log := schedulerFor(e, srv, clk, Weekly)
	tick(t, s, srv, 1)
	if got := subjectOf(t, srv, 0); !strings.Contains(got, "(9–15 November 2026)") {
		t.Errorf("subject = %q, want the week of 9–15 November", got)
	}
	if strings.Contains(log.String(), "skipped") {
		t.Errorf("nothing should be skipped:\n%s", log)
	}

	// Down from Sunday 22 November to Tuesday 1 December: 16–22 November
	// (due 23 November) is more than a period late: skipped; 23–29
	// November is sent.
	clk.Set("2026-12-01T09:00:00Z")
	s, log = schedulerFor(e, srv, clk, Weekly)
	tick(t, s, srv, 2)
	if got := subjectOf(t, srv, 1); !strings.Contains(got, "(23–29 November 2026)") {
		t.Errorf("subject = %q, want the week of 23–29 November", got)
	}
	if !strings.Contains(log.String(), "email report skipped") || !strings.Contains(log.String(), "from=2026-11-16 to=2026-11-22") {
		t.Errorf("the skipped week is not logged:\n%s", log)
	}
	if got := lastReport(t, e, w.ID, Weekly); got != "2026-11-23" {
		t.Errorf("LastReport = %s, want 2026-11-23", got)
	}
	tick(t, s, srv, 2)
}

// A temporary failure (451, twice) is retried with backoff, and the report
// is sent exactly once.
func TestSchedulerRetries(t *testing.T) {
	clk := newClock("2026-11-16T06:00:00Z")
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	srv := startServer(t, serverConfig{failFirst: 2})
	log, buf := testLogger()
	var mu sync.Mutex
	var attempts []int
	s := NewScheduler(e, Options{
		SMTP:   SMTP{Addr: srv.addr, From: "reports@example.org"},
		Now:    clk.Now,
		Logger: log,
		Backoff: func(n int) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			attempts = append(attempts, n)
			return time.Duration(n) * time.Minute
		},
	})
	ctx := context.Background()
	if err := s.Tick(ctx); err == nil || !strings.Contains(err.Error(), "451") {
		t.Fatalf("first Tick: err = %v, want the 451", err)
	}
	if err := s.Tick(ctx); err != nil || srv.attempts() != 1 {
		t.Fatalf("Tick during the backoff: err %v, %d attempts; want no attempt", err, srv.attempts())
	}
	clk.Add(time.Minute)
	if err := s.Tick(ctx); err == nil || srv.attempts() != 2 {
		t.Fatalf("second attempt: err %v, %d attempts; want the 451 and 2 attempts", err, srv.attempts())
	}
	clk.Add(time.Minute)
	tick(t, s, srv, 0) // backing off 2m
	clk.Add(time.Minute)
	tick(t, s, srv, 1)
	tick(t, s, srv, 1)
	if srv.attempts() != 3 {
		t.Errorf("%d attempts, want 3", srv.attempts())
	}
	if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 {
		t.Errorf("Backoff called with %v, want [1 2]", attempts)
	}
	if got := lastReport(t, e, w.ID, Weekly); got != "2026-11-09" {
		t.Errorf("LastReport = %s, want 2026-11-09", got)
	}
	if n := strings.Count(buf.String(), "email report failed, will retry"); n != 2 {
		t.Errorf("%d failures logged, want 2:\n%s", n, buf)
	}
}

// Run, on its own goroutine and timers, retries with backoff and sends the
// report once; it returns when its context ends.
func TestRunRetries(t *testing.T) {
	clk := newClock("2026-11-16T06:00:00Z")
	e := newEngine(t, clk)
	exampleSite(t, e, clk, "UTC")
	srv := startServer(t, serverConfig{failFirst: 2})
	start := time.Now()
	now := func() time.Time { return clk.Now().Add(time.Since(start)) }
	log, buf := testLogger()
	s := NewScheduler(e, Options{
		SMTP:    SMTP{Addr: srv.addr, From: "reports@example.org"},
		Now:     now,
		Logger:  log,
		Backoff: func(n int) time.Duration { return time.Duration(n) * 10 * time.Millisecond },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.messages()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for a duplicate, if any
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if n, a := len(srv.messages()), srv.attempts(); n != 1 || a != 3 {
		t.Errorf("%d messages after %d attempts, want 1 after 3\n%s", n, a, buf)
	}
}

// Each website gets its report at 06:00 on Monday in its own time zone.
func TestSchedulerTimeZones(t *testing.T) {
	clk := newClock("2026-10-01T00:00:00Z")
	e := newEngine(t, clk)
	berlin := addWebsite(t, e, "berlin.example", "Europe/Berlin", true)
	la := addWebsite(t, e, "la.example", "America/Los_Angeles", true)
	// Sunday 15 November 23:30 in Berlin (22:30 UTC) and in Los Angeles
	// (07:30 UTC on the 16th): in the local week of 9–15 November.
	track(t, e, "berlin.example", []pageview{{"2026-11-15T22:30:00Z", "8.8.8.8", "/", ""}})
	track(t, e, "la.example", []pageview{{"2026-11-16T07:30:00Z", "8.8.8.8", "/", ""}})
	srv := startServer(t, serverConfig{})
	s, _ := schedulerFor(e, srv, clk, Weekly)
	for _, w := range []engine.Website{berlin, la} {
		if err := identity.Must(e).SetLastReport(context.Background(), w.ID, identity.ReportWeekly, date("2026-11-02")); err != nil {
			t.Fatal(err)
		}
	}

	clk.Set("2026-11-16T04:59:00Z") // 05:59 in Berlin
	tick(t, s, srv, 0)
	clk.Set("2026-11-16T05:00:00Z") // 06:00 in Berlin, Sunday 21:00 in LA
	tick(t, s, srv, 1)
	if got := subjectOf(t, srv, 0); got != "Weekly statistics for berlin.example (9–15 November 2026): 1 visitor (new)" {
		t.Errorf("subject = %q", got)
	}
	clk.Set("2026-11-16T13:59:00Z") // 05:59 in LA
	tick(t, s, srv, 1)
	clk.Set("2026-11-16T14:00:00Z") // 06:00 in LA
	tick(t, s, srv, 2)
	if got := subjectOf(t, srv, 1); got != "Weekly statistics for la.example (9–15 November 2026): 1 visitor (new)" {
		t.Errorf("subject = %q", got)
	}
	if got := lastReport(t, e, berlin.ID, Weekly) + " " + lastReport(t, e, la.ID, Weekly); got != "2026-11-09 2026-11-09" {
		t.Errorf("LastReports = %s", got)
	}
}

// A monthly report goes out on the 1st at 06:00 and covers the month.
func TestSchedulerMonthly(t *testing.T) {
	clk := newClock("2026-11-20T00:00:00Z")
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	if err := identity.Must(e).SetLastReport(context.Background(), w.ID, identity.ReportMonthly, date("2026-10-01")); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, serverConfig{})
	s, _ := schedulerFor(e, srv, clk, Monthly)
	clk.Set("2026-12-01T05:59:00Z")
	tick(t, s, srv, 0)
	clk.Set("2026-12-01T06:00:00Z")
	tick(t, s, srv, 1)
	pm := parseMail(t, srv.messages()[0].Data)
	if want := "Monthly statistics for example.com (November 2026): 8 visitors (new)"; pm.Subject != want {
		t.Errorf("subject = %q, want %q", pm.Subject, want)
	}
	if id := pm.Header.Get("Message-ID"); id != "<report-1-monthly-2026-11-01@stats.example.org>" {
		t.Errorf("Message-ID = %q", id)
	}
	for _, want := range []string{"Pageviews  11  new", "previous month: 0", "  5  /\r\n", "  3  /a\r\n", "  4  United States\r\n"} {
		if !strings.Contains(pm.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, pm.Text)
		}
	}
	tick(t, s, srv, 1)
	// The weekly kind is separate.
	if got := lastReport(t, e, w.ID, Weekly); got != "none" {
		t.Errorf("weekly LastReport = %s, want none", got)
	}
}

// Without an SMTP server, reports are off: Tick does nothing and Run says
// so once, then waits for its context.
func TestSchedulerOff(t *testing.T) {
	clk := newClock("2026-11-16T07:00:00Z")
	e := newEngine(t, clk)
	exampleSite(t, e, clk, "UTC")
	log, buf := testLogger()
	s := NewScheduler(e, Options{Now: clk.Now, Logger: log})
	if err := s.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	s.Run(ctx)
	if n := strings.Count(buf.String(), "email reports are off"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, buf)
	}
	if err := SendNow(context.Background(), e, 1, Options{Now: clk.Now}, ""); err == nil {
		t.Error("SendNow without SMTP: want ErrNoSMTP")
	}
}

// SendNow sends the last complete period at once; to the owner it is
// recorded, so the scheduler does not send it again.
func TestSendNow(t *testing.T) {
	ctx := context.Background()
	clk := newClock("2026-11-16T03:00:00Z") // Monday, before 06:00
	e := newEngine(t, clk)
	w := exampleSite(t, e, clk, "UTC")
	srv := startServer(t, serverConfig{})
	opts := Options{SMTP: SMTP{Addr: srv.addr, From: "reports@example.org"}, Now: clk.Now}

	if err := SendNow(ctx, e, w.ID, opts, "someone@example.net"); err != nil {
		t.Fatal(err)
	}
	if got := lastReport(t, e, w.ID, Weekly); got != "none" {
		t.Errorf("a report to another address is recorded: LastReport = %s", got)
	}
	if err := SendNow(ctx, e, w.ID, opts, ""); err != nil {
		t.Fatal(err)
	}
	msgs := srv.messages()
	if len(msgs) != 2 || msgs[0].To[0] != "someone@example.net" || msgs[1].To[0] != owner {
		t.Fatalf("messages to %v and %v", msgs[0].To, msgs[1].To)
	}
	if got := subjectOf(t, srv, 1); !strings.Contains(got, "(9–15 November 2026)") {
		t.Errorf("subject = %q, want the last complete week", got)
	}
	if got := lastReport(t, e, w.ID, Weekly); got != "2026-11-09" {
		t.Errorf("LastReport = %s, want 2026-11-09", got)
	}
	s, _ := schedulerFor(e, srv, clk, Weekly)
	clk.Set("2026-11-16T06:00:00Z")
	tick(t, s, srv, 2)

	if err := SendNow(ctx, e, 99, opts, ""); err == nil {
		t.Error("unknown website: want an error")
	}
	monthly := opts
	monthly.Period = Monthly
	if err := SendNow(ctx, e, w.ID, monthly, ""); err != nil {
		t.Fatal(err)
	}
	if got := subjectOf(t, srv, 2); !strings.HasPrefix(got, "Monthly statistics for example.com (October 2026): 0 visitors") {
		t.Errorf("subject = %q", got)
	}
}

// When the server cannot be reached, a pass stops at the first failure
// instead of waiting for the server once per website.
func TestSchedulerUnreachableServer(t *testing.T) {
	clk := newClock("2026-10-01T00:00:00Z")
	e := newEngine(t, clk)
	addWebsite(t, e, "a.example", "UTC", true)
	addWebsite(t, e, "b.example", "UTC", true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	log, buf := testLogger()
	s := NewScheduler(e, Options{SMTP: SMTP{Addr: addr}, Now: clk.Now, Logger: log})
	clk.Set("2026-10-12T06:00:00Z")
	if err := s.Tick(context.Background()); err == nil {
		t.Fatal("Tick: want an error")
	}
	if n := strings.Count(buf.String(), "email report failed"); n != 1 {
		t.Errorf("%d failures, want 1 (the pass stops):\n%s", n, buf)
	}
	if !strings.Contains(buf.String(), "retry_in=1m0s") {
		t.Errorf("the default backoff starts at 1m:\n%s", buf)
	}
}

func TestDefaultBackoff(t *testing.T) {
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute, time.Hour, time.Hour}
	for i, w := range want {
		if got := defaultBackoff(i + 1); got != w {
			t.Errorf("defaultBackoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := defaultBackoff(1000); got != time.Hour {
		t.Errorf("defaultBackoff(1000) = %v", got)
	}
}

package report

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// Options configures a Scheduler and SendNow. The zero value is valid and
// means reports are off (no SMTP server).
type Options struct {
	// Period is the period of the reports. Default Weekly.
	Period Period
	// SMTP is the submission server. Default: none, and reports are off.
	SMTP SMTP
	// PublicURL is the base URL of the statistics pages
	// ("https://stats.example.org"), for the links of the mails and the
	// host of their Message-ID. Default "": mails without absolute links.
	PublicURL string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Logger receives what the scheduler does: reports sent, skipped and
	// failed. Default: discarded.
	Logger *slog.Logger
	// Backoff returns how long to wait before retrying a report whose
	// delivery failed attempt times (1, 2, …). Default: 1m, 2m, 4m, …,
	// capped at 1h.
	Backoff func(attempt int) time.Duration
	// TLSConfig is the TLS configuration of the SMTP connection. Default nil:
	// the system's roots, the server name from SMTP.Addr. Tests set RootCAs.
	TLSConfig *tls.Config
}

// withDefaults returns a copy of o with the unset fields filled in.
func (o Options) withDefaults() Options {
	c := o
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Backoff == nil {
		c.Backoff = defaultBackoff
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.SMTP.From == "" {
		c.SMTP.From = defaultFrom(c.SMTP.User, c.PublicURL)
	}
	return c
}

// defaultBackoff waits 1m, 2m, 4m, … and at most 1h.
func defaultBackoff(attempt int) time.Duration {
	if attempt > 7 {
		return time.Hour
	}
	return min(time.Minute<<max(0, attempt-1), time.Hour)
}

// defaultFrom is the sender when none is set: the SMTP user when it is an
// address, else webstats@ the public host (or localhost).
func defaultFrom(user, publicURL string) string {
	if strings.Contains(user, "@") {
		return user
	}
	host := "localhost"
	if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return "webstats@" + host
}

// Scheduling constants.
const (
	// pollEvery is how often Run looks for due reports: reports go out at
	// most this long after 06:00.
	pollEvery = time.Minute
	// tickTimeout bounds one pass of Run over every website.
	tickTimeout = 10 * time.Minute
)

// Scheduler sends the reports that are due (see the package documentation).
// Create it with NewScheduler, then call Run in a goroutine of its own.
type Scheduler struct {
	e    *engine.Engine
	opts Options

	// mu serialises ticks and guards the fields below.
	mu sync.Mutex
	// retries holds, per website, the delivery that failed and when to try
	// it again.
	retries map[uint32]*retry
	// sent holds, per website, the first day of the last period this
	// scheduler sent, to spare the store a read every minute. (What
	// another node claimed is read each time: it may be released.)
	sent map[uint32]engine.Date
	// locs caches the time zones of the websites.
	locs map[string]*time.Location
}

// retry is the state of a report whose delivery failed.
type retry struct {
	first    engine.Date // the period
	attempts int         // failed deliveries so far
	next     time.Time   // not before then
}

// NewScheduler returns a scheduler of the reports of e's websites. Options
// without SMTP.Addr mean reports are off: Run then only logs that.
func NewScheduler(e *engine.Engine, opts Options) *Scheduler {
	return &Scheduler{
		e:       e,
		opts:    opts.withDefaults(),
		retries: make(map[uint32]*retry),
		sent:    make(map[uint32]engine.Date),
		locs:    make(map[string]*time.Location),
	}
}

// off reports whether the reports are off, and why.
func (s *Scheduler) off() (string, bool) {
	switch {
	case s.opts.SMTP.Addr == "":
		return "no SMTP server (-smtp-addr)", true
	case !s.opts.Period.valid():
		return fmt.Sprintf("invalid period %d", s.opts.Period), true
	}
	return "", false
}

// Run sends the reports that are due, checking every minute (and when a
// failed delivery is to be retried), until ctx is done. Each pass is bounded
// by a timeout; deliveries happen on Run's goroutine, so call Run in a
// goroutine of its own, and wait for it to return before closing the engine.
// With reports off, Run logs it once and waits for ctx.
func (s *Scheduler) Run(ctx context.Context) {
	log := s.opts.Logger
	if why, off := s.off(); off {
		log.Info("email reports are off: " + why)
		<-ctx.Done()
		return
	}
	log.Info("email reports on", "period", s.opts.Period.String(), "smtp", s.opts.SMTP.Addr, "from", s.opts.SMTP.From)
	for {
		tctx, cancel := context.WithTimeout(ctx, tickTimeout)
		s.Tick(tctx) // logs its failures itself
		cancel()
		t := time.NewTimer(s.wait())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// wait returns how long Run sleeps before the next pass.
func (s *Scheduler) wait() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	d := pollEvery
	for _, r := range s.retries {
		d = min(d, max(0, r.next.Sub(now)))
	}
	return d
}

// Tick makes one pass: for every website with email = 1 whose latest due
// period has not been sent, it claims it (engine.ClaimReport: in a
// cluster only one node gets the claim), composes the report and sends it
// to the owner of the website; a failed delivery releases the claim
// (engine.ReleaseReport). Unsent periods older than that are skipped, logged and
// recorded as done. A failed delivery is logged and retried by a later Tick
// once its backoff has passed; when the server cannot be reached at all,
// the pass stops there and the other websites wait for the next one. Tick
// returns the failures of the pass, joined; it does nothing with reports
// off. Ticks do not overlap: a Tick waits for the one running.
func (s *Scheduler) Tick(ctx context.Context) error {
	if _, off := s.off(); off {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	seen := make(map[uint32]bool)
	var errs []error
	for page := 1; ; page++ {
		wp := s.e.Unscoped().Websites(ctx, engine.WebsiteQuery{Page: page, PerPage: 1000})
		for _, w := range wp.Websites {
			if err := ctx.Err(); err != nil {
				return errors.Join(append(errs, err)...)
			}
			seen[w.ID] = true
			if w.Email != 1 {
				delete(s.retries, w.ID)
				continue
			}
			if err := s.tickWebsite(ctx, w, now); err != nil {
				errs = append(errs, err)
				if unreachable(err) {
					// The other websites would wait for the same server:
					// they are tried at the next pass.
					return errors.Join(errs...)
				}
			}
		}
		if page >= wp.LastPage {
			break
		}
	}
	for id := range s.retries { // deleted websites
		if !seen[id] {
			delete(s.retries, id)
		}
	}
	for id := range s.sent {
		if !seen[id] {
			delete(s.sent, id)
		}
	}
	return errors.Join(errs...)
}

// tickWebsite sends w's report if it is due. s.mu is held.
func (s *Scheduler) tickWebsite(ctx context.Context, w engine.Website, now time.Time) error {
	p, log := s.opts.Period, s.opts.Logger
	loc := s.location(w)
	due := p.due(now, loc)
	if last, ok := s.sent[w.ID]; ok && last >= due {
		return nil
	}
	if created := engine.DateFromTime(w.CreatedAt.In(loc)); created > p.last(due) {
		return nil // the website did not exist yet
	}
	r := s.retries[w.ID]
	if r != nil && r.first == due && now.Before(r.next) {
		return nil // backing off
	}
	attrs := []any{"website", w.ID, "domain", w.Domain, "period", p.String()}
	last, ok, err := identity.Must(s.e).LastReport(ctx, w.ID, p.kind())
	if err != nil {
		log.Error("email report: read last report", append(attrs, "err", err)...)
		return err
	}
	if ok && last >= due {
		// Sent, or claimed by another node. Not kept in s.sent: if that
		// node's delivery fails it releases the claim, and this one may
		// send it.
		return nil
	}
	if ok && last < p.prev(due) {
		// The reports of next(last) … prev(due) are more than one period
		// late: skipped. The claim of due below records that (a separate
		// write could put the record back behind another node's claim).
		skipFrom, skipTo := p.next(last), p.prev(due)
		log.Warn("email report skipped: more than one period late",
			append(attrs, "from", skipFrom.String(), "to", p.last(skipTo).String())...)
	}
	if r == nil || r.first != due {
		r = &retry{first: due}
		s.retries[w.ID] = r
	}
	attrs = append(attrs, "first", due.String())
	// Claimed before it is sent: of the nodes of a cluster, only the one
	// whose claim commits sends it.
	claimed, prev, hadPrev, err := identity.Must(s.e).ClaimReport(ctx, w.ID, p.kind(), due)
	if err != nil {
		log.Error("email report: claim", append(attrs, "err", err)...)
		return err
	}
	if !claimed {
		delete(s.retries, w.ID)
		return nil // sent, or being sent, by another node
	}
	to, err := deliver(ctx, s.e, w, due, "", &s.opts)
	if err != nil {
		r.attempts++
		wait := s.opts.Backoff(r.attempts)
		r.next = now.Add(wait)
		log.Warn("email report failed, will retry", append(attrs, "attempt", r.attempts, "retry_in", wait.String(), "err", err)...)
		if rerr := identity.Must(s.e).ReleaseReport(ctx, w.ID, p.kind(), due, prev, hadPrev); rerr != nil {
			// Recorded as sent: no node retries it.
			log.Error("email report: release the claim of a report not sent", append(attrs, "err", rerr)...)
			return errors.Join(err, rerr)
		}
		return err
	}
	delete(s.retries, w.ID)
	s.sent[w.ID] = due
	log.Info("email report sent", append(attrs, "to", to)...)
	return nil
}

// unreachable reports whether err says that the SMTP server could not be
// reached or refused the connection's settings (TLS, credentials), as
// opposed to an SMTP reply about one message or a failure to compose it.
func unreachable(err error) bool {
	var ue *unreachableError
	return errors.As(err, &ue)
}

// unreachableError marks a delivery that failed before the server could
// answer for the message.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// location returns the time zone of w (UTC when it does not load).
func (s *Scheduler) location(w engine.Website) *time.Location {
	if loc, ok := s.locs[w.Timezone]; ok {
		return loc
	}
	loc, err := time.LoadLocation(w.Timezone)
	if err != nil || w.Timezone == "" {
		if w.Timezone != "" {
			s.opts.Logger.Warn("email report: unknown time zone, using UTC", "website", w.ID, "timezone", w.Timezone)
		}
		loc = time.UTC
	}
	s.locs[w.Timezone] = loc
	return loc
}

// deliver composes w's report of the period starting on first and sends it
// to to, or to the owner of w when to is "". It returns the recipient.
func deliver(ctx context.Context, e *engine.Engine, w engine.Website, first engine.Date, to string, opts *Options) (string, error) {
	if to == "" {
		a, err := identity.Must(e).Account(ctx, w.Account)
		if err != nil {
			return "", fmt.Errorf("report: owner of website %d: %w", w.ID, err)
		}
		to = a.Email
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	m, err := Compose(ctx, e, w, to, opts.Period, first, opts.PublicURL)
	if err != nil {
		return to, err
	}
	m.From = opts.SMTP.From
	m.Date = opts.Now()
	err = Send(ctx, opts.SMTP, opts.TLSConfig, m)
	var se *smtp.SMTPError
	if err != nil && !errors.As(err, &se) && ctx.Err() == nil {
		err = &unreachableError{err}
	}
	return to, err
}

// SendNow sends at once the report of website of the last complete period
// (the last whole week or month in the website's time zone, whether or not
// its report is due yet) to to, or to the owner of the website when to is
// "". This is the `webstatsd report` command. A report sent to the owner is
// recorded (engine.SetLastReport) so that the scheduler does not send it
// again; one sent to another address is not. SendNow ignores the website's
// email setting and Options.Backoff: it tries once.
func SendNow(ctx context.Context, e *engine.Engine, website uint32, opts Options, to string) error {
	o := opts.withDefaults()
	if o.SMTP.Addr == "" {
		return ErrNoSMTP
	}
	if !o.Period.valid() {
		return fmt.Errorf("report: %w %d", ErrInvalidPeriod, o.Period)
	}
	w, err := e.Unscoped().Website(ctx, website)
	if err != nil {
		return fmt.Errorf("report: website %d: %w", website, err)
	}
	loc, err := time.LoadLocation(w.Timezone)
	if err != nil {
		loc = time.UTC
	}
	first := o.Period.complete(o.Now(), loc)
	if _, err := deliver(ctx, e, w, first, to, &o); err != nil {
		return err
	}
	if to != "" {
		return nil
	}
	last, ok, err := identity.Must(e).LastReport(ctx, w.ID, o.Period.kind())
	if err == nil && (!ok || last < first) {
		err = identity.Must(e).SetLastReport(ctx, w.ID, o.Period.kind(), first)
	}
	if err != nil {
		return fmt.Errorf("report: sent, but not recorded: %w", err)
	}
	return nil
}

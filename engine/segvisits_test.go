package engine_test

// Regression tests of issue #37's rows on the segments' semantics (SPEC
// §10.1): Plausible's visit rule (custom events start and extend visits),
// a hit's day is its stored local day, and realtime after a restart. Each
// expected number is worked out in the test from what was sent.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// segVisitsSite is an engine on fs with one website of time zone tz.
type segVisitsSite struct {
	e  *engine.Engine
	o  engine.Owner
	id uint32
}

func openSegVisits(t *testing.T, fs snapshot.FS, now time.Time, tz string) *segVisitsSite {
	t.Helper()
	return openSegVisitsSalt(t, fs, now, tz, engine.SaltDay)
}

// openSegVisitsSalt is openSegVisits under salt period salt.
func openSegVisitsSalt(t *testing.T, fs snapshot.FS, now time.Time, tz string, salt engine.SaltPeriod) *segVisitsSite {
	t.Helper()
	ctx := context.Background()
	e, err := engine.Open(&engine.Options{FS: fs, Dir: "data", Now: func() time.Time { return now }, SnapshotEvery: -1, SaltPeriod: salt})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	acc, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	o := e.Owner(acc.ID)
	domain := segDomain
	w, err := o.CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain, Timezone: &tz})
	if err != nil {
		t.Fatalf("CreateWebsite: %v", err)
	}
	return &segVisitsSite{e: e, o: o, id: w.ID}
}

func (s *segVisitsSite) track(t *testing.T, hits ...engine.Hit) {
	t.Helper()
	if _, err := s.e.Track(context.Background(), hits...); err != nil {
		t.Fatalf("Track: %v", err)
	}
}

// query runs body (without site_id) and returns its rows as JSON.
func (s *segVisitsSite) query(t *testing.T, body string) string {
	t.Helper()
	q, err := engine.ParseQuery([]byte(`{"site_id":"` + segDomain + `",` + body[1:]))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	res, err := s.o.Query(context.Background(), s.id, q)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	b, _ := json.Marshal(res.Results)
	return string(b)
}

// forceSegments is a filter every hit passes: the segments answer.
const forceSegments = `"filters":[["is_not","event:page",["/never/a/page"]]]`

// TestSegEventOnlyVisitors: issue #37, "a server-side integration sending
// only Signup events": 6 browser visitors with a pageview and 2 new users
// whose only hits are Signup events from the Events API (a visitor id, no
// user agent) are 8 visitors and 8 visits, as in Plausible (SPEC §10.1);
// the event-only visits have no pageview and a blank entry page.
func TestSegEventOnlyVisitors(t *testing.T) {
	s := openSegVisits(t, snapshot.NewMemFS(), segTime("2026-03-11 12:00"), "UTC")
	var hits []engine.Hit
	for i := range 6 {
		hits = append(hits, segPV(fmt.Sprintf("2026-03-10 10:%02d", i), fmt.Sprint("browser", i), "/"))
	}
	for i := range 2 {
		hits = append(hits, engine.Hit{Time: segTime(fmt.Sprintf("2026-03-10 11:%02d", i)), URL: "/signup",
			Visitor: fmt.Sprint("user-", i), Website: s.id, Event: &engine.Event{Name: "Signup"}})
	}
	s.track(t, hits...)
	for _, body := range []string{
		`{"metrics":["visitors","visits","pageviews","events"],"date_range":["2026-03-10","2026-03-10"]}`,
		`{"metrics":["visitors","visits","pageviews","events"],"date_range":["2026-03-10","2026-03-10"],` + forceSegments + `}`,
	} {
		if got, want := s.query(t, body), `[{"dimensions":[],"metrics":[8,8,6,8]}]`; got != want {
			t.Errorf("%s:\n got %s\nwant %s", body, got, want)
		}
	}
	body := `{"metrics":["visitors","visits","bounce_rate"],"date_range":["2026-03-10","2026-03-10"],"filters":[["is","event:goal",["Signup"]]],"dimensions":["visit:entry_page"]}`
	if _, err := s.o.AddGoal(context.Background(), s.id, engine.Goal{EventName: "Signup"}); err != nil {
		t.Fatal(err)
	}
	// Two visits of one Signup each, entered on no page; one hit each is a
	// bounce (SPEC §10.1: no interactive hit after the first).
	if got, want := s.query(t, body), `[{"dimensions":[""],"metrics":[2,2,100]}]`; got != want {
		t.Errorf("%s:\n got %s\nwant %s", body, got, want)
	}
}

// TestSegBounceDurationNonInteractive: issue #37, "a bounce followed by a
// non-interactive event 40 s later": the visit bounces (the event is not
// interactive) and lasts 40 s (SPEC §10.1: duration = last hit − first
// hit, whatever their interactivity). An interactive event 40 s later ends
// the bounce, with the same duration.
func TestSegBounceDurationNonInteractive(t *testing.T) {
	s := openSegVisits(t, snapshot.NewMemFS(), segTime("2026-03-11 12:00"), "UTC")
	quiet := segEV("2026-03-10 10:00:40", "ann", "Scrolled", "/")
	quiet.Event.NonInteractive = true
	s.track(t, segPV("2026-03-10 10:00:00", "ann", "/"), quiet,
		segPV("2026-03-10 11:00:00", "bob", "/"), segEV("2026-03-10 11:00:40", "bob", "Signup", "/"))
	body := `{"metrics":["visits","bounce_rate","visit_duration"],"date_range":["2026-03-10","2026-03-10"],"dimensions":["visit:entry_page"],"filters":[["is","visit:device",["Desktop"]]]}`
	want := `[{"dimensions":["/"],"metrics":[2,50,40]}]`
	if got := s.query(t, body); got != want {
		t.Errorf("%s:\n got %s\nwant %s", body, got, want)
	}
	for who, w := range map[string]string{"ann": `[{"dimensions":[],"metrics":[1,100,40]}]`, "bob": `[{"dimensions":[],"metrics":[1,0,40]}]`} {
		body := fmt.Sprintf(`{"metrics":["visits","bounce_rate","visit_duration"],"date_range":["2026-03-10","2026-03-10"],"filters":[["is","visit:entry_page",["/"]],["has_done",["is","event:name",[%q]]]]}`,
			map[string]string{"ann": "Scrolled", "bob": "Signup"}[who])
		if got := s.query(t, body); got != w {
			t.Errorf("%s: %s:\n got %s\nwant %s", who, body, got, w)
		}
	}
}

// TestSegDSTMidnightFallBack: issue #37, "a website in America/Santiago
// (clocks fall back from 24:00 to 23:00)": on 2026-04-04 Santiago's clocks
// go from 24:00 back to 23:00, so the hour 23:00–24:00 happens twice that
// day. A pageview in each is a hit of 2026-04-04 (SPEC §2.3, §10.1): a
// filtered breakdown by page sums to the day's 2 pageviews.
func TestSegDSTMidnightFallBack(t *testing.T) {
	loc, err := time.LoadLocation("America/Santiago")
	if err != nil {
		t.Skip(err)
	}
	first := time.Date(2026, 4, 5, 2, 30, 0, 0, time.UTC)  // 23:30 -03
	second := time.Date(2026, 4, 5, 3, 30, 0, 0, time.UTC) // 23:30 -04, after the fall-back
	for _, at := range []time.Time{first, second} {
		if lt := at.In(loc); lt.Format("2006-01-02 15:04") != "2026-04-04 23:30" {
			t.Fatalf("tz database: %v is %v in Santiago, not 2026-04-04 23:30", at, lt)
		}
	}
	s := openSegVisits(t, snapshot.NewMemFS(), time.Date(2026, 4, 6, 12, 0, 0, 0, time.UTC), "America/Santiago")
	a, b := segPV("2026-04-05 02:30", "ann", "/a"), segPV("2026-04-05 03:30", "bob", "/b")
	s.track(t, a, b)
	st, err := s.o.Stat(context.Background(), engine.StatQuery{Website: s.id, Name: "pageviews", From: engine.DateOf(2026, 4, 4), To: engine.DateOf(2026, 4, 4)})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Rows) != 1 || st.Rows[0].Count != 2 {
		t.Fatalf("Stat pageviews of 2026-04-04: %+v, want 2", st.Rows)
	}
	for _, body := range []string{
		`{"metrics":["pageviews"],"date_range":["2026-04-04","2026-04-04"],"dimensions":["event:page"],` + forceSegments + `}`,
		`{"metrics":["pageviews"],"date_range":["2026-04-04","2026-04-04"],"dimensions":["event:page"]}`,
	} {
		if got, want := s.query(t, body), `[{"dimensions":["/a"],"metrics":[1]},{"dimensions":["/b"],"metrics":[1]}]`; got != want {
			t.Errorf("%s:\n got %s\nwant %s", body, got, want)
		}
	}
	body := `{"metrics":["pageviews","visitors"],"date_range":["2026-04-04","2026-04-04"],"dimensions":["time:day"],` + forceSegments + `}`
	if got, want := s.query(t, body), `[{"dimensions":["2026-04-04"],"metrics":[2,2]}]`; got != want {
		t.Errorf("%s:\n got %s\nwant %s", body, got, want)
	}
}

// TestSegTimeZoneChange: issue #37, "a website whose time zone changed
// from UTC to Europe/Berlin": a pageview at 23:30 UTC on 2026-03-10 was
// counted under 2026-03-10 (SPEC §2.3: changing the zone does not move old
// data); after the change it is still a hit of that day for one-day
// filtered queries, as Stat says, and of no other.
func TestSegTimeZoneChange(t *testing.T) {
	if _, err := time.LoadLocation("Europe/Berlin"); err != nil {
		t.Skip(err)
	}
	s := openSegVisits(t, snapshot.NewMemFS(), segTime("2026-03-12 12:00"), "UTC")
	s.track(t, segPV("2026-03-10 23:30", "ann", "/late"), segPV("2026-03-11 00:30", "bob", "/early"))
	tz := "Europe/Berlin"
	if _, err := s.o.UpdateWebsite(context.Background(), s.id, engine.WebsiteInput{Timezone: &tz}); err != nil {
		t.Fatal(err)
	}
	for day, want := range map[string]string{
		"2026-03-10": `[{"dimensions":["/late"],"metrics":[1,1]}]`,
		"2026-03-11": `[{"dimensions":["/early"],"metrics":[1,1]}]`,
	} {
		d, _ := time.Parse(time.DateOnly, day)
		st, err := s.o.Stat(context.Background(), engine.StatQuery{Website: s.id, Name: "page", From: engine.DateFromTime(d), To: engine.DateFromTime(d)})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Rows) != 1 || st.Rows[0].Count != 1 {
			t.Fatalf("Stat page of %s: %+v, want one row", day, st.Rows)
		}
		body := fmt.Sprintf(`{"metrics":["pageviews","visitors"],"date_range":[%q,%q],"dimensions":["event:page"],%s}`, day, day, forceSegments)
		if got := s.query(t, body); got != want {
			t.Errorf("%s:\n got %s\nwant %s", body, got, want)
		}
	}
}

// TestRealtimeAfterRestart: issue #37, "realtime after a clean restart":
// three visitors' pageviews of the last minutes, a snapshot (which empties
// the log's tail) and a clean close; reopened, realtime still shows them.
func TestRealtimeAfterRestart(t *testing.T) {
	fs := snapshot.NewMemFS()
	now := segTime("2026-03-10 12:00")
	s := openSegVisits(t, fs, now, "Europe/Berlin")
	s.track(t, segPV("2026-03-10 11:57", "ann", "/"), segPV("2026-03-10 11:58", "bob", "/"),
		segPV("2026-03-10 11:59", "cid", "/"), segPV("2026-03-10 11:59:30", "ann", "/b"),
		segEV("2026-03-10 11:59:40", "dan", "Signup", "/")) // an event: no pageview, no realtime visitor
	before, err := s.o.Realtime(context.Background(), s.id)
	if err != nil {
		t.Fatal(err)
	}
	after := s.realtimeAfterRestart(t, fs, now, engine.SaltDay)
	want := engine.Realtime{Visitors: 3}
	want.Pageviews[26], want.Pageviews[27], want.Pageviews[28] = 1, 1, 2
	if before != want || after != want {
		t.Errorf("realtime before the restart %+v, after %+v; want %+v", before, after, want)
	}
}

// TestRealtimeAfterRestartWeekly: under weekly salts a visit that passed
// midnight keeps its rows in the day it started (yesterday); after a
// restart its pageview of the last minutes still shows, beside today's.
func TestRealtimeAfterRestartWeekly(t *testing.T) {
	fs := snapshot.NewMemFS()
	now := segTime("2026-03-10 00:10") // a Tuesday: Monday's week
	s := openSegVisitsSalt(t, fs, now, "UTC", engine.SaltWeek)
	s.track(t, segPV("2026-03-09 23:45", "bob", "/"), segPV("2026-03-10 00:07", "bob", "/b"),
		segPV("2026-03-10 00:08", "ann", "/"))
	before, err := s.o.Realtime(context.Background(), s.id)
	if err != nil {
		t.Fatal(err)
	}
	got := s.realtimeAfterRestart(t, fs, now, engine.SaltWeek)
	// Pageviews per minute of the last 30 (slot 29 the current minute):
	// 23:45 is slot 4, 00:07 slot 26, 00:08 slot 27; two visitors in
	// the last 5 minutes.
	want := engine.Realtime{Visitors: 2}
	want.Pageviews[4], want.Pageviews[26], want.Pageviews[27] = 1, 1, 1
	if before != want || got != want {
		t.Errorf("realtime before the restart %+v, after %+v; want %+v", before, got, want)
	}
}

// realtimeAfterRestart snapshots s's engine, closes it, opens the store
// again at now under salt, and answers the website's realtime there.
func (s *segVisitsSite) realtimeAfterRestart(t *testing.T, fs snapshot.FS, now time.Time, salt engine.SaltPeriod) engine.Realtime {
	t.Helper()
	if err := s.e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(&engine.Options{FS: fs, Dir: "data", Now: func() time.Time { return now }, SnapshotEvery: -1, SaltPeriod: salt})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rt, err := e.Unscoped().Realtime(context.Background(), s.id)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// queryRows answers q on site and returns its rows as "dims → metrics"
// strings, for compact comparisons.
func queryRows(t testing.TB, e *engine.Engine, site uint32, q engine.Query) []string {
	t.Helper()
	res, err := e.Unscoped().Query(context.Background(), site, q)
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	var out []string
	for _, r := range res.Results {
		out = append(out, fmt.Sprint(r.Dimensions, "→", r.Metrics))
	}
	return out
}

// TestEventNamesKeptExactly checks SPEC §2.4: the segments, goals and the
// query model keep an event's name and unit as sent, ':' included
// (Plausible's "Outbound Link: Click"), while only the phpAnalytics event
// statistic makes ':' a space; a name of colons is a name. It also checks
// that the names survive a replay of the write-ahead log.
func TestEventNamesKeptExactly(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, opts := openMem(t, c)
	w := newSite(t, e, "example.com")
	ctx := context.Background()
	if _, err := e.Unscoped().AddGoal(ctx, w.ID, engine.Goal{EventName: "Outbound Link: Click"}); err != nil {
		t.Fatal(err)
	}
	ev := func(when, name, unit string) engine.Hit {
		return pv(when, "https://example.com/a", func(h *engine.Hit) {
			h.Event = &engine.Event{Name: name, Value: []byte("5"), Unit: unit}
		})
	}
	track(t, e,
		pv("2026-11-21T10:00:00Z", "https://example.com/a"),
		ev("2026-11-21T10:01:00Z", "Outbound Link: Click", ""),
		ev("2026-11-21T10:02:00Z", "Outbound Link: Click", ""),
		ev("2026-11-21T10:03:00Z", "Form: Submission", "a:b"),
		ev("2026-11-21T10:04:00Z", " : ", ""),
	)
	day := "2026-11-21"
	wantStat := map[string]uint64{"Outbound Link  Click:5:": 2, "Form  Submission:5:a b": 1, ":5:": 1}
	byName := engine.Query{SiteID: "example.com", Metrics: []string{"events"}, Dimensions: []string{"event:name"},
		DateRange: engine.DateRange{FromDay: date(day), ToDay: date(day)}}
	wantNames := []string{"[Outbound Link: Click]→[2]", "[:]→[1]", "[Form: Submission]→[1]", "[pageview]→[1]"}
	goal := engine.Query{SiteID: "example.com", Metrics: []string{"visitors", "events"},
		DateRange: engine.DateRange{FromDay: date(day), ToDay: date(day)},
		Filters:   []engine.Filter{{Op: "is", Dimension: "event:goal", Clauses: []string{"Outbound Link: Click"}}}}
	name := goal
	name.Filters = []engine.Filter{{Op: "is", Dimension: "event:name", Clauses: []string{"Form: Submission"}}}
	check := func(t *testing.T, e *engine.Engine) {
		if diff := cmp.Diff(wantStat, rows(t, e, w.ID, "event", day, day)); diff != "" {
			t.Errorf("event statistic mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantNames, queryRows(t, e, w.ID, byName)); diff != "" {
			t.Errorf("event:name mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"[]→[1 2]"}, queryRows(t, e, w.ID, goal)); diff != "" {
			t.Errorf("goal filter mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"[]→[1 1]"}, queryRows(t, e, w.ID, name)); diff != "" {
			t.Errorf("event:name filter mismatch (-want +got):\n%s", diff)
		}
	}
	t.Run("live", func(t *testing.T) { check(t, e) })
	t.Run("replayed", func(t *testing.T) {
		if err := e.Backup(ctx, "crash"); err != nil { // the log, no snapshot
			t.Fatal(err)
		}
		o := *opts
		o.Dir = "crash"
		e2, err := engine.Open(&o)
		if err != nil {
			t.Fatal(err)
		}
		defer e2.Close()
		check(t, e2)
	})
}

// TestOldLogRecordsReplay checks that a log written before records kept an
// event's exact name (record version 2) still replays: its events count,
// under the name the phpAnalytics statistic has (':' a space, as they were
// stored then), in both the statistic and the segments.
func TestOldLogRecordsReplay(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, opts := openMem(t, c)
	w := newSite(t, e, "example.com")
	ctx := context.Background()
	name, unit := "Outbound Link: Click", "a:b"
	track(t, e,
		pv("2026-11-21T10:00:00Z", "https://example.com/a"),
		pv("2026-11-21T10:01:00Z", "https://example.com/a", func(h *engine.Hit) {
			h.Event = &engine.Event{Name: name, Value: []byte("5"), Unit: unit}
		}),
	)
	if err := e.Backup(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	// Rewrite the copy's log as version 2 wrote it: the same record
	// without the trailing exact name and unit.
	s, err := snapshot.Open(&snapshot.Options{Dir: "old", FS: opts.FS})
	if err != nil {
		t.Fatal(err)
	}
	suffix := func(name, unit string) []byte {
		b := binary.AppendUvarint(nil, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(len(unit)))
		return append(b, unit...)
	}
	var entries []snapshot.LogEntry
	err = s.ReplayLog(0, func(seq uint64, d []byte) error {
		tail := suffix("", "")
		if d[0] == 3 && bytes.HasSuffix(d, suffix(name, unit)) {
			tail = suffix(name, unit)
		}
		if d[0] != 3 || !bytes.HasSuffix(d, tail) {
			return fmt.Errorf("log entry %d is not a version 3 record ending in its name: %x", seq, d)
		}
		old := append([]byte{2}, d[1:len(d)-len(tail)]...)
		entries = append(entries, snapshot.LogEntry{Seq: seq, Data: old})
		return nil
	})
	if err == nil && len(entries) != 2 {
		err = fmt.Errorf("%d log entries, want 2", len(entries))
	}
	if err == nil {
		err = s.Append(entries...)
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	o := *opts
	o.Dir = "old"
	e2, err := engine.Open(&o)
	if err != nil {
		t.Fatalf("Open on a version 2 log: %v", err)
	}
	defer e2.Close()
	day := "2026-11-21"
	if diff := cmp.Diff(map[string]uint64{"Outbound Link  Click:5:a b": 1}, rows(t, e2, w.ID, "event", day, day)); diff != "" {
		t.Errorf("event statistic mismatch (-want +got):\n%s", diff)
	}
	q := engine.Query{SiteID: "example.com", Metrics: []string{"visitors", "events"}, Dimensions: []string{"event:name"},
		DateRange: engine.DateRange{FromDay: date(day), ToDay: date(day)}}
	want := []string{"[Outbound Link  Click]→[1 1]", "[pageview]→[1 1]"}
	if diff := cmp.Diff(want, queryRows(t, e2, w.ID, q)); diff != "" {
		t.Errorf("event:name after replaying version 2 records mismatch (-want +got):\n%s", diff)
	}
}

// TestHashModePage checks SPEC §2.4's hash-based routing: a hit with
// HashMode keeps the URL's fragment in its page, in the segments (a path
// without the query) and in the phpAnalytics page statistic (path, query
// and fragment); without it the fragment is dropped.
func TestHashModePage(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	hash := func(h *engine.Hit) { h.HashMode = true }
	track(t, e,
		pv("2026-11-21T10:00:00Z", "https://example.com/app/#/home", hash),
		pv("2026-11-21T10:01:00Z", "https://example.com/app/?x=1#/a", hash),
		pv("2026-11-21T10:02:00Z", "https://example.com/app/#/b?c=2", hash),
		pv("2026-11-21T10:03:00Z", "https://example.com/app/#/b?c=2", hash),
		pv("2026-11-21T10:04:00Z", "https://example.com/app/#/ignored"),
	)
	day := "2026-11-21"
	wantStat := map[string]uint64{"/app/#/home": 1, "/app/?x=1#/a": 1, "/app/#/b?c=2": 2, "/app/": 1}
	if diff := cmp.Diff(wantStat, rows(t, e, w.ID, "page", day, day)); diff != "" {
		t.Errorf("page statistic mismatch (-want +got):\n%s", diff)
	}
	q := engine.Query{SiteID: "example.com", Metrics: []string{"pageviews"}, Dimensions: []string{"event:page"},
		DateRange: engine.DateRange{FromDay: date(day), ToDay: date(day)}}
	want := []string{"[/app/#/b?c=2]→[2]", "[/app/]→[1]", "[/app/#/a]→[1]", "[/app/#/home]→[1]"}
	if diff := cmp.Diff(want, queryRows(t, e, w.ID, q)); diff != "" {
		t.Errorf("event:page mismatch (-want +got):\n%s", diff)
	}
}

// TestPlausibleLabels checks that the query model shows Plausible's names
// of browsers, operating systems and devices, and that a filter matches
// either spelling, while the phpAnalytics statistics keep webstats' names.
func TestPlausibleLabels(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	edgeLinux := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0"
	safariMac := "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"
	as := func(agent, addr string) func(*engine.Hit) {
		return func(h *engine.Hit) { h.UserAgent, h.IP = agent, ip(addr) }
	}
	track(t, e,
		pv("2026-11-21T10:00:00Z", "https://example.com/", as(edgeLinux, "8.8.8.1")),
		pv("2026-11-21T10:00:00Z", "https://example.com/", as(safariMac, "8.8.8.2")),
		pv("2026-11-21T10:00:00Z", "https://example.com/", as(safariIOS, "8.8.8.3")),
	)
	day := "2026-11-21"
	if diff := cmp.Diff(map[string]uint64{"Edge": 1, "Safari": 2}, rows(t, e, w.ID, "browser", day, day)); diff != "" {
		t.Errorf("phpAnalytics browser mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]uint64{"Linux": 1, "macOS": 1, "iOS": 1}, rows(t, e, w.ID, "os", day, day)); diff != "" {
		t.Errorf("phpAnalytics os mismatch (-want +got):\n%s", diff)
	}
	q := func(dim string, filters ...engine.Filter) engine.Query {
		return engine.Query{SiteID: "example.com", Metrics: []string{"visitors"}, Dimensions: []string{dim}, Filters: filters,
			DateRange: engine.DateRange{FromDay: date(day), ToDay: date(day)}}
	}
	is := func(op, dim string, clauses ...string) engine.Filter {
		return engine.Filter{Op: op, Dimension: dim, Clauses: clauses}
	}
	tests := []struct {
		name string
		q    engine.Query
		want []string
	}{
		{"browsers", q("visit:browser"), []string{"[Safari]→[2]", "[Microsoft Edge]→[1]"}},
		{"oses", q("visit:os"), []string{"[GNU/Linux]→[1]", "[Mac]→[1]", "[iOS]→[1]"}},
		{"devices", q("visit:device"), []string{"[Desktop]→[2]", "[Mobile]→[1]"}},
		{"filter Plausible's browser", q("visit:os", is("is", "visit:browser", "Microsoft Edge")), []string{"[GNU/Linux]→[1]"}},
		{"filter webstats' browser", q("visit:os", is("is", "visit:browser", "Edge")), []string{"[GNU/Linux]→[1]"}},
		{"filter Plausible's OS", q("visit:browser", is("is", "visit:os", "Mac")), []string{"[Safari]→[1]"}},
		{"filter webstats' OS", q("visit:browser", is("is", "visit:os", "macOS")), []string{"[Safari]→[1]"}},
		{"filter OS is_not either", q("visit:os", is("is_not", "visit:os", "GNU/Linux", "macOS")), []string{"[iOS]→[1]"}},
		{"filter OS contains", q("visit:os", is("contains", "visit:os", "Linux")), []string{"[GNU/Linux]→[1]"}},
		{"filter device either case", q("visit:device", is("is", "visit:device", "desktop")), []string{"[Desktop]→[2]"}},
		{"filter device Plausible's", q("visit:device", is("is", "visit:device", "Mobile")), []string{"[Mobile]→[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, queryRows(t, e, w.ID, tt.q)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

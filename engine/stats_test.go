package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine"
)

func TestStatisticsOfOneVisit(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	track(t, e,
		pv("2026-11-21T10:00:00Z", "https://example.com/a?utm_campaign=launch&x=1", func(h *engine.Hit) { h.Referrer = "https://www.google.com/search?q=x" }),
		pv("2026-11-21T10:05:00Z", "https://example.com/b", func(h *engine.Hit) { h.Referrer = "https://example.com/a" }),
		pv("2026-11-21T10:06:00Z", "https://www.example.com/b#frag"),
		engine.Hit{Time: at("2026-11-21T10:07:00Z"), URL: "https://example.com/b", IP: ip("8.8.8.8"), UserAgent: chromeWin, Language: "en", Live: true,
			Event: &engine.Event{Name: "Payment", Value: []byte("5"), Unit: "USD"}},
	)
	day := "2026-11-21"
	want := map[string]map[string]uint64{
		"pageviews":       {day: 3},
		"pageviews_hours": {"10": 3},
		"visitors":        {day: 1},
		"visitors_hours":  {"10": 1},
		"page":            {"/a?utm_campaign=launch&x=1": 1, "/b": 2},
		"landing_page":    {"/a?utm_campaign=launch&x=1": 1},
		"referrer":        {"www.google.com": 1},
		"campaign":        {"launch": 1},
		"browser":         {"Chrome": 1},
		"os":              {"Windows": 1},
		"device":          {"desktop": 1},
		"resolution":      {"1920x1080": 1},
		"language":        {"en": 1},
		"country":         {"US:United States": 1},
		"continent":       {"NA:North America": 1},
		"city":            {"": 1},
		"event":           {"Payment:5:USD": 1},
	}
	for _, name := range engine.StatNames() {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(want[name], rows(t, e, w.ID, name, day, day)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	tot, err := e.Unscoped().Totals(context.Background(), w.ID, date(day), date(day))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(engine.Totals{Visitors: 1, Pageviews: 3, Visits: 1, Events: 1}, tot); diff != "" {
		t.Errorf("Totals mismatch (-want +got):\n%s", diff)
	}
	if got := rows(t, e, w.ID, "pageviews_hour", day, day); got["10"] != 3 {
		t.Errorf("alias pageviews_hour = %v", got)
	}
}

func TestVisits(t *testing.T) {
	ref := func(r string) func(*engine.Hit) { return func(h *engine.Hit) { h.Referrer = r } }
	tests := []struct {
		name      string
		hits      []engine.Hit
		visits    uint64
		referrers map[string]uint64
		landings  map[string]uint64
	}{
		{
			name:      "29 minutes apart is one visit",
			hits:      []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a"), pv("2026-11-21T10:29:00Z", "https://example.com/b")},
			visits:    1,
			referrers: map[string]uint64{"": 1},
			landings:  map[string]uint64{"/a": 1},
		},
		{
			name:      "exactly 30 minutes apart is one visit",
			hits:      []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a"), pv("2026-11-21T10:30:00Z", "https://example.com/b")},
			visits:    1,
			referrers: map[string]uint64{"": 1},
			landings:  map[string]uint64{"/a": 1},
		},
		{
			name:      "31 minutes apart is two visits",
			hits:      []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a"), pv("2026-11-21T10:31:00Z", "https://example.com/b")},
			visits:    2,
			referrers: map[string]uint64{"": 2},
			landings:  map[string]uint64{"/a": 1, "/b": 1},
		},
		{
			name: "an external referrer starts a visit",
			hits: []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a"),
				pv("2026-11-21T10:05:00Z", "https://example.com/b", ref("https://news.ycombinator.com/item?id=1"))},
			visits:    2,
			referrers: map[string]uint64{"": 1, "news.ycombinator.com": 1},
			landings:  map[string]uint64{"/a": 1, "/b": 1},
		},
		{
			name: "the landing referrer resent on every navigation is one visit",
			hits: []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a", ref("https://www.google.com/")),
				pv("2026-11-21T10:05:00Z", "https://example.com/b", ref("https://www.google.com/")),
				pv("2026-11-21T10:06:00Z", "https://example.com/c", ref("https://google.com/?q=2"))},
			visits:    1,
			referrers: map[string]uint64{"www.google.com": 1},
			landings:  map[string]uint64{"/a": 1},
		},
		{
			name: "another external host starts another visit",
			hits: []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a", ref("https://www.google.com/")),
				pv("2026-11-21T10:05:00Z", "https://example.com/b", ref("https://t.co/x"))},
			visits:    2,
			referrers: map[string]uint64{"www.google.com": 1, "t.co": 1},
			landings:  map[string]uint64{"/a": 1, "/b": 1},
		},
		{
			name:      "a visit referred by the website itself is direct",
			hits:      []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a", ref("https://www.example.com/x"))},
			visits:    1,
			referrers: map[string]uint64{"": 1},
			landings:  map[string]uint64{"/a": 1},
		},
		{
			name: "an empty referrer alone does not start a visit",
			hits: []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a", ref("https://duckduckgo.com/")),
				pv("2026-11-21T10:10:00Z", "https://example.com/b")},
			visits:    1,
			referrers: map[string]uint64{"duckduckgo.com": 1},
			landings:  map[string]uint64{"/a": 1},
		},
		{
			name: "events never start a visit",
			hits: []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a", func(h *engine.Hit) { h.Event = &engine.Event{Name: "x"} }),
				pv("2026-11-21T10:01:00Z", "https://example.com/b")},
			visits:    1,
			referrers: map[string]uint64{"": 1},
			landings:  map[string]uint64{"/b": 1},
		},
		{
			name: "two visitors",
			hits: []engine.Hit{pv("2026-11-21T10:00:00Z", "https://example.com/a"),
				pv("2026-11-21T10:01:00Z", "https://example.com/a", func(h *engine.Hit) { h.IP = ip("1.1.1.1") })},
			visits:    2,
			referrers: map[string]uint64{"": 2},
			landings:  map[string]uint64{"/a": 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock("2026-11-21T12:00:00Z")
			e, _ := openMem(t, c)
			w := newSite(t, e, "example.com")
			track(t, e, tt.hits...)
			day := "2026-11-21"
			tot, _ := e.Unscoped().Totals(context.Background(), w.ID, date(day), date(day))
			if tot.Visits != tt.visits {
				t.Errorf("visits = %d, want %d", tot.Visits, tt.visits)
			}
			if diff := cmp.Diff(tt.referrers, rows(t, e, w.ID, "referrer", day, day)); diff != "" {
				t.Errorf("referrer mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.landings, rows(t, e, w.ID, "landing_page", day, day)); diff != "" {
				t.Errorf("landing_page mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTimeZone(t *testing.T) {
	c := newClock("2026-11-22T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.de", func(in *engine.WebsiteInput) { in.Timezone = str("Europe/Berlin") })
	track(t, e, pv("2026-11-21T23:30:00Z", "https://example.de/"))
	if diff := cmp.Diff(map[string]uint64{"2026-11-22": 1}, rows(t, e, w.ID, "pageviews", "2026-11-20", "2026-11-23")); diff != "" {
		t.Errorf("pageviews mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]uint64{"00": 1}, rows(t, e, w.ID, "pageviews_hours", "2026-11-20", "2026-11-23")); diff != "" {
		t.Errorf("hours mismatch (-want +got):\n%s", diff)
	}
	// Changing the time zone later does not move old data.
	if _, err := e.Unscoped().UpdateWebsite(context.Background(), w.ID, engine.WebsiteInput{Timezone: str("America/New_York")}); err != nil {
		t.Fatal(err)
	}
	track(t, e, pv("2026-11-21T23:40:00Z", "https://example.de/"))
	if diff := cmp.Diff(map[string]uint64{"2026-11-22": 1, "2026-11-21": 1}, rows(t, e, w.ID, "pageviews", "2026-11-20", "2026-11-23")); diff != "" {
		t.Errorf("pageviews after tz change mismatch (-want +got):\n%s", diff)
	}
}

func TestSaltRotation(t *testing.T) {
	for _, tt := range []struct {
		period   engine.SaltPeriod
		visitors uint64 // unique visitors over the two days
	}{
		{engine.SaltDay, 2},
		{engine.SaltWeek, 1},
		{engine.SaltMonth, 1},
	} {
		t.Run(tt.period.String(), func(t *testing.T) {
			c := newClock("2026-11-20T12:00:00Z")
			e, _ := openMem(t, c, func(o *engine.Options) { o.SaltPeriod = tt.period })
			w := newSite(t, e, "example.com")
			// Thursday and Friday of one week and month.
			track(t, e, pv("2026-11-19T10:00:00Z", "https://example.com/"), pv("2026-11-20T10:00:00Z", "https://example.com/"))
			tot, err := e.Unscoped().Totals(context.Background(), w.ID, date("2026-11-19"), date("2026-11-20"))
			if err != nil {
				t.Fatal(err)
			}
			if tot.Visitors != tt.visitors {
				t.Errorf("visitors = %d, want %d", tot.Visitors, tt.visitors)
			}
			if tot.Visits != 2 {
				t.Errorf("visits = %d, want 2 (a visit belongs to one day)", tot.Visits)
			}
			if got := rows(t, e, w.ID, "visitors", "2026-11-19", "2026-11-20"); got["2026-11-19"] != 1 || got["2026-11-20"] != 1 {
				t.Errorf("daily visitors = %v", got)
			}
		})
	}
}

func TestDrops(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com", func(in *engine.WebsiteInput) {
		in.ExcludeIPs = str("10.1.0.0/16\n2001:db8::/32\n192.0.2.7")
		in.ExcludeParams = str("fbclid\nsession")
	})
	open := newSite(t, e, "bots-welcome.com", func(in *engine.WebsiteInput) { in.ExcludeBots = str("0") })
	when := "2026-11-21T10:00:00Z"
	hits := []engine.Hit{
		pv(when, "https://unknown.org/"),
		pv(when, "https://example.com/", func(h *engine.Hit) { h.IP = ip("10.1.2.3") }),
		pv(when, "https://example.com/", func(h *engine.Hit) { h.IP = ip("2001:db8::1") }),
		pv(when, "https://example.com/", func(h *engine.Hit) { h.IP = ip("::ffff:192.0.2.7") }),
		pv(when, "https://example.com/", func(h *engine.Hit) { h.UserAgent = googlebot }),
		// A live hit without Accept-Language is no bot (SPEC §2.4).
		pv(when, "https://example.com/nolang", func(h *engine.Hit) { h.Language = "" }),
		pv(when, "https://example.com/", func(h *engine.Hit) { h.SecCHUA = `"HeadlessChrome";v="131"` }),
		pv(when, "https://example.com/", func(h *engine.Hit) { h.Prefetch = true }),
		pv(when, "https://example.com/p?fbclid=1&a=2&session=3"),
		pv(when, "https://bots-welcome.com/", func(h *engine.Hit) { h.UserAgent = googlebot }),
		// No Accept-Language on an import is not a bot.
		{Time: at(when), URL: "/imported", Website: w.ID, IP: ip("1.2.3.4"), UserAgent: chromeWin},
	}
	res := track(t, e, hits...)
	want := []engine.DropReason{engine.DropUnknownSite, engine.DropExcludedIP, engine.DropExcludedIP, engine.DropExcludedIP,
		engine.DropBot, engine.DropNone, engine.DropBot, engine.DropPrefetch, engine.DropNone, engine.DropNone, engine.DropNone}
	if diff := cmp.Diff(want, res.Reasons); diff != "" {
		t.Errorf("reasons mismatch (-want +got):\n%s", diff)
	}
	if res.Accepted != 4 || res.Dropped[engine.DropBot] != 2 {
		t.Errorf("result = %+v", res)
	}
	day := "2026-11-21"
	if diff := cmp.Diff(map[string]uint64{"/p?a=2": 1, "/imported": 1, "/nolang": 1}, rows(t, e, w.ID, "page", day, day)); diff != "" {
		t.Errorf("page mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]uint64{"/": 1}, rows(t, e, open.ID, "page", day, day)); diff != "" {
		t.Errorf("bots-welcome page mismatch (-want +got):\n%s", diff)
	}
	m := e.Metrics()
	if m.Dropped[engine.DropBot] != 2 || m.Dropped[engine.DropExcludedIP] != 3 || m.Dropped[engine.DropUnknownSite] != 1 || m.Dropped[engine.DropPrefetch] != 1 {
		t.Errorf("metrics dropped = %v", m.Dropped)
	}
}

func TestExcludeWholeQuery(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com", func(in *engine.WebsiteInput) { in.ExcludeParams = str("&") })
	track(t, e, pv("2026-11-21T10:00:00Z", "https://example.com/p?utm_campaign=spring&a=1"))
	day := "2026-11-21"
	if diff := cmp.Diff(map[string]uint64{"/p": 1}, rows(t, e, w.ID, "landing_page", day, day)); diff != "" {
		t.Errorf("landing mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]uint64{"spring": 1}, rows(t, e, w.ID, "campaign", day, day)); diff != "" {
		t.Errorf("campaign read before exclusion (-want +got):\n%s", diff)
	}
}

func TestEvents(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	ev := func(name, value, unit string) engine.Hit {
		h := pv("2026-11-21T10:00:00Z", "https://example.com/")
		h.Event = &engine.Event{Name: name, Unit: unit}
		if value != "" {
			h.Event.Value = []byte(value)
		}
		return h
	}
	res := track(t, e,
		ev("Payment", "5", "USD"),
		ev("Payment", `"5"`, "USD"),
		ev("Signup", "", ""),
		ev("a:b", "0", "x:y"),
		ev("Big", "12345678901", "EUR"),
		ev("Neg", "-1", ""),
		ev("Frac", "5.50", ""),
		ev("LongUnit", "1", "abcdefghijklmnopqrstuvwxyz0123456"),
		ev("", "1", ""),
	)
	if res.Accepted != 8 || res.Reasons[8] != engine.DropInvalid {
		t.Errorf("result = %+v", res)
	}
	day := "2026-11-21"
	want := map[string]uint64{"Payment:5:USD": 2, "Signup::": 1, "a b::x y": 1, "Big::EUR": 1, "Neg::": 1, "Frac:5.5:": 1, "LongUnit:1:": 1}
	if diff := cmp.Diff(want, rows(t, e, w.ID, "event", day, day)); diff != "" {
		t.Errorf("event mismatch (-want +got):\n%s", diff)
	}
	if got := rows(t, e, w.ID, "pageviews", day, day); len(got) != 0 {
		t.Errorf("events counted as pageviews: %v", got)
	}
	if got := rows(t, e, w.ID, "visitors", day, day); len(got) != 0 {
		t.Errorf("events counted visitors: %v", got)
	}
}

func TestSearchSortPaging(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	counts := map[string]int{"/b": 3, "/a": 3, "/C": 3, "/d": 1, "/e": 5, "/Ab": 2}
	var hits []engine.Hit
	for p, n := range counts {
		for range n {
			hits = append(hits, pv("2026-11-21T10:00:00Z", "https://example.com"+p))
		}
	}
	track(t, e, hits...)
	q := func(mod func(*engine.StatQuery)) engine.Page {
		sq := engine.StatQuery{Website: w.ID, Name: "page", From: date("2026-11-21"), To: date("2026-11-21")}
		mod(&sq)
		p, err := e.Unscoped().Stat(context.Background(), sq)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		mod  func(*engine.StatQuery)
		want engine.Page
	}{
		{"count desc by default, ties by value", func(q *engine.StatQuery) {},
			engine.Page{Rows: []engine.Row{{Value: "/e", Count: 5}, {Value: "/C", Count: 3}, {Value: "/a", Count: 3}, {Value: "/b", Count: 3}, {Value: "/Ab", Count: 2}, {Value: "/d", Count: 1}}, Total: 6, Page: 1, PerPage: 10, LastPage: 1}},
		{"count asc, ties by value", func(q *engine.StatQuery) { q.Asc = true },
			engine.Page{Rows: []engine.Row{{Value: "/d", Count: 1}, {Value: "/Ab", Count: 2}, {Value: "/C", Count: 3}, {Value: "/a", Count: 3}, {Value: "/b", Count: 3}, {Value: "/e", Count: 5}}, Total: 6, Page: 1, PerPage: 10, LastPage: 1}},
		{"value desc", func(q *engine.StatQuery) { q.SortBy = "value" },
			engine.Page{Rows: []engine.Row{{Value: "/e", Count: 5}, {Value: "/d", Count: 1}, {Value: "/b", Count: 3}, {Value: "/a", Count: 3}, {Value: "/C", Count: 3}, {Value: "/Ab", Count: 2}}, Total: 6, Page: 1, PerPage: 10, LastPage: 1}},
		{"search is case-insensitive", func(q *engine.StatQuery) { q.Search = "A" },
			engine.Page{Rows: []engine.Row{{Value: "/a", Count: 3}, {Value: "/Ab", Count: 2}}, Total: 2, Page: 1, PerPage: 10, LastPage: 1}},
		{"page 2 of 2", func(q *engine.StatQuery) { q.PerPage = 4; q.Page = 2 },
			engine.Page{Rows: []engine.Row{{Value: "/Ab", Count: 2}, {Value: "/d", Count: 1}}, Total: 6, Page: 2, PerPage: 4, LastPage: 2}},
		{"past the last page", func(q *engine.StatQuery) { q.PerPage = 4; q.Page = 9 },
			engine.Page{Rows: []engine.Row{}, Total: 6, Page: 9, PerPage: 4, LastPage: 2}},
		{"page below 1 is 1", func(q *engine.StatQuery) { q.PerPage = 1; q.Page = -3 },
			engine.Page{Rows: []engine.Row{{Value: "/e", Count: 5}}, Total: 6, Page: 1, PerPage: 1, LastPage: 6}},
		{"no rows", func(q *engine.StatQuery) { q.Search = "zzz" },
			engine.Page{Rows: []engine.Row{}, Total: 0, Page: 1, PerPage: 10, LastPage: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, q(tt.mod)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatValidation(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	for _, q := range []engine.StatQuery{
		{Website: w.ID, Name: "nope", From: date("2026-11-01"), To: date("2026-11-02")},
		{Website: w.ID, Name: "page", From: date("2026-11-03"), To: date("2026-11-02")},
		{Website: w.ID, Name: "page", From: date("1900-11-03"), To: date("2026-11-02")},
	} {
		var verr *engine.ValidationError
		if _, err := e.Unscoped().Stat(context.Background(), q); !errorsAs(err, &verr) {
			t.Errorf("Stat(%+v) = %v, want a ValidationError", q, err)
		}
	}
	if _, err := e.Unscoped().Stat(context.Background(), engine.StatQuery{Website: 999, Name: "page", From: 1, To: 2}); !errorsIs(err, engine.ErrNotFound) {
		t.Errorf("unknown website: %v", err)
	}
}

func TestRealtime(t *testing.T) {
	c := newClock("2026-11-21T12:00:30Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	track(t, e,
		pv("2026-11-21T11:20:00Z", "https://example.com/"), // outside the 30 minutes
		pv("2026-11-21T11:40:00Z", "https://example.com/", func(h *engine.Hit) { h.IP = ip("1.1.1.1") }),
		pv("2026-11-21T11:57:00Z", "https://example.com/"),
		pv("2026-11-21T11:58:10Z", "https://example.com/b"),
		pv("2026-11-21T12:00:05Z", "https://example.com/", func(h *engine.Hit) { h.IP = ip("9.9.9.9") }),
	)
	rt, err := e.Unscoped().Realtime(context.Background(), w.ID)
	if err != nil {
		t.Fatal(err)
	}
	var want [30]uint64
	want[29], want[27], want[26], want[9] = 1, 1, 1, 1
	if diff := cmp.Diff(want, rt.Pageviews); diff != "" {
		t.Errorf("pageviews per minute mismatch (-want +got):\n%s", diff)
	}
	if rt.Visitors != 2 {
		t.Errorf("visitors in the last 5 minutes = %d, want 2", rt.Visitors)
	}
	_ = time.Second
}

// An import with a visitor id and no user agent is counted even when the
// website excludes bots; a live request without one is a bot.
func TestImportWithoutUserAgent(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	res := track(t, e,
		engine.Hit{Time: at("2026-11-21T10:00:00Z"), URL: "/a", Website: w.ID, Visitor: "u1"},
		pv("2026-11-21T10:00:00Z", "https://example.com/b", func(h *engine.Hit) { h.UserAgent = "" }),
	)
	if diff := cmp.Diff([]engine.DropReason{engine.DropNone, engine.DropBot}, res.Reasons); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

package engine_test

// The worked examples of plausible-api.md §9, run against the brute-force
// reference (segref_test.go) and against the engine, each compared with the
// numbers the fact sheet gives. Until Owner.Query exists the engine half
// skips on its "not implemented yet" error, so that the reference half
// already proves the reference reproduces the fact sheet.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

const (
	segDomain     = "example.com"
	segChromeWin  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	segChromeMac  = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	segFirefoxWin = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"
	segFirefoxLin = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
)

// segNotYet reports the engine's placeholder error.
func segNotYet(err error) bool {
	return err != nil && strings.Contains(err.Error(), "not implemented yet")
}

// segTime parses "2021-01-01 00:25" (or with seconds) as UTC.
func segTime(s string) time.Time {
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	panic("segTime: " + s)
}

// segWho gives visitor name who a distinct address.
func segWho(who string) netip.Addr {
	var sum byte
	for _, c := range who {
		sum = sum*31 + byte(c)
	}
	return netip.AddrFrom4([4]byte{203, 0, 113, sum})
}

type segOpt func(*engine.Hit)

func segRef(r string) segOpt { return func(h *engine.Hit) { h.Referrer = r } }
func segUA(ua string) segOpt { return func(h *engine.Hit) { h.UserAgent = ua } }
func segProps(kv ...string) segOpt {
	return func(h *engine.Hit) {
		for i := 0; i+1 < len(kv); i += 2 {
			h.Props = append(h.Props, engine.Prop{Key: kv[i], Value: kv[i+1]})
		}
	}
}

// segPV is a pageview at when by visitor who of url (a path on the site's
// domain, or a full URL).
func segPV(when, who, url string, opts ...segOpt) engine.Hit {
	if strings.HasPrefix(url, "/") {
		url = "https://" + segDomain + url
	}
	h := engine.Hit{Time: segTime(when), URL: url, UserAgent: segChromeWin, IP: segWho(who), Domain: segDomain}
	for _, o := range opts {
		o(&h)
	}
	return h
}

// segEV is custom event name by who on path.
func segEV(when, who, name, path string, opts ...segOpt) engine.Hit {
	h := segPV(when, who, path, opts...)
	h.Event = &engine.Event{Name: name}
	return h
}

// segEngine is an engine holding one website with a segSite's hits.
type segEngine struct {
	e     *engine.Engine
	owner engine.Owner
	id    uint32
}

// openSegEngine builds the engine side of s; skip is non-empty when the
// engine cannot answer yet.
func openSegEngine(t testing.TB, s *segSite, now time.Time) (eng *segEngine, skip string) {
	t.Helper()
	ctx := context.Background()
	e, err := engine.Open(&engine.Options{FS: snapshot.NewMemFS(), Dir: "data", Now: func() time.Time { return now },
		SnapshotEvery: -1, SaltPeriod: s.Salt})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	acc, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	o := e.Owner(acc.ID)
	domain, tz, bots := s.Domain, s.Loc.String(), "0"
	if s.OldLoc != nil {
		tz = s.OldLoc.String()
	}
	if s.ExcludeBots {
		bots = "1"
	}
	w, err := o.CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain, Timezone: &tz, ExcludeBots: &bots})
	if err != nil {
		t.Fatalf("CreateWebsite: %v", err)
	}
	for _, g := range s.Goals {
		if _, err := o.AddGoal(ctx, w.ID, g); err != nil {
			if segNotYet(err) {
				return nil, "engine: AddGoal not implemented yet"
			}
			t.Fatalf("AddGoal(%+v): %v", g, err)
		}
	}
	changed := s.OldLoc == nil
	for i := 0; i < len(s.Hits); {
		n := min(i+512, len(s.Hits))
		if !changed {
			// The time zone changes (SPEC §2.3) once the hits before
			// ZoneChange are in.
			if k := i + sort.Search(n-i, func(k int) bool { return !s.Hits[i+k].Time.Before(s.ZoneChange) }); k == i {
				changed = true
				tz := s.Loc.String()
				if _, err := o.UpdateWebsite(ctx, w.ID, engine.WebsiteInput{Timezone: &tz}); err != nil {
					t.Fatalf("UpdateWebsite: %v", err)
				}
			} else {
				n = k
			}
		}
		if _, err := e.Track(ctx, s.Hits[i:n]...); err != nil {
			t.Fatalf("Track: %v", err)
		}
		half := len(s.Hits) / 2 / 512 * 512
		prev := i
		i = n
		if prev <= half && half < i {
			// Halfway, a snapshot closes the days so far: the queries then
			// read closed days (hits ordered by visit), days written again
			// since (copied on write) and open ones.
			if err := e.Snapshot(ctx); err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
		}
	}
	if !changed {
		tz := s.Loc.String()
		if _, err := o.UpdateWebsite(ctx, w.ID, engine.WebsiteInput{Timezone: &tz}); err != nil {
			t.Fatalf("UpdateWebsite: %v", err)
		}
	}
	return &segEngine{e: e, owner: o, id: w.ID}, ""
}

// segExample is one worked example: a fixture, a query and what the fact
// sheet expects.
type segExample struct {
	name  string
	tz    string // site time zone; "" UTC
	goals []engine.Goal
	hits  []engine.Hit
	now   string // the clock; "" means 2021-01-10 12:00
	query string // the request body, without site_id

	want       []engine.QueryRow // expected rows, in order
	wantLabels []string
	wantTotal  *int
	wantDims   []string // echoed dimensions
	wantRange  [2]string
	check      func(t *testing.T, res engine.QueryResult)
}

func segRow(dims []any, metrics ...any) engine.QueryRow {
	if dims == nil {
		dims = []any{}
	}
	return engine.QueryRow{Dimensions: dims, Metrics: metrics}
}

func d(vals ...any) []any { return vals }

func intp(n int) *int { return &n }

// Fixtures F1 and F2 of plausible-api.md §9.
var (
	segF1 = []engine.Hit{
		segPV("2021-01-01 00:00", "U1", "/", segRef("https://www.google.com/")),
		segPV("2021-01-01 00:00:01", "U2", "/"),
		segPV("2021-01-01 00:25", "U1", "/"),
	}
	segF2 = []engine.Hit{
		segPV("2021-01-01 00:00", "U1", "/"),
		segPV("2021-01-01 00:00:01", "U2", "/"),
		segPV("2021-01-01 00:00:02", "U3", "/blogpost"),
		segPV("2021-01-01 00:25", "U1", "/blogpost"),
	}
)

func segExamples() []segExample {
	signup := engine.Goal{EventName: "Signup", DisplayName: "Signup"}
	basic := `"metrics":["pageviews","visitors","bounce_rate","visit_duration"],"date_range":"all"`
	hourHits := []engine.Hit{
		segPV("2021-01-01 00:00", "U1", "/"), segPV("2021-01-01 00:10", "U1", "/a"), segPV("2021-01-01 23:59", "U2", "/"),
	}
	var ktm []engine.Hit
	for i, m := range []string{"05:00", "05:15", "05:30", "05:45", "06:00", "06:15", "06:30"} {
		ktm = append(ktm, segPV("2021-01-02 "+m, fmt.Sprint("K", i), "/"))
	}
	var eight []engine.Hit
	for i := 1; i <= 8; i++ {
		eight = append(eight, segPV(fmt.Sprintf("2021-01-01 00:0%d", i), fmt.Sprint("P", i), fmt.Sprint("/", i)))
	}
	var purchases []engine.Hit
	for i, p := range [][]string{{"cost", "16", "browser", "Chrome"}, {"cost", "16", "browser", "Chrome"}, {"cost", "16", "browser", "Firefox"},
		{"cost", "14"}, {"cost", "14", "browser", "Firefox"}, {}} {
		who := fmt.Sprint("B", i)
		purchases = append(purchases, segPV(fmt.Sprintf("2021-01-01 01:0%d", i), who, "/shop"),
			segEV(fmt.Sprintf("2021-01-01 01:0%d:30", i), who, "Purchase", "/shop", segProps(p...)))
	}
	return []segExample{
		{
			name: "01 all basic metrics (F1)", hits: segF1,
			query: `"metrics":["pageviews","visits","views_per_visit","visitors","bounce_rate","visit_duration"],"date_range":"all"`,
			want:  []engine.QueryRow{segRow(nil, int64(3), int64(2), 1.5, int64(2), int64(50), int64(750))},
		},
		{
			name: "02 views_per_visit rounding",
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/"), segPV("2021-01-01 00:01", "U1", "/a"),
				segPV("2021-01-01 00:00:01", "U2", "/"), segPV("2021-01-01 00:01:01", "U2", "/a"),
				segPV("2021-01-01 00:00:02", "U3", "/"),
			},
			query: `"metrics":["views_per_visit"],"date_range":"all"`,
			want:  []engine.QueryRow{segRow(nil, 1.67)},
		},
		{
			name: "03 visit filter selects whole sessions (F1)", hits: segF1,
			query: basic + `,"filters":[["is","visit:source",["Google"]]]`,
			want:  []engine.QueryRow{segRow(nil, int64(2), int64(1), int64(0), int64(1500))},
		},
		{
			name: "04 page filter rules (F2)", hits: segF2,
			query: basic + `,"filters":[["is","event:page",["/blogpost"]]]`,
			want:  []engine.QueryRow{segRow(nil, int64(2), int64(2), int64(100), int64(750))},
		},
		{
			name: "05 blank source label",
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/", segRef("https://www.google.com/")),
				segPV("2021-01-01 00:00:01", "U2", "/", segRef("https://www.google.com/")),
				segPV("2021-01-01 00:00:02", "U3", "/"),
			},
			query: `"metrics":["visitors"],"date_range":"all","dimensions":["visit:source"]`,
			want:  []engine.QueryRow{segRow(d("Google"), int64(2)), segRow(d("Direct / None"), int64(1))},
		},
		{
			name: "05b blank channel label",
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/", segRef("https://www.google.com/")),
				segPV("2021-01-01 00:00:01", "U2", "/", segRef("https://www.google.com/")),
				segPV("2021-01-01 00:00:02", "U3", "/"),
			},
			query: `"metrics":["visitors"],"date_range":"all","dimensions":["visit:channel"]`,
			want:  []engine.QueryRow{segRow(d("Organic Search"), int64(2)), segRow(d("Direct"), int64(1))},
		},
		{
			name: "06 percentage",
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/?utm_medium=A"), segPV("2021-01-01 00:00:01", "U2", "/?utm_medium=A"),
				segPV("2021-01-01 00:00:02", "U3", "/?utm_medium=A"), segPV("2021-01-01 00:00:03", "U4", "/?utm_medium=B"),
				segPV("2021-01-01 00:00:04", "U5", "/?utm_medium=B"), segPV("2021-01-01 00:00:05", "U6", "/"),
			},
			query: `"metrics":["visitors","percentage"],"date_range":"all","dimensions":["visit:utm_medium"]`,
			want: []engine.QueryRow{segRow(d("A"), int64(3), 50.0), segRow(d("B"), int64(2), 33.3),
				segRow(d("(not set)"), int64(1), 16.7)},
		},
		{
			name: "07 hourly with labels", hits: hourHits,
			query: `"metrics":["visitors","pageviews","visits","visit_duration","bounce_rate"],"date_range":["2021-01-01","2021-01-01"],"dimensions":["time:hour"],"include":{"time_labels":true}`,
			want: []engine.QueryRow{
				segRow(d("2021-01-01 00:00:00"), int64(1), int64(2), int64(1), int64(600), int64(0)),
				segRow(d("2021-01-01 23:00:00"), int64(1), int64(1), int64(1), int64(0), int64(100)),
			},
			wantLabels: func() []string {
				var l []string
				for h := range 24 {
					l = append(l, fmt.Sprintf("2021-01-01 %02d:00:00", h))
				}
				return l
			}(),
		},
		{
			name:       "08 time resolves to day",
			hits:       []engine.Hit{segPV("2021-01-01 10:00", "U1", "/"), segPV("2021-01-07 10:00", "U2", "/")},
			query:      `"metrics":["visitors"],"date_range":["2021-01-01","2021-01-07"],"dimensions":["time"],"include":{"time_labels":true}`,
			want:       []engine.QueryRow{segRow(d("2021-01-01"), int64(1)), segRow(d("2021-01-07"), int64(1))},
			wantLabels: []string{"2021-01-01", "2021-01-02", "2021-01-03", "2021-01-04", "2021-01-05", "2021-01-06", "2021-01-07"},
			wantDims:   []string{"time:day"},
		},
		{
			name: "09 week clamping",
			hits: []engine.Hit{segPV("2021-01-01 10:00", "U1", "/"), segPV("2021-01-03 10:00", "U2", "/"),
				segPV("2021-01-07 10:00", "U3", "/")},
			query:      `"metrics":["visitors"],"date_range":["2020-12-20","2021-01-07"],"dimensions":["time:week"],"include":{"time_labels":true}`,
			want:       []engine.QueryRow{segRow(d("2020-12-28"), int64(2)), segRow(d("2021-01-04"), int64(1))},
			wantLabels: []string{"2020-12-20", "2020-12-21", "2020-12-28", "2021-01-04"},
		},
		{
			name: "10 time zone bucketing", tz: "Asia/Kathmandu", hits: ktm,
			query: `"metrics":["visits"],"date_range":["2021-01-02","2021-01-02"],"dimensions":["time:hour"]`,
			want: []engine.QueryRow{segRow(d("2021-01-02 10:00:00"), int64(1)), segRow(d("2021-01-02 11:00:00"), int64(4)),
				segRow(d("2021-01-02 12:00:00"), int64(2))},
		},
		{
			name: "11 month buckets",
			hits: []engine.Hit{segPV("2020-12-01 10:00", "U1", "/"), segPV("2020-12-01 10:05", "U1", "/a"),
				segPV("2021-01-01 10:00", "U2", "/"), segPV("2021-01-02 10:00", "U3", "/")},
			query: `"metrics":["pageviews","visitors","bounce_rate","visit_duration"],"date_range":["2020-12-01","2021-01-02"],"dimensions":["time:month"]`,
			want: []engine.QueryRow{segRow(d("2020-12-01"), int64(2), int64(1), int64(0), int64(300)),
				segRow(d("2021-01-01"), int64(2), int64(2), int64(100), int64(0))},
		},
		{
			name: "12a event goal", goals: []engine.Goal{signup},
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/"), segEV("2021-01-01 00:01", "U1", "Signup", "/"),
				segEV("2021-01-01 00:02", "U1", "Signup", "/"),
				segPV("2021-01-01 00:00:01", "U2", "/"), segEV("2021-01-01 00:01:01", "U2", "Signup", "/"),
				segPV("2021-01-01 00:00:02", "U3", "/"), segEV("2021-01-01 00:01:02", "U3", "Unconfigured", "/"),
			},
			query: `"metrics":["visitors","events"],"date_range":"all","filters":[["is","event:goal",["Signup"]]]`,
			want:  []engine.QueryRow{segRow(nil, int64(2), int64(3))},
		},
		{
			name: "12b pageview goal with **", goals: []engine.Goal{{PagePath: "/blog**", DisplayName: "Visit /blog**"}},
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/blog/post-1"), segPV("2021-01-01 00:00:01", "U2", "/blog/post-2"),
				segPV("2021-01-01 00:01", "U2", "/blog"), segPV("2021-01-01 00:00:02", "U3", "/"),
			},
			query: `"metrics":["visitors","pageviews"],"date_range":"all","filters":[["is","event:goal",["Visit /blog**"]]]`,
			want:  []engine.QueryRow{segRow(nil, int64(2), int64(3))},
		},
		{
			name: "13a conversion rate", goals: []engine.Goal{signup}, hits: segFourOneSignup(),
			query: `"metrics":["visitors","conversion_rate"],"date_range":"all","filters":[["is","event:goal",["Signup"]]]`,
			want:  []engine.QueryRow{segRow(nil, int64(1), 25.0)},
		},
		{
			name: "13b conversion rate by goal", goals: []engine.Goal{signup}, hits: segFourOneSignup(),
			query: `"metrics":["visitors","conversion_rate"],"date_range":"all","dimensions":["event:goal"]`,
			want:  []engine.QueryRow{segRow(d("Signup"), int64(1), 25.0)},
		},
		{
			name: "14 goal contains with goal dimension",
			goals: []engine.Goal{
				{EventName: "onboarding_1", DisplayName: "Onboarding conversion: Step 1"},
				{EventName: "onboarding_2", DisplayName: "Onboarding conversion: Step 2"},
				{PagePath: "/conversion", DisplayName: "Visit /conversion"}, signup,
			},
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/"), segEV("2021-01-01 00:01", "U1", "onboarding_1", "/"),
				segEV("2021-01-01 00:02", "U1", "onboarding_2", "/"), segEV("2021-01-01 00:03", "U1", "Signup", "/"),
				segPV("2021-01-01 00:00:01", "U2", "/"), segEV("2021-01-01 00:01:01", "U2", "onboarding_1", "/"),
				segPV("2021-01-01 00:00:02", "U3", "/conversion"),
			},
			query: `"metrics":["visitors"],"date_range":"all","dimensions":["event:goal"],"filters":[["contains","event:goal",["conversion"]]]`,
			want: []engine.QueryRow{segRow(d("Onboarding conversion: Step 1"), int64(2)),
				segRow(d("Onboarding conversion: Step 2"), int64(1)), segRow(d("Visit /conversion"), int64(1))},
		},
		{
			name: "15a props with (none)", hits: purchases,
			query: `"metrics":["visitors"],"date_range":"all","dimensions":["event:props:cost"],"filters":[["is","event:name",["Purchase"]]]`,
			want:  []engine.QueryRow{segRow(d("16"), int64(3)), segRow(d("14"), int64(2)), segRow(d("(none)"), int64(1))},
		},
		{
			name: "15b is (none) includes keyless events", hits: purchases,
			query: `"metrics":["visitors","events"],"date_range":"all","filters":[["is","event:name",["Purchase"]],["is","event:props:browser",["Chrome","(none)"]]]`,
			want:  []engine.QueryRow{segRow(nil, int64(4), int64(4))},
		},
		{
			name: "16 session metrics with a page dimension",
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/"), segPV("2021-01-01 00:10", "U1", "/plausible.io"),
				segPV("2021-01-01 00:00:01", "U2", "/"), segPV("2021-01-01 00:00:02", "U3", "/plausible.io"),
			},
			query: `"metrics":["visitors","visits","pageviews","events","bounce_rate","visit_duration"],"date_range":"all","dimensions":["event:page"]`,
			want: []engine.QueryRow{
				segRow(d("/"), int64(2), int64(2), int64(2), int64(2), int64(50), int64(300)),
				segRow(d("/plausible.io"), int64(2), int64(2), int64(2), int64(2), int64(100), int64(0)),
			},
		},
		{
			name: "17a pagination", hits: eight,
			query:     `"metrics":["visitors"],"date_range":"all","dimensions":["event:page"],"order_by":[["event:page","asc"]],"include":{"total_rows":true},"pagination":{"limit":3,"offset":3}`,
			want:      []engine.QueryRow{segRow(d("/4"), int64(1)), segRow(d("/5"), int64(1)), segRow(d("/6"), int64(1))},
			wantTotal: intp(8),
		},
		{
			name: "17b pagination past the end", hits: eight,
			query:     `"metrics":["visitors"],"date_range":"all","dimensions":["event:page"],"order_by":[["event:page","asc"]],"include":{"total_rows":true},"pagination":{"limit":3,"offset":9}`,
			want:      []engine.QueryRow{},
			wantTotal: intp(8),
		},
		{
			// Plausible's labels (Mac, GNU/Linux; engine/internal/ua's
			// plausible.go), so the fact sheet's order exactly.
			name: "18 multi-key order_by",
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/", segUA(segFirefoxWin)),
				segPV("2021-01-01 00:00:01", "U2", "/", segUA(segChromeMac)),
				segPV("2021-01-01 00:00:02", "U3", "/", segUA(segChromeWin)),
				segPV("2021-01-01 00:00:03", "U4", "/", segUA(segFirefoxLin)),
				segPV("2021-01-01 00:00:04", "U5", "/", segUA(segFirefoxLin)),
			},
			query: `"metrics":["visitors"],"date_range":"all","dimensions":["visit:os","visit:browser"],"order_by":[["visitors","asc"],["visit:browser","desc"],["visit:os","asc"]]`,
			want: []engine.QueryRow{segRow(d("Windows", "Firefox"), int64(1)), segRow(d("Mac", "Chrome"), int64(1)),
				segRow(d("Windows", "Chrome"), int64(1)), segRow(d("GNU/Linux", "Firefox"), int64(2))},
		},
		{
			name: "19 behavioural filter", goals: []engine.Goal{signup},
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "/pricing"), segEV("2021-01-01 00:01", "U1", "Signup", "/"),
				segPV("2021-01-01 00:00:01", "U2", "/"), segEV("2021-01-01 00:01:01", "U2", "Signup", "/"),
				segPV("2021-01-01 00:00:02", "U3", "/pricing"),
			},
			query: `"metrics":["visitors","events"],"date_range":"all","filters":[["is","event:goal",["Signup"]],["has_done",["is","event:page",["/pricing"]]]]`,
			want:  []engine.QueryRow{segRow(nil, int64(1), int64(1))},
		},
		{
			name: "20 hostname isolation",
			hits: []engine.Hit{
				segPV("2021-01-01 00:00", "U1", "https://two.example.com/?utm_campaign=ad"),
				segPV("2021-01-01 00:05", "U1", "https://one.example.com/"),
			},
			query: `"metrics":["visitors"],"date_range":"all","dimensions":["visit:utm_campaign"],"filters":[["is","event:hostname",["one.example.com"]]]`,
			want:  []engine.QueryRow{},
		},
		{
			name: "21 echo of 7d", now: "2026-07-24 10:00",
			hits:      []engine.Hit{segPV("2026-07-20 10:00", "U1", "/"), segPV("2026-07-24 09:00", "U2", "/")},
			query:     `"metrics":["visitors"],"date_range":"7d"`,
			want:      []engine.QueryRow{segRow(nil, int64(1))},
			wantRange: [2]string{"2026-07-17T00:00:00+00:00", "2026-07-23T23:59:59+00:00"},
		},
		{
			name: "22 include imports", hits: segF1,
			query: `"metrics":["visitors"],"date_range":"all","include":{"imports":true}`,
			want:  []engine.QueryRow{segRow(nil, int64(2))},
			check: func(t *testing.T, res engine.QueryResult) {
				if res.Meta.ImportsIncluded == nil || *res.Meta.ImportsIncluded || res.Meta.ImportsSkipReason != "no_imported_data" {
					t.Errorf("meta = %+v, want imports_included false, imports_skip_reason no_imported_data", res.Meta)
				}
			},
		},
	}
}

// segFourOneSignup: four visitors, one of whom fires Signup.
func segFourOneSignup() []engine.Hit {
	return []engine.Hit{
		segPV("2021-01-01 00:00", "U1", "/"), segEV("2021-01-01 00:01", "U1", "Signup", "/"),
		segPV("2021-01-01 00:00:01", "U2", "/"), segPV("2021-01-01 00:00:02", "U3", "/"), segPV("2021-01-01 00:00:03", "U4", "/"),
	}
}

func (x *segExample) site(t testing.TB) (*segSite, time.Time) {
	tz := x.tz
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Skipf("time zone %s: %v", tz, err)
	}
	now := segTime("2021-01-10 12:00")
	if x.now != "" {
		now = segTime(x.now)
	}
	return &segSite{Domain: segDomain, Loc: loc, Goals: x.goals, Hits: x.hits, ExcludeBots: true}, now
}

// checkExample compares an answer with the fact sheet's expectations.
func (x *segExample) checkExample(t *testing.T, r *engine.ResolvedQuery, res engine.QueryResult) {
	t.Helper()
	if reason := rowsAgree(r, x.want, res.Results, x.want); reason != "" {
		t.Errorf("results: %s\nmismatch (-want +got):\n%s", reason, cmp.Diff(x.want, res.Results, refCmpOpts...))
	}
	if x.wantLabels != nil {
		if diff := cmp.Diff(x.wantLabels, res.Meta.TimeLabels); diff != "" {
			t.Errorf("time_labels mismatch (-want +got):\n%s", diff)
		}
	}
	if x.wantTotal != nil {
		if diff := cmp.Diff(x.wantTotal, res.Meta.TotalRows); diff != "" {
			t.Errorf("total_rows mismatch (-want +got):\n%s", diff)
		}
	}
	if x.wantDims != nil {
		if diff := cmp.Diff(x.wantDims, res.Query.Dimensions); diff != "" {
			t.Errorf("echoed dimensions mismatch (-want +got):\n%s", diff)
		}
	}
	if x.wantRange != [2]string{} && res.Query.DateRange != x.wantRange {
		t.Errorf("echoed date_range = %v, want %v", res.Query.DateRange, x.wantRange)
	}
	if x.check != nil {
		x.check(t, res)
	}
}

func TestSegExamples(t *testing.T) {
	for _, x := range segExamples() {
		t.Run(x.name, func(t *testing.T) {
			site, now := x.site(t)
			q, err := engine.ParseQuery([]byte(`{"site_id":"` + segDomain + `",` + x.query + `}`))
			if err != nil {
				t.Fatalf("ParseQuery: %v", err)
			}
			r, err := q.Resolve(site.querySite(now))
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			t.Run("reference", func(t *testing.T) {
				res, _ := site.build().query(r)
				x.checkExample(t, &r, res)
				// The echo is valid input and gives the same answer.
				body, err := json.Marshal(res.Query)
				if err != nil {
					t.Fatal(err)
				}
				q2, err := engine.ParseQuery(body)
				if err != nil {
					t.Fatalf("ParseQuery(echo %s): %v", body, err)
				}
				r2, err := q2.Resolve(site.querySite(now))
				if err != nil {
					t.Fatalf("Resolve(echo %s): %v", body, err)
				}
				res2, _ := site.build().query(r2)
				if diff := cmp.Diff(res, res2, refCmpOpts...); diff != "" {
					t.Errorf("echo round trip mismatch (-first +echo):\n%s", diff)
				}
			})
			t.Run("engine", func(t *testing.T) {
				eng, skip := openSegEngine(t, site, now)
				if skip != "" {
					t.Skip(skip)
				}
				res, err := eng.owner.Query(context.Background(), eng.id, q)
				if segNotYet(err) {
					t.Skip("engine: Query not implemented yet")
				}
				if err != nil {
					t.Fatalf("Query: %v", err)
				}
				x.checkExample(t, &r, res)
				ref, all := site.build().query(r)
				if diff := diffResult(&r, ref, res, all); diff != "" {
					t.Errorf("engine disagrees with the reference:\n%s", diff)
				}
			})
		})
	}
}

// TestSegExampleErrors: the error cases of plausible-api.md §9.19 and §9.22
// that concern the query call (the HTTP-only ones, 401s, are httpd's).
func TestSegExampleErrors(t *testing.T) {
	base := func(metrics ...string) engine.Query {
		return engine.Query{SiteID: segDomain, Metrics: metrics, DateRange: engine.DateRange{Period: "all"}}
	}
	tests := []struct {
		name string
		q    engine.Query
		want string // the message, or a part of it
	}{
		{name: "invalid metric", q: base("visitors", "baa"), want: `#/metrics/1: Invalid metric "baa"`},
		{name: "session metric with event dimension", q: func() engine.Query {
			q := base("bounce_rate")
			q.Dimensions = []string{"event:name"}
			return q
		}(), want: "Session metric(s) `bounce_rate` cannot be queried along with event dimension(s) `event:name`"},
		{name: "conversion_rate without a goal", q: base("conversion_rate"),
			want: "Metric `conversion_rate` can only be queried with event:goal filters or dimensions."},
		{name: "goal not configured", q: func() engine.Query {
			q := base("visitors")
			q.Filters = []engine.Filter{{Op: "is", Dimension: "event:goal", Clauses: []string{"Register"}}}
			return q
		}(), want: "The goal `Register` is not configured"},
		{name: "views_per_visit with a page filter", q: func() engine.Query {
			q := base("views_per_visit")
			q.Filters = []engine.Filter{{Op: "is", Dimension: "event:page", Clauses: []string{"/"}}}
			return q
		}(), want: "Metric `views_per_visit` cannot be queried with a filter on `event:page`."},
		{name: "country not two letters", q: func() engine.Query {
			q := base("visitors")
			q.Filters = []engine.Filter{{Op: "is", Dimension: "visit:country", Clauses: []string{"USA"}}}
			return q
		}(), want: "Invalid visit:country filter, visit:country needs to be a valid 2-letter country code."},
		{name: "time_labels without a time dimension", q: func() engine.Query {
			q := base("visitors")
			q.Include.TimeLabels = true
			return q
		}(), want: "Invalid include.time_labels: requires a time dimension."},
		{name: "duplicate metrics", q: base("visitors", "visitors"),
			want: "#/metrics: Expected items to be unique but they were not."},
		{name: "behavioural filter on a visit dimension", q: func() engine.Query {
			q := base("visitors")
			q.Filters = []engine.Filter{{Op: "has_done", Children: []engine.Filter{{Op: "is", Dimension: "visit:country", Clauses: []string{"EE"}}}}}
			return q
		}(), want: "can only be used with event dimension filters."},
	}
	site := &segSite{Domain: segDomain, Loc: time.UTC, Goals: []engine.Goal{{EventName: "Signup", DisplayName: "Signup"}}, Hits: segF1}
	now := segTime("2021-01-10 12:00")
	eng, skip := openSegEngine(t, site, now)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Run("reference", func(t *testing.T) {
				_, err := tt.q.Resolve(site.querySite(now))
				var qe *engine.QueryError
				if !errors.As(err, &qe) || !strings.Contains(qe.Msg, tt.want) {
					t.Fatalf("Resolve error = %v, want a QueryError containing %q", err, tt.want)
				}
			})
			t.Run("engine", func(t *testing.T) {
				if skip != "" {
					t.Skip(skip)
				}
				_, err := eng.owner.Query(context.Background(), eng.id, tt.q)
				if segNotYet(err) {
					t.Skip("engine: Query not implemented yet")
				}
				var qe *engine.QueryError
				if !errors.As(err, &qe) || !strings.Contains(qe.Msg, tt.want) {
					t.Fatalf("Query error = %v, want a QueryError containing %q", err, tt.want)
				}
			})
		})
	}
}

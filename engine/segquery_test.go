package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
)

// segFixture is an engine with one website and a helper to track
// pageviews of distinct visitors (by IP) at given times.
type segFixture struct {
	t    *testing.T
	e    *engine.Engine
	me   engine.Owner
	site uint32
}

func newSegFixture(t *testing.T, now time.Time) *segFixture {
	t.Helper()
	e, err := engine.Open(&engine.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	acc, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	me := e.Owner(acc.ID)
	domain := "example.com"
	w, err := me.CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
	if err != nil {
		t.Fatal(err)
	}
	return &segFixture{t: t, e: e, me: me, site: w.ID}
}

const smokeUA = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"

func (f *segFixture) pageview(visitor int, at string, url, ref string) {
	f.t.Helper()
	ts, err := time.Parse("2006-01-02 15:04", at)
	if err != nil {
		f.t.Fatal(err)
	}
	ip := netip.AddrFrom4([4]byte{8, 8, byte(visitor >> 8), byte(visitor)})
	if _, err := f.e.Track(context.Background(), engine.Hit{Website: f.site, Time: ts, URL: "https://example.com" + url, Referrer: ref, UserAgent: smokeUA, IP: ip, Language: "en"}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *segFixture) query(body string) string {
	f.t.Helper()
	q, err := engine.ParseQuery([]byte(body))
	if err != nil {
		f.t.Fatal(err)
	}
	res, err := f.me.Query(context.Background(), f.site, q)
	if err != nil {
		f.t.Fatal(err)
	}
	b, _ := json.Marshal(res.Results)
	return string(b)
}

func TestQuerySmoke(t *testing.T) {
	now := time.Date(2021, 1, 2, 0, 0, 0, 0, time.UTC)
	// F2: U1 / then /blogpost 25 min later; U2 /; U3 /blogpost.
	f := newSegFixture(t, now)
	f.pageview(1, "2021-01-01 00:00", "/", "https://www.google.com/")
	f.pageview(2, "2021-01-01 00:00", "/", "")
	f.pageview(3, "2021-01-01 00:00", "/blogpost", "")
	f.pageview(1, "2021-01-01 00:25", "/blogpost", "")
	for _, tt := range []struct{ q, want string }{
		{`{"site_id":"example.com","metrics":["pageviews","visits","views_per_visit","visitors","bounce_rate","visit_duration"],"date_range":"all"}`,
			`[{"dimensions":[],"metrics":[4,3,1.33,3,67,500]}]`},
		{`{"site_id":"example.com","metrics":["pageviews","visitors","bounce_rate","visit_duration"],"date_range":"all","filters":[["is","event:page",["/blogpost"]]]}`,
			`[{"dimensions":[],"metrics":[2,2,100,750]}]`},
		{`{"site_id":"example.com","metrics":["visitors","visits","pageviews","events","bounce_rate","visit_duration"],"date_range":"all","dimensions":["event:page"]}`,
			`[{"dimensions":["/"],"metrics":[2,2,2,2,50,750]},{"dimensions":["/blogpost"],"metrics":[2,2,2,2,100,0]}]`},
		{`{"site_id":"example.com","metrics":["visitors"],"date_range":"all","dimensions":["visit:source"]}`,
			`[{"dimensions":["Direct / None"],"metrics":[2]},{"dimensions":["Google"],"metrics":[1]}]`},
		{`{"site_id":"example.com","metrics":["visitors","pageviews"],"date_range":"all","filters":[["is","visit:source",["Google"]]]}`,
			`[{"dimensions":[],"metrics":[1,2]}]`},
		{`{"site_id":"example.com","metrics":["visitors"],"date_range":["2021-01-01","2021-01-01"],"dimensions":["time:hour"]}`,
			`[{"dimensions":["2021-01-01 00:00:00"],"metrics":[3]}]`},
	} {
		if got := f.query(tt.q); got != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.q, got, tt.want)
		}
	}
}

// TestQueryResultJSON: whole floats keep their decimal point (Plausible
// writes 50.0) and <, >, & are not escaped (by an encoder that does not
// escape HTML itself: json.Marshal escapes a Marshaler's output again).
func TestQueryResultJSON(t *testing.T) {
	r := engine.QueryResult{Results: []engine.QueryRow{{Dimensions: []any{"<a&b>"}, Metrics: []any{int64(3), 50.0, 33.33, nil}}}}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	b := buf.String()
	want := `{"results":[{"dimensions":["<a&b>"],"metrics":[3,50.0,33.33,null]}],"meta":{},"query":`
	if !strings.HasPrefix(string(b), want) {
		t.Errorf("got  %s\nwant %s...", b, want)
	}
}

// TestQueryRegexBound: a query's regular expressions are bounded, each in
// length (MaxRegexpLength) and all together in compiled program size
// (MaxRegexpProgram): 50 patterns of 13 bytes such as [a-z]{0,1000} kept
// ~100 MB of programs before. Ordinary patterns still answer, and
// wildcard pageview goals (matched once per page and day) still count.
func TestQueryRegexBound(t *testing.T) {
	now := time.Date(2021, 1, 2, 0, 0, 0, 0, time.UTC)
	f := newSegFixture(t, now)
	f.pageview(1, "2021-01-01 00:00", "/blog/one", "")
	f.pageview(1, "2021-01-01 00:05", "/blog/two", "")
	f.pageview(2, "2021-01-01 00:00", "/about", "")
	f.pageview(2, "2021-01-01 00:01", "/blog/one", "")
	// A day before, whose dictionary gives /about the id /blog/one has
	// on 2021-01-01: the goal's page memo is per day.
	f.pageview(3, "2020-12-31 10:00", "/about", "")
	if _, err := f.me.AddGoal(context.Background(), f.site, engine.Goal{PagePath: "/blog/*"}); err != nil {
		t.Fatal(err)
	}
	filter := func(patterns ...string) string {
		b, _ := json.Marshal(patterns)
		return `{"site_id":"example.com","metrics":["visitors","pageviews"],"date_range":"all","filters":[["matches","event:page",` + string(b) + `]]}`
	}
	many := make([]string, 50)
	for i := range many {
		many[i] = "[a-z]{0,1000}" + strings.Repeat("x", i) // distinct, 2,000 instructions each
	}
	for _, tt := range []struct {
		name, q   string
		want      string // the result, or
		wantLimit string // the bound the query exceeds
	}{
		{name: "ordinary", q: filter(`^/blog/`, `^/ab(o|u)ut$`), want: `[{"dimensions":[],"metrics":[3,5]}]`},
		{name: "one large repetition fits", q: filter(`^/[a-z]{0,1000}$`), want: `[{"dimensions":[],"metrics":[2,2]}]`},
		{name: "programs too large together", q: filter(many...), wantLimit: "MaxRegexpProgram"},
		{name: "one program too large", q: filter(strings.Repeat(`[a-z]{0,1000}`, 60)), wantLimit: "MaxRegexpProgram"},
		{name: "a repeated group", q: filter("(" + strings.Repeat("abcd", 50) + "){0,1000}"), wantLimit: "MaxRegexpProgram"},
		{name: "too long", q: filter("^/" + strings.Repeat("a", engine.MaxRegexpLength)), wantLimit: "MaxRegexpLength"},
		{name: "invalid", q: filter(`(`), wantLimit: ""},
		{name: "goal", q: `{"site_id":"example.com","metrics":["visitors","events","conversion_rate"],"date_range":"all","dimensions":["event:goal"]}`,
			want: `[{"dimensions":["Visit /blog/*"],"metrics":[2,3,66.67]}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, err := engine.ParseQuery([]byte(tt.q))
			if err != nil {
				t.Fatal(err)
			}
			res, err := f.me.Query(context.Background(), f.site, q)
			if tt.want != "" {
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(res.Results)
				if string(b) != tt.want {
					t.Errorf("got %s, want %s", b, tt.want)
				}
				return
			}
			var qe *engine.QueryError
			if !errors.As(err, &qe) {
				t.Fatalf("got %v, want a *QueryError", err)
			}
			if qe.Limit != tt.wantLimit {
				t.Errorf("limit %q, want %q (%s)", qe.Limit, tt.wantLimit, qe.Msg)
			}
			if !strings.HasPrefix(qe.Msg, "Invalid filter '") {
				t.Errorf("message %q does not say which filter", qe.Msg)
			}
		})
	}
}

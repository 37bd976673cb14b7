package engine_test

import (
	"context"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestQueryVisitorsAfterSaltChange checks that a query counts a visitor
// once per salt period when the days of one period are scanned apart: a
// week of weekly salts read by an engine now on daily ones. The scan
// counts a day's visitors without a bitmap only when no other day holds
// its period (soloDays): here every day shares the week's.
func TestQueryVisitorsAfterSaltChange(t *testing.T) {
	c := newClock("2024-01-08T10:00:00Z") // a Monday
	e, o := openMem(t, c, func(o *engine.Options) { o.SaltPeriod = engine.SaltWeek })
	ctx := context.Background()
	a, _, err := e.CreateAccount(ctx, "Owner", "owner@example.org")
	if err != nil {
		t.Fatal(err)
	}
	domain, tz := "example.com", "UTC"
	w, err := e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain, Timezone: &tz})
	if err != nil {
		t.Fatal(err)
	}
	const ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
	track := func(when, visitor, page string) {
		t.Helper()
		c.Set(when)
		if _, err := e.Track(ctx, engine.Hit{URL: "https://example.com" + page, UserAgent: ua, Visitor: visitor, Website: w.ID}); err != nil {
			t.Fatal(err)
		}
	}
	for _, day := range []string{"08", "09", "10"} {
		track("2024-01-"+day+"T10:00:00Z", "one", "/a")
		track("2024-01-"+day+"T10:01:00Z", "one", "/b")
	}
	track("2024-01-09T12:00:00Z", "two", "/a")
	c.Set("2024-01-20T10:00:00Z") // the week is closed
	if err := e.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	o.SaltPeriod = engine.SaltDay
	if e, err = engine.Open(o); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s := &sut{e: e, account: a.ID}
	for _, q := range []struct{ body, want string }{
		{`"dimensions":["event:page"],"filters":[["is_not","visit:country",["ZZ"]]]`, `[{"dimensions":["/a"],"metrics":[2,4]},{"dimensions":["/b"],"metrics":[1,3]}]`},
		{`"dimensions":["event:page"]`, `[{"dimensions":["/a"],"metrics":[2,4]},{"dimensions":["/b"],"metrics":[1,3]}]`},
		{`"filters":[["is_not","visit:country",["ZZ"]]]`, `[{"dimensions":[],"metrics":[2,4]}]`},
	} {
		body := `{"site_id":"example.com","date_range":["2024-01-08","2024-01-10"],"metrics":["visitors","visits"],` + q.body + `}`
		if got := s.queryJSON(t, w.ID, body); got != q.want {
			t.Errorf("%s:\n got %s\nwant %s", body, got, q.want)
		}
	}
}

package engine_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/webstats/webstats/engine"
)

// An in-memory engine: register a website, track two pageviews and read the
// top pages. Website and statistics calls go through the account's Owner
// handle, which sees only that account's websites.
func Example() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, err := engine.Open(&engine.Options{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	acc, _, _ := engine.NewTestAccount()
	me := e.Owner(acc.ID)
	domain := "example.com"
	site, err := me.CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
	if err != nil {
		panic(err)
	}
	ua := "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	_, err = e.Track(ctx,
		engine.Hit{URL: "https://example.com/", UserAgent: ua, IP: netip.MustParseAddr("8.8.8.8"), Language: "en"},
		engine.Hit{URL: "https://example.com/about", UserAgent: ua, IP: netip.MustParseAddr("8.8.8.8"), Language: "en"},
	)
	if err != nil {
		panic(err)
	}
	today := engine.DateFromTime(now)
	page, _ := me.Stat(ctx, engine.StatQuery{Website: site.ID, Name: "page", From: today, To: today})
	for _, r := range page.Rows {
		fmt.Println(r.Value, r.Count)
	}
	tot, _ := me.Totals(ctx, site.ID, today, today)
	fmt.Printf("%d visitor, %d pageviews, %d visit\n", tot.Visitors, tot.Pageviews, tot.Visits)
	// Output:
	// / 1
	// /about 1
	// 1 visitor, 2 pageviews, 1 visit
}

// Which sources bring visitors who reach /pricing, and how many of them
// sign up? Owner.Query answers Plausible's v2 query model exactly.
func ExampleOwner_Query() {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, err := engine.Open(&engine.Options{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	acc, _, _ := engine.NewTestAccount()
	me := e.Owner(acc.ID)
	domain := "example.com"
	site, _ := me.CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
	if _, err := me.AddGoal(ctx, site.ID, engine.Goal{EventName: "Signup"}); err != nil {
		panic(err)
	}

	ua := "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	visit := func(ip, ref string, pages ...string) {
		for i, p := range pages {
			h := engine.Hit{Time: now.Add(time.Duration(i-10) * time.Minute), URL: "https://example.com" + p, UserAgent: ua, IP: netip.MustParseAddr(ip)}
			if i == 0 {
				h.Referrer = ref
			}
			if p == "signup" {
				h.URL, h.Event = "https://example.com/pricing", &engine.Event{Name: "Signup"}
			}
			if _, err := e.Track(ctx, h); err != nil {
				panic(err)
			}
		}
	}
	visit("203.0.113.1", "https://www.google.com/", "/", "/pricing", "signup")
	visit("203.0.113.2", "https://www.google.com/", "/blog")
	visit("203.0.113.3", "https://news.ycombinator.com/", "/pricing")
	visit("203.0.113.4", "", "/pricing", "signup")

	q, err := engine.ParseQuery([]byte(`{
		"site_id": "example.com", "date_range": "day",
		"metrics": ["visitors", "conversion_rate"],
		"dimensions": ["visit:source"],
		"filters": [["has_done", ["is", "event:page", ["/pricing"]]], ["is", "event:goal", ["Signup"]]]
	}`))
	if err != nil {
		panic(err)
	}
	res, err := me.Query(ctx, site.ID, q)
	if err != nil {
		panic(err)
	}
	for _, r := range res.Results {
		fmt.Println(r.Dimensions, r.Metrics)
	}
	// Output:
	// [Direct / None] [1 33.33]
	// [Google] [1 33.33]
}

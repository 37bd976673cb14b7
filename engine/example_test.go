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

	acc, _, _ := e.CreateAccount(ctx, "Me", "me@example.org")
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

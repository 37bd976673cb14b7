// Command segments asks the engine a filtered question: "bounce rate and
// visit duration of German mobile visitors, by source", the kind of
// question site owners compare analytics products on (SPEC §10). It tracks
// a small made-up day of traffic in an in-memory engine, then asks it
// with Owner.Query, in Plausible's v2 query model.
//
//	go run ./examples/segments
package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"

	"github.com/webstats/webstats/engine"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

const (
	desktop = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	mobile  = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
)

// visit is one made-up visit: where from, on what, which pages.
type visit struct {
	ip, ua, referrer string
	pages            []string
}

func run(ctx context.Context, out io.Writer) error {
	now := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)
	e, err := engine.Open(&engine.Options{Now: func() time.Time { return now }})
	if err != nil {
		return err
	}
	defer e.Close()
	acc := struct{ ID uint32 }{1} // the owner's account id (the engine knows no more of accounts)
	me := e.Owner(acc.ID)
	domain := "example.com"
	site, err := me.CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
	if err != nil {
		return err
	}
	// 46.4.0.1 is in Germany, 8.8.8.8 in the United States (the embedded
	// IP2Location LITE data).
	visits := []visit{
		{"46.4.0.1", mobile, "https://www.google.com/", []string{"/", "/pricing"}},
		{"46.4.0.2", mobile, "https://www.google.com/", []string{"/blog"}},
		{"46.4.0.3", mobile, "https://news.ycombinator.com/", []string{"/"}},
		{"46.4.0.4", desktop, "https://www.google.com/", []string{"/", "/docs", "/pricing"}},
		{"8.8.8.8", mobile, "https://www.google.com/", []string{"/"}},
		{"46.4.0.5", mobile, "", []string{"/docs", "/docs/api", "/pricing"}},
	}
	for i, v := range visits {
		for j, page := range v.pages {
			h := engine.Hit{
				Time:      now.Add(-time.Hour + time.Duration(i)*time.Minute + time.Duration(j)*90*time.Second),
				URL:       "https://example.com" + page,
				UserAgent: v.ua,
				IP:        netip.MustParseAddr(v.ip),
				Language:  "de",
			}
			if j == 0 {
				h.Referrer = v.referrer
			}
			if _, err := e.Track(ctx, h); err != nil {
				return err
			}
		}
	}

	q, err := engine.ParseQuery([]byte(`{
		"site_id": "example.com",
		"date_range": "day",
		"metrics": ["visitors", "bounce_rate", "visit_duration"],
		"dimensions": ["visit:source"],
		"filters": [["is", "visit:country", ["DE"]], ["is", "visit:device", ["Mobile"]]]
	}`))
	if err != nil {
		return err
	}
	res, err := me.Query(ctx, site.ID, q)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "German mobile visitors today, by source:")
	fmt.Fprintf(out, "%-15s %8s %7s %9s\n", "source", "visitors", "bounce", "duration")
	for _, r := range res.Results {
		fmt.Fprintf(out, "%-15s %8d %6d%% %8ds\n", r.Dimensions[0], r.Metrics[0], r.Metrics[1], r.Metrics[2])
	}
	return nil
}

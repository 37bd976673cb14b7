package engine_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/plausiblezip/plgen"
)

// BenchmarkImportedQuery: v2 queries with include.imports over a year of
// Plausible's export of a 10k-visitors-a-day site (300,486 daily rows):
// the totals, a daily series and a page breakdown, each over the year.
func BenchmarkImportedQuery(b *testing.B) {
	c := newClock("2025-01-10T12:00:00Z")
	e, _ := openMem(b, c)
	w := newSite(b, e, "example.com")
	zip, _ := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 1, 1), Days: 366, DailyVisitors: 10_000, Pages: 300, Cities: 300, Seed: 5})
	x, err := plausiblezip.Read(bytes.NewReader(zip), int64(len(zip)))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Owner(w.Account).ImportPlausible(context.Background(), w.ID, x, "export.zip"); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, body string }{
		{"totals", `"metrics":["visitors","visits","pageviews","bounce_rate","visit_duration"]`},
		{"days", `"metrics":["visitors","pageviews"],"dimensions":["time:day"]`},
		{"pages", `"metrics":["visitors","pageviews"],"dimensions":["event:page"]`},
	} {
		q, err := engine.ParseQuery([]byte(`{"site_id":"example.com",` + c.body + `,"date_range":["2024-01-01","2024-12-31"],"include":{"imports":true}}`))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Owner(w.Account).Query(context.Background(), w.ID, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

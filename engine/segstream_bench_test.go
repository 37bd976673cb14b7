package engine

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkStreamedDay: one totals query (visitors, visits, pageviews) of
// a today flooded with N new visitors of one pageview each, under an 8 MiB
// budget (the hostile test's TestHostileVisitorFlood at the engine level):
// the day is sealed in parts of sealBytes and read in chunks of about
// wholeLimit. Its cost should grow with N, not N² (WEBSTATS_STREAM_VISITORS
// sets the Ns, comma-separated):
//
//	go test ./engine -run '^$' -bench StreamedDay -benchtime 3x -count 3
//	WEBSTATS_STREAM_VISITORS=800000,1600000 go test ./engine -run '^$' -bench StreamedDay -benchtime 3x
func BenchmarkStreamedDay(b *testing.B) {
	ns := []int{50_000, 100_000, 200_000, 400_000}
	if env := os.Getenv("WEBSTATS_STREAM_VISITORS"); env != "" {
		ns = ns[:0]
		for _, f := range strings.Split(env, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("WEBSTATS_STREAM_VISITORS: %v", err)
			}
			ns = append(ns, n)
		}
	}
	for _, n := range ns {
		b.Run(fmt.Sprint("visitors=", n), func(b *testing.B) {
			now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
			// On disk, as a server's: an in-memory store on the Go heap
			// makes every collection of the query's garbage mark it too.
			e, err := Open(&Options{Dir: b.TempDir(), MemoryBudget: 8 << 20, QueryCache: -1, NoSync: true, SnapshotEvery: -1, Now: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ctx := context.Background()
			acc, _, err := NewTestAccount()
			if err != nil {
				b.Fatal(err)
			}
			domain := "hard.example"
			w, err := e.Owner(acc.ID).CreateWebsite(ctx, WebsiteInput{Domain: &domain})
			if err != nil {
				b.Fatal(err)
			}
			site := w.ID
			const batch = 10_000
			hits := make([]Hit, 0, batch)
			for i := range n {
				hits = append(hits, hardHit(site, now.Add(-20*time.Minute), fmt.Sprint("v", i), "https://hard.example/p"))
				if len(hits) == batch || i == n-1 {
					if _, err := e.Track(ctx, hits...); err != nil {
						b.Fatal(err)
					}
					hits = hits[:0]
					if err := e.Snapshot(ctx); err != nil {
						b.Fatal(err)
					}
				}
			}
			q, err := ParseQuery([]byte(`{"site_id":"hard.example","metrics":["visitors","visits","pageviews"],"date_range":["2026-11-21","2026-11-21"]}`))
			if err != nil {
				b.Fatal(err)
			}
			want := fmt.Sprintf("[%d %d %d]", n, n, n)
			streamed := e.streamed.Load()
			b.ResetTimer()
			for range b.N {
				res, err := e.Unscoped().Query(ctx, site, q)
				if err != nil {
					b.Fatal(err)
				}
				if got := fmt.Sprint(res.Results[0].Metrics); got != want {
					b.Fatalf("metrics %s, want %s", got, want)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(sealedParts(e, site)), "parts")
			b.ReportMetric(float64(e.streamed.Load()-streamed)/float64(b.N), "chunks/op")
		})
	}
}

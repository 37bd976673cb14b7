package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestConcurrentTrackAndQuery tracks from many goroutines while others query,
// snapshot and change settings; run it with -race. The final counts must
// add up.
func TestConcurrentTrackAndQuery(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	var sites []engine.Website
	for i := range 4 {
		sites = append(sites, newSite(t, e, fmt.Sprintf("s%d.example", i)))
	}
	writers, perWriter := 8, 300
	if testing.Short() {
		perWriter = 60
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				s := sites[(w+i)%len(sites)]
				h := pv("2026-11-21T10:00:00Z", fmt.Sprintf("https://%s/p%d", s.Domain, i%17), func(h *engine.Hit) {
					h.IP = ip(fmt.Sprintf("10.0.%d.%d", w, i%50))
				})
				if _, err := e.Track(ctx, h); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for r := range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := sites[r%len(sites)]
				if _, err := e.Unscoped().Stat(ctx, engine.StatQuery{Website: s.ID, Name: "page", From: date("2026-11-20"), To: date("2026-11-21")}); err != nil {
					t.Error(err)
				}
				if _, err := e.Unscoped().Totals(ctx, s.ID, date("2026-11-21"), date("2026-11-21")); err != nil {
					t.Error(err)
				}
				if _, err := e.Unscoped().Realtime(ctx, s.ID); err != nil {
					t.Error(err)
				}
				if r == 0 {
					if err := e.Snapshot(ctx); err != nil {
						t.Error(err)
					}
					if _, err := e.Unscoped().UpdateWebsite(ctx, s.ID, engine.WebsiteInput{ExcludeParams: str("x")}); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	var total uint64
	for _, s := range sites {
		tot, err := e.Unscoped().Totals(ctx, s.ID, date("2026-11-21"), date("2026-11-21"))
		if err != nil {
			t.Fatal(err)
		}
		total += tot.Pageviews
		var sum uint64
		for _, n := range rows(t, e, s.ID, "page", "2026-11-21", "2026-11-21") {
			sum += n
		}
		if sum != tot.Pageviews {
			t.Errorf("%s: Σpage = %d, pageviews = %d", s.Domain, sum, tot.Pageviews)
		}
	}
	if total != uint64(writers*perWriter) {
		t.Errorf("pageviews = %d, want %d", total, writers*perWriter)
	}
}

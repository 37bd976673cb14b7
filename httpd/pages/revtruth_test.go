package pages

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
)

// TestOverviewEqualsQueryLongVisits is TestOverviewEqualsQuery's check of
// the cards and totals over visits of several pageviews. trackVaried's
// visitors come back every two hours, so every visit there is one hit:
// its entry page is its exit page, every visit bounces and lasts 0 s, and
// a card showing entry pages in the exit tab, or any bounce or duration,
// matches the Stats API by accident.
func TestOverviewEqualsQueryLongVisits(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pages := []string{"/", "/about", "/pricing", "/docs/a"}
	var hs []engine.Hit
	for v := range 12 {
		ip := netip.AddrFrom4([4]byte{8, 8, 4, byte(v + 1)})
		for k := range 1 + v%3 { // 1 to 3 pageviews a visit, the longer ones ending on /checkout
			page := pages[v%len(pages)]
			if k > 0 {
				page = "/checkout"
			}
			hs = append(hs, engine.Hit{
				URL:       "https://public.example" + page,
				UserAgent: chromeUA, Language: "en-US", IP: ip,
				Time: day("2026-11-19 09:00").Add(time.Duration(v)*5*time.Minute + time.Duration(k)*70*time.Second),
			})
		}
	}
	if res, err := f.e.Track(ctx, hs...); err != nil || res.Accepted != len(hs) {
		t.Fatalf("Track: %v, %+v", err, res)
	}
	c := f.client()
	get := func(path string) string {
		t.Helper()
		res := c.get(path)
		if res.status != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, res.status)
		}
		return res.body
	}
	body := get("/stats/public.example")
	checkTotals(t, f, mainText(body), nil, false)
	for _, tt := range truthTabs {
		if tt.card != "page" && tt.card != "landing_page" {
			continue
		}
		q := url.Values{}
		if tt.tab != "" {
			q.Set(tt.card, tt.tab)
		}
		sec := section(get("/stats/public.example?"+q.Encode()), tt.card)
		want := tt.wantRows(f.api(engine.Query{Metrics: []string{tt.metric}, Dimensions: tt.dims, Pagination: engine.Pagination{Limit: 10}}, nil, tt.only))
		if got := shownRows(sec); !slices.Equal(got, want) {
			t.Errorf("%s/%s: shown\n%q\nStats API\n%q", tt.card, tt.tab, got, want)
		}
	}
}

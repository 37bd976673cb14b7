package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestQueryOneTruth checks SPEC §10.2's "one truth" on random data: an
// unfiltered aggregate the day buckets answer (Owner.Query routes it to
// them) equals the same question answered by the segments store (forced
// by a filter every hit passes); its pageviews and events equal Totals'.
// Visitors and visits follow two rules (§2.2 for Totals, pageviews only;
// §10.1 for Query, custom events too): Query counts every visitor Totals
// does, and more when some have only events.
func TestQueryOneTruth(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 8
	}
	for seed := range uint64(seeds) {
		st := detStream(seed + 100)
		st.period = engine.SaltDay
		s, err := openSUT(engine.Options{SaltPeriod: engine.SaltDay, Now: newClock(st.now.Format("2006-01-02T15:04:05Z07:00")).Now})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]uint32, len(st.zones))
		for i, tz := range st.zones {
			if ids[i], err = s.createSite(domainOf(i), tz); err != nil {
				t.Fatal(err)
			}
		}
		hits := slices.Clone(st.hits)
		for i := range hits {
			hits[i].Website = ids[hits[i].Website-1]
		}
		if _, err := s.track(hits); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		ranges := append([][2]civil{{st.from, st.to}}, st.ranges...)
		for i, id := range ids {
			for _, rg := range ranges {
				metrics := []string{"visitors", "visits", "pageviews", "events"}
				rng.Shuffle(len(metrics), func(a, b int) { metrics[a], metrics[b] = metrics[b], metrics[a] })
				metrics = metrics[:1+rng.IntN(4)]
				m, _ := json.Marshal(metrics)
				base := fmt.Sprintf(`{"site_id":%q,"date_range":[%q,%q],"metrics":%s`, domainOf(i), rg[0].String(), rg[1].String(), m)
				fromBuckets := s.queryJSON(t, id, base+`}`)
				fromSegments := s.queryJSON(t, id, base+`,"filters":[["is_not","event:page",["/never/a/page"]]]}`)
				if fromBuckets != fromSegments {
					t.Errorf("seed %d %s %v..%v %v: buckets %s, segments %s", seed, domainOf(i), rg[0], rg[1], metrics, fromBuckets, fromSegments)
				}
				tot, err := s.totals(id, rg[0], rg[1])
				if err != nil {
					t.Fatal(err)
				}
				var got []map[string][]uint64
				if err := json.Unmarshal([]byte(fromSegments), &got); err != nil || len(got) != 1 {
					t.Fatalf("%s: %v", fromSegments, err)
				}
				for j, name := range metrics {
					v := got[0]["metrics"][j]
					switch name {
					case "pageviews", "events":
						if w := map[string]uint64{"pageviews": tot.Pageviews, "events": tot.Pageviews + tot.Events}[name]; v != w {
							t.Errorf("seed %d %s %v..%v %s: Totals %d, segments %d", seed, domainOf(i), rg[0], rg[1], name, w, v)
						}
					case "visitors":
						if v < tot.Visitors {
							t.Errorf("seed %d %s %v..%v visitors: Totals %d, segments only %d", seed, domainOf(i), rg[0], rg[1], tot.Visitors, v)
						}
					}
				}
			}
		}
		s.close()
	}
}

// queryJSON runs a Query and returns its results as JSON.
func (s *sut) queryJSON(t *testing.T, site uint32, body string) string {
	t.Helper()
	q, err := engine.ParseQuery([]byte(body))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	res, err := s.e.Owner(s.account).Query(context.Background(), site, q)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	b, _ := json.Marshal(res.Results)
	return string(b)
}

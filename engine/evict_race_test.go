package engine_test

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
)

var knownFailures = flag.Bool("known.failures", false, "run the tests of defects not fixed yet")

// TestStatWhileEvicting: a query must see every day of its range while a
// background snapshot evicts. Found by bench's TestImportDeterminism
// (-determinism.full, MemoryBudget run): the pageviews statistic of a year
// once summed to 999,906 instead of 1,000,000. loadRange reads from the
// store only the days that are not resident; a day resident then, and
// evicted by a snapshot before scan takes the shard lock again, is in
// neither the loaded days nor the resident ones, and the query skips it.
func TestStatWhileEvicting(t *testing.T) {
	if !*knownFailures {
		t.Skip("fails until scan keeps the days of its range resident (or reloads what was evicted meanwhile); run with -known.failures")
	}
	c := newClock("2026-07-01T12:00:00Z")
	e, _ := openMem(t, c, func(o *engine.Options) {
		o.MemoryBudget = 1
		o.SnapshotEvery = time.Millisecond
	})
	w := newSite(t, e, "example.com")
	const days, perDay = 180, 20
	first := at("2026-01-01T00:00:00Z")
	var hits []engine.Hit
	for d := range days {
		for i := range perDay {
			hits = append(hits, engine.Hit{Website: w.ID, Time: first.AddDate(0, 0, d).Add(time.Duration(i) * time.Hour),
				URL: "/", Visitor: fmt.Sprint("v", i), UserAgent: chromeWin, Language: "en-US"})
		}
	}
	track(t, e, hits...)
	from, to := date("2026-01-01"), date("2026-01-01")+days-1
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		p, err := e.Unscoped().Stat(ctx, engine.StatQuery{Website: w.ID, Name: "pageviews", From: from, To: to, PerPage: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		var sum uint64
		for _, r := range p.Rows {
			sum += r.Count
		}
		if len(p.Rows) != days || sum != days*perDay {
			t.Fatalf("query %d: %d rows summing to %d, want %d rows summing to %d (evicted so far: %d)",
				n, len(p.Rows), sum, days, days*perDay, e.Metrics().Evicted)
		}
	}
}

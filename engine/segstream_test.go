package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/internal/segments"
)

// TestStreamedDays (SPEC §13 "a query over any range streams its days
// within the budget", issue #38 row 8): a query over days whose sealed
// rows are more than one query may make whole under the memory budget
// (wholeLimit) answers, and answers what an engine that never seals
// answers, for open and closed days, daily and weekly salts (visits
// across midnight), across restarts. The days are read in chunks of
// their visitors (segments.Chunks); before, the query was refused.
func TestStreamedDays(t *testing.T) {
	for _, salt := range []SaltPeriod{SaltDay, SaltWeek} {
		for _, seed := range []uint64{1, 2} {
			t.Run(fmt.Sprintf("salt=%v/seed=%d", salt, seed), func(t *testing.T) {
				testStreamedDays(t, salt, seed)
			})
		}
	}
}

func testStreamedDays(t *testing.T, salt SaltPeriod, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	now := time.Date(2026, 11, 20, 0, 5, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	fs := vfs.NewMem()
	o := Options{SaltPeriod: salt, MemoryBudget: 1 << 10, Now: clock}
	streaming, site := hardEngine(t, fs, o)
	plain, site2 := hardEngine(t, vfs.NewMem(), Options{SaltPeriod: salt, Now: clock})
	defer func() { plain.Close() }()
	if site != site2 {
		t.Fatalf("websites %d and %d", site, site2)
	}
	limit := func() { streaming.wholeLimit = 2 * int64(streaming.sealBytes) }
	limit()
	ctx := context.Background()
	for step := range 45 {
		hits := sealHits(rng, site, now, 12, 90)
		for _, e := range []*Engine{streaming, plain} {
			if _, err := e.Track(ctx, hits...); err != nil {
				t.Fatal(err)
			}
			if err := e.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if step%9 == 8 {
			if err := streaming.Close(); err != nil {
				t.Fatal(err)
			}
			oo := o
			oo.FS, oo.Dir, oo.SnapshotEvery = fs, "data", -1
			var err error
			if streaming, err = Open(&oo); err != nil {
				t.Fatal(err)
			}
			limit()
		}
		for _, r := range [][2]string{{"2026-11-19", "2026-11-22"}, {now.Format(time.DateOnly), now.Format(time.DateOnly)}} {
			want := sealAnswers(t, plain, site, r[0], r[1])
			got, err := sealAnswersErr(streaming, site, r[0], r[1])
			if err != nil {
				t.Fatalf("step %d, %v: %v", step, r, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("step %d, %v: streamed answers differ (-never sealed +streamed):\n%s", step, r, diff)
			}
		}
		now = now.Add(time.Duration(20+rng.IntN(60)) * time.Minute)
	}
	if n := streaming.streamed.Load(); n == 0 {
		t.Error("no day was read in chunks: the test did not stream")
	}
	streaming.Close()
}

// TestChunksOfADay: the chunks of a day with sealed parts hold each visit
// once, with all its hits, and its visitors in one chunk only.
func TestChunksOfADay(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{MemoryBudget: 1 << 10, Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	const visitors, perVisitor = 23, 4
	for i := range perVisitor {
		for v := range visitors {
			at := now.Add(-time.Duration(i*50+v) * time.Minute / 10)
			if _, err := e.Track(ctx, hardHit(site, at, fmt.Sprint("v", v), fmt.Sprintf("https://hard.example/p%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := sealedParts(e, site); n < 3 {
		t.Fatalf("%d sealed parts: the test did not seal", n)
	}
	e.regMu.RLock()
	s := e.sites[site]
	e.regMu.RUnlock()
	for _, n := range []int{1, 2, 5, 40} {
		visits, hits := 0, 0
		seen := map[[2]int64]int{} // period, visitor → chunk
		var d *segments.Day
		sh := e.shardOf(site)
		sh.mu.Lock()
		d = s.state.days[DateOf(2026, 11, 21)].seg.Clone()
		sh.mu.Unlock()
		var parts [][]byte
		if err := e.store.DaysWithParts(site, int32(DateOf(2026, 11, 21)), int32(DateOf(2026, 11, 21)), nil, func(_ int32, _ []byte, p [][]byte) error {
			parts = p
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		split, err := d.Split(context.Background(), parts, e.parts, n)
		if err != nil {
			t.Fatal(err)
		}
		for k := range n {
			c, err := split.Chunk(k)
			if err != nil {
				t.Fatal(err)
			}
			visits += c.Visits()
			hits += c.Hits()
			for v := range c.Visits() {
				key := [2]int64{int64(c.VPeriod[v]), int64(c.VVisitor[v])}
				if prev, ok := seen[key]; ok && prev != k {
					t.Errorf("n=%d: visitor %v in chunks %d and %d", n, key, prev, k)
				}
				seen[key] = k
				if lo, hi := c.VisitHits(uint32(v)); hi-lo != int(c.VPageviews[v]) {
					t.Errorf("n=%d chunk %d: visit %d has %d hits, %d pageviews", n, k, v, hi-lo, c.VPageviews[v])
				}
			}
		}
		if visits != visitors || hits != visitors*perVisitor || len(seen) != visitors {
			t.Errorf("n=%d: %d visits, %d hits, %d visitors in the chunks; want %d, %d, %d", n, visits, hits, len(seen), visitors, visitors*perVisitor, visitors)
		}
	}
}

// TestStreamedDayReadsPartsOnce: a query of a day read in chunks decodes
// each of the day's sealed parts once, not once a chunk (a part cache
// large enough for every part sees no second decode of one): the chunks
// used to read every part each, which made a query of a day of 2 million
// visits under an 8 MiB budget quadratic, over 10 minutes
// (BenchmarkStreamedDay).
func TestStreamedDayReadsPartsOnce(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{MemoryBudget: 1 << 10, QueryCache: -1, Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	for i := range 6 {
		var hits []Hit
		for v := range 40 {
			hits = append(hits, hardHit(site, now.Add(-time.Duration(v)*time.Second), fmt.Sprint("v", i*40+v), "https://hard.example/p"))
		}
		if _, err := e.Track(ctx, hits...); err != nil {
			t.Fatal(err)
		}
		if err := e.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	parts := sealedParts(e, site)
	if parts < 4 {
		t.Fatalf("%d sealed parts: the test did not seal", parts)
	}
	e.wholeLimit = 8 << 10 // the day's rows are some 40 KiB
	e.parts = segments.NewPartCache(1 << 30)
	q, err := ParseQuery([]byte(`{"site_id":"hard.example","metrics":["visitors","visits","pageviews"],"date_range":["2026-11-21","2026-11-21"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Unscoped().Query(ctx, site, q)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(res.Results[0].Metrics), "[240 240 240]"; got != want {
		t.Errorf("visitors, visits, pageviews = %s, want %s", got, want)
	}
	chunks := e.streamed.Load()
	if chunks < 3 {
		t.Fatalf("%d chunks: the test did not stream", chunks)
	}
	if hits := e.parts.Hits(); hits != 0 {
		t.Errorf("%d sealed parts read in %d chunks: %d decodes were of a part already decoded, want 0 (each part read once)", parts, chunks, hits)
	}
}

package engine_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/engine"
)

// Determinism is the second oracle (issue #17, SPEC §2.2): the numbers are a
// function of the hits and the websites' settings only. The same stream of
// imported hits goes into engines configured differently (batch sizes,
// snapshots every few hundred hits or never, a tiny MemoryBudget with queries
// that load and evict days, restarts and power losses at random points, a
// clock in slow motion or racing ahead) and every statistic over every range
// queried must come out identical. No model is involved: configurations are
// compared with each other.

var detSeeds = flag.Int("determinism.seeds", 50, "TestDeterminism: number of seeds")

func TestDeterminism(t *testing.T) {
	for seed := range seedCount(*detSeeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			st := detStream(seed)
			var base detAnswers
			for i, c := range detConfigs(seed) {
				got, err := runDeterminism(st, c)
				if err != nil {
					t.Fatalf("%s: %v (stream: %v)", c.name, err, st)
				}
				if i == 0 {
					base = got
					continue
				}
				if diff := base.diff(got); diff != "" {
					t.Errorf("%s differs from %s (stream: %v):\n%s", c.name, detConfigs(seed)[0].name, st, diff)
				}
			}
		})
	}
}

// TestDeterminismImportSnapshotTiming is issue #17's reproduction scaled
// down: ~20k pageviews over 60 past days from 1,500 explicit visitors,
// imported in time order in requests of 500 into two engines, one taking
// snapshots between every request (and in the background while they run),
// one never. Every statistic must be equal.
func TestDeterminismImportSnapshotTiming(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	now := at("2026-11-20T12:00:00Z")
	start := now.Add(-60 * 24 * time.Hour)
	st := &detStreamT{period: engine.SaltDay, now: now, zones: []string{"UTC"}, from: civilOf(start) - 1, to: civilOf(now) + 1}
	const n = 20000
	for i := range n {
		t := start.Add(time.Duration(i) * (60 * 24 * time.Hour) / n).Add(time.Duration(rng.IntN(60)) * time.Second)
		st.hits = append(st.hits, engine.Hit{
			Website: 1, Time: t.Truncate(time.Second), URL: fmt.Sprintf("/p%d", int(rng.ExpFloat64()*20)),
			Visitor:   fmt.Sprintf("visitor-%d", int(rng.ExpFloat64()*300)%1500),
			UserAgent: metaUAs[rng.IntN(len(metaUAs))], Referrer: metaRefs[rng.IntN(len(metaRefs))],
			IP: netip.MustParseAddr(metaIPs[rng.IntN(len(metaIPs))]), Language: "en-US",
		})
	}
	slices.SortStableFunc(st.hits, func(a, b engine.Hit) int { return a.Time.Compare(b.Time) })
	never, err := runDeterminism(st, detConfig{name: "never", batch: 500})
	if err != nil {
		t.Fatal(err)
	}
	every, err := runDeterminism(st, detConfig{name: "every request", batch: 500, snapshotEvery: 500, background: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if diff := never.diff(every); diff != "" {
		t.Errorf("snapshots between requests change the numbers (-never +every request):\n%s", diff)
	}
}

// detStreamT is a seeded stream of imported hits and the websites they go
// to (one per zone).
type detStreamT struct {
	seed     uint64
	period   engine.SaltPeriod
	now      time.Time // the clock at the start
	zones    []string
	hits     []engine.Hit // Website is the index of the zone, from 1
	order    string
	from, to civil // the days queried
	ranges   [][2]civil
}

func (s *detStreamT) String() string {
	return fmt.Sprintf("seed=%d salt=%v zones=%v order=%s hits=%d", s.seed, s.period, s.zones, s.order, len(s.hits))
}

func detStream(seed uint64) *detStreamT {
	rng := rand.New(rand.NewPCG(seed, 0xde7))
	s := &detStreamT{seed: seed, period: engine.SaltPeriod(rng.IntN(3))}
	s.now = at(metaStarts[rng.IntN(len(metaStarts))]).Add(time.Duration(rng.IntN(48)) * time.Hour)
	s.zones = []string{metaZones[rng.IntN(len(metaZones))], metaZones[rng.IntN(len(metaZones))]}
	days := 10 + rng.IntN(40)
	first := s.now.Add(-time.Duration(days) * 24 * time.Hour)
	n := 300 + rng.IntN(1200)
	visitors := 20 + rng.IntN(300)
	g := &generator{rng: rng, now: s.now}
	for i := range n {
		site := 1 + rng.IntN(len(s.zones))
		h := g.hit(site - 1)
		h.Website = uint32(site)
		h.Time = first.Add(time.Duration(i) * time.Duration(days) * 24 * time.Hour / time.Duration(n)).
			Add(time.Duration(rng.IntN(1200)) * time.Second).Truncate(time.Second)
		if rng.IntN(3) > 0 {
			h.Visitor = fmt.Sprintf("v%d", rng.IntN(visitors))
		}
		s.hits = append(s.hits, h)
	}
	switch rng.IntN(3) {
	case 0:
		s.order = "in order"
		slices.SortStableFunc(s.hits, func(a, b engine.Hit) int { return a.Time.Compare(b.Time) })
	case 1:
		s.order = "shuffled in windows of 200"
		for w := range slices.Chunk(s.hits, 200) {
			rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
		}
	default:
		s.order = "shuffled"
		rng.Shuffle(len(s.hits), func(i, j int) { s.hits[i], s.hits[j] = s.hits[j], s.hits[i] })
	}
	s.from, s.to = civilOf(first)-1, civilOf(s.now)+1
	for range 5 {
		a := s.from + civil(rng.IntN(int(s.to-s.from)+1))
		b := a + civil(rng.IntN(15))
		s.ranges = append(s.ranges, [2]civil{a, b})
	}
	return s
}

// detConfig is one way to feed a stream into an engine.
type detConfig struct {
	name          string
	batch         int           // hits per Track call
	snapshotEvery int           // hits between snapshots; 0: never
	memoryBudget  int64         // and a query after every batch
	reopenEvery   int           // hits between a Close and reopen; 0: never
	crashEvery    int           // hits between power losses; 0: never
	tick          time.Duration // the clock moves this much after each batch
	background    time.Duration // Options.SnapshotEvery; 0: no background snapshots
}

func detConfigs(seed uint64) []detConfig {
	rng := rand.New(rand.NewPCG(seed, 0xc0f))
	r := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
	return []detConfig{
		{name: "one batch, never a snapshot", batch: 1 << 20},
		{name: "small batches, snapshots every few hundred hits", batch: r(1, 50), snapshotEvery: r(100, 400)},
		{name: "tiny memory budget", batch: r(20, 300), snapshotEvery: r(50, 300), memoryBudget: int64(r(1<<10, 8<<10))},
		{name: "restarts and power losses", batch: r(10, 200), snapshotEvery: r(100, 500), reopenEvery: r(200, 600), crashEvery: r(150, 500)},
		{name: "slow-motion clock", batch: r(1, 100), snapshotEvery: r(100, 300), tick: time.Millisecond},
		{name: "racing clock", batch: r(50, 300), snapshotEvery: r(100, 300), tick: time.Duration(r(1, 30)) * time.Hour},
	}
}

// detAnswers are a run's answers: "site/stat/from..to" → rows.
type detAnswers map[string]map[string]uint64

func (a detAnswers) diff(b detAnswers) string {
	var out []string
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if d := diffIfNot(a[k], b[k]); d != "" {
			out = append(out, k+":\n"+d)
		}
	}
	if len(out) > 4 {
		out = append(out[:4], fmt.Sprintf("... and %d more", len(out)-4))
	}
	return strings.Join(out, "")
}

func runDeterminism(st *detStreamT, c detConfig) (detAnswers, error) {
	clock := newClock(st.now.Format(time.RFC3339))
	snapEvery := c.background
	if snapEvery == 0 {
		snapEvery = -1
	}
	s, err := openSUT(engine.Options{Dir: "data", FS: vfs.NewCrashableMem(), SaltPeriod: st.period,
		SnapshotEvery: snapEvery, MemoryBudget: c.memoryBudget, Now: clock.Now})
	if err != nil {
		return nil, err
	}
	defer func() { s.close() }()
	ids := make([]uint32, len(st.zones))
	for i, tz := range st.zones {
		if ids[i], err = s.createSite(domainOf(i), tz); err != nil {
			return nil, err
		}
	}
	rng := rand.New(rand.NewPCG(st.seed, 0xfeed))
	sinceSnap, sinceReopen, sinceCrash := 0, 0, 0
	for batch := range slices.Chunk(st.hits, c.batch) {
		hits := slices.Clone(batch)
		for i := range hits {
			hits[i].Website = ids[hits[i].Website-1]
		}
		if _, err := s.track(hits); err != nil {
			return nil, err
		}
		clock.Add(c.tick)
		sinceSnap += len(hits)
		sinceReopen += len(hits)
		sinceCrash += len(hits)
		if c.snapshotEvery > 0 && sinceSnap >= c.snapshotEvery {
			sinceSnap = 0
			if err := s.snapshot(); err != nil {
				return nil, err
			}
		}
		if c.memoryBudget > 0 {
			a := st.from + civil(rng.IntN(int(st.to-st.from)+1))
			if _, err := s.rows(ids[0], "page", a, a+7); err != nil {
				return nil, err
			}
		}
		if c.reopenEvery > 0 && sinceReopen >= c.reopenEvery {
			sinceReopen = 0
			if err := s.reopen(); err != nil {
				return nil, err
			}
		}
		if c.crashEvery > 0 && sinceCrash >= c.crashEvery {
			sinceCrash = 0
			if err := s.crash(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rand.New(rand.NewPCG(rng.Uint64(), 1))}); err != nil {
				return nil, err
			}
		}
	}
	out := detAnswers{}
	ranges := append([][2]civil{{st.from, st.to}}, st.ranges...)
	for i, id := range ids {
		for _, rg := range ranges {
			for _, name := range engine.StatNames() {
				rows, err := s.rows(id, name, rg[0], rg[1])
				if err != nil {
					return nil, err
				}
				out[fmt.Sprintf("%s/%s/%v..%v", domainOf(i), name, rg[0], rg[1])] = rows
			}
			t, err := s.totals(id, rg[0], rg[1])
			if err != nil {
				return nil, err
			}
			out[fmt.Sprintf("%s/totals/%v..%v", domainOf(i), rg[0], rg[1])] = map[string]uint64{
				"visitors": t.Visitors, "pageviews": t.Pageviews, "visits": t.Visits, "events": t.Events}
			seg, err := s.segAnswers(id, domainOf(i), rg[0], rg[1])
			if err != nil {
				return nil, err
			}
			out[fmt.Sprintf("%s/segments/%v..%v", domainOf(i), rg[0], rg[1])] = seg
		}
	}
	return out, nil
}

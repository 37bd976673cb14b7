package engine_test

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// TestMetamorphic drives the engine with random operations generated from a
// seed (in the spirit of Pebble's internal/metamorphic) and checks every
// answer against the model (model_test.go): live tracking with a moving
// clock, imports in and out of order into old days and old salt periods,
// snapshots, eviction under a tiny MemoryBudget, retention, website
// create/update/delete, queries, Close and reopen, and power loss (a crash
// clone of Pebble's crashable in-memory file system). Track is synced, so at
// a crash every acknowledged hit must survive and none may count twice.
//
// A failing seed prints its operations; run it alone with
//
//	go test ./engine -run 'TestMetamorphic/seed=123$' -metamorphic.verbose
//
// and add -metamorphic.minimize to shrink its operations to a short failing
// sequence. Long local runs: -metamorphic.seeds 5000 -metamorphic.ops 3000.
func TestMetamorphic(t *testing.T) {
	// Calls of more than 4 hits are counted in parts (SPEC §13), which
	// must not change a number: the model knows no parts.
	old := engine.SetPartHits(4)
	t.Cleanup(func() { engine.SetPartHits(old) })
	// Periods page from their first bytes over the budget, in chunks of 4
	// visitors, their index lagging by all but 3 of their older visitors a
	// snapshot (SPEC §13), which must not change a number either.
	t.Cleanup(engine.SetPaging(0, 4, 3))
	// Day values of more than 256 bytes are stored in pieces (most of
	// them here), which must not change a number either.
	oldPieces := snapshot.SetPieceBytes(256)
	t.Cleanup(func() { snapshot.SetPieceBytes(oldPieces) })
	for seed := range seedCount(*metaSeeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			cfg, ops := generate(seed, *metaOps)
			err := runOps(cfg, ops)
			if err == nil {
				return
			}
			t.Errorf("%v\nconfig: %v", err, cfg)
			if *metaMinimize {
				ops = minimize(cfg, ops)
				err = runOps(cfg, ops)
				t.Errorf("minimized to %d operations: %v", len(ops), err)
			}
			t.Logf("operations (replay: -run 'TestMetamorphic/seed=%d$'):\n%s", seed, formatOps(ops, *metaVerbose))
		})
	}
}

var (
	metaSeeds    = flag.Int("metamorphic.seeds", 200, "TestMetamorphic: number of seeds")
	metaOps      = flag.Int("metamorphic.ops", 500, "TestMetamorphic: operations per seed")
	metaMinimize = flag.Bool("metamorphic.minimize", false, "TestMetamorphic: shrink a failing seed's operations")
	metaVerbose  = flag.Bool("metamorphic.verbose", false, "TestMetamorphic: print every hit of a failing seed's operations")
)

// metaConfig is the engine configuration of one seed.
type metaConfig struct {
	period       engine.SaltPeriod
	retention    int
	memoryBudget int64
	start        time.Time
}

func (c metaConfig) String() string {
	return fmt.Sprintf("salt=%v retention=%d memory_budget=%d start=%s", c.period, c.retention, c.memoryBudget, c.start.Format(time.RFC3339))
}

// The operations. Websites are named by slot (domain s<slot>.example); the
// runner finds the slot's current id in the model, so any subsequence of
// operations is still a valid test (minimize relies on it).
type (
	opCreate struct {
		slot int
		tz   string
	}
	opUpdate struct {
		slot int
		set  siteSettings
	}
	opDelete struct{ slot int }
	// opLive moves the clock forward by advance, then tracks live hits
	// (Time zero: the engine's clock) found by their URL's host.
	opLive struct {
		advance time.Duration
		hits    []engine.Hit
	}
	// opImport imports hits with explicit times into slot's website id;
	// with a key, through TrackOnce (SPEC §3.4 "Retries"). The generator
	// repeats earlier imports, keyed or not, as a client retries one whose
	// answer it lost (often after a crash): without a key the repeat
	// counts again, with one it counts nothing for seven days.
	opImport struct {
		slot int
		hits []engine.Hit
		key  string
	}
	opSnapshot struct{}
	opQuery    struct {
		slot int
		q    modelQuery // q.site is filled in by the runner
	}
	opTotals struct {
		slot     int
		from, to civil
	}
	opReopen struct{}
	opCrash  struct {
		unsynced int // percent of the unsynced data that survives
		seed     uint64
	}
	opCheckAll struct{}
	// opConcurrent imports hits one Track call at a time into slot while
	// another goroutine takes snapshots (snapshots to 4 of them) and a
	// third runs queries (up to two of each statistic) (whose
	// deferred eviction then races with the snapshot and the writes:
	// issue #11). The hits are checked as usual; the queries, whose answers
	// depend on the interleaving, only must not fail.
	opConcurrent struct {
		slot      int
		hits      []engine.Hit
		snapshots int
		from, to  civil
	}
)

func domainOf(slot int) string { return fmt.Sprintf("s%d.example", slot) }

func (o opCreate) String() string { return fmt.Sprintf("create %s tz=%s", domainOf(o.slot), o.tz) }
func (o opUpdate) String() string { return fmt.Sprintf("update %s%v", domainOf(o.slot), o.set) }
func (o opDelete) String() string { return fmt.Sprintf("delete %s", domainOf(o.slot)) }
func (o opLive) String() string   { return fmt.Sprintf("live +%v %d hits", o.advance, len(o.hits)) }
func (o opImport) String() string {
	if o.key != "" {
		return fmt.Sprintf("import %s %d hits key=%s", domainOf(o.slot), len(o.hits), o.key)
	}
	return fmt.Sprintf("import %s %d hits", domainOf(o.slot), len(o.hits))
}
func (opSnapshot) String() string { return "snapshot" }
func (o opQuery) String() string  { return domainOf(o.slot) + " " + o.q.String() }
func (o opTotals) String() string {
	return fmt.Sprintf("totals %s %v..%v", domainOf(o.slot), o.from, o.to)
}
func (opReopen) String() string { return "close+reopen" }
func (o opCrash) String() string {
	return fmt.Sprintf("crash unsynced=%d%% seed=%d", o.unsynced, o.seed)
}
func (opCheckAll) String() string { return "check all" }

func formatHit(h engine.Hit) string {
	var b strings.Builder
	if !h.Time.IsZero() {
		fmt.Fprintf(&b, "%s ", h.Time.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "%s", h.URL)
	if h.Referrer != "" {
		fmt.Fprintf(&b, " ref=%s", h.Referrer)
	}
	if h.Visitor != "" {
		fmt.Fprintf(&b, " visitor=%s", h.Visitor)
	} else {
		fmt.Fprintf(&b, " ip=%v ua=%.20s", h.IP, h.UserAgent)
	}
	if h.Event != nil {
		fmt.Fprintf(&b, " event=%s/%s/%s", h.Event.Name, h.Event.Value, h.Event.Unit)
	}
	return b.String()
}

func formatOps(ops []fmt.Stringer, verbose bool) string {
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "%4d %v\n", i, op)
		if !verbose {
			continue
		}
		var hits []engine.Hit
		switch o := op.(type) {
		case opLive:
			hits = o.hits
		case opImport:
			hits = o.hits
		case opConcurrent:
			hits = o.hits
		}
		for _, h := range hits {
			fmt.Fprintf(&b, "       %s\n", formatHit(h))
		}
	}
	return b.String()
}

// The generator's vocabulary.
var (
	metaZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"}
	metaPages = []string{"/", "/a", "/b?x=1", "/blog/post?utm_campaign=fall&utm_source=nl", "/shop?utm_campaign=sale%20now&fbclid=abc",
		"/%C3%A9t%C3%A9", "/c#frag", "?a=1", "/p?utm%5Fcampaign=enc&x=2", "/q?fbclid=1&ref=tw&id=7", "/" + strings.Repeat("long/", 60)}
	metaRefs = []string{"", "", "", "https://www.google.com/search?q=1", "https://google.com/", "https://WWW.Bing.com/", "https://t.co:443/abc",
		"android-app://com.slack/", "https://news.ycombinator.com/item?id=1", "self", "selfwww"}
	metaUAs = []string{chromeWin, safariIOS, firefoxLin,
		"Mozilla/5.0 (Linux; Android 14; SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15"}
	metaIPs = []string{"8.8.8.8", "1.1.1.1", "46.4.0.1", "133.242.0.1", "2a01:4f8::1", "200.147.0.1", "9.9.9.9", "10.1.2.3",
		"81.2.69.160", "5.6.7.8", "::ffff:5.6.7.8"}
	metaLangs         = []string{"en-US,en;q=0.9", "de-DE", "fr", "ja-JP", "pt-BR,pt;q=0.8"}
	metaRes           = []string{"1920x1080", "390x844", "", "bogus", "0x10"}
	metaExcludeParams = []string{"", "fbclid", "fbclid\nutm_source", "&", "ref\nid", " x \n\n"}
	metaExcludeIPs    = []string{"", "9.9.9.9", "10.0.0.0/8", "9.9.9.0/24\n2001:db8::/32", "5.6.7.8"}
	metaEvents        = []engine.Event{{Name: "Signup"}, {Name: "Pay:ment", Value: []byte("5"), Unit: "USD"}, {Name: "Buy", Value: []byte(`"7.50"`), Unit: "EUR"},
		{Name: "Zero", Value: []byte("0")}, {Name: "Big", Value: []byte("12345678901")}, {Name: "Float", Value: []byte("5.0")}, {Name: "  "}}
	metaStarts = []string{"2026-03-20T10:00:00Z", "2026-10-20T22:00:00Z", "2026-12-27T05:00:00Z", "2026-06-29T23:30:00Z"}
)

const metaSlots = 4

// generator makes the operations of one seed. It follows the clock and which
// slots have a website, so that most operations are meaningful.
type generator struct {
	rng   *rand.Rand
	now   time.Time
	alive [metaSlots]bool
	bases []time.Time // earlier import times, to come back to
	done  []opImport  // earlier imports, to retry
	keys  int         // keys given so far
}

func generate(seed uint64, n int) (metaConfig, []fmt.Stringer) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := metaConfig{period: engine.SaltPeriod(rng.IntN(3))}
	if rng.IntN(3) == 0 {
		cfg.retention = 20 + rng.IntN(40)
	}
	if rng.IntN(3) > 0 {
		cfg.memoryBudget = int64(1<<10 + rng.IntN(16<<10))
	}
	cfg.start = at(metaStarts[rng.IntN(len(metaStarts))]).Add(time.Duration(rng.IntN(48)) * time.Hour)
	g := &generator{rng: rng, now: cfg.start}
	var ops []fmt.Stringer
	for slot := range 2 + rng.IntN(2) {
		ops = append(ops, opCreate{slot, metaZones[rng.IntN(len(metaZones))]})
		g.alive[slot] = true
	}
	for len(ops) < n-1 {
		ops = append(ops, g.op())
	}
	return cfg, append(ops, opCheckAll{})
}

func (g *generator) pick(list []string) string { return list[g.rng.IntN(len(list))] }

// slot picks a slot with a website, or rarely any slot.
func (g *generator) slot() int {
	for range 8 {
		if s := g.rng.IntN(metaSlots); g.alive[s] || g.rng.IntN(20) == 0 {
			return s
		}
	}
	return g.rng.IntN(metaSlots)
}

func (g *generator) op() fmt.Stringer {
	switch r := g.rng.IntN(100); {
	case r < 32:
		return g.live()
	case r < 46:
		return g.imports()
	case r < 52:
		return g.retry()
	case r < 68:
		return opQuery{q: g.query()}.withSlot(g.slot())
	case r < 76:
		from, to := g.dateRange()
		return opTotals{g.slot(), from, to}
	case r < 83:
		return opSnapshot{}
	case r < 87:
		return g.update()
	case r < 89:
		s := g.rng.IntN(metaSlots)
		if g.alive[s] {
			n := 0
			for _, a := range g.alive {
				if a {
					n++
				}
			}
			if n > 1 {
				g.alive[s] = false
				return opDelete{s}
			}
			return opSnapshot{}
		}
		g.alive[s] = true
		return opCreate{s, g.pick(metaZones)}
	case r < 90:
		return opReopen{}
	case r < 94:
		return opCrash{unsynced: g.rng.IntN(101), seed: g.rng.Uint64()}
	case r < 98:
		imp := g.imports()
		from, to := g.dateRange()
		return opConcurrent{slot: imp.slot, hits: imp.hits, snapshots: 1 + g.rng.IntN(2), from: from, to: to}
	default:
		return opCheckAll{}
	}
}

func (o opQuery) withSlot(s int) opQuery { o.slot = s; return o }

func (g *generator) update() opUpdate {
	var set siteSettings
	for set.tz == nil && set.excludeParams == nil && set.excludeIPs == nil {
		if g.rng.IntN(2) == 0 {
			set.tz = ptr(g.pick(metaZones))
		}
		if g.rng.IntN(2) == 0 {
			set.excludeParams = ptr(g.pick(metaExcludeParams))
		}
		if g.rng.IntN(3) == 0 {
			set.excludeIPs = ptr(g.pick(metaExcludeIPs))
		}
	}
	return opUpdate{g.slot(), set}
}

func ptr[T any](v T) *T { return &v }

// seedCount is n, or a tenth of it (at least 10) under the race detector in
// short mode (CI runs the full count without it too).
func seedCount(n int) uint64 {
	if raceEnabled && testing.Short() {
		return uint64(max(10, n/10))
	}
	return uint64(n)
}

// hit makes a hit for slot. Its URL is the page alone; withHost makes it a
// full URL.
func (g *generator) hit(slot int) engine.Hit {
	domain := domainOf(slot)
	h := engine.Hit{
		URL:        g.pick(metaPages),
		UserAgent:  g.pick(metaUAs),
		IP:         netip.MustParseAddr(g.pick(metaIPs)),
		Language:   g.pick(metaLangs),
		Resolution: g.pick(metaRes),
	}
	switch ref := g.pick(metaRefs); ref {
	case "self":
		h.Referrer = "https://" + domain + "/from"
	case "selfwww":
		h.Referrer = "https://www." + domain + "/"
	default:
		h.Referrer = ref
	}
	switch r := g.rng.IntN(100); {
	case r < 10:
		ev := metaEvents[g.rng.IntN(len(metaEvents))]
		h.Event = &ev
	case r < 12:
		h.UserAgent = googlebot
	case r < 13:
		h.URL = "" // invalid
	}
	return h
}

// withHost makes h's URL a full URL on slot's domain, with or without
// "www." (an empty URL stays invalid).
func (g *generator) withHost(h engine.Hit, slot int) engine.Hit {
	if h.URL == "" {
		return h
	}
	host := domainOf(slot)
	if g.rng.IntN(5) == 0 {
		host = "www." + host
	}
	h.URL = "https://" + host + h.URL
	return h
}

func (g *generator) live() opLive {
	var adv time.Duration
	switch r := g.rng.IntN(100); {
	case r < 70:
		adv = time.Duration(g.rng.IntN(600)) * time.Second
	case r < 90:
		adv = time.Duration(600+g.rng.IntN(3000)) * time.Second
	case r < 98:
		adv = time.Duration(1+g.rng.IntN(12)) * time.Hour
	default:
		adv = time.Duration(24+g.rng.IntN(48)) * time.Hour
	}
	g.now = g.now.Add(adv)
	op := opLive{advance: adv}
	for range 1 + g.rng.IntN(4) {
		slot := g.slot()
		h := g.withHost(g.hit(slot), slot)
		h.Live = true
		if g.rng.IntN(50) == 0 {
			h.Language = "" // a live request without Accept-Language: a bot
		}
		if g.rng.IntN(30) == 0 {
			h.URL = "https://unknown.example/" // no such website
		}
		op.hits = append(op.hits, h)
	}
	return op
}

// imports makes an import batch: 1 to 200 hits into recent or old days, in
// order or not, with explicit visitors or IP and user agent, sometimes into
// a period an earlier import wrote (after snapshots dropped its state).
func (g *generator) imports() opImport {
	slot := g.slot()
	var n int
	switch r := g.rng.IntN(100); {
	case r < 70:
		n = 1 + g.rng.IntN(20)
	case r < 95:
		n = 20 + g.rng.IntN(80)
	default:
		n = 100 + g.rng.IntN(101)
	}
	op := opImport{slot: slot}
	// base is where the batch starts; span how far it runs.
	var base time.Time
	span := time.Duration(1+g.rng.IntN(180)) * time.Minute
	switch r := g.rng.IntN(100); {
	case r < 25:
		base = g.now.Add(-span)
	case r < 55 || len(g.bases) == 0:
		base = g.now.Add(-time.Duration(g.rng.IntN(70*24*60)) * time.Minute)
	case r < 85:
		base = g.bases[g.rng.IntN(len(g.bases))].Add(time.Duration(g.rng.IntN(120)-60) * time.Minute)
	default:
		span = time.Duration(g.rng.IntN(60)) * 24 * time.Hour // scattered over weeks
		base = g.now.Add(-span)
	}
	if base.After(g.now) {
		base = g.now
	}
	g.bases = append(g.bases, base)
	if g.rng.IntN(2) == 0 {
		g.keys++
		op.key = fmt.Sprintf("key-%d", g.keys)
	}
	visitors := 1 + g.rng.IntN(40)
	explicit := g.rng.IntN(3) > 0
	order := g.rng.IntN(3) // 0 in order, 1 reversed, 2 shuffled
	for i := range n {
		h := g.hit(slot)
		if g.rng.IntN(2) == 0 {
			h.URL = g.withHost(h, slot).URL
		}
		off := time.Duration(0)
		if n > 1 {
			off = span * time.Duration(i) / time.Duration(n-1)
		}
		h.Time = base.Add(off).Truncate(time.Second)
		if h.Time.After(g.now) {
			h.Time = g.now
		}
		if explicit {
			h.Visitor = fmt.Sprintf("u%d", g.rng.IntN(visitors))
			if g.rng.IntN(2) == 0 {
				h.UserAgent = ""
			}
		}
		op.hits = append(op.hits, h)
	}
	switch order {
	case 1:
		for i, j := 0, len(op.hits)-1; i < j; i, j = i+1, j-1 {
			op.hits[i], op.hits[j] = op.hits[j], op.hits[i]
		}
	case 2:
		g.rng.Shuffle(len(op.hits), func(i, j int) { op.hits[i], op.hits[j] = op.hits[j], op.hits[i] })
	}
	g.done = append(g.done, op)
	return op
}

// retry repeats an earlier import (mostly a recent one), as sent: the
// same hits and key.
func (g *generator) retry() opImport {
	if len(g.done) == 0 {
		return g.imports()
	}
	i := len(g.done) - 1 - g.rng.IntN(min(len(g.done), 3))
	if g.rng.IntN(4) == 0 {
		i = g.rng.IntN(len(g.done))
	}
	return g.done[i]
}

// dateRange picks a range of days around the last ten weeks.
func (g *generator) dateRange() (civil, civil) {
	today := civilOf(g.now)
	from := today - civil(g.rng.IntN(80))
	to := from + civil(g.rng.IntN(45))
	if g.rng.IntN(4) == 0 {
		to = from
	}
	return from, to
}

func (g *generator) query() modelQuery {
	names := engine.StatNames()
	q := modelQuery{name: names[g.rng.IntN(len(names))]}
	q.from, q.to = g.dateRange()
	if g.rng.IntN(7) == 0 {
		q.search = g.pick([]string{"a", "/", "CHROME", "20", "e", "us"})
	}
	q.byValue = g.rng.IntN(3) == 0
	q.desc = g.rng.IntN(2) == 0
	q.perPage = []int{0, 10, 25, 100}[g.rng.IntN(4)]
	q.page = g.rng.IntN(4)
	return q
}

// runOps runs ops on a fresh engine and model and returns the first
// difference.
func runOps(cfg metaConfig, ops []fmt.Stringer) (err error) {
	now := cfg.start
	clock := func() time.Time { return now }
	m := newModel(cfg.period.String(), cfg.retention)
	defer m.close()
	s, err := openSUT(engine.Options{
		Dir: "data", FS: vfs.NewCrashableMem(), SaltPeriod: cfg.period, SnapshotEvery: -1,
		MemoryBudget: cfg.memoryBudget, Retention: cfg.retention, Now: clock,
	})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.close(); cerr != nil && !errors.Is(cerr, engine.ErrClosed) && err == nil {
			err = fmt.Errorf("final close: %w", cerr)
		}
	}()
	// The shadow is an in-memory engine given the same websites and hits,
	// and snapshotted (retention) at the same points, but never evicted,
	// restarted or crashed: the segment queries of SPEC §10, which the model
	// does not compute, must answer the same on both.
	shadow, err := openSUT(engine.Options{SaltPeriod: cfg.period, SnapshotEvery: -1, Retention: cfg.retention, Now: clock})
	if err != nil {
		return err
	}
	defer shadow.close()
	ids := map[int]uint32{} // slot → the id of its latest website
	r := &metaRunner{s: s, m: m, ids: ids, shadow: shadow, keys: map[uint32]map[string]keyedImport{}}
	for i, op := range ops {
		if lv, ok := op.(opLive); ok {
			now = now.Add(lv.advance)
		}
		if err := r.run(op, now); err != nil {
			return fmt.Errorf("op %d (%v): %w", i, op, err)
		}
		if err := r.mirror(op, now); err != nil {
			return fmt.Errorf("op %d (%v): segments: %w", i, op, err)
		}
	}
	return nil
}

type metaRunner struct {
	s      *sut
	m      *model
	ids    map[int]uint32
	shadow *sut
	// keys holds, by website id and key, the keyed imports that counted:
	// when and with what answer.
	keys map[uint32]map[string]keyedImport
	// snapped: the engine took a snapshot of its own within the op (an
	// import under the memory budget: MakeRoom), which the shadow mirrors.
	snapped bool
}

// keyedImport is the model of an idempotency key (SPEC §3.4 "Retries").
type keyedImport struct {
	at       time.Time
	accepted int
	dropped  map[engine.DropReason]int
}

// mirror applies op to the shadow after the engine under test ran it, and
// at a full check compares segment queries of every website on both.
func (r *metaRunner) mirror(op fmt.Stringer, now time.Time) error {
	sh := r.shadow
	if r.snapped {
		// The engine took a snapshot before the op's hits (MakeRoom):
		// retention, where the engine under test applied it.
		r.snapped = false
		if err := sh.snapshot(); err != nil {
			return err
		}
	}
	switch o := op.(type) {
	case opCreate:
		id, ok := r.ids[o.slot]
		if !ok || !r.m.live(id) {
			return nil
		}
		if _, err := sh.createSite(domainOf(o.slot), o.tz); err != nil && !r.shadowHas(id) {
			return err
		}
		if !r.shadowHas(id) {
			return fmt.Errorf("shadow did not number website %d alike", id)
		}
	case opUpdate:
		if id := r.ids[o.slot]; r.m.live(id) {
			return sh.updateSite(id, o.set)
		}
	case opDelete:
		if id, ok := r.ids[o.slot]; ok && r.shadowHas(id) && !r.m.live(id) {
			return sh.deleteSite(id)
		}
	case opLive:
		_, err := sh.track(o.hits)
		return err
	case opImport:
		if o.key != "" {
			_, err := sh.trackOnce(r.ofSlot(o.slot, o.hits), o.key)
			return err
		}
		_, err := sh.track(r.ofSlot(o.slot, o.hits))
		return err
	case opConcurrent:
		if _, err := sh.track(r.ofSlot(o.slot, o.hits)); err != nil {
			return err
		}
		return sh.snapshot()
	case opSnapshot, opReopen, opCrash:
		return sh.snapshot() // retention, where the engine under test applied it
	case opCheckAll:
		for slot, id := range r.ids {
			if !r.m.live(id) {
				continue
			}
			from, to := civilOf(now)-120, civilOf(now)+2
			want, err := sh.segAnswers(id, domainOf(slot), from, to)
			if err != nil {
				return err
			}
			got, err := r.s.segAnswers(id, domainOf(slot), from, to)
			if err != nil {
				return err
			}
			if diff := diffIfNot(want, got); diff != "" {
				return fmt.Errorf("%s %v..%v: engine differs from the shadow (-shadow +engine):\n%s", domainOf(slot), from, to, diff)
			}
		}
	}
	return nil
}

// ofSlot returns a copy of hits counted under the slot's website (an id
// never given when the slot has none).
func (r *metaRunner) ofSlot(slot int, hits []engine.Hit) []engine.Hit {
	hits = slices.Clone(hits)
	id, ok := r.ids[slot]
	if !ok {
		id = 1 << 30
	}
	for i := range hits {
		hits[i].Website = id
	}
	return hits
}

// shadowHas reports whether the shadow has website id.
func (r *metaRunner) shadowHas(id uint32) bool {
	_, err := r.shadow.totals(id, 0, 0)
	return err == nil
}

// diffIfNot is cmp.Diff(want, got) with empty and nil alike, computed only
// when the two differ (the tests compare millions of equal values).
func diffIfNot[T any](want, got T) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got, cmpopts.EquateEmpty())
}

func (r *metaRunner) run(op fmt.Stringer, now time.Time) error {
	s, m := r.s, r.m
	switch o := op.(type) {
	case opCreate:
		id, err := s.createSite(domainOf(o.slot), o.tz)
		if _, taken := m.byName[domainOf(o.slot)]; taken {
			var verr *engine.ValidationError
			if !errors.As(err, &verr) {
				return fmt.Errorf("create of a taken domain: got %v, want a validation error", err)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if id <= m.maxID {
			return fmt.Errorf("new website id %d, want > %d (ids are never reused)", id, m.maxID)
		}
		m.created(id, domainOf(o.slot), o.tz)
		r.ids[o.slot] = id
	case opUpdate:
		id := r.ids[o.slot]
		err := s.updateSite(id, o.set)
		if !m.live(id) {
			return wantNotFound("update", err)
		}
		if err != nil {
			return err
		}
		m.updated(id, o.set)
	case opDelete:
		id := r.ids[o.slot]
		err := s.deleteSite(id)
		if !m.live(id) {
			return wantNotFound("delete", err)
		}
		if err != nil {
			return err
		}
		m.deleted(id)
	case opLive:
		return r.track(o.hits, now)
	case opImport:
		if o.key != "" {
			return r.trackOnce(r.ofSlot(o.slot, o.hits), o.key, now)
		}
		return r.track(r.ofSlot(o.slot, o.hits), now)
	case opSnapshot:
		if err := s.snapshot(); err != nil {
			return err
		}
		m.applyRetention(now)
	case opReopen:
		if err := s.reopen(); err != nil {
			return err
		}
		m.applyRetention(now) // Close snapshots, Open applies retention
	case opCrash:
		if err := s.crash(vfs.CrashCloneCfg{UnsyncedDataPercent: o.unsynced, RNG: rand.New(rand.NewPCG(o.seed, 7))}); err != nil {
			return err
		}
		m.applyRetention(now)
	case opQuery:
		q := o.q
		q.site = r.ids[o.slot]
		got, err := s.stat(q)
		if !m.live(q.site) {
			return wantNotFound("stat", err)
		}
		if err != nil {
			return err
		}
		want := q.pageOf(m.stats(q.site, q.from, q.to).rows[q.name])
		if diff := diffIfNot(want, got); diff != "" {
			return fmt.Errorf("mismatch (-want +got):\n%s", diff)
		}
	case opTotals:
		id := r.ids[o.slot]
		got, err := s.totals(id, o.from, o.to)
		if !m.live(id) {
			return wantNotFound("totals", err)
		}
		if err != nil {
			return err
		}
		if diff := diffIfNot(m.stats(id, o.from, o.to).totals, got); diff != "" {
			return fmt.Errorf("mismatch (-want +got):\n%s", diff)
		}
	case opCheckAll:
		return r.checkAll(now)
	case opConcurrent:
		return r.concurrent(o, now)
	default:
		return fmt.Errorf("unknown operation %T", op)
	}
	return nil
}

func wantNotFound(what string, err error) error {
	if !errors.Is(err, engine.ErrNotFound) {
		return fmt.Errorf("%s of a deleted website: got %v, want ErrNotFound", what, err)
	}
	return nil
}

// track tracks hits and checks each hit's drop reason.
func (r *metaRunner) track(hits []engine.Hit, now time.Time) error {
	snaps := r.s.e.Metrics().Snapshots
	got, err := r.s.track(hits)
	if err != nil {
		return fmt.Errorf("track: %w", err)
	}
	r.snappedBefore(snaps, now)
	want := r.m.track(now, hits)
	if diff := diffIfNot(want, got); diff != "" {
		return fmt.Errorf("drop reasons mismatch (-want +got):\n%s", diff)
	}
	return nil
}

// trackOnce imports hits of one website with key. The model counts them
// unless the website counted an import with this key in the last seven
// days (by the engine's clock): then the answer must be that import's,
// marked repeated, and nothing is counted. An import that counted
// nothing (every hit dropped) keeps no key.
func (r *metaRunner) trackOnce(hits []engine.Hit, key string, now time.Time) error {
	snaps := r.s.e.Metrics().Snapshots
	got, err := r.s.trackOnce(hits, key)
	if err != nil {
		return fmt.Errorf("track once: %w", err)
	}
	r.snappedBefore(snaps, now)
	id := hits[0].Website
	if k, ok := r.keys[id][key]; ok && r.m.live(id) && now.Sub(k.at) < 7*24*time.Hour {
		if !got.Repeated || got.Accepted != k.accepted || !maps.Equal(dropCounts(got.Dropped[:]), k.dropped) {
			return fmt.Errorf("repeat of key %s (first %v): got repeated=%v accepted=%d dropped=%v, want the first answer: accepted=%d dropped=%v",
				key, k.at, got.Repeated, got.Accepted, got.Dropped, k.accepted, k.dropped)
		}
		return nil
	}
	want := r.m.track(now, hits)
	if diff := diffIfNot(want, got.Reasons); diff != "" || got.Repeated {
		return fmt.Errorf("keyed import (repeated=%v): drop reasons mismatch (-want +got):\n%s", got.Repeated, diff)
	}
	k := keyedImport{at: now, dropped: map[engine.DropReason]int{}}
	for _, reason := range want {
		if reason == engine.DropNone {
			k.accepted++
		} else {
			k.dropped[reason]++
		}
	}
	if k.accepted > 0 && r.m.live(id) {
		if r.keys[id] == nil {
			r.keys[id] = map[string]keyedImport{}
		}
		r.keys[id][key] = k
	}
	return nil
}

// snappedBefore applies retention to the model when the engine took a
// snapshot in a call (its count moved from snaps): a call of several hits
// under the memory budget may take one before its hits (MakeRoom), and no
// background snapshot runs here.
func (r *metaRunner) snappedBefore(snaps uint64, now time.Time) {
	if r.s.e.Metrics().Snapshots != snaps {
		r.m.applyRetention(now)
		r.snapped = true
	}
}

// dropCounts is a TrackResult's Dropped without its zeros.
func dropCounts(d []int) map[engine.DropReason]int {
	m := map[engine.DropReason]int{}
	for i, n := range d {
		if n > 0 {
			m[engine.DropReason(i)] = n
		}
	}
	return m
}

func (r *metaRunner) concurrent(o opConcurrent, now time.Time) error {
	id, ok := r.ids[o.slot]
	if !ok {
		id = 1 << 30
	}
	done := make(chan struct{})
	errs := make(chan error, 2)
	go func() {
		var err error
		for i := 0; err == nil && i < 4; i++ {
			select {
			case <-done:
				if i >= o.snapshots {
					errs <- nil
					return
				}
			default:
			}
			err = r.s.snapshot()
		}
		errs <- err
	}()
	go func() {
		var err error
		names := engine.StatNames()
		for i := 0; err == nil && i < 2*len(names); i++ {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			if _, qerr := r.s.rows(id, names[i%len(names)], o.from, o.to); qerr != nil && !errors.Is(qerr, engine.ErrNotFound) {
				err = fmt.Errorf("query during snapshot and import: %w", qerr)
			}
		}
		errs <- err
	}()
	var err error
	for _, h := range o.hits {
		h.Website = id
		if err = r.track([]engine.Hit{h}, now); err != nil {
			break
		}
	}
	close(done)
	if err = errors.Join(err, <-errs, <-errs); err != nil {
		return err
	}
	// Retention ran in the snapshots, at points the model cannot know:
	// one more snapshot applies it to every hit.
	if err := r.s.snapshot(); err != nil {
		return err
	}
	r.m.applyRetention(now)
	return nil
}

// checkAll compares every statistic and the totals of every website over
// the whole range that has data, and over each of its days for visitors.
func (r *metaRunner) checkAll(now time.Time) error {
	for slot, id := range r.ids {
		if !r.m.live(id) {
			if _, err := r.s.totals(id, civilOf(now), civilOf(now)); !errors.Is(err, engine.ErrNotFound) {
				return fmt.Errorf("%s: deleted website %d: got %v, want ErrNotFound", domainOf(slot), id, err)
			}
			continue
		}
		from, to := civilOf(now)-120, civilOf(now)+2
		want := r.m.stats(id, from, to)
		for _, name := range engine.StatNames() {
			got, err := r.s.rows(id, name, from, to)
			if err != nil {
				return err
			}
			if diff := diffIfNot(want.rows[name], got); diff != "" {
				return fmt.Errorf("%s %s %v..%v mismatch (-want +got):\n%s", domainOf(slot), name, from, to, diff)
			}
		}
		got, err := r.s.totals(id, from, to)
		if err != nil {
			return err
		}
		if diff := diffIfNot(want.totals, got); diff != "" {
			return fmt.Errorf("%s totals %v..%v mismatch (-want +got):\n%s", domainOf(slot), from, to, diff)
		}
	}
	return nil
}

// minimize shrinks a failing sequence: it cuts after the first failing
// operation, then removes chunks of operations (halving their size) while the
// sequence still fails.
func minimize(cfg metaConfig, ops []fmt.Stringer) []fmt.Stringer {
	fails := func(ops []fmt.Stringer) bool { return runOps(cfg, ops) != nil }
	for i := range ops {
		if fails(ops[:i+1]) {
			ops = ops[:i+1]
			break
		}
	}
	for chunk := len(ops) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i+chunk <= len(ops)-1; {
			try := append(append([]fmt.Stringer{}, ops[:i]...), ops[i+chunk:]...)
			if fails(try) {
				ops = try
			} else {
				i += chunk
			}
		}
	}
	// Then single hits of the remaining imports and live operations.
	for i := range ops {
		hits := func(o fmt.Stringer) []engine.Hit {
			switch o := o.(type) {
			case opLive:
				return o.hits
			case opImport:
				return o.hits
			}
			return nil
		}
		for j := 0; j < len(hits(ops[i])); {
			h := hits(ops[i])
			if len(h) == 1 {
				break
			}
			less := append(append([]engine.Hit{}, h[:j]...), h[j+1:]...)
			try := append([]fmt.Stringer{}, ops...)
			switch o := ops[i].(type) {
			case opLive:
				o.hits = less
				try[i] = o
			case opImport:
				o.hits = less
				try[i] = o
			}
			if fails(try) {
				ops = try
			} else {
				j++
			}
		}
	}
	return ops
}

func (o opConcurrent) String() string {
	return fmt.Sprintf("concurrently: import %s %d hits, %d snapshots, queries %v..%v", domainOf(o.slot), len(o.hits), o.snapshots, o.from, o.to)
}

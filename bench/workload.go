package bench

import (
	"fmt"
	"iter"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

// Site describes one website's traffic.
type Site struct {
	// Domain is the website's host; page URLs are "https://"+Domain+path.
	Domain string
	// PageviewsPerMonth counts human pageviews in 30 days; bot hits
	// (Config.BotShare) and custom events (Config.EventShare) come on top.
	// A day has PageviewsPerMonth/30 of them.
	PageviewsPerMonth int
	// PagesPerDay is about how many distinct pages (path plus query) the
	// human pageviews of a day show. The vocabulary has four times as many.
	PagesPerDay int
	// VisitorsPerDay is about how many distinct human visitors a day has;
	// 0 means PageviewsPerMonth/30/3.3. Every visitor has a stable IP address
	// and user agent; about half of a day's visitors also came the day before.
	VisitorsPerDay int
}

// The site sizes of SPEC §9.
var (
	// Small is a site with 10k pageviews a month and 50 pages a day.
	Small = Site{Domain: "small.example", PageviewsPerMonth: 10_000, PagesPerDay: 50}
	// Medium is a site with 1M pageviews a month and 500 pages a day; a
	// target that names no size means this one.
	Medium = Site{Domain: "medium.example", PageviewsPerMonth: 1_000_000, PagesPerDay: 500}
	// Large is a site with 10M pageviews a month, 5,000 pages and 100k
	// visitors a day.
	Large = Site{Domain: "large.example", PageviewsPerMonth: 10_000_000, PagesPerDay: 5_000, VisitorsPerDay: 100_000}
)

func (s Site) visitorsPerDay() int {
	if s.VisitorsPerDay > 0 {
		return s.VisitorsPerDay
	}
	return max(1, int(math.Round(float64(s.PageviewsPerMonth)/30/3.3)))
}

// Config of a generated stream. The stream is deterministic from Seed: the
// same Config gives the same hits.
type Config struct {
	// Seed seeds every random choice.
	Seed uint64
	// Sites are the websites whose traffic is interleaved; nil means
	// []Site{Medium}.
	Sites []Site
	// Start is the first day; it is truncated to UTC midnight. The zero Time
	// means 2026-01-05 (a Monday).
	Start time.Time
	// Days is how many days the stream covers; 0 means 30.
	Days int
	// BotShare is the share of all hits that come from bots (crawlers, AI
	// fetchers, scripts, headless browsers): 0 means 0.07, a negative value
	// none. Values of 1 or more are taken as 0.99.
	BotShare float64
	// EventShare is the number of custom events per human pageview: 0 means
	// 0.03, a negative value none.
	EventShare float64
}

// The defaults of Config.
const (
	DefaultBotShare   = 0.07
	DefaultEventShare = 0.03
	DefaultDays       = 30
)

// DefaultStart is the first day of a Config whose Start is zero.
var DefaultStart = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func (cfg Config) withDefaults() Config {
	if cfg.Sites == nil {
		cfg.Sites = []Site{Medium}
	}
	if cfg.Start.IsZero() {
		cfg.Start = DefaultStart
	}
	y, m, d := cfg.Start.UTC().Date()
	cfg.Start = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	if cfg.Days <= 0 {
		cfg.Days = DefaultDays
	}
	switch {
	case cfg.BotShare == 0:
		cfg.BotShare = DefaultBotShare
	case cfg.BotShare < 0:
		cfg.BotShare = 0
	case cfg.BotShare >= 1:
		cfg.BotShare = 0.99
	}
	switch {
	case cfg.EventShare == 0:
		cfg.EventShare = DefaultEventShare
	case cfg.EventShare < 0:
		cfg.EventShare = 0
	}
	return cfg
}

// cumulative returns how many human pageviews, events and bot hits a site
// has in its first days days. Per-day counts are differences of these, so
// the totals do not drift with rounding.
func (cfg Config) cumulative(s Site, days int) (pv, ev, bots int) {
	pv = int(math.Round(float64(s.PageviewsPerMonth) * float64(days) / 30))
	ev = int(math.Round(float64(pv) * cfg.EventShare))
	bots = int(math.Round(float64(pv+ev) * cfg.BotShare / (1 - cfg.BotShare)))
	return pv, ev, bots
}

func (cfg Config) dayCounts(s Site, day int) (pv, ev, bots int) {
	p0, e0, b0 := cfg.cumulative(s, day)
	p1, e1, b1 := cfg.cumulative(s, day+1)
	return p1 - p0, e1 - e0, b1 - b0
}

// TotalHits is the number of hits the stream has: for every site,
// PageviewsPerMonth/30 × Days human pageviews, EventShare as many events
// and bot hits making BotShare of the whole.
func (cfg Config) TotalHits() int {
	cfg = cfg.withDefaults()
	n := 0
	for _, s := range cfg.Sites {
		pv, ev, bots := cfg.cumulative(s, cfg.Days)
		n += pv + ev + bots
	}
	return n
}

// Generator produces the hits of a Config. It is not safe for concurrent
// use; make one per goroutine (with different seeds for different streams).
//
// Hits share their strings and Event values with the Generator and with each
// other: they must not be modified (strings cannot be; Event.Value can).
type Generator struct {
	cfg   Config
	sites []*siteData

	// The current day of Next: its records per site and the position in each.
	day      int
	started  bool
	recs     [][]rec
	pos      []int
	dayStart time.Time
	scratch  scratch
}

// scratch is genDay's working memory, reused from day to day.
type scratch struct {
	lastEnd []uint32 // per visitor of the day: when their last visit ended
	tmp     []rec    // the radix sort's second buffer
}

// NewGenerator returns a Generator of cfg's stream. It builds every site's
// pages and visitors up front (tens of milliseconds for Large).
func NewGenerator(cfg Config) *Generator {
	cfg = cfg.withDefaults()
	g := &Generator{cfg: cfg, recs: make([][]rec, len(cfg.Sites)), pos: make([]int, len(cfg.Sites))}
	for i, s := range cfg.Sites {
		g.sites = append(g.sites, newSiteData(cfg, i, s))
	}
	return g
}

// Next returns the next hit in time order (ties in site order), and false
// after the last one.
func (g *Generator) Next() (engine.Hit, bool) {
	if !g.started {
		g.started = true
		g.loadDay()
	}
	for g.day < g.cfg.Days {
		best := -1
		var bestMS uint32
		for s, rs := range g.recs {
			if p := g.pos[s]; p < len(rs) && (best < 0 || rs[p].ms < bestMS) {
				best, bestMS = s, rs[p].ms
			}
		}
		if best < 0 {
			g.day++
			g.loadDay()
			continue
		}
		r := &g.recs[best][g.pos[best]]
		g.pos[best]++
		return g.sites[best].hit(g.dayStart, r), true
	}
	return engine.Hit{}, false
}

func (g *Generator) loadDay() {
	if g.day >= g.cfg.Days {
		return
	}
	for s, sd := range g.sites {
		g.recs[s] = sd.genDay(g.cfg, g.day, g.recs[s][:0], &g.scratch)
		g.pos[s] = 0
	}
	g.dayStart = g.cfg.Start.AddDate(0, 0, g.day)
}

// Hits returns the rest of the stream as an iterator over Next.
func (g *Generator) Hits() iter.Seq[engine.Hit] {
	return func(yield func(engine.Hit) bool) {
		for {
			h, ok := g.Next()
			if !ok || !yield(h) {
				return
			}
		}
	}
}

// Day returns the hits of site number site (an index into Config.Sites) on
// day number day (0 is Start), in time order: the same hits Next gives for
// that site and day. It does not disturb Next. The slice is the caller's.
func (g *Generator) Day(day int, site int) []engine.Hit {
	if day < 0 || day >= g.cfg.Days || site < 0 || site >= len(g.sites) {
		return nil
	}
	sd := g.sites[site]
	recs := sd.genDay(g.cfg, day, nil, new(scratch))
	start := g.cfg.Start.AddDate(0, 0, day)
	hits := make([]engine.Hit, len(recs))
	for i := range recs {
		hits[i] = sd.hit(start, &recs[i])
	}
	return hits
}

// rec is a compact hit: what genDay makes and sorts, turned into an
// engine.Hit only when handed out.
type rec struct {
	ms   uint32 // milliseconds into the day
	who  uint32 // index into siteData.visitors, or siteData.bots for kindBot
	page uint32 // index into siteData.urls
	ref  uint32 // 0: none; refInternal|i: urls[i]; else externalReferrers[ref-1]
	kind uint8  // kindPageview, kindBot, or kindEvent+i for events[i]
	// landing marks the first pageview of a visit (and events copied from
	// one); only tests read it.
	landing bool
}

const (
	refInternal = 1 << 31

	kindPageview = 0
	kindBot      = 1
	kindEvent    = 2

	dayMS = 24 * 3600 * 1000
	minMS = 60 * 1000

	campaignShare = 0.05 // of landings
)

// visitor is a human visitor: stable address, user agent, screen and
// language.
type visitor struct {
	ip   netip.Addr
	ua   uint16 // index into userAgents
	res  uint16 // index into tables.res
	lang uint16 // index into tables.langs
	cc   uint8  // index into countries
}

// botVisitor is one bot identity.
type botVisitor struct {
	ip                     netip.Addr
	ua, lang, res, secCHUA string
}

// siteData is what a Generator keeps per site: built once, read-only after.
type siteData struct {
	site     Site
	seed     uint64
	urls     []string // vocabulary pages by popularity, then campaign pages
	nVocab   int
	nCamp    int
	zipf     alias
	zipfS    float64 // the Zipf exponent
	visitors []visitor
	perDay   int // visitors a day
	bots     []botVisitor
}

func newSiteData(cfg Config, idx int, s Site) *siteData {
	sd := &siteData{site: s, seed: mix(cfg.Seed, 1, uint64(idx)), perDay: s.visitorsPerDay()}
	r := rng{mix(sd.seed, 2)}
	pages := max(1, s.PagesPerDay)

	// Pages.
	paths := vocabulary(&r, 4*pages)
	sd.nVocab = len(paths)
	sd.nCamp = max(2, pages/25)
	for c := range sd.nCamp {
		p := paths[1+c%min(20, len(paths)-1)]
		if len(paths) == 1 {
			p = paths[0]
		}
		sep := "?"
		if strings.Contains(p, "?") {
			sep = "&"
		}
		cp := campaigns[c%len(campaigns)]
		name := cp[0]
		if c >= len(campaigns) {
			name += "-" + strconv.Itoa(c/len(campaigns)+1)
		}
		paths = append(paths, p+sep+"utm_campaign="+name+"&utm_source="+cp[1]+"&utm_medium="+cp[2])
	}
	sd.urls = make([]string, len(paths))
	for i, p := range paths {
		sd.urls[i] = "https://" + s.Domain + p
	}
	pvDay, _, botsDay := cfg.dayCounts(s, 0)
	sd.zipfS = zipfExponent(sd.nVocab, float64(pvDay+botsDay), float64(max(1, pages-sd.nCamp)))
	w := make([]float64, sd.nVocab)
	for i := range w {
		w[i] = math.Pow(float64(i+1), -sd.zipfS)
	}
	sd.zipf = newAlias(w)

	// Visitors: a pool of twice a day's visitors; day d uses a window of it
	// shifted by half a day's visitors.
	sd.visitors = make([]visitor, 2*sd.perDay)
	for i := range sd.visitors {
		sd.visitors[i] = newVisitor(&r)
	}

	// Bots: about one identity per 20 bot hits a day, between 10 and 5,000.
	sd.bots = make([]botVisitor, min(5000, max(10, botsDay/20)))
	for i := range sd.bots {
		sd.bots[i] = newBot(&r)
	}
	return sd
}

// zipfExponent finds s so that m draws from Zipf(s) over n items show about
// target distinct items.
func zipfExponent(n int, m, target float64) float64 {
	w := make([]float64, n)
	distinct := func(s float64) float64 {
		var z float64
		for i := range w {
			w[i] = math.Pow(float64(i+1), -s)
			z += w[i]
		}
		var d float64
		for _, x := range w {
			d += -math.Expm1(m * math.Log1p(-x/z))
		}
		return d
	}
	lo, hi := 0.0, 4.0
	for range 25 {
		mid := (lo + hi) / 2
		if distinct(mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// vocabulary returns n distinct paths, the home page first, then the static
// pages, then blog posts, products, docs, categories and searches.
func vocabulary(r *rng, n int) []string {
	seen := make(map[string]bool, n)
	paths := make([]string, 0, n)
	add := func(p string) {
		if seen[p] {
			suffix := "-" + strconv.Itoa(len(paths))
			if q := strings.IndexByte(p, '?'); q >= 0 {
				p = p[:q] + suffix + p[q:]
			} else {
				p += suffix
			}
		}
		seen[p] = true
		paths = append(paths, p)
	}
	add("/")
	for _, p := range static {
		if len(paths) < n {
			add(p)
		}
	}
	pick := func(s []string) string { return s[r.intn(len(s))] }
	for len(paths) < n {
		i := len(paths)
		x := r.intn(100)
		var p string
		switch {
		case x < 40:
			var slug string
			switch r.intn(4) {
			case 0:
				slug = "how-to-" + pick(pathVerbs) + "-your-" + pick(pathNouns)
			case 1:
				slug = "why-" + pick(pathNouns) + "-matters"
			case 2:
				slug = pick(pathAdjectives) + "-" + pick(pathNouns) + "-guide"
			default:
				slug = "getting-started-with-" + pick(pathNouns)
			}
			p = "/blog/" + slug + "-" + strconv.Itoa(100+i)
		case x < 47:
			// Tagged links from feeds and newsletters: utm_ parameters
			// without a campaign.
			src := [...]string{"?utm_source=rss&utm_medium=feed", "?utm_source=newsletter&utm_medium=email", "?utm_source=mastodon&utm_medium=social"}
			p = "/blog/" + pick(pathAdjectives) + "-" + pick(pathNouns) + "-" + strconv.Itoa(100+i) + src[r.intn(len(src))]
		case x < 67:
			id := strconv.Itoa(1000 + i)
			switch r.intn(6) {
			case 0, 1:
				p = "/products/" + id + "?color=" + pick(colors)
			case 2:
				p = "/products/" + id + "?size=" + pick(sizes) + "&color=" + pick(colors)
			default:
				p = "/products/" + id
			}
		case x < 82:
			p = "/docs/" + pick(sections) + "/" + pick(pathVerbs) + "-" + pick(pathNouns)
		case x < 92:
			p = "/category/" + pick(pathNouns)
			if r.intn(2) == 0 {
				p += "?page=" + strconv.Itoa(2+r.intn(9))
			}
		default:
			p = "/search?q=" + pick(pathNouns) + "+" + pick(pathNouns)
		}
		add(p)
	}
	return paths
}

// tables are the package's draw tables, built once.
var tables = buildTables()

type drawTables struct {
	uaStrings []string
	ua        alias
	res       []string
	resByDev  [numDevices]alias
	resIdx    [numDevices][]uint16 // resByDev draw → index into res
	country   alias
	langs     []string
	langByCC  []alias
	langIdx   [][]uint16
	v4, v6    [][]netip.Prefix // by country
	ref       alias            // over externalReferrers
	sessLen   alias            // draw+1 pageviews
	hour      alias
	event     alias
	bot       alias
	botIPs    [][]netip.Prefix
}

// Session lengths 1–8 (percent of visits) and the hourly curve in UTC
// (relative; peak at 15:00, trough at 04:00).
var (
	sessionLengths = []float64{40, 20, 12, 9, 7, 5, 4, 3}
	hourly         = []float64{2.6, 2.0, 1.5, 1.2, 1.0, 1.2, 1.8, 2.8, 3.8, 4.6, 5.1, 5.5,
		5.8, 6.1, 6.4, 6.6, 6.4, 6.0, 5.5, 5.0, 4.5, 4.0, 3.5, 3.0}
)

func buildTables() *drawTables {
	t := &drawTables{}
	w := make([]float64, len(userAgents))
	for i, u := range userAgents {
		t.uaStrings = append(t.uaStrings, u.s)
		w[i] = u.weight
	}
	t.ua = newAlias(w)
	for d := range numDevices {
		var ws []float64
		for _, r := range resolutions[d] {
			i := slices.Index(t.res, r.s)
			if i < 0 {
				i = len(t.res)
				t.res = append(t.res, r.s)
			}
			t.resIdx[d] = append(t.resIdx[d], uint16(i))
			ws = append(ws, r.w)
		}
		t.resByDev[d] = newAlias(ws)
	}
	w = w[:0]
	for _, c := range countries {
		w = append(w, c.share)
		var v4, v6 []netip.Prefix
		for _, p := range strings.Fields(c.v4) {
			v4 = append(v4, netip.MustParsePrefix(p))
		}
		for _, p := range strings.Fields(c.v6) {
			v6 = append(v6, netip.MustParsePrefix(p))
		}
		t.v4, t.v6 = append(t.v4, v4), append(t.v6, v6)
		var ls []string
		var lw []float64
		for _, loc := range strings.Fields(c.locales) {
			name, share := loc, 100.0
			if i := strings.IndexByte(loc, ':'); i >= 0 {
				name = loc[:i]
				share, _ = strconv.ParseFloat(loc[i+1:], 64)
			}
			for _, v := range acceptLanguages(name) {
				ls = append(ls, v.s)
				lw = append(lw, share*v.w)
			}
		}
		if !strings.HasPrefix(c.locales, "en-") {
			// Expats and English-language systems.
			ls = append(ls, "en-US,en;q=0.9", "en-GB,en;q=0.9,en-US;q=0.8")
			lw = append(lw, 800, 200)
		}
		var idx []uint16
		for _, s := range ls {
			i := slices.Index(t.langs, s)
			if i < 0 {
				i = len(t.langs)
				t.langs = append(t.langs, s)
			}
			idx = append(idx, uint16(i))
		}
		t.langByCC = append(t.langByCC, newAlias(lw))
		t.langIdx = append(t.langIdx, idx)
	}
	t.country = newAlias(w)
	w = w[:0]
	for _, r := range externalReferrers {
		w = append(w, r.w)
	}
	t.ref = newAlias(w)
	t.sessLen = newAlias(sessionLengths)
	t.hour = newAlias(hourly)
	w = w[:0]
	for _, e := range events {
		w = append(w, e.w)
	}
	t.event = newAlias(w)
	w = w[:0]
	for _, b := range bots {
		w = append(w, b.share)
		var ps []netip.Prefix
		for _, p := range strings.Fields(b.ips) {
			ps = append(ps, netip.MustParsePrefix(p))
		}
		t.botIPs = append(t.botIPs, ps)
	}
	t.bot = newAlias(w)
	return t
}

// acceptLanguages returns the Accept-Language headers browsers send for a
// locale ("de-DE"), weighted: Chrome's, Safari's, Firefox's, a bare locale
// (apps, WebViews) and the bare language.
func acceptLanguages(locale string) []weighted {
	lang := locale[:strings.IndexByte(locale, '-')]
	if lang == "en" {
		alt := "en-US"
		if locale == alt {
			alt = "en-GB"
		}
		return []weighted{
			{locale + ",en;q=0.9", 55},
			{locale + ",en;q=0.9," + alt + ";q=0.8", 10},
			{locale + ",en;q=0.5", 12},
			{locale, 13},
			{"en", 5},
			{locale + ",en;q=0.9,es;q=0.8", 5},
		}
	}
	return []weighted{
		{locale + "," + lang + ";q=0.9,en-US;q=0.8,en;q=0.7", 45},
		{locale + "," + lang + ";q=0.9", 25},
		{locale + "," + lang + ";q=0.8,en-US;q=0.5,en;q=0.3", 10},
		{locale, 12},
		{lang + ",en-US;q=0.9,en;q=0.8", 8},
	}
}

func newVisitor(r *rng) visitor {
	t := tables
	c := t.country.draw(r)
	var ip netip.Addr
	if v6 := t.v6[c]; len(v6) > 0 && r.intn(100) < 35 {
		ip = randomAddr(r, v6[r.intn(len(v6))])
	} else {
		ip = randomAddr(r, t.v4[c][r.intn(len(t.v4[c]))])
	}
	ua := t.ua.draw(r)
	dev := userAgents[ua].dev
	return visitor{
		ip:   ip,
		ua:   uint16(ua),
		res:  t.resIdx[dev][t.resByDev[dev].draw(r)],
		lang: t.langIdx[c][t.langByCC[c].draw(r)],
		cc:   uint8(c),
	}
}

func newBot(r *rng) botVisitor {
	t := tables
	i := t.bot.draw(r)
	b := bots[i]
	ua := b.ua[r.intn(len(b.ua))]
	bv := botVisitor{
		ip:   randomAddr(r, t.botIPs[i][r.intn(len(t.botIPs[i]))]),
		ua:   ua,
		lang: b.lang,
		res:  b.res,
	}
	if b.secCHUA {
		v := ua[strings.Index(ua, "HeadlessChrome/")+len("HeadlessChrome/"):]
		v = v[:strings.IndexByte(v, '.')]
		bv.secCHUA = fmt.Sprintf(`"HeadlessChrome";v="%s", "Chromium";v="%s", "Not_A Brand";v="24"`, v, v)
	}
	return bv
}

// randomAddr returns a random host address in p (for IPv4 never .0 or .255).
func randomAddr(r *rng, p netip.Prefix) netip.Addr {
	bitsLen := p.Bits()
	if p.Addr().Is4() {
		b := p.Addr().As4()
		x := r.next()
		for i := bitsLen; i < 32; i++ {
			if x>>(i%64)&1 == 1 {
				b[i/8] |= 0x80 >> (i % 8)
			}
		}
		b[3] = byte(1 + r.intn(254))
		if bitsLen > 24 {
			b[3] = p.Addr().As4()[3] | 1
		}
		return netip.AddrFrom4(b)
	}
	b := p.Addr().As16()
	x, y := r.next(), r.next()
	for i := bitsLen; i < 128; i++ {
		v := x
		if i >= 64 {
			v = y
		}
		if v>>(i%64)&1 == 1 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	return netip.AddrFrom16(b)
}

// genDay appends the records of one day to recs, in time order.
func (sd *siteData) genDay(cfg Config, day int, recs []rec, sc *scratch) []rec {
	t := tables
	r := rng{mix(sd.seed, 3, uint64(day))}
	pvN, evN, botN := cfg.dayCounts(sd.site, day)
	recs = slices.Grow(recs[:0], pvN+evN+botN)

	// Human visits. A visit is by a new visitor of the day with probability
	// pNew (so that about perDay visitors come), otherwise by a visitor seen
	// already, at least 30 minutes after their last visit.
	perDay := sd.perDay
	if cap(sc.lastEnd) < perDay {
		sc.lastEnd = make([]uint32, perDay)
	}
	lastEnd := sc.lastEnd[:perDay]
	var meanLen float64
	for i, w := range sessionLengths {
		meanLen += float64(i+1) * w / 100
	}
	pNew := min(1, float64(perDay)*meanLen/float64(max(1, pvN)))
	offset := day * (perDay / 2)
	j := 0
	for n := 0; n < pvN; {
		l := min(t.sessLen.draw(&r)+1, pvN-n)
		var v int
		var ms uint32
		if j == 0 || (j < perDay && r.float() < pNew) {
			v, j = j, j+1
			ms = diurnal(&r)
		} else {
			v = r.intn(j)
			ms = lastEnd[v] + 30*minMS + 1000 + uint32(r.intn(240*minMS))
			if ms >= dayMS-10*minMS {
				ms = diurnal(&r)
			}
		}
		who := uint32((v + offset) % len(sd.visitors))

		var page uint32
		if r.float() < campaignShare {
			page = uint32(sd.nVocab + r.intn(sd.nCamp))
		} else {
			page = uint32(sd.zipf.draw(&r))
		}
		var ref uint32
		switch x := r.float() * 100; {
		case x < directShare:
		case x < 100-internalShare:
			ref = uint32(t.ref.draw(&r) + 1)
		default:
			ref = refInternal | uint32(sd.zipf.draw(&r))
		}
		recs = append(recs, rec{ms: ms, who: who, page: page, ref: ref, landing: true})
		for range l - 1 {
			u := r.float()
			ms = min(ms+5000+uint32(u*u*360_000), dayMS-1)
			prev := page
			if page = uint32(sd.zipf.draw(&r)); page == prev {
				page = uint32(sd.zipf.draw(&r)) // mostly a click, seldom a reload
			}
			recs = append(recs, rec{ms: ms, who: who, page: page, ref: refInternal | prev})
		}
		lastEnd[v] = ms
		n += l
	}

	// Events: on a page a visitor viewed, seconds to a minute later.
	for range evN {
		p := recs[r.intn(pvN)]
		p.ms = min(p.ms+2000+uint32(r.intn(60_000)), dayMS-1)
		p.kind = kindEvent + uint8(t.event.draw(&r))
		recs = append(recs, p)
	}

	// Bots: all day long, on the same popular pages.
	for range botN {
		recs = append(recs, rec{
			ms:   uint32(r.intn(dayMS)),
			who:  uint32(r.intn(len(sd.bots))),
			page: uint32(sd.zipf.draw(&r)),
			kind: kindBot,
		})
	}

	sc.tmp = sortRecs(recs, sc.tmp)
	return recs
}

// diurnal draws a time of day from the hourly curve.
func diurnal(r *rng) uint32 {
	return uint32(tables.hour.draw(r))*3_600_000 + uint32(r.intn(3_600_000))
}

// sortRecs sorts recs by time, stably, with an LSD radix sort on the 27 bits
// of ms (two passes of 14 bits), using tmp (returned for reuse) as the
// second buffer.
func sortRecs(recs, tmp []rec) []rec {
	if cap(tmp) < len(recs) {
		tmp = make([]rec, len(recs))
	}
	tmp = tmp[:len(recs)]
	const bits = 14
	var count [1 << bits]int
	src, dst := recs, tmp
	for shift := 0; shift < 28; shift += bits {
		clear(count[:])
		for i := range src {
			count[src[i].ms>>shift&(1<<bits-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for i := range src {
			k := src[i].ms >> shift & (1<<bits - 1)
			dst[count[k]] = src[i]
			count[k]++
		}
		src, dst = dst, src
	}
	// After an even number of passes the result is back in recs.
	return tmp
}

// hit turns a record of the day starting at dayStart into a Hit.
func (sd *siteData) hit(dayStart time.Time, r *rec) engine.Hit {
	h := engine.Hit{
		Time: dayStart.Add(time.Duration(r.ms) * time.Millisecond),
		URL:  sd.urls[r.page],
		Live: true,
	}
	switch {
	case r.ref == 0:
	case r.ref&refInternal != 0:
		h.Referrer = sd.urls[r.ref&^refInternal]
	default:
		h.Referrer = externalReferrers[r.ref-1].s
	}
	if r.kind == kindBot {
		b := &sd.bots[r.who]
		h.IP, h.UserAgent, h.Language, h.Resolution, h.SecCHUA = b.ip, b.ua, b.lang, b.res, b.secCHUA
		return h
	}
	v := &sd.visitors[r.who]
	h.IP = v.ip
	h.UserAgent = tables.uaStrings[v.ua]
	h.Resolution = tables.res[v.res]
	h.Language = tables.langs[v.lang]
	if r.kind >= kindEvent {
		h.Event = events[r.kind-kindEvent].ev
	}
	return h
}

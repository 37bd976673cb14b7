package engine_test

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/ua"
)

// model is the metamorphic tests' reference: it keeps every acknowledged hit
// and each website's settings, and computes every statistic from SPEC §2 by
// brute force. It shares nothing with the engine but the user-agent parser
// and the geo database (which SPEC does not define), and it does not know
// about snapshots, eviction, restarts or crashes: none of them may change a
// number (SPEC §2.2, determinism; §6, durability).
type model struct {
	period string // salt period: day, week or month
	// retention in days (0: keep everything): days before today−retention
	// are dropped at each snapshot, close and open.
	retention int

	sites  map[uint32]*modelSite
	byName map[string]uint32 // domain → id of the live website
	maxID  uint32

	visits map[visitKey]*modelVisit
	agents map[string]ua.Agent
	geo    map[netip.Addr]geo.Location

	uaParser *ua.Parser
	locator  *geo.Locator
}

// modelSite is a website of the model, with its settings as they are now and
// its counted hits by local day, in acknowledgement order.
type modelSite struct {
	id      uint32
	domain  string
	tz      string
	loc     *time.Location
	rules   refRules
	ips     refIPSet
	deleted bool
	days    map[civil][]*modelHit
}

// modelHit is one counted hit, enriched as the engine must have enriched it
// when it was acknowledged (settings and time zone in force then).
type modelHit struct {
	date   civil
	hour   int
	period civil
	who    string // the visitor's identity: "v:"+visitor, or "i:"+ip+"|"+ua
	event  string // the event row, for an event
	page   string
	// visit is set when this pageview started a visit: its referrer and
	// campaign.
	visit              bool
	referrer, campaign string
	dims               [8]string // browser os device resolution language country continent city
	erased             bool      // dropped by retention
}

var hourNames = func() (h [24]string) {
	for i := range h {
		h[i] = fmt.Sprintf("%02d", i)
	}
	return h
}()

var dimNames = [8]string{"browser", "os", "device", "resolution", "language", "country", "continent", "city"}

type visitKey struct {
	site   uint32
	period civil
	who    string
}

// modelVisit is a visitor's current visit in a salt period.
type modelVisit struct {
	last time.Time // latest pageview
	host string    // www-less external host that started it; "" direct
}

func newModel(period string, retention int) *model {
	loc, err := geo.Open("")
	if err != nil {
		panic(err)
	}
	return &model{
		period: period, retention: retention,
		sites: map[uint32]*modelSite{}, byName: map[string]uint32{},
		visits: map[visitKey]*modelVisit{}, agents: map[string]ua.Agent{}, geo: map[netip.Addr]geo.Location{},
		uaParser: ua.New(0), locator: loc,
	}
}

func (m *model) close() { m.locator.Close() }

func (m *model) agent(s string) ua.Agent {
	a, ok := m.agents[s]
	if !ok {
		a = m.uaParser.Parse(s)
		m.agents[s] = a
	}
	return a
}

func (m *model) location(ip netip.Addr) geo.Location {
	l, ok := m.geo[ip]
	if !ok {
		l = m.locator.Lookup(ip.Unmap())
		m.geo[ip] = l
	}
	return l
}

// created records a website the engine created.
func (m *model) created(id uint32, domain, tz string) {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		panic(err)
	}
	m.sites[id] = &modelSite{id: id, domain: domain, tz: tz, loc: loc, rules: parseRefRules(""), days: map[civil][]*modelHit{}}
	m.byName[domain] = id
	m.maxID = max(m.maxID, id)
}

// siteSettings is a website update: nil fields are unchanged.
type siteSettings struct {
	tz, excludeParams, excludeIPs *string
}

func (s siteSettings) String() string {
	var b strings.Builder
	for _, f := range []struct {
		name string
		v    *string
	}{{"tz", s.tz}, {"exclude_params", s.excludeParams}, {"exclude_ips", s.excludeIPs}} {
		if f.v != nil {
			fmt.Fprintf(&b, " %s=%q", f.name, *f.v)
		}
	}
	return b.String()
}

func (m *model) updated(id uint32, set siteSettings) {
	s := m.sites[id]
	if set.tz != nil {
		s.tz = *set.tz
		s.loc, _ = time.LoadLocation(s.tz)
	}
	if set.excludeParams != nil {
		s.rules = parseRefRules(*set.excludeParams)
	}
	if set.excludeIPs != nil {
		s.ips = parseRefIPSet(*set.excludeIPs)
	}
}

func (m *model) deleted(id uint32) {
	s := m.sites[id]
	s.deleted = true
	s.days = nil
	delete(m.byName, s.domain)
}

// live reports whether website id exists.
func (m *model) live(id uint32) bool {
	s, ok := m.sites[id]
	return ok && !s.deleted
}

// site finds the website of h as the engine must: by id, else by the URL's
// host (www-less, lower case).
func (m *model) site(h *engine.Hit) *modelSite {
	if h.Website != 0 {
		if m.live(h.Website) {
			return m.sites[h.Website]
		}
		return nil
	}
	_, rest, _ := strings.Cut(h.URL, "://")
	host, _, _ := strings.Cut(rest, "/")
	host, _, _ = strings.Cut(host, "?")
	if id, ok := m.byName[refSiteHost(strings.ToLower(host))]; ok {
		return m.sites[id]
	}
	return nil
}

// track predicts what Track does with hits at now, and counts the hits it
// counts: the result is the reasons, one per hit.
func (m *model) track(now time.Time, hits []engine.Hit) []engine.DropReason {
	reasons := make([]engine.DropReason, len(hits))
	for i := range hits {
		reasons[i] = m.trackOne(now, &hits[i])
	}
	return reasons
}

func (m *model) trackOne(now time.Time, h *engine.Hit) engine.DropReason {
	s := m.site(h)
	if s == nil {
		return engine.DropUnknownSite
	}
	if s.ips.contains(h.IP) {
		return engine.DropExcludedIP
	}
	ag := m.agent(h.UserAgent)
	// SPEC §2.4: a missing Accept-Language alone is no bot.
	if ag.Bot && (h.Live || h.UserAgent != "") {
		return engine.DropBot // every website of these tests excludes bots
	}
	page, campaign, ok := refPage(h.URL, s.rules)
	if !ok {
		return engine.DropInvalid
	}
	t := h.Time
	if t.IsZero() {
		t = now
	}
	lt := t.In(s.loc)
	mh := &modelHit{date: civilOf(lt), hour: lt.Hour()}
	mh.period = mh.date.periodStart(m.period)
	if h.Visitor != "" {
		mh.who = "v:" + h.Visitor
	} else {
		mh.who = "i:" + h.IP.Unmap().String() + "|" + h.UserAgent
	}
	if h.Event != nil {
		row, ok := refEventRow(h.Event.Name, h.Event.Value, h.Event.Unit)
		if !ok {
			return engine.DropInvalid
		}
		mh.event = row
		s.days[mh.date] = append(s.days[mh.date], mh)
		return engine.DropNone
	}
	mh.page = page
	// SPEC §2.2 visits; README "How things are counted" for out-of-order
	// hits: more than 30 minutes before the latest pageview starts a visit.
	refHost := refReferrerHost(h.Referrer)
	refSite := refSiteHost(refHost)
	external := refSite != "" && refSite != s.domain
	k := visitKey{s.id, mh.period, mh.who}
	v := m.visits[k]
	if v == nil || t.Sub(v.last) > 30*time.Minute || v.last.Sub(t) > 30*time.Minute || (external && refSite != v.host) {
		if v == nil {
			v = &modelVisit{}
			m.visits[k] = v
		}
		mh.visit, mh.campaign, v.host = true, campaign, ""
		if external {
			mh.referrer, v.host = refHost, refSite
		}
	}
	if t.After(v.last) {
		v.last = t
	}
	loc := m.location(h.IP)
	mh.dims = [8]string{ag.Browser, ag.OS, ag.Device, refResolution(h.Resolution), refLanguage(h.Language), loc.Country, loc.Continent, loc.City}
	s.days[mh.date] = append(s.days[mh.date], mh)
	return engine.DropNone
}

// applyRetention drops the days before today−retention of every website, as
// a snapshot, Close and Open do.
func (m *model) applyRetention(now time.Time) {
	if m.retention <= 0 {
		return
	}
	for _, s := range m.sites {
		cut := civilOf(now.In(s.loc)) - civil(m.retention)
		for date, hits := range s.days {
			if date < cut {
				for _, h := range hits {
					h.erased = true
				}
			}
		}
		// The visitor state of a salt period that ended before the cut
		// goes with its days (README: retention): a later hit of that
		// period is a new visitor with a new visit.
		for k := range m.visits {
			if k.site == s.id && (k.period.periodStart(m.period) == k.period) && periodLast(k.period, m.period) < cut {
				delete(m.visits, k)
			}
		}
	}
}

// periodLast is the last day of the salt period starting on first.
func periodLast(first civil, period string) civil {
	switch period {
	case "week":
		return first + 6
	case "month":
		return (first + 31).periodStart("month") - 1
	}
	return first
}

// modelStats are every statistic's rows of one website over a range, and its
// totals.
type modelStats struct {
	rows   map[string]map[string]uint64 // statistic → value → count
	totals engine.Totals
}

// stats computes every statistic of website id over the local days
// [from, to], from the hits.
func (m *model) stats(id uint32, from, to civil) modelStats {
	out := modelStats{rows: map[string]map[string]uint64{}}
	for _, n := range engine.StatNames() {
		out.rows[n] = map[string]uint64{}
	}
	add := func(stat, value string) { out.rows[stat][value]++ }
	s := m.sites[id]
	type periodWho struct {
		period civil
		who    string
	}
	unique := map[periodWho]bool{}
	for date, hits := range s.days {
		if date < from || date > to {
			continue
		}
		day := map[string]bool{}
		hours := map[string]bool{}
		dateStr := date.String()
		for _, h := range hits {
			switch {
			case h.erased:
				continue
			case h.event != "":
				add("event", h.event)
				out.totals.Events++
				continue
			}
			hour := hourNames[h.hour]
			add("pageviews", dateStr)
			add("pageviews_hours", hour)
			add("page", h.page)
			out.totals.Pageviews++
			if h.visit {
				out.totals.Visits++
				add("landing_page", h.page)
				add("referrer", h.referrer)
				if h.campaign != "" {
					add("campaign", h.campaign)
				}
			}
			unique[periodWho{h.period, h.who}] = true
			if !hours[hour+h.who] {
				hours[hour+h.who] = true
				add("visitors_hours", hour)
			}
			if day[h.who] {
				continue
			}
			// Per-visitor dimensions: the visitor's first pageview of
			// the day (in the order the hits were counted).
			day[h.who] = true
			add("visitors", dateStr)
			for i, d := range dimNames {
				add(d, h.dims[i])
			}
		}
	}
	out.totals.Visitors = uint64(len(unique))
	return out
}

// modelQuery is one Stat query.
type modelQuery struct {
	site          uint32
	name          string
	from, to      civil
	search        string
	byValue, desc bool
	page, perPage int
}

func (q modelQuery) String() string {
	sort := "count"
	if q.byValue {
		sort = "value"
	}
	return fmt.Sprintf("stat site=%d %s %v..%v search=%q sort=%s desc=%v page=%d per_page=%d", q.site, q.name, q.from, q.to, q.search, sort, q.desc, q.page, q.perPage)
}

// statPage is one page of a statistic, as the adapter returns it.
type statPage struct {
	Rows                           []engine.Row
	Total, Page, PerPage, LastPage int
}

// page answers q from rows: search, sort (SPEC §3.3: equal counts by value
// ascending) and paging.
func (q modelQuery) pageOf(rows map[string]uint64) statPage {
	var all []engine.Row
	for v, n := range rows {
		if n > 0 && strings.Contains(strings.ToLower(v), strings.ToLower(q.search)) {
			all = append(all, engine.Row{Value: v, Count: n})
		}
	}
	slices.SortFunc(all, func(a, b engine.Row) int {
		if q.byValue {
			if q.desc {
				return strings.Compare(b.Value, a.Value)
			}
			return strings.Compare(a.Value, b.Value)
		}
		c := cmp.Compare(a.Count, b.Count)
		if q.desc {
			c = -c
		}
		return cmp.Or(c, strings.Compare(a.Value, b.Value))
	})
	per := q.perPage
	if per <= 0 {
		per = 10
	}
	pg := max(q.page, 1)
	last := max(1, (len(all)+per-1)/per)
	lo := min(len(all), (pg-1)*per)
	hi := min(len(all), lo+per)
	return statPage{Rows: slices.Clone(all[lo:hi]), Total: len(all), Page: pg, PerPage: per, LastPage: last}
}

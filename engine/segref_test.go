package engine_test

// A brute-force reference for Owner.Query (SPEC §10, plausible-api.md §2–6,
// notes/seg-semantics.md). It keeps the raw hits given to Track and answers
// a resolved query by walking every hit: no indexes, no dictionaries, no
// code shared with the engine beyond the public query model (Resolve,
// TimeBucket, TimeLabels, EffectiveFilters, Echo) and the UA and geo
// helpers the engine enriches with. URL, referrer, source, visit, filter,
// metric and ordering rules are written here from the documents.
//
// Decisions where the documents leave room are marked "ref:" and listed in
// the branch report.

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/ua"
)

// segSite is what the reference knows: the website's settings and the raw
// hits, in the order given to Track.
type segSite struct {
	Domain string
	// Loc is the website's time zone; before ZoneChange (when set) it was
	// OldLoc, and hits before then were counted in it (SPEC §2.3).
	Loc         *time.Location
	OldLoc      *time.Location
	ZoneChange  time.Time
	Salt        engine.SaltPeriod
	ExcludeBots bool
	Goals       []engine.Goal
	Hits        []engine.Hit
}

type hitKind uint8

const (
	kindPageview hitKind = iota
	kindEvent
	kindEngagement
)

// refHit is an enriched hit.
type refHit struct {
	kind     hitKind
	ms       int64       // Unix milliseconds
	sec      time.Time   // truncated to the second, for the range test
	day      engine.Date // the local day it was counted under (SPEC §10.1)
	name     string      // "pageview" or the event name
	path     string
	host     string
	props    []engine.Prop
	value    string // event value as kept (SPEC §2.4), "" when not
	unit     string
	nonInter bool
	engMs    int64
	scroll   int // -1 unknown
	visitor  string
	visit    *refVisit // nil: orphan (events), or dropped (engagement)
	goals    []string  // display names of the goals the hit converts
}

// refVisit is one visit of the segments (SPEC §10.1, Plausible's rule:
// any pageview or custom event more than 30 minutes after the visitor's
// previous one starts a visit, and so does a pageview with another
// external referrer host than the hit that started the visit; every hit
// extends its visit).
type refVisit struct {
	seq        int
	visitor    string
	period     engine.Date
	refHost    string // external referrer host of the hit that started it ("" none)
	firstMs    int64  // first hit, pageview or custom event
	lastPVMs   int64
	lastHitMs  int64
	pageviews  int
	interacted bool // an interactive hit (pageview, interactive custom event) after the first
	entry      string
	entryHost  string
	exit       string
	exitHost   string
	attr       map[string]string // visit:* values as shown ("" blank)
	own        map[string]string // browser, OS and device as webstats names them
	city       int64
}

// bounce: SPEC §10.1, at most one pageview and no interactive hit after
// the first.
func (v *refVisit) bounce() bool { return v.pageviews <= 1 && !v.interacted }

// duration: SPEC §10.1, last hit − first hit, whatever their
// interactivity (a bounce followed by a non-interactive event has the
// event's distance).
func (v *refVisit) duration() int64 {
	// Times are kept to the second, as Plausible keeps them: the
	// duration is the difference of the whole seconds.
	return v.lastHitMs/1000 - v.firstMs/1000
}

// refData is a site's hits enriched and stitched into visits.
type refData struct {
	site   *segSite
	hits   []*refHit
	visits []*refVisit
}

var (
	refUA  = ua.New(4096)
	refGeo *geo.Locator
)

func init() {
	var err error
	if refGeo, err = geo.Open(""); err != nil {
		panic(err)
	}
}

// splitURL returns the host (lower-cased) and path (no query) of an
// absolute URL or a path, and the raw query.
func splitURL(u string) (host, path, query string) {
	u, _, _ = strings.Cut(u, "#")
	if i := strings.Index(u, "://"); i >= 0 {
		rest := u[i+3:]
		j := strings.IndexAny(rest, "/?")
		if j < 0 {
			j = len(rest)
		}
		host, u = strings.ToLower(rest[:j]), rest[j:]
		if h, _, ok := strings.Cut(host, ":"); ok {
			host = h
		}
	}
	path, query, _ = strings.Cut(u, "?")
	if path == "" {
		path = "/"
	}
	return host, path, query
}

// queryParam returns the first value of key in a raw query (no decoding:
// the generators use plain values).
func queryParam(q, key string) string {
	for _, kv := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if k == key {
			return v
		}
	}
	return ""
}

// refSource returns source, visit:referrer and channel for a landing page's
// query and referrer (SPEC §10.1). ref: only the referrers and UTM values
// the fact sheet gives a source and channel for are modelled: Google
// (Organic Search), direct, an unknown host (its name, Referral) and
// utm_medium=email (Email); the generators use no others.
func refSource(domain, query, referrer string) (source, refURL, channel string) {
	rhost, rpath, _ := splitURL(referrer)
	rhost = strings.TrimPrefix(rhost, "www.")
	if referrer == "" || rhost == domain {
		rhost, rpath = "", ""
	}
	if rhost != "" {
		refURL = rhost + strings.TrimRight(rpath, "/")
	}
	src := ""
	for _, k := range []string{"utm_source", "source", "ref"} {
		if v := queryParam(query, k); v != "" {
			src = v
			break
		}
	}
	medium := queryParam(query, "utm_medium")
	known := map[string]string{"google.com": "Google"}
	if src == "" && rhost != "" {
		src = rhost
		if n, ok := known[rhost]; ok {
			src = n
		}
	}
	switch {
	case medium == "email":
		channel = "Email"
	case src == "Google":
		channel = "Organic Search"
	case rhost != "":
		channel = "Referral"
	default:
		channel = "Direct"
	}
	return src, refURL, channel
}

// periodOf is the salt period start of local day d.
func periodOf(d engine.Date, p engine.SaltPeriod) engine.Date {
	switch p {
	case engine.SaltWeek:
		return d - engine.Date((int(d.Weekday())+6)%7)
	case engine.SaltMonth:
		y, m, _ := d.Civil()
		return engine.DateOf(y, m, 1)
	}
	return d
}

// keptValue is an event value as SPEC §2.4 keeps it: numeric, > 0, at most
// 10 characters.
func keptValue(raw []byte) string {
	s := string(raw)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) || len(s) > 10 {
		return ""
	}
	return s
}

// keptProps bounds props as SPEC §2.4 does.
func keptProps(in []engine.Prop) []engine.Prop {
	var out []engine.Prop
	for _, p := range in {
		if len(out) == engine.MaxProps {
			break
		}
		if p.Key == "" || utf8.RuneCountInString(p.Key) > engine.MaxPropKey || utf8.RuneCountInString(p.Value) > engine.MaxPropValue {
			continue
		}
		out = append(out, p)
	}
	return out
}

var capitalDevice = map[string]string{"desktop": "Desktop", "mobile": "Mobile", "tablet": "Tablet"}

// refPlausibleNames are Plausible's names of webstats' browsers and
// operating systems (ref: Matomo device-detector's names as Plausible's
// lib/plausible/ingestion/event.ex folds them); the others are the same.
var refPlausibleNames = map[string]string{
	"Edge": "Microsoft Edge", "Opera Mini": "Opera", "Samsung Internet": "Samsung Browser",
	"DuckDuckGo": "DuckDuckGo Privacy Browser", "Whale": "Whale Browser",
	"Facebook": "Mobile App", "Instagram": "Mobile App", "TikTok": "Mobile App",
	"macOS": "Mac", "Linux": "GNU/Linux", "ChromeOS": "Chrome OS", "BlackBerry": "BlackBerry OS",
}

func refPlausibleName(s string) string {
	if p, ok := refPlausibleNames[s]; ok {
		return p
	}
	return s
}

// refOwnNames are the dimensions shown with Plausible's names whose filters
// also take webstats' (stored) name.
var refOwnNames = map[string]bool{"visit:browser": true, "visit:os": true, "visit:device": true, "visit:screen": true}

// build enriches the hits and reconstructs the visits.
func (s *segSite) build() *refData {
	d := &refData{site: s}
	type vstate struct{ cur *refVisit }
	state := map[string]*vstate{} // visitor key -> current visit
	const gap = 30 * 60 * 1000
	for _, h := range s.Hits {
		ag := refUA.Parse(h.UserAgent)
		if s.ExcludeBots && ag.Bot && (h.Live || h.UserAgent != "") {
			continue
		}
		if h.Prefetch {
			continue
		}
		host, path, query := splitURL(h.URL)
		rh := &refHit{ms: h.Time.UnixMilli(), sec: h.Time.Truncate(time.Second), path: path, host: host, scroll: -1}
		switch {
		case h.Engagement != nil:
			rh.kind = kindEngagement
			rh.engMs = min(max(h.Engagement.EngagedMs, 0), 24*3600*1000)
			if h.Engagement.ScrollDepth >= 0 {
				rh.scroll = min(h.Engagement.ScrollDepth, 100)
			}
		case h.Event != nil:
			// Names and units are kept exactly, ':' included (SPEC §2.4).
			name := strings.TrimSpace(h.Event.Name)
			if name == "" {
				continue
			}
			rh.kind, rh.name = kindEvent, name
			rh.value, rh.nonInter = keptValue(h.Event.Value), h.Event.NonInteractive
			if len(h.Event.Unit) <= 32 {
				rh.unit = h.Event.Unit
			}
		default:
			rh.name = "pageview"
		}
		rh.props = keptProps(h.Props)
		rh.day = engine.DateFromTime(h.Time.In(s.locAt(h.Time)))
		period := periodOf(rh.day, s.Salt)
		id := "ua:" + h.IP.String() + "|" + h.UserAgent
		if h.Visitor != "" {
			id = "id:" + h.Visitor
		}
		rh.visitor = period.String() + "/" + id
		st := state[rh.visitor]
		if st == nil {
			st = &vstate{}
			state[rh.visitor] = st
		}
		v := st.cur
		if rh.kind == kindEngagement {
			// ref: an engagement report joins the visitor's current visit
			// when within 30 minutes of its last hit, never extends it,
			// and is ignored without one.
			if v == nil || rh.ms-v.lastHitMs > gap {
				continue
			}
			rh.visit = v
		} else {
			rhost, _, _ := splitURL(h.Referrer)
			rhost = strings.TrimPrefix(rhost, "www.")
			if h.Referrer == "" || rhost == s.Domain {
				rhost = ""
			}
			pageview := rh.kind == kindPageview
			interactive := pageview || !rh.nonInter
			if v == nil || rh.ms-v.lastHitMs > gap || (pageview && rhost != "" && rhost != v.refHost) {
				v = &refVisit{seq: len(d.visits), visitor: rh.visitor, period: period, refHost: rhost, firstMs: rh.ms}
				src, refURL, channel := refSource(s.Domain, query, h.Referrer)
				loc := refGeo.Lookup(h.IP.Unmap())
				cc, cname, _ := strings.Cut(loc.Country, ":")
				v.attr = map[string]string{
					"visit:source": src, "visit:referrer": refURL, "visit:channel": channel,
					"visit:utm_medium": queryParam(query, "utm_medium"), "visit:utm_source": queryParam(query, "utm_source"),
					"visit:utm_campaign": queryParam(query, "utm_campaign"), "visit:utm_content": queryParam(query, "utm_content"),
					"visit:utm_term": queryParam(query, "utm_term"),
					"visit:device":   capitalDevice[ag.Device], "visit:browser": refPlausibleName(ag.Browser), "visit:browser_version": ag.BrowserVersion,
					"visit:os": refPlausibleName(ag.OS), "visit:os_version": ag.OSVersion,
					"visit:country": cc, "visit:country_name": cname, "visit:region": loc.Region,
					"visit:region_name": loc.RegionName, "visit:city_name": loc.CityName,
				}
				v.attr["visit:screen"] = v.attr["visit:device"]
				v.own = map[string]string{"visit:browser": ag.Browser, "visit:os": ag.OS, "visit:device": ag.Device, "visit:screen": ag.Device}
				v.city = int64(loc.CityID)
				d.visits = append(d.visits, v)
				st.cur = v
			} else if interactive {
				v.interacted = true
			}
			if pageview {
				if v.pageviews == 0 {
					v.entry, v.entryHost = path, host
				}
				v.pageviews++
				v.lastPVMs = rh.ms
				v.exit, v.exitHost = path, host
			}
			v.lastHitMs = max(v.lastHitMs, rh.ms)
			rh.visit = v
		}
		rh.goals = s.goalsOf(rh)
		d.hits = append(d.hits, rh)
	}
	return d
}

// goalPattern turns a pageview goal's path into an anchored regexp where
// "*" and "**" both mean ".*" (plausible-api.md §6.5).
func goalPattern(p string) *regexp.Regexp {
	parts := strings.Split(strings.ReplaceAll(p, "**", "*"), "*")
	for i, part := range parts {
		parts[i] = regexp.QuoteMeta(part)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

func goalName(g engine.Goal) string {
	if g.DisplayName != "" {
		return g.DisplayName
	}
	if g.EventName != "" {
		return g.EventName
	}
	return "Visit " + g.PagePath
}

func (s *segSite) goalsOf(h *refHit) []string {
	var out []string
	for _, g := range s.Goals {
		switch {
		case g.EventName != "" && h.kind == kindEvent && h.name == g.EventName:
			out = append(out, goalName(g))
		case g.PagePath != "" && h.kind == kindPageview:
			if strings.Contains(g.PagePath, "*") && goalPattern(g.PagePath).MatchString(h.path) || h.path == g.PagePath {
				out = append(out, goalName(g))
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Filters

// blankLabel is how the API names a dimension's blank value; an is/is_not
// clause equal to it matches the stored "" (plausible-api.md §4).
func blankLabel(dim string) string {
	switch dim {
	case "event:hostname":
		return "(none)"
	case "visit:source", "visit:referrer":
		return "Direct / None"
	case "visit:utm_medium", "visit:utm_source", "visit:utm_campaign", "visit:utm_content", "visit:utm_term",
		"visit:device", "visit:screen", "visit:browser", "visit:browser_version", "visit:os", "visit:os_version":
		return "(not set)"
	}
	return ""
}

// storedValue is a hit's value of a non-goal, non-props dimension as
// stored ("" blank). Orphans have blank visit values.
func (h *refHit) storedValue(dim string) string {
	switch dim {
	case "event:name":
		return h.name
	case "event:page":
		return h.path
	case "event:hostname":
		return h.host
	}
	v := h.visit
	if v == nil {
		switch dim {
		case "visit:city":
			return "0"
		case "visit:channel":
			return "Direct" // ref: the blank channel is "Direct", stored and shown
		}
		return ""
	}
	switch dim {
	case "visit:entry_page":
		return v.entry
	case "visit:exit_page":
		return v.exit
	case "visit:entry_page_hostname":
		return v.entryHost
	case "visit:exit_page_hostname":
		return v.exitHost
	case "visit:city":
		return strconv.FormatInt(v.city, 10)
	}
	return v.attr[dim]
}

func (h *refHit) prop(key string) (string, bool) {
	for _, p := range h.props {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

// refEval evaluates one query's filters.
type refEval struct {
	d       *refData
	r       *engine.ResolvedQuery
	res     map[string]*regexp.Regexp
	hasDone map[*engine.Filter]map[*refVisit]bool
}

func (e *refEval) re(s string) *regexp.Regexp {
	if x, ok := e.res[s]; ok {
		return x
	}
	x, err := regexp.Compile(s)
	if err != nil {
		x = nil // ref: an invalid pattern matches nothing
	}
	e.res[s] = x
	return x
}

// inRange: SPEC §10.1, over whole local days a hit is in the range by the
// day it was counted under; only sub-day ranges ("24h", datetimes) compare
// times.
func (e *refEval) inRange(h *refHit) bool {
	if e.r.DateRange.From.IsZero() && e.r.DateRange.Period != "24h" {
		return h.day >= e.r.FirstDay && h.day <= e.r.LastDay
	}
	return !h.sec.Before(e.r.From) && !h.sec.After(e.r.To)
}

// prepare computes, for each has_done/has_not_done node, the visits with at
// least one hit in range matching its child.
func (e *refEval) prepare(fs []engine.Filter) {
	for i := range fs {
		f := &fs[i]
		if f.Op == "has_done" || f.Op == "has_not_done" {
			set := map[*refVisit]bool{}
			for _, h := range e.d.hits {
				if h.kind != kindEngagement && h.visit != nil && e.inRange(h) && e.match(&f.Children[0], h) {
					set[h.visit] = true
				}
			}
			e.hasDone[f] = set
			continue
		}
		e.prepare(f.Children)
	}
}

func (e *refEval) matchAll(fs []engine.Filter, h *refHit) bool {
	for i := range fs {
		if !e.match(&fs[i], h) {
			return false
		}
	}
	return true
}

func (e *refEval) match(f *engine.Filter, h *refHit) bool {
	switch f.Op {
	case "and":
		return e.matchAll(f.Children, h)
	case "or":
		for i := range f.Children {
			if e.match(&f.Children[i], h) {
				return true
			}
		}
		return false
	case "not":
		return !e.match(&f.Children[0], h)
	case "has_done":
		return h.visit != nil && e.hasDone[f][h.visit]
	case "has_not_done":
		// ref: an orphan has no visit, so no visit that has done f.
		return h.visit == nil || !e.hasDone[f][h.visit]
	}
	return e.leaf(f, h)
}

func (e *refEval) leaf(f *engine.Filter, h *refHit) bool {
	fold := func(s string) string {
		if f.CaseInsensitive {
			return strings.ToLower(s)
		}
		return s
	}
	var values []string // the hit's values; any may match
	present := true
	switch {
	case f.Dimension == "event:goal":
		values = h.goals
	case strings.HasPrefix(f.Dimension, "event:props:"):
		var v string
		v, present = h.prop(strings.TrimPrefix(f.Dimension, "event:props:"))
		values = []string{v}
	default:
		values = []string{h.storedValue(f.Dimension)}
		if refOwnNames[f.Dimension] && h.visit != nil && h.visit.own[f.Dimension] != "" {
			values = append(values, h.visit.own[f.Dimension])
		}
	}
	is := func() bool {
		for _, c := range f.Clauses {
			if strings.HasPrefix(f.Dimension, "event:props:") {
				if fold(c) == "(none)" && !present {
					return true
				}
				if present && fold(values[0]) == fold(c) {
					return true
				}
				continue
			}
			if l := blankLabel(f.Dimension); l != "" && fold(c) == fold(l) {
				c = ""
			}
			for _, v := range values {
				if fold(v) == fold(c) {
					return true
				}
			}
		}
		return false
	}
	contains := func() bool {
		for _, c := range f.Clauses {
			for _, v := range values {
				if strings.Contains(fold(v), fold(c)) {
					return true
				}
			}
		}
		return false
	}
	matches := func() bool {
		for _, c := range f.Clauses {
			re := e.re(c)
			for _, v := range values {
				if re != nil && re.MatchString(v) {
					return true
				}
			}
		}
		return false
	}
	switch f.Op {
	case "is":
		return is()
	case "is_not":
		return !is()
	case "contains":
		return present && contains()
	case "contains_not":
		return present && !contains()
	case "matches":
		return present && matches()
	case "matches_not":
		return present && !matches()
	}
	panic("ref: unknown filter op " + f.Op)
}

// ---------------------------------------------------------------------------
// Grouping and metrics

type refGroup struct {
	dims      []any
	visitors  map[string]bool
	visits    map[*refVisit]bool // S: visits with a visitor row here
	pageviews int64
	events    int64
	revenue   map[string][]float64 // currency -> amounts of revenue events
	revGoal   map[string]bool      // goals of the revenue events' rows
}

func newGroup(dims []any) *refGroup {
	return &refGroup{dims: dims, visitors: map[string]bool{}, visits: map[*refVisit]bool{}, revenue: map[string][]float64{}}
}

// refDayBucket is the time:day, time:week or time:month label of a hit
// counted under local day d (SPEC §10.1), worked out here rather than by
// the engine's DayBucket: the day; its week's Monday, or the range's first
// day for the first, partial week (plausible-api.md, as TimeBucket's
// documentation says); the first of its month.
func refDayBucket(r *engine.ResolvedQuery, d engine.Date) string {
	y, m, day := d.Civil()
	switch r.TimeDimension() {
	case "time:day":
		return fmt.Sprintf("%04d-%02d-%02d", y, m, day)
	case "time:week":
		monday := d - engine.Date((int(d.Weekday())+6)%7)
		if monday < r.FirstDay {
			monday = r.FirstDay
		}
		y, m, day = monday.Civil()
		return fmt.Sprintf("%04d-%02d-%02d", y, m, day)
	case "time:month":
		return fmt.Sprintf("%04d-%02d-01", y, m)
	}
	return ""
}

// dimValues returns the values of dim for hit h as a row shows them: one
// value, several (event:goal) or none (a hit converting no goal).
func (e *refEval) dimValues(dim string, h *refHit) []any {
	switch {
	case strings.HasPrefix(dim, "time"):
		if e.r.DateRange.From.IsZero() && e.r.DateRange.Period != "24h" && e.r.TimeDimension() != "time:hour" {
			return []any{refDayBucket(e.r, h.day)} // SPEC §10.1: the stored day's bucket
		}
		return []any{e.r.TimeBucket(time.UnixMilli(h.ms))}
	case dim == "event:goal":
		out := make([]any, len(h.goals))
		for i, g := range h.goals {
			out[i] = g
		}
		return out
	case strings.HasPrefix(dim, "event:props:"):
		if v, ok := h.prop(strings.TrimPrefix(dim, "event:props:")); ok {
			return []any{v}
		}
		return []any{"(none)"}
	case dim == "visit:city":
		if h.visit == nil {
			return []any{int64(0)}
		}
		return []any{h.visit.city}
	}
	v := h.storedValue(dim)
	if v == "" {
		v = blankLabel(dim)
	}
	return []any{v}
}

// tuples is the cross product of the hit's values of dims.
func (e *refEval) tuples(dims []string, h *refHit) [][]any {
	out := [][]any{{}}
	for _, d := range dims {
		vals := e.dimValues(d, h)
		var next [][]any
		for _, t := range out {
			for _, v := range vals {
				next = append(next, append(slices.Clone(t), v))
			}
		}
		out = next
	}
	return out
}

func tupleKey(t []any) string {
	var b strings.Builder
	for _, v := range t {
		fmt.Fprintf(&b, "%v\x00", v)
	}
	return b.String()
}

// eventRows reports whether custom events are visitor rows: always (a
// custom event that belongs to a visit counts its visitor and its visit;
// orphans have neither), per seg-semantics.md as the lead settled it.
func eventRows(filters []engine.Filter, dims []string) bool { return true }

// group runs filters and grouping by dims; it returns the groups by key, in
// first-seen order.
func (e *refEval) group(filters []engine.Filter, dims []string) (map[string]*refGroup, []string) {
	evRows := eventRows(filters, dims)
	groups := map[string]*refGroup{}
	var order []string
	for _, h := range e.d.hits {
		if h.kind == kindEngagement || !e.inRange(h) || !e.matchAll(filters, h) {
			continue
		}
		for _, t := range e.tuples(dims, h) {
			k := tupleKey(t)
			g := groups[k]
			if g == nil {
				g = newGroup(t)
				groups[k] = g
				order = append(order, k)
			}
			g.events++
			if h.kind == kindPageview {
				g.pageviews++
			}
			if (h.kind == kindPageview || evRows) && h.visit != nil {
				g.visitors[h.visitor] = true
				g.visits[h.visit] = true
			}
			if h.kind == kindEvent && h.value != "" {
				amount, _ := strconv.ParseFloat(h.value, 64)
				for _, gn := range h.goals {
					if cur := e.goalCurrency(gn); cur != "" && cur == h.unit {
						g.revenue[gn] = append(g.revenue[gn], amount)
					}
				}
			}
		}
	}
	return groups, order
}

func (e *refEval) goalCurrency(name string) string {
	for _, g := range e.d.site.Goals {
		if goalName(g) == name {
			return g.Currency
		}
	}
	return ""
}

// roundTo rounds x to dp decimals, halves away from zero.
func roundTo(x float64, dp int) float64 {
	p := math.Pow(10, float64(dp))
	return math.Round(x*p) / p
}

// ratio is 100·num/den to dp decimals (one division, then rounding).
func ratio(num, den int64, dp int) float64 { return roundTo(float64(num*100)/float64(den), dp) }

// query answers a resolved query by brute force. all holds every row in
// order, before pagination.
func (d *refData) query(r engine.ResolvedQuery) (res engine.QueryResult, all []engine.QueryRow) {
	e := &refEval{d: d, r: &r, res: map[string]*regexp.Regexp{}, hasDone: map[*engine.Filter]map[*refVisit]bool{}}
	filters := r.EffectiveFilters()
	e.prepare(filters)
	groups, order := e.group(filters, r.Dimensions)
	if len(r.Dimensions) == 0 && len(groups) == 0 {
		groups[""] = newGroup([]any{})
		order = []string{""}
	}

	has := func(m string) bool { return slices.Contains(r.Metrics, m) }
	pageDim := slices.Index(r.Dimensions, "event:page")

	// Session sets grouped by entry page (event:page dimension): S of the
	// row's other dimensions, then its visits entering on the row's page.
	var byOthers map[string]map[*refVisit]bool
	othersKey := func(t []any) string {
		o := slices.Clone(t)
		o = slices.Delete(o, pageDim, pageDim+1)
		return tupleKey(o)
	}
	if pageDim >= 0 && (has("bounce_rate") || has("visit_duration")) {
		byOthers = map[string]map[*refVisit]bool{}
		for _, g := range groups {
			k := othersKey(g.dims)
			if byOthers[k] == nil {
				byOthers[k] = map[*refVisit]bool{}
			}
			for v := range g.visits {
				byOthers[k][v] = true
			}
		}
	}
	var topPage []engine.Filter
	for _, f := range filters {
		if f.Dimension == "event:page" {
			topPage = append(topPage, f)
		}
	}
	entryMatches := func(v *refVisit) bool {
		pseudo := &refHit{path: v.entry, visit: v}
		return e.matchAll(topPage, pseudo)
	}

	var total int64 = -1
	if has("percentage") {
		tg, _ := e.group(filters, nil)
		total = 0
		for _, g := range tg {
			total = int64(len(g.visitors))
		}
	}
	var crFilters []engine.Filter
	var crDims []string
	var crDen map[string]*refGroup
	if has("conversion_rate") || has("group_conversion_rate") {
		for _, f := range filters {
			if f.Dimension == "event:goal" || strings.HasPrefix(f.Dimension, "event:props:") {
				continue
			}
			crFilters = append(crFilters, f)
		}
		e.prepare(crFilters) // has_done sets are kept by node: these are copies
	}
	crTotal := int64(0)
	if has("conversion_rate") {
		tg, _ := e.group(crFilters, nil)
		for _, g := range tg {
			crTotal = int64(len(g.visitors))
		}
	}
	goalDim := slices.Index(r.Dimensions, "event:goal")
	crKey := func(t []any) string {
		o := slices.Clone(t)
		if goalDim >= 0 {
			o = slices.Delete(o, goalDim, goalDim+1)
		}
		return tupleKey(o)
	}
	if has("group_conversion_rate") {
		for _, dd := range r.Dimensions {
			if dd != "event:goal" {
				crDims = append(crDims, dd)
			}
		}
		crDen, _ = e.group(crFilters, crDims)
	}

	// Revenue: the goals in play and their currency.
	var warnings map[string]engine.MetricWarning
	revGoals := map[string]string{} // display name -> currency, revenue goals only
	for _, g := range d.site.Goals {
		if g.Currency == "" {
			continue
		}
		ok := true
		for _, f := range filters {
			if f.Dimension == "event:goal" {
				pseudo := &refHit{goals: []string{goalName(g)}}
				ok = ok && e.leaf(&f, pseudo)
			}
		}
		if ok {
			revGoals[goalName(g)] = g.Currency
		}
	}
	revCurrency := ""
	revNull := ""
	if goalDim < 0 {
		cur := map[string]bool{}
		for _, c := range revGoals {
			cur[c] = true
		}
		switch {
		case len(cur) == 0:
			revNull = "no_revenue_goals_matching"
		case len(cur) > 1:
			revNull = "no_single_revenue_currency"
		default:
			for c := range cur {
				revCurrency = c
			}
		}
	} else if len(revGoals) == 0 {
		revNull = "no_revenue_goals_matching"
	}
	if revNull != "" {
		for _, m := range []string{"total_revenue", "average_revenue"} {
			if has(m) {
				if warnings == nil {
					warnings = map[string]engine.MetricWarning{}
				}
				warnings[m] = engine.MetricWarning{Code: revNull}
			}
		}
	}

	// time_on_page and scroll_depth from engagement reports.
	type engAcc struct {
		ms     int64
		visits map[*refVisit]bool
		scroll map[*refVisit]int
	}
	eng := map[string]*engAcc{}
	if has("time_on_page") || has("scroll_depth") {
		for _, h := range d.hits {
			if h.kind != kindEngagement || !e.inRange(h) || !e.matchAll(filters, h) {
				continue
			}
			for _, t := range e.tuples(r.Dimensions, h) {
				k := tupleKey(t)
				a := eng[k]
				if a == nil {
					a = &engAcc{visits: map[*refVisit]bool{}, scroll: map[*refVisit]int{}}
					eng[k] = a
				}
				a.ms += h.engMs
				a.visits[h.visit] = true
				if h.scroll >= 0 {
					if s, ok := a.scroll[h.visit]; !ok || h.scroll > s {
						a.scroll[h.visit] = h.scroll
					}
				}
			}
		}
	}

	var rows []engine.QueryRow
	for _, k := range order {
		g := groups[k]
		sess := g.visits
		if byOthers != nil {
			sess = map[*refVisit]bool{}
			for v := range byOthers[othersKey(g.dims)] {
				if v.entry == g.dims[pageDim] {
					sess[v] = true
				}
			}
		}
		vals := make([]any, len(r.Metrics))
		for i, m := range r.Metrics {
			switch m {
			case "visitors":
				vals[i] = int64(len(g.visitors))
			case "visits":
				vals[i] = int64(len(g.visits))
			case "pageviews":
				vals[i] = g.pageviews
			case "events":
				vals[i] = g.events
			case "views_per_visit":
				var pv int64
				for v := range g.visits {
					pv += int64(v.pageviews)
				}
				if len(g.visits) == 0 {
					vals[i] = 0.0
				} else {
					vals[i] = roundTo(float64(pv)/float64(len(g.visits)), 2)
				}
			case "bounce_rate":
				var n, b int64
				for v := range sess {
					if entryMatches(v) {
						n++
						if v.bounce() {
							b++
						}
					}
				}
				if n == 0 {
					vals[i] = int64(0)
				} else {
					vals[i] = int64(ratio(b, n, 0))
				}
			case "visit_duration":
				if len(sess) == 0 {
					vals[i] = nil
					continue
				}
				var sum int64
				for v := range sess {
					sum += v.duration()
				}
				vals[i] = int64(math.Round(float64(sum) / float64(len(sess))))
			case "percentage":
				if total == 0 {
					vals[i] = nil
				} else {
					vals[i] = ratio(int64(len(g.visitors)), total, 1)
				}
			case "conversion_rate":
				if crTotal == 0 {
					vals[i] = 0.0
				} else {
					vals[i] = ratio(int64(len(g.visitors)), crTotal, 2)
				}
			case "group_conversion_rate":
				den := int64(0)
				if dg := crDen[crKey(g.dims)]; dg != nil {
					den = int64(len(dg.visitors))
				}
				if den == 0 {
					vals[i] = 0.0
				} else {
					vals[i] = ratio(int64(len(g.visitors)), den, 2)
				}
			case "time_on_page":
				a := eng[k]
				if a == nil || len(a.visits) == 0 {
					vals[i] = nil
				} else {
					vals[i] = int64(math.Round(float64(a.ms) / 1000 / float64(len(a.visits))))
				}
			case "scroll_depth":
				a := eng[k]
				if a == nil || len(a.scroll) == 0 {
					vals[i] = nil
				} else {
					sum := 0
					for _, s := range a.scroll {
						sum += s
					}
					vals[i] = int64(math.Round(float64(sum) / float64(len(a.scroll))))
				}
			case "total_revenue", "average_revenue":
				vals[i] = refRevenue(m, g, goalDim, revGoals, revCurrency, revNull)
			}
		}
		rows = append(rows, engine.QueryRow{Dimensions: g.dims, Metrics: vals})
	}

	refSort(rows, &r)
	all = slices.Clone(rows)
	res = engine.QueryResult{Query: r.Echo()}
	n := len(rows)
	if len(r.Dimensions) > 0 {
		// ref: pagination pages grouped rows only; an aggregate is one row.
		lo := min(r.Pagination.Offset, n)
		hi := min(lo+r.Pagination.Limit, n)
		rows = rows[lo:hi]
	}
	if rows == nil {
		rows = []engine.QueryRow{}
	}
	res.Results = rows
	if r.Include.TotalRows {
		res.Meta.TotalRows = &n
	}
	if r.Include.TimeLabels {
		res.Meta.TimeLabels = r.TimeLabels()
	}
	if r.Include.Imports {
		f := false
		res.Meta.ImportsIncluded = &f
		res.Meta.ImportsSkipReason = "no_imported_data"
	}
	res.Meta.MetricWarnings = warnings
	return res, all
}

// refRevenue is a revenue metric of group g. ref: a revenue goal with no
// revenue event in the row is 0 in the goal's currency.
func refRevenue(m string, g *refGroup, goalDim int, revGoals map[string]string, currency, null string) any {
	if null != "" {
		return nil
	}
	var amounts []float64
	if goalDim >= 0 {
		name, _ := g.dims[goalDim].(string)
		c, ok := revGoals[name]
		if !ok {
			return nil
		}
		currency = c
		amounts = g.revenue[name]
	} else {
		for name := range revGoals {
			amounts = append(amounts, g.revenue[name]...)
		}
	}
	// An event converting several revenue goals counts once per goal.
	// Amounts are decimals: summed exactly, in millionths (a float sum
	// would depend on the order, which is a map's here).
	var micros int64
	for _, a := range amounts {
		micros += int64(math.Round(a * 1e6))
	}
	sum := float64(micros) / 1e6
	v := roundTo(sum, 3)
	if m == "average_revenue" {
		if len(amounts) == 0 {
			v = 0
		} else {
			v = roundTo(sum/float64(len(amounts)), 3)
		}
	}
	return &engine.Revenue{Value: v, Currency: currency}
}

// orderKey is row x's value of an order_by key.
func orderKey(r *engine.ResolvedQuery, x engine.QueryRow, key string) any {
	if i := slices.Index(r.Metrics, key); i >= 0 {
		return x.Metrics[i]
	}
	return x.Dimensions[slices.Index(r.Dimensions, key)]
}

// compareValues orders row values: nil first, numbers numerically, revenue
// by value, strings bytewise.
func compareValues(a, b any) int {
	num := func(v any) (float64, bool) {
		switch v := v.(type) {
		case int64:
			return float64(v), true
		case float64:
			return v, true
		case *engine.Revenue:
			if v == nil {
				return 0, false
			}
			return v.Value, true
		}
		return 0, false
	}
	an, aok := num(a)
	bn, bok := num(b)
	switch {
	case a == nil || a == (*engine.Revenue)(nil):
		if b == nil || b == (*engine.Revenue)(nil) {
			return 0
		}
		return -1
	case b == nil || b == (*engine.Revenue)(nil):
		return 1
	case aok && bok:
		switch {
		case an < bn:
			return -1
		case an > bn:
			return 1
		}
		return 0
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// refSort sorts rows by the order_by keys, then (ref) by dimension values
// ascending so that the order is total.
func refSort(rows []engine.QueryRow, r *engine.ResolvedQuery) {
	sort.SliceStable(rows, func(i, j int) bool {
		if c := compareOrder(r, rows[i], rows[j]); c != 0 {
			return c < 0
		}
		for k := range rows[i].Dimensions {
			if c := compareValues(rows[i].Dimensions[k], rows[j].Dimensions[k]); c != 0 {
				return c < 0
			}
		}
		return false
	})
}

// compareOrder compares two rows on the order_by keys only.
func compareOrder(r *engine.ResolvedQuery, a, b engine.QueryRow) int {
	for _, o := range r.OrderBy {
		c := compareValues(orderKey(r, a, o.Key), orderKey(r, b, o.Key))
		if o.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// locAt is the website's time zone at t.
func (s *segSite) locAt(t time.Time) *time.Location {
	if s.OldLoc != nil && t.Before(s.ZoneChange) {
		return s.OldLoc
	}
	return s.Loc
}

// querySite is what Resolve needs of the reference's website.
func (s *segSite) querySite(now time.Time) engine.QuerySite {
	qs := engine.QuerySite{Domain: s.Domain, Location: s.Loc, Now: now}
	for _, g := range s.Goals {
		qs.Goals = append(qs.Goals, goalName(g))
	}
	first := int64(math.MaxInt64)
	for _, h := range s.Hits {
		if h.Engagement == nil {
			first = min(first, h.Time.UnixMilli())
		}
	}
	if first != math.MaxInt64 {
		t := time.UnixMilli(first)
		qs.StatsStart = engine.DateFromTime(t.In(s.locAt(t)))
	}
	return qs
}

// diffResult compares an answer got with the reference's want (all: the
// reference's rows before pagination). Rows must come in the order_by order;
// rows tied on every order_by key may come in any order (and, at a page's
// edge, be any of the tied rows), but each must be a row of all, exactly.
// It returns "" when they agree, else a readable diff.
func diffResult(r *engine.ResolvedQuery, want, got engine.QueryResult, all []engine.QueryRow) string {
	var out strings.Builder
	if d := cmp.Diff(want.Meta, got.Meta, refCmpOpts...); d != "" {
		fmt.Fprintf(&out, "meta mismatch (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want.Query, got.Query, refCmpOpts...); d != "" {
		fmt.Fprintf(&out, "query echo mismatch (-want +got):\n%s", d)
	}
	if reason := rowsAgree(r, want.Results, got.Results, all); reason != "" {
		fmt.Fprintf(&out, "results: %s\nresults mismatch (-want +got):\n%s", reason, cmp.Diff(want.Results, got.Results, refCmpOpts...))
	}
	return out.String()
}

func rowsAgree(r *engine.ResolvedQuery, want, got, all []engine.QueryRow) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d rows, want %d", len(got), len(want))
	}
	byKey := map[string]engine.QueryRow{}
	for _, x := range all {
		byKey[tupleKey(x.Dimensions)] = x
	}
	seen := map[string]bool{}
	for i := range got {
		k := tupleKey(got[i].Dimensions)
		if seen[k] {
			return fmt.Sprintf("row %d: dimensions %v twice", i, got[i].Dimensions)
		}
		seen[k] = true
		ref, ok := byKey[k]
		if !ok {
			return fmt.Sprintf("row %d: dimensions %v: no such row", i, got[i].Dimensions)
		}
		if !cmp.Equal(ref, got[i], refCmpOpts...) {
			return fmt.Sprintf("row %d: %v: values differ", i, got[i].Dimensions)
		}
		if compareOrder(r, want[i], got[i]) != 0 {
			return fmt.Sprintf("row %d: out of order_by order", i)
		}
	}
	return ""
}

// refCmpOpts compare revenue by value and currency (the short and long
// renderings are not modelled) and warnings by code.
var refCmpOpts = []cmp.Option{
	cmp.Comparer(func(a, b *engine.Revenue) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Value == b.Value && a.Currency == b.Currency
	}),
	cmp.Comparer(func(a, b engine.MetricWarning) bool { return a.Code == b.Code }),
}

// TestSegRefHelpers pins the reference's own parsing rules to the documents.
func TestSegRefHelpers(t *testing.T) {
	for _, tt := range []struct {
		pattern, path string
		want          bool
	}{
		{"/blog**", "/blog", true}, {"/blog**", "/blog/a/b", true}, {"/blog**", "/blo", false},
		{"/docs/*", "/docs/a", true}, {"/docs/*", "/docs/", true}, {"/docs/*", "/doc", false},
		{"*/b", "/a/b", true}, {"*/b", "/a/c", false}, {"/a.b", "/axb", false},
	} {
		if got := goalPattern(tt.pattern).MatchString(tt.path); got != tt.want {
			t.Errorf("goal %q on %q = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	for _, tt := range []struct {
		query, referrer         string
		source, refURL, channel string
	}{
		{"", "", "", "", "Direct"},
		{"", "https://example.com/a", "", "", "Direct"},
		{"", "https://www.google.com/", "Google", "google.com", "Organic Search"},
		{"", "https://blog.example.net/post/1", "blog.example.net", "blog.example.net/post/1", "Referral"},
		{"utm_source=newsletter&utm_medium=email", "https://www.google.com/", "newsletter", "google.com", "Email"},
		{"utm_campaign=ad", "", "", "", "Direct"},
	} {
		src, ref, ch := refSource(segDomain, tt.query, tt.referrer)
		if src != tt.source || ref != tt.refURL || ch != tt.channel {
			t.Errorf("refSource(%q, %q) = %q, %q, %q, want %q, %q, %q", tt.query, tt.referrer, src, ref, ch, tt.source, tt.refURL, tt.channel)
		}
	}
}

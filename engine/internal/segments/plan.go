package segments

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/query"
)

// valueGroup returns the group of the plan's one dimension's value id
// (the key's; a dictionary id of sd), creating it: found by the value's
// id in the engine's table when the day has them (Plan.gids), else by
// its string (globalGroup).
func (p *Plan) valueGroup(sd *Day, id uint32) *Group {
	if p.gids == nil || int(id) >= len(p.gids.IDs) {
		return p.globalGroup(sd)
	}
	x := p.gids.IDs[id].Load()
	if x == 0 {
		if p.Intern.Full.Load() {
			return p.globalGroup(sd) // no new ids: no lock to take
		}
		gid, ok := p.Intern.ID(sd.Strs[id])
		if !ok {
			return p.globalGroup(sd)
		}
		x = gid + 1
		p.gids.IDs[id].Store(x)
	}
	bits := p.GidBits
	page, off := int((x-1)>>bits), (x-1)&(1<<bits-1)
	if page >= len(p.gidGroups) {
		p.gidGroups = append(p.gidGroups, make([][]*Group, page+1-len(p.gidGroups))...)
	}
	if p.gidGroups[page] == nil {
		p.gidGroups[page] = make([]*Group, 1<<bits)
	}
	if g := p.gidGroups[page][off]; g != nil {
		p.gidFound++
		return g
	}
	g := p.globalGroup(sd)
	if g != nil {
		p.gidGroups[page][off] = g
	}
	return g
}

// dictValue reports whether the ids of dimension s are dictionary ids of
// the day (a column's: hitCol, visitCol), those valueGroup takes.
func (s dimSpec) dictValue() bool {
	switch s.kind {
	case dkGoal, dkProp, dkTime, dkCity:
		return false
	}
	return true
}

// maxGoalMemo bounds the bytes a plan memoises of pageview goal matches a
// day (a byte per goal and string of the day).
const maxGoalMemo = 16 << 20

// MaxGroups bounds the groups (distinct dimension values) one query
// makes (the engine's MaxQueryGroups): past it the query fails with a
// *query.QueryError instead of growing without bound.
const MaxGroups = 1_000_000

// QueryGroupLimit is MaxGroups, lowered by tests, never while a query
// runs: each plan reads it when made (NewPlan, groupLimit), a scan's
// workers' plans when the scan starts them.
var QueryGroupLimit = MaxGroups

// groupsError is the error of a query that groups more than limit rows.
func groupsError(limit int) *query.QueryError {
	return &query.QueryError{Msg: fmt.Sprintf("The query groups more than %d rows; add filters or fewer dimensions.", limit), Limit: "MaxQueryGroups"}
}

// Percent is 100·n/d rounded to dp decimals; 0 (or nil when nullOnZero)
// when d is 0.
func Percent(n, d int64, dp int, nullOnZero bool) any {
	if d == 0 {
		if nullOnZero {
			return nil
		}
		return 0.0
	}
	return round(100*float64(n)/float64(d), dp)
}

// round rounds half away from zero to dp decimals.
func round(f float64, dp int) float64 {
	p := math.Pow10(dp)
	return math.Round(f*p) / p
}

// Plan is a query compiled for scanning.
type Plan struct {
	Query *query.ResolvedQuery
	Goals *GoalSet
	dims  []dimSpec
	page  int // position of the event:page dimension, or -1

	filter *fnode // nil: none
	// pageFilters are the top-level event:page leaves (bounce rate is
	// limited to visits that entered on a matching page).
	pageFilters []*fnode
	// The top-level filters split: those that depend only on the hit's
	// visit (tested once per visit and day, the answer kept in vpass) and
	// the others (tested per hit).
	visitConj, hitConj []*fnode
	vpass              []uint8 // by visit row: 0 unknown, 1 passes, 2 fails
	settled            bool    // a 0 in vpass passes (settle)
	// memoKey names the simple visit-level filters (their leaves' keys),
	// "" for none; allSimple: every visit-level filter is one.
	memoKey   string
	allSimple bool
	// hitLeaves: every hit-level filter is a leaf on a column of hit rows
	// (hitCol), tested with its memo alone (countVisitHits).
	hitLeaves  bool
	hitCols    [][]uint32 // the current day's columns of hitConj's leaves
	orphanPass uint8

	needSess bool // bounce_rate, visit_duration or views_per_visit asked
	needEng  bool // time_on_page or scroll_depth asked
	needRev  bool

	from, to int64 // Unix seconds, inclusive
	// byDay: the range is whole local days [firstDay, lastDay], and a hit
	// is in it by the local day it was counted under (SPEC §10.1), not by
	// its time; only sub-day ranges compare times (inRange).
	ByDay             bool
	firstDay, lastDay buckets.Date
	// date is the day of the segments being scanned, nextMid the instant
	// (Unix ms) its next day starts, for hits without a day (hitDay).
	date      buckets.Date
	nextMid   int64
	Daily     bool                    // the engine's salt period is one day (hitDay)
	dayLabels map[buckets.Date]uint32 // time label ids by day (byDay)

	groups map[string]*Group
	order  []*Group
	// groupLimit is the most groups the query may make (QueryGroupLimit).
	groupLimit int
	keyBuf     []byte // globalGroup's
	// groupSlab and dimSlab are globalGroup's chunks of new groups and
	// of their values.
	groupSlab []Group
	dimSlab   []any

	// visitOnly: every dimension is the visit's (none of the hit, time
	// or goal), so a visit's hits fall in one group.
	visitOnly bool

	// Per-day state.
	day     int      // counts the days scanned
	touched []*Group // groups with rows in the current day
	scratch []uint32
	passing []uint32 // scanDay's list of the passing visits
	vgroup  []*Group // scanDay's groups by visit row
	mark    []int32  // by visit row: the id of the group that last counted it
	dense   []uint64
	sd      *Day
	// SoloDays are the days of the scan whose visits are all of one salt
	// period that no other day of the scan holds (scanPlan; read only,
	// shared with the workers' plans). solo says the current day is one:
	// a group's visitors of the day are then counted, not kept in a
	// bitmap, with stamp (by visitor id, the stampGen of the last group
	// that counted it).
	SoloDays  map[*Day]bool
	solo      bool
	stamp     []uint32
	stampGen  uint32
	dayGroups map[gkey]*Group // the groups of the day's keys
	// dayGroup0 is the day's one group of a query without dimensions;
	// dayGroup1 the day's groups of a query of one dimension by its id,
	// for ids below maxDenseKey (dictionary ids, time labels, goals): a
	// slice instead of hashing a gkey per hit.
	dayGroup0 *Group
	dayGroup1 []*Group
	// bases are the totals of p.touched before the current day, kept
	// while keepBases (the day's breakdown goes to its memo).
	bases     []Totals
	keepBases bool
	// memoDimKey is dimMemoKey's answer, once asked.
	memoDimKey *string
	// intern is the engine's table of values (scanPlan); gids the
	// current day's ids in it, nil when the day has none or the plan's
	// dimensions are not one of dictionary values; gidGroups the groups
	// by those ids, in pages of 1<<gidBits (valueGroup).
	Intern *Interns
	// dimBytes counts what the days' memos keep of breakdowns
	// (Engine.counters.dimMemos); nil: keep none.
	DimBytes  *atomic.Int64
	gids      *Gids
	gidGroups [][]*Group
	gidFound  int64 // groups found by id, this day (InternStats.Found)
	GidBits   int   // GidPageBits when the plan started
	// slots memoises timeLabel by 15-minute slot, direct-mapped: a day's
	// 96-odd consecutive slots never collide, and a lookup is an index,
	// not a hash.
	slots    *[slotCacheSize]slotEntry
	labels   []string
	labelIDs map[string]uint32
	key      []uint32

	Warnings map[string]query.MetricWarning
	revGoals []int // revenue goals in scope
	// dimGoals are the goals an event:goal dimension lists: those every
	// top-level event:goal filter selects (all goals without one).
	dimGoals []int
	// regexps counts the compiled size of the filters' regular
	// expressions (MaxRegexpProgram).
	regexps regexpBudget
	// goalMemo caches, for the current day, whether a page converts a
	// pageview goal: by goal, by string id, 0 unknown, 1 yes, 2 no. A
	// goal's is sized to the day's dictionary the first time the day
	// tests it (empty until then), so each goal's regular expression runs
	// once per distinct page and day, not once per hit.
	goalMemo [][]uint8
	Err      error
	// shared is the scan a worker's plan is part of (ScanParallel); nil
	// for the query's own plan.
	shared *scanShared
}

// Group is one row under construction.
type Group struct {
	// What countHits writes for each hit comes first, together: 56 bytes,
	// one or two cache lines (they were spread over four).
	day               int    // the plan's day counter when last touched
	lastV             uint32 // 1 + the visit row countHits last counted, this day (0: none)
	hasRows           bool
	dups              bool // rows may repeat a visit this day
	pageviews, events int64
	rows              []uint32 // visit rows of the current day's visitor rows (repeats)

	key      string
	Dims     []any
	visitors map[int32]*roaring.Bitmap
	// solo counts the visitors of salt periods that one day of the scan
	// holds alone (Plan.SoloDays): exact without a bitmap.
	solo     int64
	visits   int64
	id       int32    // 1 + its index in Plan.order
	sessRows []uint32 // visit rows of the current day, session grouping (repeats)
	sess     Sess
	// revenue is the sum in millionths of the currency unit: integers,
	// so that the sum does not depend on the order days are added in
	// (ScanParallel's workers take days in any order).
	revenue     int64
	revenueN    int64
	revCurrency string
	engVisits   *roaring.Bitmap // visit rows with engagement, this day
	engMs       int64
	engN        int64
	scroll      map[uint32]int8 // visit row → max scroll, this day
	scrollSum   int64
	scrollN     int64
}

// Row is a finished row.
type Row struct {
	Dims     []any
	Metrics  []any
	Visitors int64
	g        *Group
	pos      int // the row's place before sortRows: its last key
}

func (o *Row) KeyOf(pos []int) string {
	var b strings.Builder
	for _, j := range pos {
		fmt.Fprintf(&b, "%v\x00", o.Dims[j])
	}
	return b.String()
}

func NewPlan(r *query.ResolvedQuery, goals *GoalSet) (*Plan, error) {
	p := &Plan{Query: r, Goals: goals, page: -1, groups: make(map[string]*Group), labelIDs: make(map[string]uint32), groupLimit: QueryGroupLimit}
	p.from, p.to = r.From.Unix(), r.To.Unix()
	p.ByDay = r.DateRange.From.IsZero() && r.DateRange.Period != "24h"
	p.firstDay, p.lastDay = r.FirstDay, r.LastDay
	for i, d := range r.Dimensions {
		s := specOf(d)
		p.dims = append(p.dims, s)
		if s.kind == dkHitPage {
			p.page = i
		}
	}
	p.key = make([]uint32, len(p.dims))
	p.visitOnly = !slices.ContainsFunc(p.dims, func(s dimSpec) bool { return !s.isVisit() })
	filters := r.EffectiveFilters()
	if len(filters) > 0 {
		root := query.Filter{Op: "and", Children: filters}
		n, err := p.compile(&root)
		if err != nil {
			return nil, err
		}
		p.filter = n
		for _, c := range n.kids {
			if c.leaf && c.spec.kind == dkHitPage {
				p.pageFilters = append(p.pageFilters, c)
			}
			if c.visitLevel() {
				p.visitConj = append(p.visitConj, c)
			} else {
				p.hitConj = append(p.hitConj, c)
			}
		}
		p.hitLeaves = !slices.ContainsFunc(p.hitConj, func(c *fnode) bool {
			return !c.leaf || !c.spec.onHitColumn()
		})
		// The simple visit-level filters name what a day memo keeps.
		p.allSimple = true
		for _, c := range p.visitConj {
			if c.simpleVisitLeaf() {
				p.memoKey += c.key
			} else {
				p.allSimple = false
			}
		}
	}
	for _, m := range r.Metrics {
		switch m {
		case "bounce_rate", "visit_duration", "views_per_visit":
			p.needSess = true
		case "time_on_page", "scroll_depth":
			p.needEng = true
		case "total_revenue", "average_revenue":
			p.needRev = true
		}
	}
	if p.needRev {
		p.revenueScope()
	}
	for i, g := range goals.Goals {
		ok := true
		for _, f := range r.Filters {
			if f.Dimension == "event:goal" && !matchGoalFilter(&f, g.DisplayName) {
				ok = false
			}
		}
		if ok {
			p.dimGoals = append(p.dimGoals, i)
		}
	}
	return p, nil
}

// revenueScope picks the revenue goals the revenue metrics sum: those the
// top-level event:goal filters name (all when none), with a currency.
func (p *Plan) revenueScope() {
	var goalFilters []query.Filter
	for _, f := range p.Query.Filters {
		if f.Dimension == "event:goal" {
			goalFilters = append(goalFilters, f)
		}
	}
	currencies := map[string]bool{}
	for i, g := range p.Goals.Goals {
		if g.Currency == "" {
			continue
		}
		ok := true
		for _, f := range goalFilters {
			if !matchGoalFilter(&f, g.DisplayName) {
				ok = false
			}
		}
		if ok {
			p.revGoals = append(p.revGoals, i)
			currencies[g.Currency] = true
		}
	}
	goalDim := slices.ContainsFunc(p.dims, func(s dimSpec) bool { return s.kind == dkGoal })
	code := ""
	switch {
	case len(p.revGoals) == 0:
		code = "no_revenue_goals_matching"
	case len(currencies) > 1 && !goalDim:
		code = "no_single_revenue_currency"
	}
	if code != "" {
		p.Warnings = map[string]query.MetricWarning{}
		for _, m := range p.Query.Metrics {
			if m == "total_revenue" || m == "average_revenue" {
				p.Warnings[m] = query.MetricWarning{Code: code, Warning: revenueWarnings[code]}
			}
		}
		p.revGoals = nil
	}
}

var revenueWarnings = map[string]string{
	"no_revenue_goals_matching":  "Revenue metrics are null as there are no matching revenue goals.",
	"no_single_revenue_currency": "Revenue metrics are null as there are multiple currencies for the selected event:goals.",
}

func matchGoalFilter(f *query.Filter, name string) bool {
	if f.CaseInsensitive {
		name = strings.ToLower(name)
	}
	for _, c := range f.Clauses {
		if f.CaseInsensitive {
			c = strings.ToLower(c)
		}
		switch f.Op {
		case "is":
			if name == c {
				return true
			}
		case "contains":
			if strings.Contains(name, c) {
				return true
			}
		}
	}
	return false
}

package segments

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/webstats/webstats/engine/query"
)

// fnode is a compiled filter node.
type fnode struct {
	op   string
	leaf bool
	spec dimSpec
	kids []*fnode
	// A leaf's test on the displayed value.
	test func(string) bool
	// memo caches a leaf's test by dictionary id for the current day: 0
	// unknown, 1 true, 2 false.
	memo []uint8
	// A has_done/has_not_done node's visits of the current day, and
	// whether orphans (no visit) match.
	done *roaring.Bitmap
	// goal leaves: which goals (indices) the clauses select.
	goalSet []int
	// prop leaves: the key id of the current day (noKey if absent).
	keyID uint32
	// key names a leaf's test (operator, dimension, clauses, modifier),
	// for Memo.
	key string
}

const noKey = ^uint32(0)

func (p *Plan) compile(f *query.Filter) (*fnode, error) {
	n := &fnode{op: f.Op}
	switch f.Op {
	case "and", "or", "not", "has_done", "has_not_done":
		for i := range f.Children {
			k, err := p.compile(&f.Children[i])
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, k)
		}
		return n, nil
	}
	n.leaf = true
	n.spec = specOf(f.Dimension)
	if n.simpleVisitLeaf() {
		n.key = fmt.Sprintf("%q %q %q %t;", f.Op, f.Dimension, f.Clauses, f.CaseInsensitive)
	}
	fold := f.CaseInsensitive
	clauses := clausesOf(f, n.spec.blankLabel())
	var res []*regexp.Regexp
	if f.Op == "matches" || f.Op == "matches_not" {
		for _, c := range clauses {
			re, err := p.regexps.compile(c)
			if err != nil {
				return nil, err
			}
			res = append(res, re)
		}
	}
	any := anyClause(f.Op, clauses, fold, res)
	neg := strings.HasSuffix(f.Op, "_not")
	n.test = func(v string) bool { return any(v) != neg }
	if n.spec.twoNames() {
		// v is webstats' name: a clause may name it either way
		// ("Edge" or "Microsoft Edge"); a blank has no second name.
		attr := n.spec.attr
		n.test = func(v string) bool { return (any(v) || v != "" && any(plausibleName(attr, v))) != neg }
	}
	if n.spec.kind == dkGoal {
		for i, g := range p.Goals.Goals {
			if matchGoalFilter(f, g.DisplayName) {
				n.goalSet = append(n.goalSet, i)
			}
		}
	}
	if n.spec.kind == dkProp {
		// A missing key is "(none)": is/is_not test it; contains and
		// matches need the key (plausible-api.md §4).
		needKey := f.Op != "is" && f.Op != "is_not"
		inner := n.test
		n.test = func(v string) bool {
			if v == "\x00none" {
				if needKey {
					return false
				}
				return inner("(none)")
			}
			return inner(v)
		}
	}
	return n, nil
}

// clausesOf returns f's clauses as its leaf tests them: lower-cased when
// it ignores case, and label (the blank's, when the dimension has one)
// as the blank.
func clausesOf(f *query.Filter, label string) []string {
	clauses := f.Clauses
	fold := f.CaseInsensitive
	if fold || label != "" {
		clauses = make([]string, len(f.Clauses))
		for i, c := range f.Clauses {
			if fold {
				c = strings.ToLower(c)
			}
			if label != "" && (f.Op == "is" || f.Op == "is_not") && (c == label || fold && c == strings.ToLower(label)) {
				c = "" // the label names the blank
			}
			clauses[i] = c
		}
	}
	return clauses
}

// anyClause returns the test of a value against any of the clauses of a
// leaf of operator op (its regular expressions res for matches): is,
// contains or matches, whatever the negation.
func anyClause(op string, clauses []string, fold bool, res []*regexp.Regexp) func(v string) bool {
	return func(v string) bool {
		if fold {
			v = strings.ToLower(v)
		}
		switch op {
		case "is", "is_not":
			return slices.Contains(clauses, v)
		case "contains", "contains_not":
			for _, c := range clauses {
				if strings.Contains(v, c) {
					return true
				}
			}
		default:
			for _, re := range res {
				if re.MatchString(v) {
					return true
				}
			}
		}
		return false
	}
}

// startDay resets the per-day memos of the filter tree.
func (n *fnode) startDay(p *Plan, sd *Day) {
	if n == nil {
		return
	}
	if n.leaf {
		n.memo = make([]uint8, len(sd.Strs))
		if n.spec.kind == dkProp {
			n.keyID = noKey
			for i, s := range sd.Strs {
				if s == n.spec.prop {
					n.keyID = uint32(i)
					break
				}
			}
		}
		return
	}
	for _, k := range n.kids {
		k.startDay(p, sd)
	}
	if n.op == "has_done" || n.op == "has_not_done" {
		n.done = roaring.New()
		for i := range sd.Hits() {
			if sd.HKind[i] == KindEngagement || sd.HVisit[i] == NoVisit || !p.inRange(sd, i) {
				continue
			}
			if n.kids[0].match(p, sd, i) {
				n.done.Add(sd.HVisit[i])
			}
		}
	}
}

// visitLevel reports whether the node's answer depends only on the hit's
// visit: every leaf is a visit dimension, or it is a has_done/has_not_done.
func (n *fnode) visitLevel() bool {
	switch {
	case n.op == "has_done" || n.op == "has_not_done":
		return true
	case n.leaf:
		return n.spec.isVisit()
	}
	for _, k := range n.kids {
		if !k.visitLevel() {
			return false
		}
	}
	return true
}

// visitLeaves settles vpass for the simple visit-level filters (a leaf on
// a visit column) in one pass over the day's visits: a tight loop over the
// column and the leaf's memo, instead of a tree walk per visit. memo (sd's,
// if frozen) keeps the visits they exclude for the next query with the
// same filters: a dashboard asks a dozen of the same days.
func (p *Plan) visitLeaves(sd *Day, memo *Memo) {
	if memo != nil && p.memoKey != "" && memo.Excluded(p.memoKey, p.vpass) {
		p.settle(p.allSimple)
		return
	}
	for _, n := range p.visitConj {
		s := n.spec
		if !n.simpleVisitLeaf() {
			continue
		}
		// Without a branch on the answer (1 passes, 2 fails; vpass is 0
		// or 2 here): whether a visit passes is as likely as not, and a
		// mispredicted branch costs more than the store.
		seen, col := n.memo, visitCol(sd, s)
		for v := range p.vpass {
			id := col[v]
			m := seen[id]
			if m == 0 {
				n.memoTest(sd, id, s.filterValue)
				m = seen[id]
			}
			p.vpass[v] |= m & 2
		}
	}
	if memo != nil && p.memoKey != "" {
		memo.KeepExcluded(p.memoKey, p.vpass)
	}
	p.settle(p.allSimple)
}

// visitCol returns the column of sd that holds visit dimension s by visit
// row (visitValue's), nil for a dimension found otherwise (keysOf).
func visitCol(sd *Day, s dimSpec) []uint32 {
	switch s.kind {
	case dkEntry:
		return sd.VEntry
	case dkExit:
		return sd.VExit
	case dkEntryHost:
		return sd.VEntryHost
	case dkExitHost:
		return sd.VExitHost
	case dkVisitAttr, dkCountryName:
		return sd.VAttr[s.attr]
	}
	return nil
}

// onHitColumn reports whether s is held by a column of hit rows (hitCol).
func (s dimSpec) onHitColumn() bool {
	return s.kind == dkHitName || s.kind == dkHitPage || s.kind == dkHitHost
}

// hitCol returns the column of sd that holds hit dimension s by hit row,
// nil for a dimension found otherwise (keysOf).
func hitCol(sd *Day, s dimSpec) []uint32 {
	switch s.kind {
	case dkHitName:
		return sd.HName
	case dkHitPage:
		return sd.HPage
	case dkHitHost:
		return sd.HHost
	}
	return nil
}

// group1 returns the group of value id of the plan's one dimension (a
// column's: hitCol, visitCol) on the current day, nil on error (p.err).
func (p *Plan) group1(sd *Day, id uint32) *Group {
	if int(id) < len(p.dayGroup1) {
		if g := p.dayGroup1[id]; g != nil {
			return g
		}
	}
	p.key[0] = id
	return p.group(sd)
}

// settle records that vpass settled every visit (a 0 passes), when every
// visit-level filter was a simple one (all).
func (p *Plan) settle(all bool) { p.settled = all }

// simpleVisitLeaf reports whether n is a leaf on a visit column that
// visitLeaves tests in its loop.
func (n *fnode) simpleVisitLeaf() bool {
	s := n.spec
	return n.leaf && s.kind >= dkVisitAttr && s.kind != dkCity && s.kind != dkCountryName
}

// visitPasses evaluates the visit-level filters for the visit of hit i,
// once per visit and day.
func (p *Plan) visitPasses(sd *Day, i int) bool {
	if v := sd.HVisit[i]; v != NoVisit {
		if st := p.vpass[v]; st != 0 || p.settled {
			return st != 2
		}
	}
	return p.visitTest(sd, i)
}

// visitTest evaluates the visit-level filters for the visit of hit i
// and keeps the answer in vpass (orphanPass for an orphan).
func (p *Plan) visitTest(sd *Day, i int) bool {
	v := sd.HVisit[i]
	st := &p.orphanPass
	if v != NoVisit {
		st = &p.vpass[v]
	}
	if *st == 0 {
		*st = 1
		for _, n := range p.visitConj {
			if !n.match(p, sd, i) {
				*st = 2
				break
			}
		}
	}
	return *st == 1
}

// passes evaluates the plan's filters on hit i: the visit-level ones once
// per visit and day.
func (p *Plan) passes(sd *Day, i int) bool {
	if len(p.visitConj) > 0 && !p.visitPasses(sd, i) {
		return false
	}
	for _, n := range p.hitConj {
		if !n.match(p, sd, i) {
			return false
		}
	}
	return true
}

// memoTest tests a string id with the leaf's memo.
func (n *fnode) memoTest(sd *Day, id uint32, display func(string) string) bool {
	if int(id) < len(n.memo) {
		switch n.memo[id] {
		case 1:
			return true
		case 2:
			return false
		}
		ok := n.test(display(sd.Strs[id]))
		n.memo[id] = 2
		if ok {
			n.memo[id] = 1
		}
		return ok
	}
	return n.test(display(""))
}

// match evaluates the node on hit i of sd.
func (n *fnode) match(p *Plan, sd *Day, i int) bool {
	switch n.op {
	case "and":
		for _, k := range n.kids {
			if !k.match(p, sd, i) {
				return false
			}
		}
		return true
	case "or":
		for _, k := range n.kids {
			if k.match(p, sd, i) {
				return true
			}
		}
		return false
	case "not":
		return !n.kids[0].match(p, sd, i)
	case "has_done":
		v := sd.HVisit[i]
		return v != NoVisit && n.done.Contains(v)
	case "has_not_done":
		v := sd.HVisit[i]
		return v == NoVisit || !n.done.Contains(v)
	}
	s := n.spec
	v := sd.HVisit[i]
	switch s.kind {
	case dkHitName:
		return n.memoTest(sd, sd.HName[i], s.filterValue)
	case dkHitPage:
		return n.memoTest(sd, sd.HPage[i], s.filterValue)
	case dkHitHost:
		return n.memoTest(sd, sd.HHost[i], s.filterValue)
	case dkGoal:
		for _, g := range n.goalSet {
			if p.hitMatchesGoal(sd, i, g) {
				return true
			}
		}
		return false
	case dkProp:
		return n.test(p.propValue(sd, i, n.keyID))
	case dkCity:
		city := uint32(0)
		if v != NoVisit {
			city = sd.VCityID[v]
		}
		return n.test(strconv.FormatUint(uint64(city), 10))
	}
	if v == NoVisit {
		return n.test(s.filterValue(""))
	}
	return n.memoTest(sd, p.visitValue(sd, v, s), s.filterValue)
}

// propValue is the value of a hit's prop of key id, or "\x00none".
func (p *Plan) propValue(sd *Day, i int, key uint32) string {
	if key != noKey {
		kv := sd.PropsOf(i)
		for j := 0; j < len(kv); j += 2 {
			if kv[j] == key {
				return sd.Strs[kv[j+1]]
			}
		}
	}
	return "\x00none"
}

// visitValue is the string id of a visit dimension of visit row v.
func (p *Plan) visitValue(sd *Day, v uint32, s dimSpec) uint32 {
	return visitCol(sd, s)[v]
}

// hitMatchesGoal reports whether hit i converts goal g.
func (p *Plan) hitMatchesGoal(sd *Day, i int, g int) bool {
	goal := &p.Goals.Goals[g]
	switch sd.HKind[i] {
	case KindEvent:
		return goal.EventName != "" && sd.Strs[sd.HName[i]] == goal.EventName
	case KindPageview:
		re := p.Goals.pages[g]
		if re == nil {
			return false
		}
		if p.goalMemo == nil {
			p.goalMemo = make([][]uint8, len(p.Goals.Goals))
		}
		memo := p.goalMemo[g]
		if len(memo) == 0 && len(sd.Strs)*len(p.Goals.Goals) > maxGoalMemo {
			return re.MatchString(sd.Strs[sd.HPage[i]]) // too many to memoise
		}
		if len(memo) == 0 {
			memo = slices.Grow(memo[:0], len(sd.Strs))[:len(sd.Strs)]
			clear(memo)
			p.goalMemo[g] = memo
		}
		page := sd.HPage[i]
		if int(page) >= len(memo) {
			return re.MatchString(sd.Strs[page])
		}
		switch memo[page] {
		case 1:
			return true
		case 2:
			return false
		}
		ok := re.MatchString(sd.Strs[page])
		memo[page] = 2
		if ok {
			memo[page] = 1
		}
		return ok
	}
	return false
}

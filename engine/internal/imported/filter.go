package imported

// Filters on the imported layer: Plausible answers a filtered query from
// its imported tables when every filtered dimension (and the breakdown's)
// lives in one table (lib/plausible/stats/imported/base.ex,
// do_decide_tables; the conditions of lib/plausible/stats/imported/sql/
// where_builder.ex). Here: leaves (is, is_not, contains, contains_not,
// matches, matches_not) under and, on dimensions, tested on a row's value
// as the segments test a live one (a blank matches an is clause of its
// label).

import (
	"regexp"
	"strings"

	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/query"
)

// leaf is one filter leaf on an imported table's dimension.
type leaf struct {
	spec    dimension
	op      string
	clauses []string
	fold    bool
	res     []*regexp.Regexp
}

// filter is a conjunction of leaves; the zero value matches every row.
type filter struct {
	leaves []leaf
}

// compileFilter returns the filter of fs and the tables its leaves read;
// false if the imported layer cannot answer fs.
func compileFilter(fs []query.Filter) (*filter, map[string]bool, bool) {
	f := &filter{}
	tables := map[string]bool{}
	var walk func(fs []query.Filter) bool
	walk = func(fs []query.Filter) bool {
		for _, x := range fs {
			switch {
			case x.Op == "and":
				if !walk(x.Children) {
					return false
				}
			case query.IsLeafOp(x.Op):
				l, ok := compileLeaf(x)
				if !ok {
					return false
				}
				f.leaves = append(f.leaves, l)
				tables[l.spec.table] = true
			default:
				return false
			}
		}
		return true
	}
	return f, tables, walk(fs)
}

// compileLeaf returns the leaf of x; false if the imported layer cannot
// answer it.
func compileLeaf(x query.Filter) (leaf, bool) {
	spec, ok := dimensions[x.Dimension]
	if !ok {
		return leaf{}, false
	}
	l := leaf{spec: spec, op: strings.TrimSuffix(x.Op, "_not"), clauses: x.Clauses, fold: x.CaseInsensitive}
	if l.op == "matches" {
		for _, c := range x.Clauses {
			re, err := regexp.Compile(c)
			if err != nil {
				return leaf{}, false
			}
			l.res = append(l.res, re)
		}
	}
	if strings.HasSuffix(x.Op, "_not") {
		l.op = "!" + l.op
	}
	return l, true
}

// match reports whether row passes every leaf.
func (f *filter) match(row *plausiblezip.Row) bool {
	for i := range f.leaves {
		if !f.leaves[i].match(row) {
			return false
		}
	}
	return true
}

func (l *leaf) match(row *plausiblezip.Row) bool {
	v := row.Dims[l.spec.dim]
	if l.spec.city && v == "0" {
		v = ""
	}
	if l.spec.country && v != "" {
		v = geo.CountryName(v)
	}
	op, neg := strings.CutPrefix(l.op, "!")
	hit := false
	for i, c := range l.clauses {
		switch op {
		case "is":
			shown := v
			if v == "" && l.spec.blank != "" {
				shown = l.spec.blank
			}
			hit = eqFold(c, v, l.fold) || eqFold(c, shown, l.fold)
		case "contains":
			if l.fold {
				hit = strings.Contains(strings.ToLower(v), strings.ToLower(c))
			} else {
				hit = strings.Contains(v, c)
			}
		case "matches":
			hit = l.res[i].MatchString(v)
		}
		if hit {
			break
		}
	}
	return hit != neg
}

func eqFold(a, b string, fold bool) bool {
	if fold {
		return strings.EqualFold(a, b)
	}
	return a == b
}

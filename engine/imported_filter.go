package engine

// Filters on the imported layer: Plausible answers a filtered query from
// its imported tables when every filtered dimension (and the breakdown's)
// lives in one table (lib/plausible/stats/imported/base.ex,
// do_decide_tables; the conditions of lib/plausible/stats/imported/sql/
// where_builder.ex). Here: leaves (is, is_not, contains, contains_not,
// matches, matches_not) under and, on importedDims, tested on a row's
// value as the segments test a live one (a blank matches an is clause of
// its label).

import (
	"regexp"
	"strings"

	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/query"
)

// importLeaf is one filter leaf on an imported table's dimension.
type importLeaf struct {
	spec    importedDim
	op      string
	clauses []string
	fold    bool
	res     []*regexp.Regexp
}

// importFilter is a conjunction of leaves; the zero value matches every
// row.
type importFilter struct {
	leaves []importLeaf
}

// compileImportFilter returns the filter of fs and the tables its leaves
// read; false if the imported layer cannot answer fs.
func compileImportFilter(fs []Filter) (*importFilter, map[string]bool, bool) {
	f := &importFilter{}
	tables := map[string]bool{}
	var walk func(fs []Filter) bool
	walk = func(fs []Filter) bool {
		for _, x := range fs {
			switch {
			case x.Op == "and":
				if !walk(x.Children) {
					return false
				}
			case query.IsLeafOp(x.Op):
				spec, ok := importedDims[x.Dimension]
				if !ok {
					return false
				}
				leaf := importLeaf{spec: spec, op: strings.TrimSuffix(x.Op, "_not"), clauses: x.Clauses, fold: x.CaseInsensitive}
				if leaf.op == "matches" {
					for _, c := range x.Clauses {
						re, err := regexp.Compile(c)
						if err != nil {
							return false
						}
						leaf.res = append(leaf.res, re)
					}
				}
				if strings.HasSuffix(x.Op, "_not") {
					leaf.op = "!" + leaf.op
				}
				f.leaves = append(f.leaves, leaf)
				tables[spec.table] = true
			default:
				return false
			}
		}
		return true
	}
	return f, tables, walk(fs)
}

// match reports whether row passes every leaf.
func (f *importFilter) match(row *plausiblezip.Row) bool {
	for i := range f.leaves {
		if !f.leaves[i].match(row) {
			return false
		}
	}
	return true
}

func (l *importLeaf) match(row *plausiblezip.Row) bool {
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

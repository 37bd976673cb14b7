package engine

// Queries with include.imports (SPEC §14, plausible-api.md §2): the
// native answer merged with the imported layer's daily aggregates by
// package imported (Merge), the way Plausible merges its imported tables.

import (
	"context"

	"github.com/webstats/webstats/engine/internal/imported"
)

// queryWithImports answers q (include.imports set) for website.
func (o Owner) queryWithImports(ctx context.Context, website uint32, q Query) (QueryResult, error) {
	plain := q.Clone()
	plain.Include.Imports = false
	res, err := o.query(ctx, website, plain)
	if err != nil {
		return QueryResult{}, err
	}
	res.Query.Include.Imports = true
	list, err := o.importsOf(website)
	if err != nil {
		return QueryResult{}, err
	}
	first, last, ok := imported.Days(&res.Query)
	if earliest, found := imported.Earliest(list); ok && found && q.DateRange.Period == "all" && earliest < first {
		// "all" starts at the site's first day, imported days included
		// (Plausible's Sites.stats_start_date takes the earliest import).
		plain.DateRange = DateRange{FromDay: earliest, ToDay: last}
		q.DateRange = plain.DateRange
		if res, err = o.query(ctx, website, plain); err != nil {
			return QueryResult{}, err
		}
		res.Query.Include.Imports = true
		first = earliest
	}
	m, reason := imported.Decide(&res.Query, list, first, last, ok)
	if reason != "" {
		f := false
		res.Meta.ImportsIncluded, res.Meta.ImportsSkipReason = &f, reason
		if w := imported.Warning(reason); w != "" {
			res.Meta.ImportsWarning = w
		}
		return res, nil
	}
	if err := o.nativeRows(ctx, website, q, m); err != nil {
		return QueryResult{}, err
	}
	for _, d := range list {
		m.AddImport(d)
	}
	t := true
	res.Meta.ImportsIncluded, res.Meta.ImportsSkipReason = &t, ""
	page := m.Page()
	res.Results = make([]QueryRow, len(page))
	for i, r := range page {
		res.Results[i] = QueryRow(r)
	}
	if res.Meta.TotalRows != nil {
		n := m.Len()
		res.Meta.TotalRows = &n
	}
	return res, nil
}

// nativeRows adds to m every native row of q (all pages), with the
// metrics the merge needs besides q's.
func (o Owner) nativeRows(ctx context.Context, website uint32, q Query, m *imported.Merge) error {
	wide := q.Clone()
	wide.Include = Include{}
	// Every row in one query (MaxQueryGroups bounds them): a query per
	// page would group every row again for each page.
	wide.Pagination = Pagination{}
	wide.Metrics = m.Wide(q.Metrics)
	native, err := o.query(context.WithValue(ctx, allRowsKey{}, true), website, wide)
	if err != nil {
		return err
	}
	for _, row := range native.Results {
		m.AddNative(row.Dimensions, row.Metrics)
	}
	return nil
}

// allRowsKey marks the context of a query answering every row, whatever
// its pagination (Owner.query; set only by nativeRows).
type allRowsKey struct{}

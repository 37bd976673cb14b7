package pages

import (
	"context"
	"strconv"

	"github.com/webstats/webstats/engine"
)

// The full tables of the statistics (/stats/:domain/:name and its CSV):
// through Query when it has the statistic's dimension (statSeg), so they
// show what the overview's card and the Stats API show; from the day
// buckets for the statistics Query has no dimension for (continents,
// languages, resolutions, the hourly and daily series).

// tablePage is one page of a statistic's full table.
type tablePage struct {
	Rows           []row      // as shown
	Header         []string   // the CSV's header
	Records        [][]string // the rows as CSV records
	Total          int        // rows in all
	Page, LastPage int
}

// tablePage answers page (1-based, per rows, at most
// engine.MaxQueryLimit) of statistic t over dr, with sp's search and sort.
// A page past the last is the last.
func (p *Pages) tablePage(ctx context.Context, v *visit, t table, dr dateRange, sp statParams, page, per int) (tablePage, error) {
	st, ok := statSeg(t.Name)
	if !ok {
		return p.statTablePage(ctx, v, t, dr, sp, page, per)
	}
	q := st.query(dr, nil)
	show := st.Dims[st.Show]
	if sp.Search != "" {
		q.Filters = append(q.Filters, engine.Filter{Op: "contains", Dimension: show, Clauses: []string{sp.Search}, CaseInsensitive: true})
	}
	desc := sp.Sort == "desc"
	if sp.SortBy == "value" {
		q.OrderBy = []engine.OrderBy{{Key: show, Desc: desc}}
	} else {
		q.OrderBy = []engine.OrderBy{{Key: st.Metric, Desc: desc}, {Key: show}}
	}
	run := func(page int) ([]engine.QueryRow, int, error) {
		q.Pagination = engine.Pagination{Offset: (page - 1) * per, Limit: per}
		return p.segRowsOf(ctx, v.web.ID, q)
	}
	rows, total, err := run(page)
	if err != nil {
		return tablePage{}, err
	}
	last := max(1, (total+per-1)/per)
	if page > last {
		page = last
		if rows, total, err = run(page); err != nil {
			return tablePage{}, err
		}
	}
	tp := tablePage{Rows: segRows(rows, st, viewState{}, "", dr), Total: total, Page: page, LastPage: last}
	tp.Header = append(append([]string(nil), st.Dims...), st.Metric)
	for _, r := range rows {
		var rec []string
		for _, x := range r.Dimensions {
			rec = append(rec, dimString(x))
		}
		for _, m := range r.Metrics {
			rec = append(rec, strconv.FormatFloat(metricFloat(m), 'f', -1, 64))
		}
		tp.Records = append(tp.Records, rec)
	}
	for i := range tp.Rows {
		tp.Rows[i].Href = "" // the full page has no filters to add to
	}
	return tp, nil
}

// statTablePage answers a page of a statistic Query has no dimension for,
// from the day buckets.
func (p *Pages) statTablePage(ctx context.Context, v *visit, t table, dr dateRange, sp statParams, page, per int) (tablePage, error) {
	pg, err := p.e.Unscoped().Stat(ctx, engine.StatQuery{
		Website: v.web.ID, Name: t.Name, From: dr.From, To: dr.To, Search: sp.Search,
		SortBy: sp.SortBy, Asc: sp.Sort == "asc", Page: page, PerPage: per,
	})
	if err != nil {
		return tablePage{}, err
	}
	tp := tablePage{Rows: rowsOf(t.Name, pg.Rows), Header: []string{"value", "count"}, Total: pg.Total, Page: pg.Page, LastPage: pg.LastPage}
	for _, r := range pg.Rows {
		tp.Records = append(tp.Records, []string{r.Value, strconv.FormatUint(r.Count, 10)})
	}
	return tp, nil
}

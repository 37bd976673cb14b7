package segments

import (
	"math"
	"slices"
	"strings"

	"github.com/webstats/webstats/engine/query"
)

// Answer returns the answer of scanned plan p, scanning with scan the
// related queries its metrics need (the denominators of percentage and
// conversion rates).
func (p *Plan) Answer(scan func(*Plan) error) (query.Result, error) {
	r, goals := p.Query, p.Goals
	rows := p.Rows()
	if len(r.Dimensions) == 0 && len(rows) == 0 {
		rows = append(rows, p.Row(&Group{Dims: []any{}})) // an aggregate is always one row
	}
	// Metrics that need the answer of a related query.
	if slices.Contains(r.Metrics, "percentage") {
		total, err := relatedVisitors(scan, r, goals, false, nil)
		if err != nil {
			return query.Result{}, err
		}
		i := slices.Index(r.Metrics, "percentage")
		for _, row := range rows {
			row.Metrics[i] = Percent(row.Visitors, total[""], 1, true)
		}
	}
	for _, m := range []string{"conversion_rate", "group_conversion_rate"} {
		i := slices.Index(r.Metrics, m)
		if i < 0 {
			continue
		}
		var keep []int
		if m == "group_conversion_rate" {
			for j, d := range r.Dimensions {
				if d != "event:goal" {
					keep = append(keep, j)
				}
			}
		}
		denom, err := relatedVisitors(scan, r, goals, true, keep)
		if err != nil {
			return query.Result{}, err
		}
		for _, row := range rows {
			row.Metrics[i] = Percent(row.Visitors, denom[row.KeyOf(keep)], 2, false)
		}
	}
	off := min(r.Pagination.Offset, len(rows))
	end := min(off+r.Pagination.Limit, len(rows))
	if len(r.Dimensions) == 0 {
		off, end = 0, len(rows) // an aggregate is one row, whatever the page
	}
	p.SortRows(rows, end)
	total := len(rows)
	if len(r.Dimensions) == 0 {
		total = 1 // an aggregate is always one row
	}
	res := r.Answer(make([]query.Row, 0, end-off), total)
	if len(p.Warnings) > 0 {
		res.Meta.MetricWarnings = p.Warnings
	}
	for _, row := range rows[off:end] {
		res.Results = append(res.Results, query.Row{Dimensions: row.Dims, Metrics: row.Metrics})
	}
	return res, nil
}

// relatedVisitors answers the visitors of r with its dimensions reduced to
// keep (none when nil) and, when noGoals, without its top-level event:goal
// and event:props filters: the denominators of percentage and conversion
// rates, by the row key of the kept dimensions. The filters are r's
// effective ones (EffectiveFilters), those its dimensions imply included:
// the denominator counts the visitors the rows could have (an event-only
// visit has no entry hostname, SPEC §10.1).
func relatedVisitors(scan func(*Plan) error, r *query.ResolvedQuery, goals *GoalSet, noGoals bool, keep []int) (map[string]int64, error) {
	rq := *r
	rq.Filters = r.EffectiveFilters()
	rq.Metrics = []string{"visitors"}
	rq.Dimensions = nil
	for _, j := range keep {
		rq.Dimensions = append(rq.Dimensions, r.Dimensions[j])
	}
	rq.OrderBy = nil
	rq.Include = query.Include{}
	rq.Pagination = query.Pagination{Limit: math.MaxInt}
	if noGoals {
		all := rq.Filters
		rq.Filters = nil
		for _, f := range all {
			if f.Dimension == "event:goal" || strings.HasPrefix(f.Dimension, "event:props:") {
				continue
			}
			rq.Filters = append(rq.Filters, f)
		}
	}
	p, err := NewPlan(&rq, goals)
	if err != nil {
		return nil, err
	}
	if err := scan(p); err != nil {
		return nil, err
	}
	out := make(map[string]int64)
	all := make([]int, len(keep))
	for i := range all {
		all[i] = i
	}
	for _, row := range p.Rows() {
		out[row.KeyOf(all)] = row.Visitors
	}
	return out, nil
}

package query

import (
	"encoding/json"
	"slices"
)

// Echo returns the normalised query a response echoes: the range as two
// datetimes in the website's offset, "time" resolved, the default order_by
// and pagination filled in, include with its true keys only. Posting it
// back as a query resolves to the same ResolvedQuery.
func (r *ResolvedQuery) Echo() QueryEcho {
	e := QueryEcho{
		SiteID:     r.SiteID,
		Metrics:    slices.Clone(r.Metrics),
		DateRange:  [2]string{formatQueryInstant(r.From), formatQueryInstant(r.To)},
		Filters:    cloneFilters(r.Filters),
		Dimensions: slices.Clone(r.Dimensions),
		OrderBy:    slices.Clone(r.OrderBy),
		Include:    r.Include,
		Pagination: r.Pagination,
	}
	if e.Filters == nil {
		e.Filters = []Filter{}
	}
	if e.Dimensions == nil {
		e.Dimensions = []string{}
	}
	return e
}

// hostnameDimensions maps the dimensions an event:hostname filter also
// applies to, to the session hostname it applies as (plausible-api.md §4).
var hostnameDimensions = map[string]string{
	"visit:source": "visit:entry_page_hostname", "visit:referrer": "visit:entry_page_hostname",
	"visit:entry_page": "visit:entry_page_hostname", "visit:utm_medium": "visit:entry_page_hostname",
	"visit:utm_source": "visit:entry_page_hostname", "visit:utm_campaign": "visit:entry_page_hostname",
	"visit:utm_content": "visit:entry_page_hostname", "visit:utm_term": "visit:entry_page_hostname",
	"visit:exit_page": "visit:exit_page_hostname",
}

// EffectiveFilters returns the filters to evaluate: Filters plus, for each
// top-level event:hostname filter and each dimension among source,
// referrer, the UTM fields and the entry page, the same filter on
// visit:entry_page_hostname (visit:exit_page_hostname for the exit page),
// so that one host does not show sources that arrived on another. The echo
// keeps Filters as asked. The slice is the caller's.
func (r *ResolvedQuery) EffectiveFilters() []Filter {
	out := cloneFilters(r.Filters)
	for _, d := range r.Dimensions {
		target, ok := hostnameDimensions[d]
		if !ok {
			continue
		}
		for _, f := range r.Filters {
			if IsLeafOp(f.Op) && f.Dimension == "event:hostname" {
				f.Dimension = target
				f.Clauses = slices.Clone(f.Clauses)
				out = append(out, f)
			}
		}
	}
	return out
}

// MarshalJSON writes the echo (Echo), not the embedded Query's request form.
func (r ResolvedQuery) MarshalJSON() ([]byte, error) { return json.Marshal(r.Echo()) }

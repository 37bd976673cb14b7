package query

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Result is the answer to a query: Plausible's response body.
type Result struct {
	Results []Row     `json:"results"`
	Meta    Meta      `json:"meta"`
	Query   QueryEcho `json:"query"`
}

// Row is one row: dimension values in the order of the query's
// dimensions (strings; visit:city is an int64 GeoNames id), metric values
// in the order of its metrics (int64, float64, nil or *Revenue).
type Row struct {
	Dimensions []any `json:"dimensions"`
	Metrics    []any `json:"metrics"`
}

// Meta is a response's meta: empty unless the query asked for extras.
type Meta struct {
	ImportsIncluded   *bool                    `json:"imports_included,omitempty"`
	ImportsSkipReason string                   `json:"imports_skip_reason,omitempty"`
	ImportsWarning    string                   `json:"imports_warning,omitempty"`
	MetricWarnings    map[string]MetricWarning `json:"metric_warnings,omitempty"`
	TimeLabels        []string                 `json:"time_labels,omitempty"`
	TotalRows         *int                     `json:"total_rows,omitempty"`
}

var _ json.Marshaler = Result{}

// MarshalJSON writes Plausible's body: results, meta, query in that order,
// whole float metrics with their decimal point (50.0, as Plausible writes
// percentages and rates), and <, > and & unescaped.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	p.Results = make([]Row, len(r.Results))
	for i, row := range r.Results {
		ms := make([]any, len(row.Metrics))
		for j, m := range row.Metrics {
			if f, ok := m.(float64); ok && !math.IsInf(f, 0) && !math.IsNaN(f) {
				m = json.Number(floatJSON(f))
			}
			ms[j] = m
		}
		p.Results[i] = Row{Dimensions: row.Dimensions, Metrics: ms}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// floatJSON formats f as Plausible's JSON does: shortest form, with ".0"
// when whole.
func floatJSON(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// Answer returns the answer to r of rows (the page asked for, not nil),
// total rows before paging, with the meta r asks for: the answer of the
// segments or the day buckets, which hold no imported data.
func (r *ResolvedQuery) Answer(rows []Row, total int) Result {
	res := Result{Query: r.Echo(), Results: rows}
	if r.Include.TotalRows {
		res.Meta.TotalRows = &total
	}
	if r.Include.TimeLabels {
		res.Meta.TimeLabels = r.TimeLabels()
	}
	if r.Include.Imports {
		f := false
		res.Meta.ImportsIncluded, res.Meta.ImportsSkipReason = &f, "no_imported_data"
	}
	return res
}

// CountsOnly reports whether r asks only the totals of pageviews and
// events over whole local days, unfiltered: what the day buckets count
// exactly as the segments do (SPEC §10.2: "one truth") when visitor ids
// are salted daily. Visitors and visits are not: the buckets count them by
// §2.2's rule (pageviews only), the segments by Plausible's (§10.1: custom
// events start and extend visits too).
func (r *ResolvedQuery) CountsOnly() bool {
	if len(r.Dimensions) > 0 || len(r.Filters) > 0 || r.Include.TimeLabels ||
		!r.DateRange.From.IsZero() || r.DateRange.Period == "day" || r.DateRange.Period == "24h" {
		return false
	}
	for _, m := range r.Metrics {
		switch m {
		case "pageviews", "events":
		default:
			return false
		}
	}
	return true
}

package segments

import (
	"testing"

	"github.com/webstats/webstats/engine/query"
)

// TestResultClone: a clone shares no rows, values or meta with its
// original, and has no echo.
func TestResultClone(t *testing.T) {
	n, f := 1, false
	r := query.Result{Results: []query.Row{{Dimensions: []any{"x"}, Metrics: []any{&query.Revenue{Value: 1}}}},
		Meta:  query.Meta{TotalRows: &n, ImportsIncluded: &f, TimeLabels: []string{"a"}, MetricWarnings: map[string]query.MetricWarning{"m": {}}},
		Query: query.QueryEcho{SiteID: "s"}}
	c := clone(r)
	c.Results[0].Dimensions[0] = "y"
	c.Results[0].Metrics[0].(*query.Revenue).Value = 2
	*c.Meta.TotalRows, *c.Meta.ImportsIncluded = 2, true
	c.Meta.TimeLabels[0] = "b"
	c.Meta.MetricWarnings["n"] = query.MetricWarning{}
	if r.Results[0].Dimensions[0] != "x" || r.Results[0].Metrics[0].(*query.Revenue).Value != 1 || n != 1 || f ||
		r.Meta.TimeLabels[0] != "a" || len(r.Meta.MetricWarnings) != 1 {
		t.Errorf("the original changed through its clone: %+v", r)
	}
	if c.Query.SiteID != "" {
		t.Errorf("clone kept the echo %+v", c.Query)
	}
	if estimate(r) <= 64 {
		t.Errorf("Estimate %d", estimate(r))
	}
}

package query

import (
	"strings"
	"testing"
)

// TestResultJSON: Plausible's body, whole floats with their decimal
// point, <, > and & unescaped, empty meta omitted.
func TestResultJSON(t *testing.T) {
	r := Result{Results: []Row{{Dimensions: []any{"/a&b<c>"}, Metrics: []any{int64(3), 50.0, 12.5, nil, &Revenue{Value: 1, Currency: "EUR"}}}}}
	b, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"results":[{"dimensions":["/a&b<c>"],"metrics":[3,50.0,12.5,null,{"value":1,"currency":"EUR","short":"","long":""}]}],"meta":{},"query":{`
	if !strings.HasPrefix(string(b), want) {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// TestResultClone: a clone shares no rows, values or meta with its
// original, and has no echo.
func TestResultClone(t *testing.T) {
	n, f := 1, false
	r := Result{Results: []Row{{Dimensions: []any{"x"}, Metrics: []any{&Revenue{Value: 1}}}},
		Meta:  Meta{TotalRows: &n, ImportsIncluded: &f, TimeLabels: []string{"a"}, MetricWarnings: map[string]MetricWarning{"m": {}}},
		Query: QueryEcho{SiteID: "s"}}
	c := r.Clone()
	c.Results[0].Dimensions[0] = "y"
	c.Results[0].Metrics[0].(*Revenue).Value = 2
	*c.Meta.TotalRows, *c.Meta.ImportsIncluded = 2, true
	c.Meta.TimeLabels[0] = "b"
	c.Meta.MetricWarnings["n"] = MetricWarning{}
	if r.Results[0].Dimensions[0] != "x" || r.Results[0].Metrics[0].(*Revenue).Value != 1 || n != 1 || f ||
		r.Meta.TimeLabels[0] != "a" || len(r.Meta.MetricWarnings) != 1 {
		t.Errorf("the original changed through its clone: %+v", r)
	}
	if c.Query.SiteID != "" {
		t.Errorf("clone kept the echo %+v", c.Query)
	}
	if r.Estimate() <= 64 {
		t.Errorf("Estimate %d", r.Estimate())
	}
}

// TestCountsOnly: the day buckets answer only unfiltered, ungrouped
// totals of pageviews and events over whole days.
func TestCountsOnly(t *testing.T) {
	base := ResolvedQuery{}
	base.Metrics = []string{"pageviews", "events"}
	base.DateRange.Period = "7d"
	if !base.CountsOnly() {
		t.Error("totals of pageviews and events not CountsOnly")
	}
	for name, change := range map[string]func(*ResolvedQuery){
		"visitors":  func(r *ResolvedQuery) { r.Metrics = append(r.Metrics, "visitors") },
		"dimension": func(r *ResolvedQuery) { r.Dimensions = []string{"event:page"} },
		"day":       func(r *ResolvedQuery) { r.DateRange.Period = "day" },
		"labels":    func(r *ResolvedQuery) { r.Include.TimeLabels = true },
	} {
		r := base
		r.Metrics = append([]string(nil), base.Metrics...)
		change(&r)
		if r.CountsOnly() {
			t.Errorf("%s: CountsOnly", name)
		}
	}
}

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

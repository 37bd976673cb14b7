package imported

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/query"
)

// pages is an import of imported_pages and imported_sources rows.
func pages() *Data {
	day := buckets.DateOf(2024, 1, 2)
	m := func(visitors, visits, pageviews, bounces, seconds uint64) [plausiblezip.NumMetrics]uint64 {
		return [plausiblezip.NumMetrics]uint64{visitors, visits, pageviews, bounces, seconds, 0}
	}
	return &Data{Import: Import{ID: 1, From: day, To: day}, tables: map[string][]plausiblezip.Row{
		"imported_pages": {
			{Date: day, Dims: []string{"example.com", "/a"}, M: m(3, 3, 5, 0, 0)},
			{Date: day, Dims: []string{"example.com", "/b"}, M: m(2, 2, 2, 0, 0)},
			{Date: day, Dims: []string{"example.com", "/c"}, M: m(0, 0, 0, 0, 0)}, // no visitors: left out
		},
		"imported_sources": {
			{Date: day, Dims: []string{"", "", "", "", "", "", ""}, M: m(4, 4, 6, 2, 40)},
			{Date: day, Dims: []string{"Google", "", "", "", "", "", ""}, M: m(1, 1, 1, 1, 0)},
		},
	}}
}

func echo(metrics, dims []string, filters ...query.Filter) *query.QueryEcho {
	return &query.QueryEcho{Metrics: metrics, Dimensions: dims, Filters: filters,
		DateRange: [2]string{"2024-01-01T00:00:00Z", "2024-01-31T23:59:59Z"}}
}

// TestDecide: Plausible's skip reasons, in its order.
func TestDecide(t *testing.T) {
	d := pages()
	for _, c := range []struct {
		name string
		q    *query.QueryEcho
		list []*Data
		want string
	}{
		{name: "none", q: echo([]string{"visitors"}, nil), want: NoData},
		{name: "out of range", q: &query.QueryEcho{Metrics: []string{"visitors"}, DateRange: [2]string{"2023-01-01T00:00:00Z", "2023-01-31T23:59:59Z"}}, list: []*Data{d}, want: OutOfRange},
		{name: "hours", q: echo([]string{"visitors"}, []string{"time:hour"}), list: []*Data{d}, want: UnsupportedInterval},
		{name: "metric", q: echo([]string{"conversion_rate"}, nil), list: []*Data{d}, want: UnsupportedQuery},
		{name: "two tables", q: echo([]string{"visitors"}, []string{"event:page"}, query.Filter{Op: "is", Dimension: "visit:source", Clauses: []string{"Google"}}), list: []*Data{d}, want: UnsupportedQuery},
		{name: "two dimensions", q: echo([]string{"visitors"}, []string{"event:page", "visit:source"}), list: []*Data{d}, want: UnsupportedQuery},
		{name: "page by day", q: echo([]string{"visitors"}, []string{"time:day", "event:page"}), list: []*Data{d}, want: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			first, last, ok := Days(c.q)
			m, got := Decide(c.q, c.list, first, last, ok)
			if got != c.want || (m == nil) != (c.want != "") {
				t.Fatalf("Decide: %q (merge %v), want %q", got, m != nil, c.want)
			}
		})
	}
}

// TestMerge: native rows and imported rows of one dimension value are
// one row; blank values take the native label; the order and the page
// are the query's.
func TestMerge(t *testing.T) {
	for _, c := range []struct {
		name   string
		q      *query.QueryEcho
		native []Row // in Wide's metrics
		want   []Row
		len    int
	}{
		{
			name:   "pages",
			q:      echo([]string{"visitors", "pageviews"}, []string{"event:page"}),
			native: []Row{{Dimensions: []any{"/b"}, Metrics: []any{int64(10), int64(20)}}},
			want: []Row{
				{Dimensions: []any{"/b"}, Metrics: []any{int64(12), int64(22)}},
				{Dimensions: []any{"/a"}, Metrics: []any{int64(3), int64(5)}},
			},
			len: 2,
		},
		{
			name: "sources, rates weighted by visits",
			q:    echo([]string{"visitors", "bounce_rate", "visit_duration"}, []string{"visit:source"}, query.Filter{Op: "is_not", Dimension: "visit:source", Clauses: []string{"Google"}}),
			// visitors, bounce_rate, visit_duration, then visits.
			native: []Row{{Dimensions: []any{"Direct / None"}, Metrics: []any{int64(4), int64(50), int64(20), int64(4)}}},
			want:   []Row{{Dimensions: []any{"Direct / None"}, Metrics: []any{int64(8), int64(50), int64(15)}}},
			len:    1,
		},
		{
			name: "aggregate",
			q:    echo([]string{"visits", "views_per_visit"}, nil),
			// visits, views_per_visit, then pageviews.
			native: []Row{{Dimensions: []any{}, Metrics: []any{int64(1), 3.0, int64(3)}}},
			want:   []Row{{Dimensions: []any{}, Metrics: []any{int64(1), 3.0}}},
			len:    1,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.q.OrderBy = []query.OrderBy{{Key: c.q.Metrics[0], Desc: true}}
			first, last, ok := Days(c.q)
			m, reason := Decide(c.q, []*Data{pages()}, first, last, ok)
			if reason != "" {
				t.Fatalf("Decide: %s", reason)
			}
			m.Wide(c.q.Metrics)
			for _, r := range c.native {
				m.AddNative(r.Dimensions, r.Metrics)
			}
			m.AddImport(pages())
			if diff := cmp.Diff(c.want, m.Page()); diff != "" {
				t.Errorf("page mismatch (-want +got):\n%s", diff)
			}
			if m.Len() != c.len {
				t.Errorf("Len %d, want %d", m.Len(), c.len)
			}
		})
	}
}

// TestFilter: the leaves on an imported row's value, as the segments
// test a live one.
func TestFilter(t *testing.T) {
	row := plausiblezip.Row{Dims: []string{"", "", "", "", "", "", ""}}
	page := plausiblezip.Row{Dims: []string{"example.com", "/Blog/post"}}
	for _, c := range []struct {
		f    query.Filter
		row  *plausiblezip.Row
		want bool
	}{
		{f: query.Filter{Op: "is", Dimension: "visit:source", Clauses: []string{"Direct / None"}}, row: &row, want: true},
		{f: query.Filter{Op: "is", Dimension: "visit:source", Clauses: []string{""}}, row: &row, want: true},
		{f: query.Filter{Op: "is_not", Dimension: "visit:source", Clauses: []string{"Direct / None"}}, row: &row, want: false},
		{f: query.Filter{Op: "contains", Dimension: "event:page", Clauses: []string{"blog"}}, row: &page, want: false},
		{f: query.Filter{Op: "contains", Dimension: "event:page", Clauses: []string{"blog"}, CaseInsensitive: true}, row: &page, want: true},
		{f: query.Filter{Op: "matches", Dimension: "event:page", Clauses: []string{"^/x", "post$"}}, row: &page, want: true},
		{f: query.Filter{Op: "matches_not", Dimension: "event:page", Clauses: []string{"post$"}}, row: &page, want: false},
	} {
		f, _, ok := compileFilter([]query.Filter{{Op: "and", Children: []query.Filter{c.f}}})
		if !ok {
			t.Fatalf("%+v: not compiled", c.f)
		}
		if got := f.match(c.row); got != c.want {
			t.Errorf("%+v on %q: %v, want %v", c.f, c.row.Dims, got, c.want)
		}
	}
	for _, f := range []query.Filter{
		{Op: "or", Children: []query.Filter{{Op: "is", Dimension: "event:page", Clauses: []string{"/"}}}},
		{Op: "is", Dimension: "event:hostname", Clauses: []string{"x"}},
		{Op: "matches", Dimension: "event:page", Clauses: []string{"("}},
	} {
		if _, _, ok := compileFilter([]query.Filter{f}); ok {
			t.Errorf("%+v compiled, want not", f)
		}
	}
}

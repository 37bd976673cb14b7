package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/webstats/webstats/buckets"
)

// testQuerySite is the site of the query model tests: UTC, "now" 2021-05-05
// 12:30:00 as in Plausible's parser tests, a few goals.
var testQuerySite = QuerySite{
	Domain: "example.com",
	Now:    time.Date(2021, 5, 5, 12, 30, 0, 0, time.UTC),
	Goals: []string{"Signup", "Purchase", "Visit /blog**", "Visit /conversion",
		"Onboarding conversion: Step 1", "Onboarding conversion: Step 2"},
}

// queryOpts compares models: locations by name, empty and nil slices alike
// except where the test says otherwise.
var queryOpts = cmp.Options{
	cmp.Comparer(func(a, b *time.Location) bool { return a.String() == b.String() }),
}

// q builds a request body from the common head and the given extra keys.
func q(extra string) string {
	head := `"site_id":"example.com","metrics":["visitors"],"date_range":"all"`
	if extra == "" {
		return "{" + head + "}"
	}
	return "{" + head + "," + extra + "}"
}

func queryErrMsg(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var qe *QueryError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v (%T) is not a *QueryError", err, err)
	}
	return qe.Msg
}

// TestParseQueryErrors checks the schema and parser messages, quoted from
// plausible-api.md §1, §4, §5, §9.22 and Plausible's parser tests.
func TestParseQueryErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{name: "no metrics", body: `{"site_id":"s","metrics":[],"date_range":"all"}`,
			want: "#/metrics: Expected a minimum of 1 items but got 0."},
		{name: "duplicate metrics", body: `{"site_id":"s","metrics":["events","visitors","visitors"],"date_range":"all"}`,
			want: "#/metrics: Expected items to be unique but they were not."},
		{name: "unknown metric (§9.22)", body: `{"site_id":"s","metrics":["visitors","baa"],"date_range":"all"}`,
			want: `#/metrics/1: Invalid metric "baa"`},
		{name: "internal metric", body: `{"site_id":"s","metrics":["exit_rate"],"date_range":"all"}`,
			want: `#/metrics/0: Invalid metric "exit_rate"`},
		{name: "several schema errors join with newlines", body: `{"site_id":"s","metrics":["baa",7],"date_range":"all"}`,
			want: "#/metrics/0: Invalid metric \"baa\"\n#/metrics/1: Invalid metric 7"},
		{name: "metrics not an array", body: `{"site_id":"s","metrics":"visitors","date_range":"all"}`,
			want: "#/metrics: Type mismatch. Expected Array but got String."},
		{name: "site_id not a string", body: `{"site_id":7,"metrics":["visitors"],"date_range":"all"}`,
			want: "#/site_id: Type mismatch. Expected String but got Integer."},
		{name: "nothing required", body: `{}`,
			want: "#: Required properties site_id, metrics, date_range were not present."},
		{name: "one required missing", body: `{"site_id":"s","date_range":"all"}`,
			want: "#: Required property metrics was not present."},
		{name: "unknown top-level key", body: `{"site_id":"s","metrics":["visitors"],"date_range":"month","date":"2021-05-05"}`,
			want: "#/date: Schema does not allow additional properties."},
		{name: "unknown key and missing keys", body: `{"foo":1}`,
			want: "#/foo: Schema does not allow additional properties.\n#: Required properties site_id, metrics, date_range were not present."},
		{name: "property errors in key order", body: `{"site_id":"s","metrics":["baa"],"date_range":"bad","zzz":1}`,
			want: "#/date_range: Invalid date range \"bad\"\n#/metrics/0: Invalid metric \"baa\"\n#/zzz: Schema does not allow additional properties."},
		{name: "not an object", body: `[1]`, want: "#: Type mismatch. Expected Object but got Array."},
		{name: "invalid JSON", body: `{"site_id":`, want: "Invalid JSON in request body."},
		{name: "trailing garbage", body: q("") + "x", want: "Invalid JSON in request body."},

		// date_range (§1)
		{name: "bad period (§1)", body: `{"site_id":"s","metrics":["visitors"],"date_range":"bad_period"}`,
			want: `#/date_range: Invalid date range "bad_period"`},
		{name: "negative days", body: `{"site_id":"s","metrics":["visitors"],"date_range":"-1d"}`,
			want: `#/date_range: Invalid date range "-1d"`},
		{name: "realtime is internal", body: `{"site_id":"s","metrics":["visitors"],"date_range":"realtime"}`,
			want: `#/date_range: Invalid date range "realtime"`},
		{name: "30m is internal", body: `{"site_id":"s","metrics":["visitors"],"date_range":"30m"}`,
			want: `#/date_range: Invalid date range "30m"`},
		{name: "bad date pair", body: `{"site_id":"s","metrics":["visitors"],"date_range":["21415-00","eee"]}`,
			want: `#/date_range: Invalid date range ["21415-00", "eee"]`},
		{name: "date with datetime", body: `{"site_id":"s","metrics":["visitors"],"date_range":["2021-02-03T00:00:00Z","2021-02-04"]}`,
			want: `#/date_range: Invalid date range ["2021-02-03T00:00:00Z", "2021-02-04"]`},
		{name: "offset out of range", body: `{"site_id":"s","metrics":["visitors"],"date_range":["2021-02-03T00:00:00-25:00","2021-02-03T23:59:59-25:00"]}`,
			want: `#/date_range: Invalid date range ["2021-02-03T00:00:00-25:00", "2021-02-03T23:59:59-25:00"]`},
		{name: "too many months", body: `{"site_id":"s","metrics":["visitors"],"date_range":"999999999mo"}`,
			want: `Invalid date_range "999999999mo"`},
		{name: "zero days", body: `{"site_id":"s","metrics":["visitors"],"date_range":"0d"}`,
			want: `Invalid date_range "0d"`},
		{name: "5001 days", body: `{"site_id":"s","metrics":["visitors"],"date_range":"5001d"}`,
			want: `Invalid date_range "5001d"`},
		{name: "datetimes without offset", body: `{"site_id":"s","metrics":["visitors"],"date_range":["2021-02-03T00:00:00","2021-02-03T23:59:59"]}`,
			want: `Invalid date_range '["2021-02-03T00:00:00", "2021-02-03T23:59:59"]'.`},
		{name: "impossible date", body: `{"site_id":"s","metrics":["visitors"],"date_range":["2021-02-30","2021-03-01"]}`,
			want: `Invalid date_range '["2021-02-30", "2021-03-01"]'.`},

		// dimensions (§3)
		{name: "unknown dimension (§5)", body: q(`"dimensions":["badproperty"]`), want: `#/dimensions/0: Invalid dimension "badproperty"`},
		{name: "metric as dimension", body: q(`"dimensions":["visitors"]`), want: `#/dimensions/0: Invalid dimension "visitors"`},
		{name: "time:minute is internal", body: q(`"dimensions":["time:minute"]`), want: `#/dimensions/0: Invalid dimension "time:minute"`},
		{name: "empty props key", body: q(`"dimensions":["event:props:"]`), want: `#/dimensions/0: Invalid dimension "event:props:"`},
		{name: "dimensions not an array", body: q(`"dimensions":"foobar"`), want: "#/dimensions: Type mismatch. Expected Array but got String."},
		{name: "duplicate dimensions", body: q(`"dimensions":["event:name","event:name"]`), want: "#/dimensions: Expected items to be unique but they were not."},

		// filters (§4)
		{name: "filters not an array", body: q(`"filters":"foobar"`), want: "#/filters: Type mismatch. Expected Array but got String."},
		{name: "clauses not a list", body: q(`"filters":[["is","event:name","foo"]]`), want: `#/filters/0: Invalid filter ["is", "event:name", "foo"]`},
		{name: "wildcard is internal", body: q(`"filters":[["matches_wildcard","event:name",["foo"]]]`), want: `#/filters/0: Invalid filter ["matches_wildcard", "event:name", ["foo"]]`},
		{name: "unknown operator", body: q(`"filters":[["exists?","event:name",["foo"]]]`), want: `#/filters/0: Invalid filter ["exists?", "event:name", ["foo"]]`},
		{name: "empty filter", body: q(`"filters":[[]]`), want: `#/filters/0: Invalid filter []`},
		{name: "bare and", body: q(`"filters":[["and"]]`), want: `#/filters/0: Invalid filter ["and"]`},
		{name: "empty and", body: q(`"filters":[["and",[]]]`), want: `#/filters/0: Invalid filter ["and", []]`},
		{name: "empty or", body: q(`"filters":[["or",[]]]`), want: `#/filters/0: Invalid filter ["or", []]`},
		{name: "bare not", body: q(`"filters":[["not"]]`), want: `#/filters/0: Invalid filter ["not"]`},
		{name: "not of nothing", body: q(`"filters":[["not",[]]]`), want: `#/filters/0: Invalid filter ["not", []]`},
		{name: "bare has_done", body: q(`"filters":[["has_done"]]`), want: `#/filters/0: Invalid filter ["has_done"]`},
		{name: "has_not_done of nothing", body: q(`"filters":[["has_not_done",[]]]`), want: `#/filters/0: Invalid filter ["has_not_done", []]`},
		{name: "leaf without clauses", body: q(`"filters":[["is_not","event:name"]]`), want: `#/filters/0: Invalid filter ["is_not", "event:name"]`},
		{name: "and with extra", body: q(`"filters":[["and",[["is","event:props:foobar",["value"]]],"extra"]]`),
			want: `#/filters/0: Invalid filter ["and", [["is", "event:props:foobar", ["value"]]], "extra"]`},
		{name: "not with extra", body: q(`"filters":[["not",["is","event:props:foobar",["value"]],1]]`),
			want: `#/filters/0: Invalid filter ["not", ["is", "event:props:foobar", ["value"]], 1]`},
		{name: "leaf with extra", body: q(`"filters":[["is","event:props:foobar",["value"],true]]`),
			want: `#/filters/0: Invalid filter ["is", "event:props:foobar", ["value"], true]`},
		{name: "unknown event dimension", body: q(`"filters":[["is","event:device",["foo"]]]`), want: `#/filters/0: Invalid filter ["is", "event:device", ["foo"]]`},
		{name: "unknown visit dimension", body: q(`"filters":[["is","visit:name",["foo"]]]`), want: `#/filters/0: Invalid filter ["is", "visit:name", ["foo"]]`},
		{name: "time dimension filtered", body: q(`"filters":[["is","time:day",["2021-01-01"]]]`), want: `#/filters/0: Invalid filter ["is", "time:day", ["2021-01-01"]]`},
		{name: "is_not on goals", body: q(`"filters":[["is_not","event:goal",["Signup"]]]`), want: `#/filters/0: Invalid filter ["is_not", "event:goal", ["Signup"]]`},
		{name: "case_sensitive with matches", body: q(`"filters":[["matches","event:hostname",["a.plausible.io"],{"case_sensitive":false}]]`),
			want: `#/filters/0: Invalid filter ["matches", "event:hostname", ["a.plausible.io"], %{"case_sensitive" => false}]`},
		{name: "unknown modifier", body: q(`"filters":[["is","event:page",["/"],{"case":false}]]`),
			want: `#/filters/0: Invalid filter ["is", "event:page", ["/"], %{"case" => false}]`},
		{name: "float clause", body: q(`"filters":[["is","visit:city",[1.5]]]`), want: `#/filters/0: Invalid filter ["is", "visit:city", [1.5]]`},
		{name: "second filter reported by index", body: q(`"filters":[["is","event:page",["/"]],["is","event:page"]]`),
			want: `#/filters/1: Invalid filter ["is", "event:page"]`},
		{name: "numeric clause (§4)", body: q(`"filters":[["is","visit:os_version",[123]]]`), want: `Invalid filter '["is", "visit:os_version", [123]]'.`},
		{name: "mixed city clauses", body: q(`"filters":[["is","visit:city",[123,"456"]]]`), want: `Invalid filter '["is", "visit:city", [123, "456"]]'.`},
		{name: "country USA (§4, §9.22)", body: q(`"filters":[["is","visit:country",["USA"]]]`),
			want: "Invalid visit:country filter, visit:country needs to be a valid 2-letter country code."},
		{name: "country in a nested filter", body: q(`"filters":[["not",["is_not","visit:country",["E"]]]]`),
			want: "Invalid visit:country filter, visit:country needs to be a valid 2-letter country code."},
		{name: "string segment ids", body: q(`"filters":[["is","segment",["123"]]]`), want: `Invalid filter '["is", "segment", ["123"]]'.`},
		{name: "escaped strings", body: q(`"filters":[["is","event:page",["a\"b\\c\n#{x}"],7]]`),
			want: `#/filters/0: Invalid filter ["is", "event:page", ["a\"b\\c\n\#{x}"], 7]`},
		{name: "control characters as bytes", body: q(`"filters":[["is","event:nope",["a\u0000"]]]`),
			want: `#/filters/0: Invalid filter ["is", "event:nope", [<<97, 0>>]]`},

		// order_by, include, pagination (§1)
		{name: "order by unknown", body: q(`"order_by":[["visssss","desc"]]`), want: `#/order_by/0/0: Invalid value in order_by "visssss"`},
		{name: "order by goal", body: q(`"dimensions":["event:goal"],"order_by":[["event:goal","desc"]]`), want: `#/order_by/0/0: Invalid value in order_by "event:goal"`},
		{name: "order direction", body: q(`"order_by":[["visitors","down"]]`), want: "#/order_by/0/1: Value is not allowed in enum."},
		{name: "order entry too short", body: q(`"order_by":[["visitors"]]`), want: "#/order_by/0: Expected a minimum of 2 items but got 1."},
		{name: "order_by not an array", body: q(`"order_by":"visitors"`), want: "#/order_by: Type mismatch. Expected Array but got String."},
		{name: "include not an object", body: q(`"include":"foobar"`), want: "#/include: Type mismatch. Expected Object but got String."},
		{name: "include comparisons is internal", body: q(`"include":{"comparisons":{"mode":"previous_period"}}`),
			want: "#/include/comparisons: Schema does not allow additional properties."},
		{name: "include value not a boolean", body: q(`"include":{"total_rows":1}`), want: "#/include/total_rows: Type mismatch. Expected Boolean but got Integer."},
		{name: "limit too large", body: q(`"pagination":{"limit":100000}`), want: "#/pagination/limit: Expected the value to be <= 10000"},
		{name: "limit zero", body: q(`"pagination":{"limit":0}`), want: "#/pagination/limit: Expected the value to be >= 1"},
		{name: "offset negative", body: q(`"pagination":{"offset":-5}`), want: "#/pagination/offset: Expected the value to be >= 0"},
		{name: "limit a float", body: q(`"pagination":{"limit":1.5}`), want: "#/pagination/limit: Type mismatch. Expected Integer but got Number."},
		{name: "limit a string", body: q(`"pagination":{"limit":"10"}`), want: "#/pagination/limit: Type mismatch. Expected Integer but got String."},
		{name: "pagination extra key", body: q(`"pagination":{"page":2}`), want: "#/pagination/page: Schema does not allow additional properties."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQuery([]byte(tt.body))
			if diff := cmp.Diff(tt.want, queryErrMsg(t, err)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueryLimits checks webstats' own bounds, which Plausible lacks.
func TestQueryLimits(t *testing.T) {
	deep := `["is","event:page",["/"]]`
	for range MaxFilterDepth + 1 {
		deep = `["not",` + deep + `]`
	}
	many := make([]string, MaxFilterNodes)
	for i := range many {
		many[i] = `["is","event:page",["/"]]`
	}
	clauses := make([]string, MaxFilterClauses+1)
	for i := range clauses {
		clauses[i] = `"/"`
	}
	dims := make([]string, MaxQueryDimensions+1)
	for i := range dims {
		dims[i] = fmt.Sprintf(`"event:props:p%d"`, i)
	}
	tests := []struct {
		name, body, limit string
	}{
		{name: "depth", body: q(`"filters":[` + deep + `]`), limit: "MaxFilterDepth"},
		{name: "nodes", body: q(`"filters":[["and",[` + strings.Join(many, ",") + `]]]`), limit: "MaxFilterNodes"},
		{name: "clauses", body: q(`"filters":[["is","event:page",[` + strings.Join(clauses, ",") + `]]]`), limit: "MaxFilterClauses"},
		{name: "dimensions", body: q(`"dimensions":[` + strings.Join(dims, ",") + `]`), limit: "MaxQueryDimensions"},
		{name: "bytes", body: q(`"site_id":"` + strings.Repeat("x", MaxQueryBytes) + `"`), limit: "MaxQueryBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQuery([]byte(tt.body))
			var qe *QueryError
			if !errors.As(err, &qe) || qe.Limit != tt.limit {
				t.Fatalf("ParseQuery error = %v, want a QueryError with Limit %s", err, tt.limit)
			}
		})
	}
	t.Run("just within the depth", func(t *testing.T) {
		deep := `["is","event:page",["/"]]`
		for range MaxFilterDepth {
			deep = `["not",` + deep + `]`
		}
		if _, err := ParseQuery([]byte(q(`"filters":[` + deep + `]`))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("time labels", func(t *testing.T) {
		qq := Query{Metrics: []string{"visitors"}, Dimensions: []string{"time:hour"}, Include: Include{TimeLabels: true},
			DateRange: DateRange{FromDay: buckets.DateOf(2000, 1, 1), ToDay: buckets.DateOf(2020, 1, 1)}}
		_, err := qq.Resolve(testQuerySite)
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Limit != "MaxTimeLabels" {
			t.Fatalf("Resolve error = %v, want Limit MaxTimeLabels", err)
		}
	})
	t.Run("range length", func(t *testing.T) {
		qq := Query{Metrics: []string{"visitors"}, DateRange: DateRange{FromDay: buckets.DateOf(1000, 1, 1), ToDay: buckets.DateOf(2020, 1, 1)}}
		_, err := qq.Resolve(testQuerySite)
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Limit != "MaxRangeDays" {
			t.Fatalf("Resolve error = %v, want Limit MaxRangeDays", err)
		}
	})
}

// TestValidateErrors checks the query builder's messages (plausible-api.md
// §2, §4, §9.19, §9.22 and Plausible's builder tests).
func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{name: "order by a metric not queried", body: q(`"order_by":[["events","desc"]]`),
			want: "Invalid order_by entry '{:events, :desc}'. Entry is not a queried metric or dimension."},
		{name: "order by a dimension not queried", body: q(`"order_by":[["event:name","desc"]]`),
			want: `Invalid order_by entry '{"event:name", :desc}'. Entry is not a queried metric or dimension.`},
		{name: "order by time:day with dimension time", body: q(`"dimensions":["time"],"order_by":[["time:day","asc"]]`),
			want: `Invalid order_by entry '{"time:day", :asc}'. Entry is not a queried metric or dimension.`},
		{name: "segment", body: q(`"filters":[["is","segment",[1]]]`),
			want: "Invalid filters. Some segments don't exist or aren't accessible."},
		{name: "eleven segments", body: q(`"filters":[["is","segment",[1,2,3,4,5,6,7,8,9,10,11]]]`),
			want: "Invalid filters. You can only use up to 10 segment filters in a query."},
		{name: "hostname below the top", body: q(`"filters":[["not",["is","event:hostname",["a.plausible.io"]]]]`),
			want: "Invalid filters. Dimension `event:hostname` can only be filtered at the top level."},
		{name: "goal below the top", body: q(`"filters":[["or",[["is","event:goal",["Signup"]],["is","event:name",["pageview"]]]]]`),
			want: "Invalid filters. Dimension `event:goal` can only be filtered at the top level."},
		{name: "props below the top with conversion rates", body: `{"site_id":"s","metrics":["conversion_rate","group_conversion_rate"],"date_range":"all","filters":[["not",["is","event:props:foo",["bar"]]]],"dimensions":["event:goal"]}`,
			want: "Invalid filters. When `conversion_rate` or `group_conversion_rate` metrics are used, custom property filters can only be used on top level."},
		{name: "has_done on a visit dimension", body: q(`"filters":[["has_done",["is","visit:browser",["Chrome"]]]]`),
			want: "Invalid filters. Behavioral filters (has_done, has_not_done) can only be used with event dimension filters."},
		{name: "has_done on country (§9.19)", body: q(`"filters":[["has_done",["is","visit:country",["EE"]]]]`),
			want: "Invalid filters. Behavioral filters (has_done, has_not_done) can only be used with event dimension filters."},
		{name: "nested behavioural filters", body: q(`"filters":[["has_done",["has_not_done",["is","visit:browser",["Chrome"]]]]]`),
			want: "Invalid filters. Behavioral filters (has_done, has_not_done) cannot be nested."},
		{name: "goal not configured (§9.22)", body: q(`"filters":[["is","event:goal",["Register"]]]`),
			want: "Invalid filters. The goal `Register` is not configured for this site. Find out how to configure goals here: https://plausible.io/docs/stats-api#filtering-by-goals"},
		{name: "goal not configured inside has_done", body: q(`"filters":[["has_done",["is","event:goal",["Unknown"]]]]`),
			want: "Invalid filters. The goal `Unknown` is not configured for this site. Find out how to configure goals here: https://plausible.io/docs/stats-api#filtering-by-goals"},
		{name: "second goal not configured", body: q(`"filters":[["is","event:goal",["Signup","Visit /thank-you"]]]`),
			want: "Invalid filters. The goal `Visit /thank-you` is not configured for this site. Find out how to configure goals here: https://plausible.io/docs/stats-api#filtering-by-goals"},
		{name: "conversion rate without a goal (§9.22)", body: `{"site_id":"s","metrics":["conversion_rate"],"date_range":"all"}`,
			want: "Metric `conversion_rate` can only be queried with event:goal filters or dimensions."},
		{name: "group conversion rate with a goal only in has_done", body: `{"site_id":"s","metrics":["group_conversion_rate"],"date_range":"all","dimensions":["visit:source"],"filters":[["has_done",["is","event:goal",["Signup"]]]]}`,
			want: "Metric `group_conversion_rate` can only be queried with event:goal filters or dimensions."},
		{name: "scroll depth alone", body: `{"site_id":"s","metrics":["scroll_depth"],"date_range":"all"}`,
			want: "Metric `scroll_depth` can only be queried with event:page filters or dimensions."},
		{name: "scroll depth with a nested page filter", body: `{"site_id":"s","metrics":["scroll_depth"],"date_range":"all","filters":[["not",["is","event:page",["/"]]]]}`,
			want: "Metric `scroll_depth` can only be queried with event:page filters or dimensions."},
		{name: "views per visit with a page filter (§9.22)", body: `{"site_id":"s","metrics":["views_per_visit"],"date_range":"all","filters":[["is","event:page",["/"]]]}`,
			want: "Metric `views_per_visit` cannot be queried with a filter on `event:page`."},
		{name: "views per visit with dimensions", body: `{"site_id":"s","metrics":["views_per_visit"],"date_range":"all","dimensions":["event:name"]}`,
			want: "Metric `views_per_visit` cannot be queried with `dimensions`."},
		{name: "time on page alone", body: `{"site_id":"s","metrics":["time_on_page"],"date_range":"all"}`,
			want: "Metric `time_on_page` can only be queried with event:page filters or dimensions."},
		{name: "time on page with only a behavioural page filter", body: `{"site_id":"s","metrics":["time_on_page"],"date_range":"all","filters":[["has_done",["is","event:page",["/"]]]]}`,
			want: "Metric `time_on_page` can only be queried with event:page filters or dimensions."},
		{name: "bounce rate by event name (§9.22)", body: `{"site_id":"s","metrics":["bounce_rate"],"date_range":"all","dimensions":["event:name"]}`,
			want: "Session metric(s) `bounce_rate` cannot be queried along with event dimension(s) `event:name`"},
		{name: "session metrics by a prop", body: `{"site_id":"s","metrics":["visitors","visit_duration","bounce_rate"],"date_range":"all","dimensions":["event:props:foo"]}`,
			want: "Session metric(s) `visit_duration`, `bounce_rate` cannot be queried along with event dimension(s) `event:props:foo`"},
		{name: "bounce rate by page and name", body: `{"site_id":"s","metrics":["bounce_rate"],"date_range":"all","dimensions":["event:page","event:name"]}`,
			want: "Session metric(s) `bounce_rate` cannot be queried along with event dimension(s) `event:page`, `event:name`"},
		{name: "events by exit page", body: `{"site_id":"s","metrics":["events"],"date_range":"all","dimensions":["visit:exit_page"]}`,
			want: "Event metric(s) `events` cannot be queried along with session dimension(s) `visit:exit_page`"},
		{name: "scroll depth by exit page", body: `{"site_id":"s","metrics":["bounce_rate","scroll_depth"],"date_range":"all","dimensions":["visit:exit_page"],"filters":[["is","event:page",["/"]]]}`,
			want: "Event metric(s) `scroll_depth` cannot be queried along with session dimension(s) `visit:exit_page`"},
		{name: "time labels without a time dimension", body: q(`"include":{"time_labels":true}`),
			want: "Invalid include.time_labels: requires a time dimension."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qq, err := ParseQuery([]byte(tt.body))
			if err != nil {
				t.Fatalf("ParseQuery: %v", err)
			}
			err = qq.Validate(testQuerySite)
			if diff := cmp.Diff(tt.want, queryErrMsg(t, err)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if _, err := qq.Resolve(testQuerySite); queryErrMsg(t, err) != tt.want {
				t.Errorf("Resolve error %v, want the same as Validate", err)
			}
		})
	}
}

// TestValidQueries are requests Plausible accepts: the worked examples of
// plausible-api.md §9 and the exceptions of §2 and §4.
func TestValidQueries(t *testing.T) {
	tests := []struct{ name, body string }{
		{"§9.1 basic metrics", `{"site_id":"s","metrics":["pageviews","visits","views_per_visit","visitors","bounce_rate","visit_duration"],"date_range":"all"}`},
		{"§9.3 visit filter", q(`"filters":[["is","visit:source",["Google"]]]`)},
		{"§9.4 page filter with session metrics", `{"site_id":"s","metrics":["pageviews","visitors","bounce_rate","visit_duration"],"date_range":"all","filters":[["is","event:page",["/blogpost"]]]}`},
		{"§9.5 source dimension", q(`"dimensions":["visit:source"]`)},
		{"§9.6 percentage", `{"site_id":"s","metrics":["visitors","percentage"],"date_range":"all","dimensions":["visit:utm_medium"]}`},
		{"percentage without dimensions", `{"site_id":"s","metrics":["percentage"],"date_range":"all"}`},
		{"§9.7 hours with labels", `{"site_id":"s","metrics":["visitors","pageviews","visits","visit_duration","bounce_rate"],"date_range":["2021-01-01","2021-01-01"],"dimensions":["time:hour"],"include":{"time_labels":true}}`},
		{"§9.11 month buckets", `{"site_id":"s","metrics":["pageviews","visitors","bounce_rate","visit_duration"],"date_range":["2020-12-01","2021-01-02"],"dimensions":["time:month"]}`},
		{"§9.12 goal filter", `{"site_id":"s","metrics":["visitors","events"],"date_range":"all","filters":[["is","event:goal",["Signup"]]]}`},
		{"§9.12 pageview goal", `{"site_id":"s","metrics":["visitors","pageviews"],"date_range":"all","filters":[["is","event:goal",["Visit /blog**"]]]}`},
		{"§9.13 conversion rate with a goal filter", `{"site_id":"s","metrics":["visitors","conversion_rate"],"date_range":"all","filters":[["is","event:goal",["Signup"]]]}`},
		{"§9.13 conversion rate by goal", `{"site_id":"s","metrics":["visitors","conversion_rate"],"date_range":"all","dimensions":["event:goal"]}`},
		{"§9.14 goal contains matches none", q(`"dimensions":["event:goal"],"filters":[["contains","event:goal",["conversion","nothing at all"]]]`)},
		{"§9.15 props with (none)", q(`"dimensions":["event:props:cost"],"filters":[["is","event:name",["Purchase"]],["is","event:props:browser",["Chrome","(none)"]]]`)},
		{"§9.16 session metrics by page", `{"site_id":"s","metrics":["visitors","visits","pageviews","events","bounce_rate","visit_duration"],"date_range":"all","dimensions":["event:page"]}`},
		{"§2 scroll depth grouped by exit page along with event:page", `{"site_id":"s","metrics":["bounce_rate","scroll_depth"],"date_range":"all","dimensions":["visit:exit_page","event:page"]}`},
		{"§2 session metrics by page and hostname", `{"site_id":"s","metrics":["bounce_rate"],"date_range":"all","dimensions":["event:page","event:hostname"]}`},
		{"§9.17 pagination", q(`"dimensions":["event:page"],"order_by":[["event:page","asc"]],"include":{"total_rows":true},"pagination":{"limit":3,"offset":3}`)},
		{"§9.18 multi-key order", q(`"dimensions":["visit:os","visit:browser"],"order_by":[["visitors","asc"],["visit:browser","desc"],["visit:os","asc"]]`)},
		{"§9.19 behavioural filter", q(`"filters":[["is","event:goal",["Signup"]],["has_done",["is","event:page",["/pricing"]]]]`)},
		{"§9.20 hostname filter", q(`"dimensions":["visit:utm_campaign"],"filters":[["is","event:hostname",["one.example.com"]]]`)},
		{"has_not_done with goal and page", q(`"filters":[["has_done",["is","event:name",["Signup"]]],["has_not_done",["or",[["is","event:goal",["Signup"]],["is","event:page",["/signup"]]]]]]`)},
		{"nested and/or/not", q(`"filters":[["or",[["and",[["is","visit:city_name",["Tallinn"]],["is","visit:country_name",["Estonia"]]]],["not",["is","visit:country_name",["Estonia"]]]]]]`)},
		{"case-insensitive goal", q(`"filters":[["is","event:goal",["signup","PURCHASE"],{"case_sensitive":false}]]`)},
		{"case_sensitive on all four operators", q(`"filters":[["is","event:page",["/a"],{"case_sensitive":false}],["is_not","event:page",["/b"],{"case_sensitive":true}],["contains","event:name",["x"],{}],["contains_not","visit:source",["y"],{"case_sensitive":false}]]`)},
		{"city ids as numbers", q(`"filters":[["is","visit:city",[588409,123]]]`)},
		{"city ids as strings", q(`"filters":[["is","visit:city",["588409"]]]`)},
		{"country contains any length", q(`"filters":[["contains","visit:country",["E"]]]`)},
		{"regex filters", q(`"filters":[["matches","event:page",["^/blog/.*"]],["matches_not","visit:browser",["Fire"]]]`)},
		{"session metric with an event filter", `{"site_id":"s","metrics":["bounce_rate"],"date_range":"all","filters":[["is","event:props:foo",["(none)"]]]}`},
		{"props filter at the top with conversion rates", `{"site_id":"s","metrics":["conversion_rate","group_conversion_rate"],"date_range":"all","filters":[["is","event:props:foo",["bar"]]],"dimensions":["event:goal"]}`},
		{"scroll depth with a top-level page filter", `{"site_id":"s","metrics":["scroll_depth"],"date_range":"all","filters":[["is","event:page",["/"]]]}`},
		{"time on page with time and page", `{"site_id":"s","metrics":["time_on_page"],"date_range":"all","dimensions":["time","event:page"]}`},
		{"revenue metrics", `{"site_id":"s","metrics":["total_revenue","average_revenue"],"date_range":"all"}`},
		{"views per visit with a goal filter", `{"site_id":"s","metrics":["views_per_visit"],"date_range":"all","filters":[["is","event:goal",["Signup"]]]}`},
		{"includes", q(`"dimensions":["time"],"include":{"imports":true,"time_labels":true,"total_rows":true}`)},
		{"legacy screen dimension", q(`"dimensions":["visit:screen"]`)},
		{"empty lists", q(`"dimensions":[],"filters":[],"order_by":[],"include":{},"pagination":{}`)},
		{"datetime range", `{"site_id":"s","metrics":["visitors"],"date_range":["2024-01-01T12:00:00+02:00","2024-01-01T15:59:59.5+02:00"]}`},
		{"91d", `{"site_id":"s","metrics":["visitors"],"date_range":"91d"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qq, err := ParseQuery([]byte(tt.body))
			if err != nil {
				t.Fatalf("ParseQuery: %v", err)
			}
			if _, err := qq.Resolve(testQuerySite); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
		})
	}
}

// TestParseQueryModel checks what ParseQuery builds.
func TestParseQueryModel(t *testing.T) {
	body := `{"site_id":"example.com","metrics":["visitors","events"],
		"date_range":["2024-01-01T12:00:00.75+02:00","2024-01-02T00:00:00Z"],
		"dimensions":["visit:city","event:goal"],
		"filters":[["is","visit:city",[588409]],
			["or",[["contains","event:page",["/Blog"],{"case_sensitive":false}],["not",["is_not","event:name",["x"],{"case_sensitive":true}]]]],
			["has_not_done",["matches","event:page",["^/a"]]]],
		"order_by":[["events","desc"],["visit:city","asc"]],
		"include":{"total_rows":true,"imports":false},
		"pagination":{"offset":20}}`
	got, err := ParseQuery([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := Query{
		SiteID:  "example.com",
		Metrics: []string{"visitors", "events"},
		DateRange: DateRange{
			From: time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC),
			To:   time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC),
		},
		Dimensions: []string{"visit:city", "event:goal"},
		Filters: []Filter{
			{Op: "is", Dimension: "visit:city", Clauses: []string{"588409"}, IntClauses: true},
			{Op: "or", Children: []Filter{
				{Op: "contains", Dimension: "event:page", Clauses: []string{"/Blog"}, CaseInsensitive: true},
				{Op: "not", Children: []Filter{{Op: "is_not", Dimension: "event:name", Clauses: []string{"x"}}}},
			}},
			{Op: "has_not_done", Children: []Filter{{Op: "matches", Dimension: "event:page", Clauses: []string{"^/a"}}}},
		},
		OrderBy:    []OrderBy{{Key: "events", Desc: true}, {Key: "visit:city"}},
		Include:    Include{TotalRows: true},
		Pagination: Pagination{Offset: 20, Limit: MaxQueryLimit},
	}
	if diff := cmp.Diff(want, got, queryOpts); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// TestResolveDateRanges checks every date_range form against plausible-api.md
// §1 and Plausible's parser tests (now = 2021-05-05 12:30:00 UTC).
func TestResolveDateRanges(t *testing.T) {
	utc := func(y int, m time.Month, d, hh, mm, ss int) time.Time {
		return time.Date(y, m, d, hh, mm, ss, 0, time.UTC)
	}
	day := func(y int, m time.Month, d int) [2]time.Time {
		return [2]time.Time{utc(y, m, d, 0, 0, 0), utc(y, m, d, 23, 59, 59)}
	}
	days := func(a, b [2]time.Time) [2]time.Time { return [2]time.Time{a[0], b[1]} }
	tests := []struct {
		name      string
		dateRange string
		site      func(*QuerySite)
		want      [2]time.Time
	}{
		{name: "day ends now", dateRange: `"day"`, want: [2]time.Time{utc(2021, 5, 5, 0, 0, 0), utc(2021, 5, 5, 12, 30, 0)}},
		{name: "24h", dateRange: `"24h"`, want: [2]time.Time{utc(2021, 5, 4, 12, 30, 0), utc(2021, 5, 5, 12, 30, 0)}},
		{name: "7d excludes today", dateRange: `"7d"`, want: days(day(2021, 4, 28), day(2021, 5, 4))},
		{name: "10d", dateRange: `"10d"`, want: days(day(2021, 4, 25), day(2021, 5, 4))},
		{name: "30d", dateRange: `"30d"`, want: days(day(2021, 4, 5), day(2021, 5, 4))},
		{name: "month is whole", dateRange: `"month"`, want: days(day(2021, 5, 1), day(2021, 5, 31))},
		{name: "3mo", dateRange: `"3mo"`, want: days(day(2021, 2, 1), day(2021, 4, 30))},
		{name: "6mo excludes this month", dateRange: `"6mo"`, want: days(day(2020, 11, 1), day(2021, 4, 30))},
		{name: "12mo", dateRange: `"12mo"`, want: days(day(2020, 5, 1), day(2021, 4, 30))},
		{name: "year is whole", dateRange: `"year"`, want: days(day(2021, 1, 1), day(2021, 12, 31))},
		{name: "all without data is today", dateRange: `"all"`, want: day(2021, 5, 5)},
		{name: "all from the first data", dateRange: `"all"`, site: func(s *QuerySite) { s.StatsStart = buckets.DateOf(2020, 1, 1) },
			want: days(day(2020, 1, 1), day(2021, 5, 5))},
		{name: "dates", dateRange: `["2021-05-05","2021-05-05"]`, want: day(2021, 5, 5)},
		{name: "datetimes", dateRange: `["2024-01-01T00:00:00Z","2024-01-02T23:59:59Z"]`, want: [2]time.Time{utc(2024, 1, 1, 0, 0, 0), utc(2024, 1, 2, 23, 59, 59)}},
		{name: "datetimes with an offset", dateRange: `["2024-08-29T07:12:34-07:00","2024-08-29T10:12:34-07:00"]`,
			want: [2]time.Time{utc(2024, 8, 29, 14, 12, 34), utc(2024, 8, 29, 17, 12, 34)}},
		{name: "month ends on the 31st from the 31st", dateRange: `"1mo"`, site: func(s *QuerySite) { s.Now = utc(2021, 3, 31, 8, 0, 0) },
			want: days(day(2021, 2, 1), day(2021, 2, 28))},
		{name: "local today", dateRange: `"day"`, site: func(s *QuerySite) {
			s.Location = time.FixedZone("+03", 3*3600)
			s.Now = utc(2021, 5, 4, 22, 0, 0) // 01:00 on the 5th locally
		}, want: [2]time.Time{utc(2021, 5, 4, 21, 0, 0), utc(2021, 5, 4, 22, 0, 0)}},
		{name: "a midnight skipped starts after the gap", dateRange: `["2022-09-11","2022-09-11"]`, site: func(s *QuerySite) { s.Location = mustLoad(t, "America/Santiago") },
			want: [2]time.Time{utc(2022, 9, 11, 4, 0, 0), utc(2022, 9, 12, 2, 59, 59)}},
		{name: "a midnight twice starts at the later", dateRange: `["2023-11-05","2023-11-05"]`, site: func(s *QuerySite) { s.Location = mustLoad(t, "America/Havana") },
			want: [2]time.Time{utc(2023, 11, 5, 5, 0, 0), utc(2023, 11, 6, 4, 59, 59)}},
		{name: "a 23:59:59 twice ends at the earlier", dateRange: `["2024-03-23","2024-03-23"]`, site: func(s *QuerySite) { s.Location = mustLoad(t, "America/Asuncion") },
			want: [2]time.Time{utc(2024, 3, 23, 3, 0, 0), utc(2024, 3, 24, 2, 59, 59)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site := testQuerySite
			if tt.site != nil {
				tt.site(&site)
			}
			qq, err := ParseQuery([]byte(`{"site_id":"s","metrics":["visitors"],"date_range":` + tt.dateRange + `}`))
			if err != nil {
				t.Fatal(err)
			}
			r, err := qq.Resolve(site)
			if err != nil {
				t.Fatal(err)
			}
			got := [2]time.Time{r.From.UTC(), r.To.UTC()}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if r.From.Location().String() != r.Location.String() {
				t.Errorf("From is in %v, want the site's %v", r.From.Location(), r.Location)
			}
		})
	}
}

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestTimeDimensions checks "time" resolution, labels and buckets against
// plausible-api.md §3 and the worked examples §9.7–§9.11.
func TestTimeDimensions(t *testing.T) {
	utc := func(y int, m time.Month, d, hh, mm int) time.Time { return time.Date(y, m, d, hh, mm, 0, 0, time.UTC) }
	hours := make([]string, 24)
	for h := range hours {
		hours[h] = fmt.Sprintf("2021-01-01 %02d:00:00", h)
	}
	tests := []struct {
		name       string
		body       string
		site       func(*QuerySite)
		wantDim    string
		wantLabels []string
		buckets    map[time.Time]string
	}{
		{
			name:       "§9.7 hours of one day",
			body:       `{"site_id":"s","metrics":["visitors"],"date_range":["2021-01-01","2021-01-01"],"dimensions":["time:hour"],"include":{"time_labels":true}}`,
			wantDim:    "time:hour",
			wantLabels: hours,
			buckets:    map[time.Time]string{utc(2021, 1, 1, 0, 10): "2021-01-01 00:00:00", utc(2021, 1, 1, 23, 59): "2021-01-01 23:00:00"},
		},
		{
			name:       "§9.8 time resolves to day",
			body:       `{"site_id":"s","metrics":["visitors"],"date_range":["2021-01-01","2021-01-07"],"dimensions":["time"],"include":{"time_labels":true}}`,
			wantDim:    "time:day",
			wantLabels: []string{"2021-01-01", "2021-01-02", "2021-01-03", "2021-01-04", "2021-01-05", "2021-01-06", "2021-01-07"},
			buckets:    map[time.Time]string{utc(2021, 1, 1, 0, 0): "2021-01-01", utc(2021, 1, 7, 12, 0): "2021-01-07"},
		},
		{
			name:       "§9.9 weeks clamp to the range start",
			body:       `{"site_id":"s","metrics":["visitors"],"date_range":["2020-12-20","2021-01-07"],"dimensions":["time:week"],"include":{"time_labels":true}}`,
			wantDim:    "time:week",
			wantLabels: []string{"2020-12-20", "2020-12-21", "2020-12-28", "2021-01-04"},
			buckets: map[time.Time]string{utc(2020, 12, 20, 9, 0): "2020-12-20", utc(2021, 1, 1, 0, 0): "2020-12-28",
				utc(2021, 1, 3, 0, 0): "2020-12-28", utc(2021, 1, 7, 0, 0): "2021-01-04"},
		},
		{
			name:    "§9.10 Kathmandu hours",
			body:    `{"site_id":"s","metrics":["visits"],"date_range":["2021-01-02","2021-01-02"],"dimensions":["time:hour"]}`,
			site:    func(s *QuerySite) { s.Location = mustLoad(t, "Asia/Katmandu") },
			wantDim: "time:hour",
			buckets: map[time.Time]string{
				utc(2021, 1, 2, 5, 0): "2021-01-02 10:00:00", utc(2021, 1, 2, 5, 15): "2021-01-02 11:00:00",
				utc(2021, 1, 2, 5, 30): "2021-01-02 11:00:00", utc(2021, 1, 2, 5, 45): "2021-01-02 11:00:00",
				utc(2021, 1, 2, 6, 0): "2021-01-02 11:00:00", utc(2021, 1, 2, 6, 15): "2021-01-02 12:00:00",
				utc(2021, 1, 2, 6, 30): "2021-01-02 12:00:00",
			},
		},
		{
			name:       "§9.11 months are not clamped",
			body:       `{"site_id":"s","metrics":["pageviews"],"date_range":["2020-12-05","2021-01-02"],"dimensions":["time:month"],"include":{"time_labels":true}}`,
			wantDim:    "time:month",
			wantLabels: []string{"2020-12-01", "2021-01-01"},
			buckets:    map[time.Time]string{utc(2020, 12, 5, 0, 0): "2020-12-01", utc(2021, 1, 2, 0, 0): "2021-01-01"},
		},
		{
			name:       "day: hours up to now",
			body:       `{"site_id":"s","metrics":["visitors"],"date_range":"day","dimensions":["time"],"include":{"time_labels":true}}`,
			wantDim:    "time:hour",
			wantLabels: []string{"2021-05-05 00:00:00", "2021-05-05 01:00:00", "2021-05-05 02:00:00", "2021-05-05 03:00:00", "2021-05-05 04:00:00", "2021-05-05 05:00:00", "2021-05-05 06:00:00", "2021-05-05 07:00:00", "2021-05-05 08:00:00", "2021-05-05 09:00:00", "2021-05-05 10:00:00", "2021-05-05 11:00:00", "2021-05-05 12:00:00"},
		},
		{
			name:       "two days are hours, three are days",
			body:       `{"site_id":"s","metrics":["visitors"],"date_range":["2021-01-01","2021-01-03"],"dimensions":["time"],"include":{"time_labels":true}}`,
			wantDim:    "time:day",
			wantLabels: []string{"2021-01-01", "2021-01-02", "2021-01-03"},
		},
		{name: "41 days are days", body: `{"site_id":"s","metrics":["visitors"],"date_range":["2021-01-01","2021-02-10"],"dimensions":["time"]}`, wantDim: "time:day"},
		{name: "42 days are weeks", body: `{"site_id":"s","metrics":["visitors"],"date_range":["2021-01-01","2021-02-11"],"dimensions":["time"]}`, wantDim: "time:week"},
		{name: "a year is weeks", body: `{"site_id":"s","metrics":["visitors"],"date_range":["2021-01-01","2021-12-30"],"dimensions":["time"]}`, wantDim: "time:week"},
		{name: "12mo is 52 weeks", body: `{"site_id":"s","metrics":["visitors"],"date_range":"12mo","dimensions":["time"]}`, wantDim: "time:week"},
		{name: "13mo is months", body: `{"site_id":"s","metrics":["visitors"],"date_range":"13mo","dimensions":["time"]}`, wantDim: "time:month"},
		{name: "48 hours are hours", body: `{"site_id":"s","metrics":["visitors"],"date_range":["2021-01-01T00:00:00Z","2021-01-03T00:59:59Z"],"dimensions":["time"]}`, wantDim: "time:hour"},
		{
			name:       "hours across the fall-back change",
			body:       `{"site_id":"s","metrics":["visitors"],"date_range":["2021-10-31T00:00:00+02:00","2021-10-31T03:59:59+01:00"],"dimensions":["time:hour"],"include":{"time_labels":true}}`,
			site:       func(s *QuerySite) { s.Location = mustLoad(t, "Europe/Berlin") },
			wantDim:    "time:hour",
			wantLabels: []string{"2021-10-31 00:00:00", "2021-10-31 01:00:00", "2021-10-31 02:00:00", "2021-10-31 03:00:00"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site := testQuerySite
			if tt.site != nil {
				tt.site(&site)
			}
			qq, err := ParseQuery([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			r, err := qq.Resolve(site)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.TimeDimension(); got != tt.wantDim {
				t.Errorf("TimeDimension() = %q, want %q", got, tt.wantDim)
			}
			if tt.wantLabels != nil {
				if diff := cmp.Diff(tt.wantLabels, r.TimeLabels()); diff != "" {
					t.Errorf("TimeLabels mismatch (-want +got):\n%s", diff)
				}
			}
			for at, want := range tt.buckets {
				if !r.Contains(at) {
					t.Errorf("Contains(%v) = false", at)
				}
				if got := r.TimeBucket(at); got != want {
					t.Errorf("TimeBucket(%v) = %q, want %q", at, got, want)
				}
			}
		})
	}
}

// TestEcho checks the normalised query of plausible-api.md §5 and §9.21.
func TestEcho(t *testing.T) {
	tests := []struct {
		name string
		body string
		site func(*QuerySite)
		want string
	}{
		{
			name: "§5 example",
			body: `{"site_id":"example.com","metrics":["visitors","pageviews","bounce_rate"],"date_range":["2024-09-04","2024-09-10"],"dimensions":["visit:country_name","visit:city_name"]}`,
			want: `{"site_id":"example.com","metrics":["visitors","pageviews","bounce_rate"],
				"date_range":["2024-09-04T00:00:00+00:00","2024-09-10T23:59:59+00:00"],
				"filters":[],"dimensions":["visit:country_name","visit:city_name"],
				"order_by":[["visitors","desc"]],"include":{},"pagination":{"offset":0,"limit":10000}}`,
		},
		{
			name: "§9.21 7d excludes today",
			body: `{"site_id":"example.com","metrics":["visitors"],"date_range":"7d"}`,
			site: func(s *QuerySite) { s.Now = time.Date(2026, 7, 24, 15, 0, 0, 0, time.UTC) },
			want: `{"site_id":"example.com","metrics":["visitors"],
				"date_range":["2026-07-17T00:00:00+00:00","2026-07-23T23:59:59+00:00"],
				"filters":[],"dimensions":[],"order_by":[["visitors","desc"]],"include":{},"pagination":{"offset":0,"limit":10000}}`,
		},
		{
			name: "time resolved, defaults, site offset, truthy include",
			body: `{"site_id":"old.example.com","metrics":["visitors","events"],"date_range":["2021-01-01","2021-01-07"],
				"dimensions":["time","visit:city"],"filters":[["is","visit:city",[588409]],["contains","event:page",["/a"],{"case_sensitive":false}]],
				"include":{"time_labels":true,"imports":false},"pagination":{"limit":5}}`,
			site: func(s *QuerySite) { s.Location = time.FixedZone("+03", 3*3600) },
			want: `{"site_id":"example.com","metrics":["visitors","events"],
				"date_range":["2021-01-01T00:00:00+03:00","2021-01-07T23:59:59+03:00"],
				"filters":[["is","visit:city",[588409]],["contains","event:page",["/a"],{"case_sensitive":false}]],
				"dimensions":["time:day","visit:city"],
				"order_by":[["time:day","asc"],["visitors","desc"]],"include":{"time_labels":true},"pagination":{"offset":0,"limit":5}}`,
		},
		{
			name: "order by time is resolved too",
			body: `{"site_id":"example.com","metrics":["visitors"],"date_range":["2021-01-01","2021-01-01"],"dimensions":["time"],"order_by":[["time","desc"]]}`,
			want: `{"site_id":"example.com","metrics":["visitors"],
				"date_range":["2021-01-01T00:00:00+00:00","2021-01-01T23:59:59+00:00"],
				"filters":[],"dimensions":["time:hour"],"order_by":[["time:hour","desc"]],"include":{},"pagination":{"offset":0,"limit":10000}}`,
		},
		{
			name: "an empty order_by stays empty",
			body: `{"site_id":"example.com","metrics":["visitors"],"date_range":["2021-01-01","2021-01-01"],"order_by":[]}`,
			want: `{"site_id":"example.com","metrics":["visitors"],
				"date_range":["2021-01-01T00:00:00+00:00","2021-01-01T23:59:59+00:00"],
				"filters":[],"dimensions":[],"order_by":[],"include":{},"pagination":{"offset":0,"limit":10000}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			site := testQuerySite
			if tt.site != nil {
				tt.site(&site)
			}
			qq, err := ParseQuery([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			r, err := qq.Resolve(site)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(r.Echo())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(compactJSON(t, tt.want), string(got)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			checkEchoRoundTrip(t, r, site)
			if whole, _ := json.Marshal(r); string(whole) != string(got) {
				t.Errorf("json.Marshal(ResolvedQuery) = %s, want the echo", whole)
			}
		})
	}
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		b.WriteString(strings.TrimSpace(line))
	}
	return b.String()
}

// checkEchoRoundTrip posts r's echo back: it must parse, resolve equal to r
// and echo the same (plausible-api.md §5, §9.21).
func checkEchoRoundTrip(t *testing.T, r ResolvedQuery, site QuerySite) {
	t.Helper()
	echo, err := json.Marshal(r.Echo())
	if err != nil {
		t.Fatal(err)
	}
	q2, err := ParseQuery(echo)
	if err != nil {
		t.Fatalf("echo %s does not parse: %v", echo, err)
	}
	r2, err := q2.Resolve(site)
	if err != nil {
		t.Fatalf("echo %s does not resolve: %v", echo, err)
	}
	// The echo's range is explicit where the query's may have been a
	// shorthand: everything but DateRange must agree.
	if diff := cmp.Diff(r, r2, queryOpts, cmpopts.IgnoreFields(Query{}, "DateRange"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("echo %s resolves differently (-first +echoed):\n%s", echo, diff)
	}
	echo2, _ := json.Marshal(r2.Echo())
	if string(echo) != string(echo2) {
		t.Errorf("echo is not stable:\n%s\n%s", echo, echo2)
	}
}

// TestEffectiveFilters checks the hostname special case of
// plausible-api.md §4 (§9.20).
func TestEffectiveFilters(t *testing.T) {
	qq, err := ParseQuery([]byte(q(`"dimensions":["visit:utm_campaign","visit:exit_page","visit:device"],"filters":[["is","event:hostname",["one.example.com"]],["not",["is","event:page",["/"]]]]`)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := qq.Resolve(testQuerySite)
	if err != nil {
		t.Fatal(err)
	}
	host := []string{"one.example.com"}
	want := []Filter{
		{Op: "is", Dimension: "event:hostname", Clauses: host},
		{Op: "not", Children: []Filter{{Op: "is", Dimension: "event:page", Clauses: []string{"/"}}}},
		{Op: "is", Dimension: "visit:entry_page_hostname", Clauses: host},
		{Op: "is", Dimension: "visit:exit_page_hostname", Clauses: host},
	}
	if diff := cmp.Diff(want, r.EffectiveFilters()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if len(r.Filters) != 2 {
		t.Errorf("EffectiveFilters changed Filters: %v", r.Filters)
	}
}

// TestQueryBuiltInGo checks that a Query filled in by a library caller
// validates like its JSON, and that defaults apply to zero fields.
func TestQueryBuiltInGo(t *testing.T) {
	t.Run("zero query", func(t *testing.T) {
		var qq Query
		err := qq.Validate(testQuerySite)
		if diff := cmp.Diff("#: Required properties metrics, date_range were not present.", queryErrMsg(t, err)); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("bad leaf", func(t *testing.T) {
		qq := Query{Metrics: []string{"visitors"}, DateRange: DateRange{Period: "30d"},
			Filters: []Filter{{Op: "and"}}}
		err := qq.Validate(testQuerySite)
		if diff := cmp.Diff(`#/filters/0: Invalid filter ["and", []]`, queryErrMsg(t, err)); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		qq := Query{SiteID: "x", Metrics: []string{"visitors", "pageviews"}, Dimensions: []string{"time:day"},
			DateRange: DateRange{FromDay: buckets.DateOf(2021, 1, 1), ToDay: buckets.DateOf(2021, 1, 31)}}
		r, err := qq.Resolve(QuerySite{Now: testQuerySite.Now})
		if err != nil {
			t.Fatal(err)
		}
		want := []OrderBy{{Key: "time:day"}, {Key: "visitors", Desc: true}}
		if diff := cmp.Diff(want, r.OrderBy); diff != "" {
			t.Errorf("order_by mismatch (-want +got):\n%s", diff)
		}
		if r.Pagination != (Pagination{Limit: MaxQueryLimit}) {
			t.Errorf("Pagination = %+v", r.Pagination)
		}
		if r.SiteID != "x" || r.FirstDay != buckets.DateOf(2021, 1, 1) || r.LastDay != buckets.DateOf(2021, 1, 31) {
			t.Errorf("SiteID %q FirstDay %v LastDay %v", r.SiteID, r.FirstDay, r.LastDay)
		}
		if qq.OrderBy != nil {
			t.Error("Resolve changed its query")
		}
	})
	t.Run("marshal round trip", func(t *testing.T) {
		qq := Query{SiteID: "x", Metrics: []string{"visitors"},
			DateRange:  DateRange{From: time.Date(2024, 1, 1, 12, 0, 0, 0, time.FixedZone("", 7200)), To: time.Date(2024, 1, 1, 15, 0, 0, 0, time.UTC)},
			Dimensions: []string{"visit:city"},
			Filters: []Filter{{Op: "not", Children: []Filter{{Op: "is", Dimension: "visit:city", Clauses: []string{"1", "2"}, IntClauses: true, CaseInsensitive: true}}},
				{Op: "has_done", Children: []Filter{{Op: "matches", Dimension: "event:page", Clauses: []string{"x"}}}}},
			OrderBy:    []OrderBy{{Key: "visitors", Desc: true}},
			Include:    Include{TotalRows: true},
			Pagination: Pagination{Offset: 3, Limit: 7},
		}
		body, err := json.Marshal(qq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseQuery(body)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if diff := cmp.Diff(qq, got, queryOpts); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", body, diff)
		}
	})
}

func TestQueryErrorText(t *testing.T) {
	_, err := ParseQuery([]byte(`{"site_id":"s","metrics":["baa"],"date_range":"all"}`))
	if got, want := err.Error(), `engine: invalid query: #/metrics/0: Invalid metric "baa"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestElixirInspect checks the quoting of values in messages.
func TestElixirInspect(t *testing.T) {
	tests := []struct{ json, want string }{
		{`"a"`, `"a"`},
		{`null`, `nil`},
		{`[1, 2.5, true, "x"]`, `[1, 2.5, true, "x"]`},
		{`1000.0`, `1.0e3`},
		{`100.0`, `100.0`},
		{`-0`, `0`},
		{`{"b":1,"a":[]}`, `%{"a" => [], "b" => 1}`},
		{`"é\t"`, `"é\t"`},
		{`"\u007f"`, `<<127>>`},
	}
	for _, tt := range tests {
		var v any
		dec := json.NewDecoder(strings.NewReader(tt.json))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if got := elixirInspect(v); got != tt.want {
			t.Errorf("elixirInspect(%s) = %s, want %s", tt.json, got, tt.want)
		}
	}
}

// FuzzParseQuery: ParseQuery never panics; a query that parses and
// resolves echoes a query that parses and resolves to the same thing.
func FuzzParseQuery(f *testing.F) {
	seeds := []string{
		q(""),
		`{"site_id":"s","metrics":["visitors","events"],"date_range":"7d","dimensions":["time","event:page"],"order_by":[["events","asc"]],"include":{"time_labels":true,"total_rows":true},"pagination":{"limit":3,"offset":1}}`,
		`{"site_id":"s","metrics":["visitors"],"date_range":["2020-12-20","2021-01-07"],"dimensions":["time:week"]}`,
		`{"site_id":"s","metrics":["visitors"],"date_range":["2024-01-01T12:00:00+02:00","2024-01-01T15:59:59+02:00"],"dimensions":["time"]}`,
		q(`"filters":[["or",[["and",[["is","visit:city_name",["Tallinn"]],["is","visit:country",["EE"]]]],["not",["contains","event:page",["/a"],{"case_sensitive":false}]]]]]`),
		q(`"filters":[["is","event:goal",["Signup"]],["has_done",["matches","event:page",["^/p"]]],["is","visit:city",[1,2]]]`),
		q(`"filters":[["is","segment",[1]]]`),
		`{"site_id":"s","metrics":["bounce_rate"],"date_range":"month","dimensions":["event:page","event:hostname"]}`,
		`{"site_id":"s","metrics":["conversion_rate"],"date_range":"12mo","dimensions":["event:goal","time"]}`,
		`{"site_id":"s","metrics":["visitors"],"date_range":"day","dimensions":["time:hour"],"include":{"time_labels":true}}`,
		`{"site_id":"s","metrics":["visitors"],"date_range":"24h"}`,
		`{"site_id":"s","metrics":["baa",1.5,null],"date_range":["x"],"foo":{}}`,
		`[[[[[]]]]]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	sites := []QuerySite{
		testQuerySite,
		{Location: time.FixedZone("", 5*3600+45*60), Now: time.Date(2026, 7, 24, 23, 59, 59, 0, time.UTC), StatsStart: buckets.DateOf(2026, 1, 1), Goals: []string{"Signup"}},
	}
	if berlin, err := time.LoadLocation("Europe/Berlin"); err == nil {
		sites = append(sites, QuerySite{Location: berlin, Now: time.Date(2021, 10, 31, 1, 30, 0, 0, time.UTC)})
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		qq, err := ParseQuery(body)
		if err != nil {
			var qe *QueryError
			if !errors.As(err, &qe) || qe.Msg == "" {
				t.Fatalf("ParseQuery error %v is not a QueryError with a message", err)
			}
			return
		}
		for _, site := range sites {
			r, err := qq.Resolve(site)
			if err != nil {
				var qe *QueryError
				if !errors.As(err, &qe) {
					t.Fatalf("Resolve error %v is not a QueryError", err)
				}
				continue
			}
			checkEchoRoundTrip(t, r, site)
			if r.Include.TimeLabels {
				_ = r.TimeLabels()
			}
		}
	})
}

package query

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/webstats/webstats/buckets"
)

// parseChecked is Plausible's parser stage over a body that passed the
// schema: the first error only, in Plausible's order (date range, metrics,
// filters, dimensions, order_by, pagination, include).
func parseChecked(obj map[string]any) (Query, error) {
	var q Query
	q.SiteID, _ = obj["site_id"].(string)
	dr, err := parseDateRange(obj["date_range"])
	if err != nil {
		return Query{}, err
	}
	q.DateRange = dr
	for _, m := range obj["metrics"].([]any) {
		q.Metrics = append(q.Metrics, m.(string))
	}
	if raw, ok := obj["filters"].([]any); ok && len(raw) > 0 {
		var p filterParser
		q.Filters = make([]Filter, 0, len(raw))
		for _, f := range raw {
			parsed, err := p.parse(f)
			if err != nil {
				return Query{}, err
			}
			q.Filters = append(q.Filters, parsed)
		}
	}
	if raw, ok := obj["dimensions"].([]any); ok && len(raw) > 0 {
		if len(raw) > MaxQueryDimensions {
			return Query{}, &QueryError{Msg: fmt.Sprintf("Invalid dimensions. A query may have at most %d dimensions.", MaxQueryDimensions), Limit: "MaxQueryDimensions"}
		}
		q.Dimensions = make([]string, 0, len(raw))
		for _, d := range raw {
			q.Dimensions = append(q.Dimensions, d.(string))
		}
	}
	if raw, ok := obj["order_by"].([]any); ok {
		if len(raw) > MaxQueryOrderBy {
			return Query{}, &QueryError{Msg: fmt.Sprintf("Invalid order_by. A query may have at most %d order_by entries.", MaxQueryOrderBy), Limit: "MaxQueryOrderBy"}
		}
		q.OrderBy = make([]OrderBy, 0, len(raw))
		for _, e := range raw {
			e := e.([]any)
			q.OrderBy = append(q.OrderBy, OrderBy{Key: e[0].(string), Desc: e[1] == "desc"})
		}
	}
	q.Pagination = Pagination{Limit: MaxQueryLimit}
	if p, ok := obj["pagination"].(map[string]any); ok {
		if n, ok := p["limit"].(json.Number); ok {
			q.Pagination.Limit = jsonIntClamped(n)
		}
		if n, ok := p["offset"].(json.Number); ok {
			q.Pagination.Offset = jsonIntClamped(n)
		}
	}
	if inc, ok := obj["include"].(map[string]any); ok {
		q.Include.Imports, _ = inc["imports"].(bool)
		q.Include.TimeLabels, _ = inc["time_labels"].(bool)
		q.Include.TotalRows, _ = inc["total_rows"].(bool)
	}
	return q, nil
}

// jsonIntClamped converts a JSON integer to an int, clamping one beyond the int
// range (an offset past every row).
func jsonIntClamped(n json.Number) int {
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		if strings.HasPrefix(string(n), "-") {
			return math.MinInt
		}
		return math.MaxInt
	}
	return int(i)
}

// parseDateRange is the parser's date_range stage.
func parseDateRange(v any) (DateRange, error) {
	switch v := v.(type) {
	case string:
		if v == "day" || v == "24h" || v == "month" || v == "year" || v == "all" {
			return DateRange{Period: v}, nil
		}
		if _, ok := periodCount(v); ok {
			return DateRange{Period: v}, nil
		}
		return DateRange{}, &QueryError{Msg: "Invalid date_range " + elixirInspect(v)}
	case []any:
		a, b := v[0].(string), v[1].(string)
		from, err1 := buckets.ParseDate(a)
		to, err2 := buckets.ParseDate(b)
		if err1 == nil && err2 == nil {
			return DateRange{FromDay: from, ToDay: to}, nil
		}
		t1, err1 := time.Parse(time.RFC3339, a)
		t2, err2 := time.Parse(time.RFC3339, b)
		if err1 == nil && err2 == nil {
			return DateRange{From: t1.Truncate(time.Second), To: t2.Truncate(time.Second)}, nil
		}
		return DateRange{}, &QueryError{Msg: "Invalid date_range '" + elixirInspect(v) + "'."}
	}
	return DateRange{}, &QueryError{Msg: "Invalid date_range " + elixirInspect(v)}
}

// periodCount parses "<N>d" (1 ≤ N ≤ 5000) and "<N>mo" (1 ≤ N ≤ 100): n is
// negative for months.
func periodCount(p string) (n int, ok bool) {
	digits, isMonths := strings.CutSuffix(p, "mo")
	max, sign := 100, -1
	if !isMonths {
		digits, max, sign = strings.TrimSuffix(p, "d"), 5000, 1
	}
	if digits == p || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	digits = strings.TrimLeft(digits, "0")
	if len(digits) > 4 {
		return 0, false
	}
	n, _ = strconv.Atoi(digits)
	if n < 1 || n > max {
		return 0, false
	}
	return sign * n, true
}

// filterParser is the parser stage of filters over schema-valid trees; it
// also counts them against MaxFilterNodes and MaxFilterClauses.
type filterParser struct {
	nodes, clauses int
}

func (p *filterParser) parse(v any) (Filter, error) {
	p.nodes++
	if p.nodes > MaxFilterNodes {
		return Filter{}, &QueryError{Msg: fmt.Sprintf("Invalid filters. A query may have at most %d filters.", MaxFilterNodes), Limit: "MaxFilterNodes"}
	}
	arr := v.([]any)
	f := Filter{Op: arr[0].(string)}
	switch f.Op {
	case "and", "or":
		for _, c := range arr[1].([]any) {
			child, err := p.parse(c)
			if err != nil {
				return Filter{}, err
			}
			f.Children = append(f.Children, child)
		}
		return f, nil
	case "not", "has_done", "has_not_done":
		child, err := p.parse(arr[1])
		if err != nil {
			return Filter{}, err
		}
		f.Children = []Filter{child}
		return f, nil
	}
	f.Dimension = arr[1].(string)
	raw := arr[2].([]any)
	p.clauses += len(raw)
	if p.clauses > MaxFilterClauses {
		return Filter{}, &QueryError{Msg: fmt.Sprintf("Invalid filters. A query may have at most %d filter clauses.", MaxFilterClauses), Limit: "MaxFilterClauses"}
	}
	allStrings, allInts := true, true
	for _, c := range raw {
		if _, ok := c.(string); !ok {
			allStrings = false
		}
		if _, ok := c.(json.Number); !ok {
			allInts = false
		}
	}
	errFilter := &QueryError{Msg: "Invalid filter '" + elixirInspect(v) + "'."}
	switch {
	case (f.Dimension == "visit:city" || f.Dimension == "segment") && allInts && !allStrings:
		f.IntClauses = true
	case f.Dimension == "segment":
		if !allInts {
			return Filter{}, errFilter
		}
		f.IntClauses = true
	case !allStrings:
		return Filter{}, errFilter
	case f.Dimension == "visit:country" && (f.Op == "is" || f.Op == "is_not"):
		for _, c := range raw {
			if utf8.RuneCountInString(c.(string)) != 2 {
				return Filter{}, &QueryError{Msg: "Invalid visit:country filter, visit:country needs to be a valid 2-letter country code."}
			}
		}
	}
	f.Clauses = make([]string, len(raw))
	for i, c := range raw {
		switch c := c.(type) {
		case string:
			f.Clauses[i] = c
		case json.Number:
			f.Clauses[i] = string(c)
		}
	}
	if len(arr) == 4 {
		if cs, ok := arr[3].(map[string]any)["case_sensitive"].(bool); ok && !cs {
			f.CaseInsensitive = true
		}
	}
	return f, nil
}

package query

import (
	"slices"
	"strings"
)

// Validate checks q against its website as Plausible's parser and query
// builder do, returning the first violation as a *QueryError with
// Plausible's message: the structure of every field (as ParseQuery would
// report it for q's JSON), then segments (webstats has none), order_by keys
// that are not queried, event:goal/event:hostname filters below the top
// level, custom-property filters below the top level with conversion rates,
// behavioural filters nested or on visit dimensions, "is" goal filters
// naming no configured goal, each metric's requirements (conversion rates
// need a goal, scroll_depth and time_on_page a page, views_per_visit no page
// filter and no dimensions), session metrics with event dimensions and
// event metrics with session-only dimensions, and include.time_labels
// without a time dimension.
func (q *Query) Validate(site QuerySite) error {
	body, err := q.MarshalJSON()
	if err != nil {
		return err
	}
	if _, err := ParseQuery(body); err != nil {
		return err
	}
	checks := []func(*Query, *QuerySite) error{
		validateSegments,
		validateOrderBy,
		validateTopLevelOnly,
		validateConversionPropsFilters,
		validateBehavioural,
		validateGoalsExist,
		validateMetrics,
		validateInclude,
	}
	for _, check := range checks {
		if err := check(q, &site); err != nil {
			return err
		}
	}
	return nil
}

// leafVisit walks the leaves of a filter forest depth first: depth counts
// the operators above a leaf, behavioural the has_done/has_not_done ones.
func leafVisit(filters []Filter, fn func(f *Filter, depth, behavioural int) bool) {
	var walk func(fs []Filter, depth, behavioural int) bool
	walk = func(fs []Filter, depth, behavioural int) bool {
		for i := range fs {
			f := &fs[i]
			if IsLeafOp(f.Op) {
				if !fn(f, depth, behavioural) {
					return false
				}
				continue
			}
			b := behavioural
			if f.Op == "has_done" || f.Op == "has_not_done" {
				b++
			}
			if !walk(f.Children, depth+1, b) {
				return false
			}
		}
		return true
	}
	walk(filters, 0, 0)
}

// firstLeaf returns the first leaf for which match holds, or nil.
func firstLeaf(filters []Filter, match func(f *Filter, depth, behavioural int) bool) *Filter {
	var found *Filter
	leafVisit(filters, func(f *Filter, depth, behavioural int) bool {
		if match(f, depth, behavioural) {
			found = f
			return false
		}
		return true
	})
	return found
}

func queryInvalid(msg string) error { return &QueryError{Msg: msg} }

// validateSegments: saved segments are Plausible's; webstats has none, so
// every segment id is unknown.
func validateSegments(q *Query, _ *QuerySite) error {
	ids := 0
	leafVisit(q.Filters, func(f *Filter, _, _ int) bool {
		if f.Dimension == "segment" {
			ids += len(f.Clauses)
		}
		return true
	})
	switch {
	case ids > maxSegmentIDs:
		return queryInvalid("Invalid filters. You can only use up to 10 segment filters in a query.")
	case firstLeaf(q.Filters, func(f *Filter, _, _ int) bool { return f.Dimension == "segment" }) != nil:
		return queryInvalid("Invalid filters. Some segments don't exist or aren't accessible.")
	}
	return nil
}

func validateOrderBy(q *Query, _ *QuerySite) error {
	for _, o := range q.OrderBy {
		if slices.Contains(q.Metrics, o.Key) || slices.Contains(q.Dimensions, o.Key) {
			continue
		}
		key := elixirInspect(o.Key)
		if isQueryMetric(o.Key) {
			key = ":" + o.Key
		}
		dir := ":asc"
		if o.Desc {
			dir = ":desc"
		}
		return queryInvalid("Invalid order_by entry '{" + key + ", " + dir + "}'. Entry is not a queried metric or dimension.")
	}
	return nil
}

func validateTopLevelOnly(q *Query, _ *QuerySite) error {
	f := firstLeaf(q.Filters, func(f *Filter, depth, behavioural int) bool {
		return depth > 0 && behavioural == 0 && (f.Dimension == "event:goal" || f.Dimension == "event:hostname")
	})
	if f != nil {
		return queryInvalid("Invalid filters. Dimension `" + f.Dimension + "` can only be filtered at the top level.")
	}
	return nil
}

func validateConversionPropsFilters(q *Query, _ *QuerySite) error {
	if !slices.Contains(q.Metrics, "conversion_rate") && !slices.Contains(q.Metrics, "group_conversion_rate") {
		return nil
	}
	if firstLeaf(q.Filters, func(f *Filter, depth, _ int) bool { return depth > 0 && isPropsDimension(f.Dimension) }) != nil {
		return queryInvalid("Invalid filters. When `conversion_rate` or `group_conversion_rate` metrics are used, custom property filters can only be used on top level.")
	}
	return nil
}

func validateBehavioural(q *Query, _ *QuerySite) error {
	var err error
	leafVisit(q.Filters, func(f *Filter, _, behavioural int) bool {
		switch {
		case behavioural > 1:
			err = queryInvalid("Invalid filters. Behavioral filters (has_done, has_not_done) cannot be nested.")
		case behavioural == 1 && !isEventDimension(f.Dimension):
			err = queryInvalid("Invalid filters. Behavioral filters (has_done, has_not_done) can only be used with event dimension filters.")
		}
		return err == nil
	})
	return err
}

// validateGoalsExist: every clause of an "is" event:goal filter, anywhere in
// the tree, names a configured goal (ignoring case under case_sensitive
// false). "contains" may match none.
func validateGoalsExist(q *Query, site *QuerySite) error {
	var err error
	leafVisit(q.Filters, func(f *Filter, _, _ int) bool {
		if f.Op != "is" || f.Dimension != "event:goal" {
			return true
		}
		for _, c := range f.Clauses {
			known := slices.ContainsFunc(site.Goals, func(g string) bool {
				return g == c || f.CaseInsensitive && strings.EqualFold(g, c)
			})
			if !known {
				err = queryInvalid("Invalid filters. The goal `" + c + "` is not configured for this site. Find out how to configure goals here: https://plausible.io/docs/stats-api#filtering-by-goals")
				return false
			}
		}
		return true
	})
	return err
}

// filtersOnDimension reports a leaf on dim outside behavioural filters.
func filtersOnDimension(filters []Filter, dim string) bool {
	return firstLeaf(filters, func(f *Filter, _, behavioural int) bool {
		return behavioural == 0 && f.Dimension == dim
	}) != nil
}

func validateMetrics(q *Query, _ *QuerySite) error {
	for _, m := range q.Metrics {
		switch m {
		case "conversion_rate", "group_conversion_rate":
			if !slices.Contains(q.Dimensions, "event:goal") && !filtersOnDimension(q.Filters, "event:goal") {
				return queryInvalid("Metric `" + m + "` can only be queried with event:goal filters or dimensions.")
			}
		case "scroll_depth":
			topLevelPage := slices.ContainsFunc(q.Filters, func(f Filter) bool { return IsLeafOp(f.Op) && f.Dimension == "event:page" })
			if !slices.Contains(q.Dimensions, "event:page") && !topLevelPage {
				return queryInvalid("Metric `scroll_depth` can only be queried with event:page filters or dimensions.")
			}
		case "views_per_visit":
			if filtersOnDimension(q.Filters, "event:page") {
				return queryInvalid("Metric `views_per_visit` cannot be queried with a filter on `event:page`.")
			}
			if len(q.Dimensions) > 0 {
				return queryInvalid("Metric `views_per_visit` cannot be queried with `dimensions`.")
			}
		case "time_on_page":
			if !slices.Contains(q.Dimensions, "event:page") && !filtersOnDimension(q.Filters, "event:page") {
				return queryInvalid("Metric `time_on_page` can only be queried with event:page filters or dimensions.")
			}
		}
	}
	return validateMetricDimensionConflict(q)
}

// validateMetricDimensionConflict: session metrics cannot be grouped by
// event dimensions, nor event metrics by session-only dimensions, except
// that event:page alone (or with event:hostname) groups session metrics by
// the entry page.
func validateMetricDimensionConflict(q *Query) error {
	var sessionMetrics, eventMetrics, eventDims, sessionDims []string
	for _, m := range q.Metrics {
		switch {
		case slices.Contains(sessionOnlyMetrics, m):
			sessionMetrics = append(sessionMetrics, m)
		case slices.Contains(eventOnlyMetrics, m):
			eventMetrics = append(eventMetrics, m)
		}
	}
	for _, d := range q.Dimensions {
		switch {
		case isEventDimension(d):
			eventDims = append(eventDims, d)
		case isSessionDimension(d):
			sessionDims = append(sessionDims, d)
		}
	}
	pageOnly := slices.Contains(eventDims, "event:page") &&
		!slices.ContainsFunc(eventDims, func(d string) bool { return d != "event:page" && d != "event:hostname" })
	switch {
	case pageOnly:
		return nil
	case len(sessionMetrics) > 0 && len(eventDims) > 0:
		return queryInvalid("Session metric(s) " + backticks(sessionMetrics) + " cannot be queried along with event dimension(s) " + backticks(eventDims))
	case len(eventMetrics) > 0 && len(sessionDims) > 0:
		return queryInvalid("Event metric(s) " + backticks(eventMetrics) + " cannot be queried along with session dimension(s) " + backticks(sessionDims))
	}
	return nil
}

func backticks(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	return strings.Join(quoted, ", ")
}

func validateInclude(q *Query, _ *QuerySite) error {
	if q.Include.TimeLabels && !slices.ContainsFunc(q.Dimensions, isTimeDimension) {
		return queryInvalid("Invalid include.time_labels: requires a time dimension.")
	}
	return nil
}

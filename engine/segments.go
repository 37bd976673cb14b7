package engine

// The segments API (SPEC §10): goals, the extra hit fields the segments
// store keeps, and the one query call answering Plausible's v2 query model.

import (
	"context"

	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/query"
)

// Prop is one custom property of a hit (SPEC §2.4: at most MaxProps per
// hit, keys at most MaxPropKey and values at most MaxPropValue characters;
// Track drops the others).
type Prop = record.Prop

// Bounds of a hit's custom properties (SPEC §2.4).
const (
	MaxProps     = record.MaxProps
	MaxPropKey   = record.MaxPropKey
	MaxPropValue = record.MaxPropValue
)

// Goal, MetricWarning and Revenue are the query model's (package query):
// a website's goal, why a metric is null, a revenue metric's value.
type (
	Goal          = query.Goal
	MetricWarning = query.MetricWarning
	Revenue       = query.Revenue
)

// MaxGoals bounds the goals of one website.
const MaxGoals = 1000

// QueryResult, QueryRow and QueryMeta are the query model's answer
// (package query): Plausible's response body, one row, its meta.
type (
	QueryResult = query.Result
	QueryRow    = query.Row
	QueryMeta   = query.Meta
)

// Query answers q for one website of the handle (SPEC §10.2): q is
// validated and resolved against the website (its domain, time zone, goals
// and first day), then answered exactly from the segments store, or from the
// day buckets when they can answer it.
func (o Owner) Query(ctx context.Context, website uint32, q Query) (QueryResult, error) {
	if q.Include.Imports {
		// With partitions, the imports are where the partition is held:
		// a node that does not hold it asks the whole query.
		far, done, err := o.elsewhere(website)
		if err != nil {
			return QueryResult{}, err
		}
		if far {
			// Asked of the holder directly: o.query would check again
			// and, were the partition local by then, answer without
			// the imports.
			return o.askQuery(ctx, website, q)
		}
		// Held until answered: the partition stays local meanwhile.
		defer done()
		return o.queryWithImports(ctx, website, q) // imported_query.go
	}
	return o.query(ctx, website, q)
}

// Goals lists the goals of a website, by id.
func (o Owner) Goals(ctx context.Context, website uint32) ([]Goal, error) {
	return o.goals(ctx, website)
}

// AddGoal finds or creates a goal of a website: a goal with the same event
// name (or page path) is returned as it is; otherwise g is created, with
// DisplayName defaulted. Exactly one of EventName and PagePath must be set;
// Currency only with EventName.
func (o Owner) AddGoal(ctx context.Context, website uint32, g Goal) (Goal, error) {
	return o.addGoal(ctx, website, g)
}

// DeleteGoal deletes a goal of a website: ErrNotFound if it has none of
// that id.
func (o Owner) DeleteGoal(ctx context.Context, website uint32, id uint64) error {
	return o.deleteGoal(ctx, website, id)
}

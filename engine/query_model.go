package engine

// The Plausible query model lives in package query (engine/query): parsing,
// validation and resolution of a Stats API v2 request, with no engine state.
// These names keep the engine's API whole for its callers, who pass a Query
// to Owner.Query and read a QueryResult without importing a second package.

import "github.com/webstats/webstats/engine/query"

type (
	// Query is query.Query: one Stats API v2 question.
	Query = query.Query
	// DateRange is query.DateRange: a query's range.
	DateRange = query.DateRange
	// Filter is query.Filter: one node of a filter tree.
	Filter = query.Filter
	// OrderBy is query.OrderBy: one sort key.
	OrderBy = query.OrderBy
	// Include is query.Include: the extras a response's meta carries.
	Include = query.Include
	// Pagination is query.Pagination: offset and limit of the rows.
	Pagination = query.Pagination
	// QueryError is query.QueryError: an invalid query, with Plausible's
	// message. Use errors.As.
	QueryError = query.QueryError
	// QuerySite is query.QuerySite: what resolving a query needs to know of
	// its website.
	QuerySite = query.QuerySite
	// ResolvedQuery is query.ResolvedQuery: a valid Query made concrete.
	ResolvedQuery = query.ResolvedQuery
	// QueryEcho is query.QueryEcho: the normalised query a response echoes.
	QueryEcho = query.QueryEcho
)

// Bounds of the query model that callers size their requests and pages by;
// the others (MaxFilterDepth, ...) are in package query.
const (
	// MaxQueryBytes is query.MaxQueryBytes: the largest body ParseQuery reads.
	MaxQueryBytes = query.MaxQueryBytes
	// MaxQueryLimit is query.MaxQueryLimit: pagination.limit's maximum and
	// default.
	MaxQueryLimit = query.MaxQueryLimit
)

// ParseQuery is query.ParseQuery: it decodes a Stats API v2 request body
// into a Query, with Plausible's errors.
func ParseQuery(body []byte) (Query, error) { return query.ParseQuery(body) }

// QueryMetricNames lists the metrics a Query may ask for (query.QueryMetricNames).
func QueryMetricNames() []string { return query.QueryMetricNames() }

// QueryDimensionNames lists the dimensions a Query may group by
// (query.QueryDimensionNames).
func QueryDimensionNames() []string { return query.QueryDimensionNames() }

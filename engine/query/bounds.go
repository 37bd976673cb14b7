package query

// Bounds of the query model. Plausible has none of these; they keep the cost
// of one hostile query bounded (SPEC §13). A query beyond one gets a
// *QueryError whose Limit names the constant.
const (
	// MaxQueryBytes bounds the JSON body ParseQuery decodes: 1 MiB.
	MaxQueryBytes = 1 << 20
	// MaxQueryDimensions bounds the dimensions of one query: 16.
	MaxQueryDimensions = 16
	// MaxQueryOrderBy bounds the order_by entries of one query: 32.
	MaxQueryOrderBy = 32
	// MaxFilterDepth bounds how deep and/or/not/has_done/has_not_done nest: 16.
	MaxFilterDepth = 16
	// MaxFilterNodes bounds the filters of one query, operators and leaves
	// counted alike: 1,000.
	MaxFilterNodes = 1000
	// MaxFilterClauses bounds the clauses of all leaf filters of one query:
	// 10,000.
	MaxFilterClauses = 10000
	// MaxTimeLabels bounds the buckets include.time_labels may list: 100,000
	// (eleven years of hours).
	MaxTimeLabels = 100000
	// MaxQueryLimit is pagination.limit's maximum and its default: 10,000.
	MaxQueryLimit = 10000
	// maxSegmentIDs is Plausible's own bound on segment ids in one query.
	maxSegmentIDs = 10
	// MaxRangeDays bounds the days one query may span: a century. A query's
	// work is bounded by the days that have data, not by the range.
	MaxRangeDays = 36525
)

// QueryError is an invalid query, with Plausible's message (several joined
// with "\n"), which the HTTP API answers as 400 {"error": Msg}. Use
// errors.As.
type QueryError struct {
	// Msg is the message, verbatim.
	Msg string
	// Limit names the webstats bound (a Max* constant) the query exceeds;
	// empty for Plausible's own rules.
	Limit string
}

func (e *QueryError) Error() string { return "engine: invalid query: " + e.Msg }

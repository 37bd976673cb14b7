package engine

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
)

// Questions to the node that holds a website (Partitioner.Ask): the
// statistics calls of an Owner, gob-encoded, answered with their result
// or error.
type askRequest struct {
	Op      byte // askStat, askTotals, askRealtime, askQuery, askImports
	Account uint32
	All     bool
	Website uint32
	Stat    StatQuery
	From    Date
	To      Date
	// Query is the query as a request body (Query.MarshalJSON), which
	// ParseQuery reads back as it was.
	Query []byte
}

const (
	askStat = iota + 1
	askTotals
	askRealtime
	askQuery
	askImports
)

type askReply struct {
	Page     Page
	Totals   Totals
	Realtime Realtime
	Result   QueryResult
	List     []Import // askImports
	// Err is the error, by kind (askErr*) and message.
	Err    byte
	Msg    string
	Limit  string
	Fields []FieldError
	// Gob decodes an empty slice as nil: these say which of the answer's
	// were empty, so that it decodes as it was (they are written as [] or
	// null).
	RowsSet, ResultsSet bool
	DimsSet             []bool // of each result row
	EchoSet             [4]bool
	// Nor does it send a pointer to a zero value: Meta's, as 0 for nil,
	// 1 for false or 0, 2 for true (ImportsIncluded), 1 for set
	// (TotalRows).
	Imports, TotalRows byte
}

// markSlices records in rep which of its slices are empty, not nil.
func (rep *askReply) markSlices() {
	rep.RowsSet = rep.Page.Rows != nil
	r := &rep.Result
	rep.ResultsSet = r.Results != nil
	rep.DimsSet = make([]bool, len(r.Results))
	for i, row := range r.Results {
		rep.DimsSet[i] = row.Dimensions != nil
	}
	q := &r.Query
	rep.EchoSet = [4]bool{q.Metrics != nil, q.Filters != nil, q.Dimensions != nil, q.OrderBy != nil}
	if m := r.Meta.ImportsIncluded; m != nil {
		rep.Imports = 1
		if *m {
			rep.Imports = 2
		}
	}
	if r.Meta.TotalRows != nil {
		rep.TotalRows = 1
	}
}

// restoreSlices makes the empty slices markSlices recorded empty again.
func (rep *askReply) restoreSlices() {
	if rep.RowsSet && rep.Page.Rows == nil {
		rep.Page.Rows = []Row{}
	}
	r := &rep.Result
	if rep.ResultsSet && r.Results == nil {
		r.Results = []QueryRow{}
	}
	for i := range r.Results {
		if i < len(rep.DimsSet) && rep.DimsSet[i] && r.Results[i].Dimensions == nil {
			r.Results[i].Dimensions = []any{}
		}
	}
	q := &r.Query
	if rep.EchoSet[0] && q.Metrics == nil {
		q.Metrics = []string{}
	}
	if rep.EchoSet[1] && q.Filters == nil {
		q.Filters = []Filter{}
	}
	if rep.EchoSet[2] && q.Dimensions == nil {
		q.Dimensions = []string{}
	}
	if rep.EchoSet[3] && q.OrderBy == nil {
		q.OrderBy = []OrderBy{}
	}
	if rep.Imports > 0 && r.Meta.ImportsIncluded == nil {
		v := rep.Imports == 2
		r.Meta.ImportsIncluded = &v
	}
	if rep.TotalRows > 0 && r.Meta.TotalRows == nil {
		r.Meta.TotalRows = new(int)
	}
}

const (
	askErrOther = iota + 1
	askErrNotFound
	askErrBusy
	askErrTooLarge
	askErrQuery
	askErrValidation
	askErrUnavailable
)

func init() {
	// The values of QueryRow's slices.
	gob.Register(int64(0))
	gob.Register(float64(0))
	gob.Register("")
	// Under the name it had when Revenue was engine's own type (it is
	// engine/query's now): nodes of both versions answer each other
	// (TestAskRevenueWireName).
	gob.RegisterName(revenueWireName, &Revenue{})
}

// revenueWireName is the name a *Revenue in a reply's metrics goes by.
const revenueWireName = "*engine.Revenue"

// ask answers o's question from the node that holds website.
func (o Owner) ask(ctx context.Context, website uint32, req askRequest) (askReply, error) {
	e := o.e
	req.Account, req.All, req.Website = o.account, o.all, website
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&req); err != nil {
		return askReply{}, fmt.Errorf("engine: ask: %w", err)
	}
	out, err := e.opts.Partitions.Ask(ctx, PartitionOf(website, e.opts.Partitions.Count()), b.Bytes())
	if err != nil {
		if ctx.Err() != nil {
			return askReply{}, ctx.Err()
		}
		return askReply{}, fmt.Errorf("%w: website %d: %w", ErrClusterUnavailable, website, err)
	}
	var rep askReply
	if err := gob.NewDecoder(bytes.NewReader(out)).Decode(&rep); err != nil {
		return askReply{}, fmt.Errorf("engine: ask: %w", err)
	}
	rep.restoreSlices()
	switch rep.Err {
	case 0:
		return rep, nil
	case askErrNotFound:
		return rep, ErrNotFound
	case askErrBusy:
		return rep, ErrBusy
	case askErrTooLarge:
		return rep, fmt.Errorf("%w (said the website's node)", ErrTooLarge)
	case askErrQuery:
		return rep, &QueryError{Msg: rep.Msg, Limit: rep.Limit}
	case askErrValidation:
		return rep, &ValidationError{Fields: rep.Fields}
	case askErrUnavailable:
		return rep, fmt.Errorf("%w: website %d: %s", ErrClusterUnavailable, website, rep.Msg)
	}
	return rep, fmt.Errorf("engine: website %d, answered by its node: %s", website, rep.Msg)
}

// serveAsk is Serve's ask function: o's question answered here, never
// passed on (a node that no longer holds the website says so).
func (e *Engine) serveAsk(ctx context.Context, b []byte) ([]byte, error) {
	var req askRequest
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&req); err != nil {
		return nil, fmt.Errorf("engine: ask: %w", err)
	}
	o := Owner{e: e, account: req.Account, all: req.All, local: true}
	var rep askReply
	var err error
	switch req.Op {
	case askStat:
		rep.Page, err = o.Stat(ctx, req.Stat)
	case askTotals:
		rep.Totals, err = o.Totals(ctx, req.Website, req.From, req.To)
	case askRealtime:
		rep.Realtime, err = o.Realtime(ctx, req.Website)
	case askQuery:
		var q Query
		if q, err = ParseQuery(req.Query); err == nil {
			rep.Result, err = o.Query(ctx, req.Website, q)
		}
	case askImports:
		rep.List, err = o.Imports(ctx, req.Website)
	default:
		err = fmt.Errorf("engine: ask: unknown question %d", req.Op)
	}
	var qe *QueryError
	var ve *ValidationError
	switch {
	case err == nil:
	case errors.Is(err, errElsewhere):
		return nil, err // the asker tries another holder
	case errors.Is(err, ErrClusterUnavailable), errors.Is(err, ErrClosed), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		rep.Err = askErrUnavailable
	case errors.Is(err, ErrNotFound):
		rep.Err = askErrNotFound
	case errors.Is(err, ErrBusy):
		rep.Err = askErrBusy
	case errors.Is(err, ErrTooLarge):
		rep.Err = askErrTooLarge
	case errors.As(err, &qe):
		rep.Err, rep.Limit = askErrQuery, qe.Limit
		err = errors.New(qe.Msg)
	case errors.As(err, &ve):
		rep.Err, rep.Fields = askErrValidation, ve.Fields
	default:
		rep.Err = askErrOther
	}
	if err != nil {
		rep.Msg = err.Error()
	}
	rep.markSlices()
	var out bytes.Buffer
	if err := gob.NewEncoder(&out).Encode(&rep); err != nil {
		return nil, fmt.Errorf("engine: ask: %w", err)
	}
	return out.Bytes(), nil
}

// elsewhere reports whether o must ask another node about website: this
// node does not answer for its partition. A question asked by another
// node (o.local) is never passed on: it is errElsewhere. When the answer
// is here, done must be called once it is computed: a drop of the
// partition waits for it.
func (o Owner) elsewhere(website uint32) (far bool, done func(), err error) {
	e := o.e
	if e.opts.Partitions == nil {
		return false, func() {}, nil
	}
	p := PartitionOf(website, e.opts.Partitions.Count())
	if done, ok := e.held.Answering(p); ok {
		return false, done, nil
	}
	if o.local {
		return false, nil, errElsewhere
	}
	return true, nil, nil
}

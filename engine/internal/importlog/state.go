package importlog

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/webstats/webstats/engine/internal/imported"
	"github.com/webstats/webstats/engine/internal/wire"
	"github.com/webstats/webstats/snapshot"
)

// StateChunk is the chunk of import 0 that holds a website's import state
// (State, JSON); chunk 0 holds the last id given.
const StateChunk = 1

// PendingTTL is how long, by the log's clock, an import may stay pending
// (between its first message and its last).
const PendingTTL = time.Hour

// State is a website's import state: the log position of the last import
// message applied, the imports (id and rows) and the pending ones.
// Bounded by imported.MaxImports.
type State struct {
	Seq     uint64    `json:"seq"`
	Imports []Sum     `json:"imports,omitempty"`
	Pending []Pending `json:"pending,omitempty"`
}

// Sum is an import of the state: its id and rows.
type Sum struct {
	ID   uint32 `json:"id"`
	Rows int    `json:"rows"`
}

// Pending is an import whose first message applied and its last not yet:
// its publisher's token, its id and rows, the log's time of its first
// message and its record as published.
type Pending struct {
	Token  [16]byte  `json:"token"`
	ID     uint32    `json:"id"`
	Rows   int       `json:"rows"`
	At     time.Time `json:"at"`
	Record []byte    `json:"record"`
}

// ReadState reads website's import state and last id given through get,
// which returns chunk n of import 0 from the store (snapshot.ErrNotFound
// if there is none).
func ReadState(website uint32, get func(n uint32) ([]byte, error)) (State, uint32, error) {
	var st State
	last := uint32(0)
	v, err := get(0)
	switch {
	case err == nil && len(v) == 4:
		last = binary.BigEndian.Uint32(v)
	case err == nil:
		// Read as 0, ids would be given again.
		return st, 0, fmt.Errorf("engine: last import id of website %d: %w: %d bytes", website, snapshot.ErrCorrupt, len(v))
	case !errors.Is(err, snapshot.ErrNotFound):
		return st, 0, err
	}
	v, err = get(StateChunk)
	if errors.Is(err, snapshot.ErrNotFound) {
		return st, last, nil
	}
	if err != nil {
		return st, 0, err
	}
	if err := json.Unmarshal(v, &st); err != nil {
		return st, 0, fmt.Errorf("engine: import state of website %d: %w: %w", website, snapshot.ErrCorrupt, err)
	}
	return st, last, nil
}

// Refusals are what a publisher is told when its message is refused.
type Refusals struct {
	// Bounds refuses an import that would give its website imports
	// imports (its pending ones counted) holding rows rows.
	Bounds func(imports, rows int) error
	// NotFound is the answer to a deletion of an import the website does
	// not have; GivenUp to the last message of an import given up (or
	// refused) before it.
	NotFound, GivenUp error
}

// Change is what applying a message decided: the writes to the website's
// imports in the store (the state's among them), to be made in one batch,
// and what to tell the message's publisher (nil: nothing yet).
type Change struct {
	Ops     []snapshot.ImportOp
	Result  *Result
	Visible bool // the website's list of imports changed
}

// Apply applies m, of log position seq (after st.Seq) and log time at, to
// st, whose website's last import id given is last. It fails only on a
// malformed record: the follower stops at it.
func (st *State) Apply(seq uint64, at time.Time, m Message, last uint32, refuse Refusals) (Change, error) {
	var c Change
	st.giveUp(&c, at, m.Token)
	var err error
	switch m.Op {
	case Part:
		err = st.part(&c, at, m, last, refuse)
	case Delete:
		i := slices.IndexFunc(st.Imports, func(p Sum) bool { return p.ID == m.ID })
		if i < 0 {
			c.Result = &Result{Err: refuse.NotFound}
			break
		}
		c.Ops = append(c.Ops, snapshot.ImportOp{ID: m.ID, Delete: true})
		st.Imports = slices.Delete(st.Imports, i, i+1)
		c.Result, c.Visible = &Result{}, true
	case Abort:
		if i := st.pending(m.Token); i >= 0 {
			c.Ops = append(c.Ops, snapshot.ImportOp{ID: st.Pending[i].ID, Delete: true})
			st.Pending = slices.Delete(st.Pending, i, i+1)
		}
	}
	if err != nil {
		return Change{}, err
	}
	st.Seq = seq
	v, err := json.Marshal(st)
	if err != nil {
		return Change{}, err
	}
	c.Ops = append(c.Ops, snapshot.ImportOp{ID: 0, Chunk: StateChunk, Value: v})
	return c, nil
}

// giveUp drops the pending imports older than PendingTTL at at (not
// token's own).
func (st *State) giveUp(c *Change, at time.Time, token [16]byte) {
	st.Pending = slices.DeleteFunc(st.Pending, func(p Pending) bool {
		if p.Token != token && at.Sub(p.At) > PendingTTL {
			c.Ops = append(c.Ops, snapshot.ImportOp{ID: p.ID, Delete: true})
			return true
		}
		return false
	})
}

// pending returns the index of token's pending import, -1 if none.
func (st *State) pending(token [16]byte) int {
	return slices.IndexFunc(st.Pending, func(p Pending) bool { return p.Token == token })
}

// part applies a Part: its import's first message claims the next id
// (unless the bounds refuse it), every message writes its chunks, the
// last the record.
func (st *State) part(c *Change, at time.Time, m Message, last uint32, refuse Refusals) error {
	i := st.pending(m.Token)
	if m.Flags&First != 0 && i < 0 {
		var imp imported.Import
		if err := json.Unmarshal(m.Record, &imp); err != nil {
			return fmt.Errorf("import record: %w: %w", wire.ErrRecord, err)
		}
		rows := imp.Rows
		for _, p := range st.Imports {
			rows += p.Rows
		}
		for _, p := range st.Pending {
			rows += p.Rows
		}
		if err := refuse.Bounds(len(st.Imports)+len(st.Pending), rows); err != nil {
			c.Result = &Result{Err: err}
			return nil
		}
		last++
		c.Ops = append(c.Ops, snapshot.ImportOp{ID: 0, Chunk: 0, Value: binary.BigEndian.AppendUint32(nil, last)})
		st.Pending = append(st.Pending, Pending{Token: m.Token, ID: last, Rows: imp.Rows, At: at, Record: m.Record})
		i = len(st.Pending) - 1
	}
	if i < 0 {
		if m.Flags&Last != 0 {
			c.Result = &Result{Err: refuse.GivenUp}
		}
		return nil
	}
	p := st.Pending[i]
	for j, chunk := range m.Chunks {
		c.Ops = append(c.Ops, snapshot.ImportOp{ID: p.ID, Chunk: m.First + uint32(j), Value: chunk})
	}
	if m.Flags&Last == 0 {
		return nil
	}
	return st.complete(c, i)
}

// complete makes pending import i visible: its record, with its id, is
// written as its chunk 0.
func (st *State) complete(c *Change, i int) error {
	p := st.Pending[i]
	var imp imported.Import
	if err := json.Unmarshal(p.Record, &imp); err != nil {
		return fmt.Errorf("import record: %w: %w", wire.ErrRecord, err)
	}
	imp.ID = p.ID
	rec, err := json.Marshal(imp)
	if err != nil {
		return err
	}
	c.Ops = append(c.Ops, snapshot.ImportOp{ID: p.ID, Chunk: 0, Value: rec})
	st.Pending = slices.Delete(st.Pending, i, i+1)
	st.Imports = append(st.Imports, Sum{ID: p.ID, Rows: p.Rows})
	c.Result, c.Visible = &Result{Import: imp}, true
	return nil
}

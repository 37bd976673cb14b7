package importlog

import (
	"errors"
	"testing"
	"time"

	"github.com/webstats/webstats/snapshot"
)

var (
	errBounds   = errors.New("bounds")
	errNotFound = errors.New("not found")
	errGivenUp  = errors.New("given up")
	refusals    = Refusals{
		Bounds: func(imports, rows int) error {
			if rows > 10 {
				return errBounds
			}
			return nil
		},
		NotFound: errNotFound,
		GivenUp:  errGivenUp,
	}
)

// TestApply: the writes and results of an import in two messages, its
// deletion, and refusals, in one batch each with the state.
func TestApply(t *testing.T) {
	var st State
	t0 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	step := func(seq uint64, m Message, wantOps []snapshot.ImportOp, wantErr error) *Result {
		t.Helper()
		c, err := st.Apply(seq, t0, m, 6, refusals)
		if err != nil {
			t.Fatal(err)
		}
		n := len(c.Ops) - 1
		if n < 0 || c.Ops[n].ID != 0 || c.Ops[n].Chunk != StateChunk || st.Seq != seq {
			t.Fatalf("message %d: ops %+v, seq %d: the state is not written last", seq, c.Ops, st.Seq)
		}
		for i, op := range c.Ops[:n] {
			if i >= len(wantOps) || op.ID != wantOps[i].ID || op.Chunk != wantOps[i].Chunk || op.Delete != wantOps[i].Delete {
				t.Fatalf("message %d: ops %+v, want %+v", seq, c.Ops[:n], wantOps)
			}
		}
		if c.Result != nil && !errors.Is(c.Result.Err, wantErr) || c.Result == nil && wantErr != nil {
			t.Fatalf("message %d: result %+v, want %v", seq, c.Result, wantErr)
		}
		return c.Result
	}
	tok := [16]byte{1}
	step(1, Message{Op: Part, Token: tok, Flags: First, First: 1, Record: []byte(`{"rows":4}`), Chunks: [][]byte{{1}}},
		[]snapshot.ImportOp{{ID: 0, Chunk: 0}, {ID: 7, Chunk: 1}}, nil)
	r := step(2, Message{Op: Part, Token: tok, Flags: Last, First: 2, Chunks: [][]byte{{2}}},
		[]snapshot.ImportOp{{ID: 7, Chunk: 2}, {ID: 7, Chunk: 0}}, nil)
	if r == nil || r.Import.ID != 7 || r.Import.Rows != 4 || len(st.Imports) != 1 || len(st.Pending) != 0 {
		t.Fatalf("after the last message: %+v, state %+v", r, st)
	}
	step(3, Message{Op: Part, Token: [16]byte{2}, Flags: First | Last, First: 1, Record: []byte(`{"rows":7}`)}, nil, errBounds)
	step(4, Message{Op: Part, Token: [16]byte{2}, Flags: Last, First: 1}, nil, errGivenUp)
	step(5, Message{Op: Delete, Token: [16]byte{3}, ID: 7}, []snapshot.ImportOp{{ID: 7, Delete: true}}, nil)
	step(6, Message{Op: Delete, Token: [16]byte{4}, ID: 7}, nil, errNotFound)
	if _, err := st.Apply(7, t0, Message{Op: Part, Token: [16]byte{5}, Flags: First, First: 1, Record: []byte("{")}, 6, refusals); err == nil {
		t.Fatal("a malformed record applied")
	}
}

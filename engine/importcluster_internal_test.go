package engine

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/webstats/webstats/engine/internal/importlog"
	"github.com/webstats/webstats/snapshot"
)

// TestApplyImportMessages: the apply of import messages (cluster mode)
// in log order, as every node makes it: a replayed message is skipped, a
// pending import older than importlog.PendingTTL is given up by the next
// import message of its website, an import's id is never given again, a
// deletion replayed after a later message stays applied, an abort drops
// what its import wrote, and the bounds are decided at the first message.
func TestApplyImportMessages(t *testing.T) {
	e, err := Open(&Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const website = 5
	e.regMu.Lock()
	e.addSiteLocked(&Website{ID: website, Domain: "x.example", Timezone: "UTC"}, newSiteState(website))
	e.regMu.Unlock()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	record := func(rows int) []byte {
		b, _ := json.Marshal(Import{Source: "plausible", File: "f.zip", Rows: rows})
		return b
	}
	tok := func(b byte) [16]byte { return [16]byte{b} }
	apply := func(seq uint64, at time.Time, m importlog.Message) {
		t.Helper()
		m.Website = website
		d, err := importlog.Decode(m.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.applyImport(seq, at, d); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() []uint32 { // imports (with a record) and pending ids
		t.Helper()
		var out []uint32
		err := e.store.ScanImports(website, func(id, n uint32, _ []byte) error {
			if id != 0 && !slices.Contains(out, id) {
				out = append(out, id)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	state := func() importlog.State {
		t.Helper()
		st, _, err := e.importStateOf(website)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// A: two messages; its first, then the same message replayed.
	first := importlog.Message{Op: importlog.Part, Token: tok(1), Flags: importlog.First, First: 1, Record: record(10), Chunks: [][]byte{[]byte("a1")}}
	apply(1, t0, first)
	apply(1, t0, first)
	if st := state(); st.Seq != 1 || len(st.Pending) != 1 || st.Pending[0].ID != 1 || len(st.Imports) != 0 {
		t.Fatalf("after A's first message: %+v", st)
	}
	// B in one message, two hours later: A is given up.
	apply(2, t0.Add(2*time.Hour), importlog.Message{Op: importlog.Part, Token: tok(2), Flags: importlog.First | importlog.Last, First: 1, Record: record(20), Chunks: [][]byte{[]byte("b1")}})
	if st := state(); len(st.Pending) != 0 || len(st.Imports) != 1 || st.Imports[0] != (importlog.Sum{ID: 2, Rows: 20}) {
		t.Fatalf("after B: %+v", st)
	}
	if got := ids(); !slices.Equal(got, []uint32{2}) {
		t.Fatalf("imports %v after B, want [2]", got)
	}
	// A's last message finds nothing to complete.
	done, stop := e.importWaiting.Add(tok(1))
	apply(3, t0.Add(2*time.Hour), importlog.Message{Op: importlog.Part, Token: tok(1), Flags: importlog.Last, First: 2, Chunks: [][]byte{[]byte("a2")}})
	if r := <-done; !errors.Is(r.Err, ErrClusterUnavailable) {
		t.Fatalf("A's last message: %+v", r)
	}
	stop()
	if got := ids(); !slices.Equal(got, []uint32{2}) {
		t.Fatalf("imports %v after A's last message, want [2]", got)
	}
	// B deleted; B's message replayed is skipped.
	apply(4, t0.Add(2*time.Hour), importlog.Message{Op: importlog.Delete, Token: tok(3), ID: 2})
	apply(2, t0.Add(2*time.Hour), importlog.Message{Op: importlog.Part, Token: tok(2), Flags: importlog.First | importlog.Last, First: 1, Record: record(20), Chunks: [][]byte{[]byte("b1")}})
	if got := ids(); len(got) != 0 {
		t.Fatalf("imports %v after B's deletion, want none", got)
	}
	// C begins and is aborted: its id is not given again.
	apply(5, t0.Add(2*time.Hour), importlog.Message{Op: importlog.Part, Token: tok(4), Flags: importlog.First, First: 1, Record: record(5), Chunks: [][]byte{[]byte("c1")}})
	apply(6, t0.Add(2*time.Hour), importlog.Message{Op: importlog.Abort, Token: tok(4)})
	if got, st := ids(), state(); len(got) != 0 || len(st.Pending) != 0 {
		t.Fatalf("after C's abort: imports %v, state %+v", got, st)
	}
	done, _ = e.importWaiting.Add(tok(5))
	apply(7, t0.Add(2*time.Hour), importlog.Message{Op: importlog.Part, Token: tok(5), Flags: importlog.First | importlog.Last, First: 1, Record: record(1), Chunks: [][]byte{[]byte("d1")}})
	if r := <-done; r.Err != nil || r.Import.ID != 4 {
		t.Fatalf("D: %+v, want id 4", r)
	}
	// Too many rows: refused at its first message, on every node alike.
	done, _ = e.importWaiting.Add(tok(6))
	apply(8, t0.Add(2*time.Hour), importlog.Message{Op: importlog.Part, Token: tok(6), Flags: importlog.First, First: 1, Record: record(MaxImportRows), Chunks: [][]byte{[]byte("e1")}})
	var ve *ValidationError
	if r := <-done; !errors.As(r.Err, &ve) {
		t.Fatalf("an import over MaxImportRows: %+v", r)
	}
	if st := state(); st.Seq != 8 || len(st.Pending) != 0 || len(st.Imports) != 1 {
		t.Fatalf("after the refusal: %+v", st)
	}
}

// importApplier is an engine with one website (5) and a helper applying
// import messages to it as a follower would.
func importApplier(t *testing.T) (*Engine, func(seq uint64, at time.Time, m importlog.Message), func() importlog.State) {
	t.Helper()
	e, err := Open(&Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	const website = 5
	e.regMu.Lock()
	e.addSiteLocked(&Website{ID: website, Domain: "x.example", Timezone: "UTC"}, newSiteState(website))
	e.regMu.Unlock()
	apply := func(seq uint64, at time.Time, m importlog.Message) {
		t.Helper()
		m.Website = website
		d, err := importlog.Decode(m.Encode())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.applyImport(seq, at, d); err != nil {
			t.Fatal(err)
		}
	}
	state := func() importlog.State {
		t.Helper()
		st, _, err := e.importStateOf(website)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	return e, apply, state
}

func importRecord(rows int) []byte {
	b, _ := json.Marshal(Import{Source: "plausible", File: "f.zip", Rows: rows})
	return b
}

// TestApplyImportDeleteZero: a deletion of id 0 (which the encoder can
// make) is read and applied as not found, never refused by the follower.
func TestApplyImportDeleteZero(t *testing.T) {
	e, apply, state := importApplier(t)
	tok := [16]byte{9}
	done, _ := e.importWaiting.Add(tok)
	apply(1, time.Now(), importlog.Message{Op: importlog.Delete, Token: tok, ID: 0})
	if r := <-done; !errors.Is(r.Err, ErrNotFound) {
		t.Fatalf("delete of id 0: %+v, want ErrNotFound", r)
	}
	if st := state(); st.Seq != 1 {
		t.Fatalf("state %+v, want seq 1", st)
	}
}

// TestApplyImportLogClock: a pending import is kept or given up by the
// log's time, not the wall clock's: dates far in the future, 30 minutes
// apart, keep it.
func TestApplyImportLogClock(t *testing.T) {
	_, apply, state := importApplier(t)
	t0 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	apply(1, t0, importlog.Message{Op: importlog.Part, Token: [16]byte{1}, Flags: importlog.First, First: 1, Record: importRecord(1), Chunks: [][]byte{[]byte("a1")}})
	apply(2, t0.Add(30*time.Minute), importlog.Message{Op: importlog.Part, Token: [16]byte{2}, Flags: importlog.First | importlog.Last, First: 1, Record: importRecord(1), Chunks: [][]byte{[]byte("b1")}})
	if st := state(); len(st.Pending) != 1 || st.Pending[0].ID != 1 || len(st.Imports) != 1 {
		t.Fatalf("after B, 30 minutes later: %+v, want A pending", st)
	}
	apply(3, t0.Add(40*time.Minute), importlog.Message{Op: importlog.Part, Token: [16]byte{1}, Flags: importlog.Last, First: 2, Chunks: [][]byte{[]byte("a2")}})
	if st := state(); len(st.Pending) != 0 || len(st.Imports) != 2 {
		t.Fatalf("after A's last message: %+v, want two imports", st)
	}
}

// TestApplyImportBoundsCountPending: MaxImports counts the pending
// imports with the complete ones.
func TestApplyImportBoundsCountPending(t *testing.T) {
	e, apply, state := importApplier(t)
	t0 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	seq := uint64(0)
	for i := range MaxImports - 1 {
		seq++
		apply(seq, t0, importlog.Message{Op: importlog.Part, Token: [16]byte{1, byte(i), byte(i >> 8)}, Flags: importlog.First | importlog.Last, First: 1, Record: importRecord(1), Chunks: [][]byte{[]byte("x")}})
	}
	seq++
	apply(seq, t0, importlog.Message{Op: importlog.Part, Token: [16]byte{2}, Flags: importlog.First, First: 1, Record: importRecord(1), Chunks: [][]byte{[]byte("p")}})
	tok := [16]byte{3}
	done, _ := e.importWaiting.Add(tok)
	seq++
	apply(seq, t0, importlog.Message{Op: importlog.Part, Token: tok, Flags: importlog.First | importlog.Last, First: 1, Record: importRecord(1), Chunks: [][]byte{[]byte("y")}})
	var ve *ValidationError
	if r := <-done; !errors.As(r.Err, &ve) {
		t.Fatalf("import beyond %d imports + 1 pending: %+v, want refused", MaxImports-1, r)
	}
	if st := state(); len(st.Imports) != MaxImports-1 || len(st.Pending) != 1 {
		t.Fatalf("state: %d imports, %d pending", len(st.Imports), len(st.Pending))
	}
}

// TestApplyImportReplayAtSeq: a single-message import replayed at
// exactly the state's position is skipped.
func TestApplyImportReplayAtSeq(t *testing.T) {
	_, apply, state := importApplier(t)
	t0 := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	m := importlog.Message{Op: importlog.Part, Token: [16]byte{1}, Flags: importlog.First | importlog.Last, First: 1, Record: importRecord(1), Chunks: [][]byte{[]byte("a")}}
	apply(7, t0, m)
	apply(7, t0, m)
	if st := state(); st.Seq != 7 || len(st.Imports) != 1 || st.Imports[0].ID != 1 {
		t.Fatalf("after a replay at seq 7: %+v, want one import", st)
	}
}

// TestImportStateCorruptLastID: a last id that is not 4 bytes is
// corrupt, not 0 (ids would be given again).
func TestImportStateCorruptLastID(t *testing.T) {
	e, _, _ := importApplier(t)
	if err := e.store.WriteImports(5, []snapshot.ImportOp{{ID: 0, Chunk: 0, Value: []byte{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.importStateOf(5); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("importlog.StateOf: %v, want ErrCorrupt", err)
	}
}

// heldNone holds no partition (of 4).
type heldNone struct{ Partitioner }

func (heldNone) Count() int { return 4 }

// TestApplyImportNotHeld: a node that published an import or a deletion
// but no longer applies its website is told at once that the outcome is
// unknown (the holders apply it), not left waiting.
func TestApplyImportNotHeld(t *testing.T) {
	e, apply, _ := importApplier(t)
	e.opts.Partitions = heldNone{}
	for i, m := range []importlog.Message{
		{Op: importlog.Part, Token: [16]byte{1}, Flags: importlog.First | importlog.Last, First: 1, Record: importRecord(1), Chunks: [][]byte{[]byte("a")}},
		{Op: importlog.Delete, Token: [16]byte{2}, ID: 1},
	} {
		done, _ := e.importWaiting.Add(m.Token)
		apply(uint64(i+1), time.Now(), m)
		select {
		case r := <-done:
			if !errors.Is(r.Err, ErrImportUnknown) {
				t.Fatalf("message %c: %+v, want ErrImportUnknown", m.Op, r)
			}
		default:
			t.Fatalf("message %c: the waiter is not told", m.Op)
		}
	}
}

package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/webstats/webstats/engine/internal/wire"
	"github.com/webstats/webstats/snapshot"
)

// Imports in cluster mode (docs/design.md, "The imported layer"). An
// import or a deletion goes through the shared log on its website's
// subject, like the website's hits, and every node that applies the
// website's records writes it to its own store in log order; a node that
// does not (another partition's) skips it. Nothing is decided by the node
// that publishes but what travels as data (the record, its creation time,
// the rows): the import's id and the bounds (MaxImports, MaxImportRows)
// are decided when the first message applies, from what the store holds
// then, alike on every node.
//
// An import larger than one message of the log goes as several, each
// holding whole chunks (encodeImport makes them small enough): the first
// claims the next id and writes its chunks, the others add theirs, and the
// last writes the import's record (chunk 0), which makes it visible to
// queries at once. Until then the import is pending: the website's import
// state (chunk importStateChunk of import 0) lists it by the publisher's
// token. Each message's writes and the log position of the message are one
// batch of the store, and a message at or before that position is skipped:
// a restart or a partition gained from an older state replays the log
// from before it without applying anything twice. A pending import whose
// first message is older, by the log's clock, than importPendingTTL when
// another import message of its website applies is given up (its
// publisher died between two messages): every node drops it alike.

// msgImport is the kind byte of an import's message: msgImport, an op
// (impPart, impDelete, impAbort), the website (uvarint), the publisher's
// token (16 bytes), then for impPart a flags byte (impFirst, impLast), the
// number of its first chunk (uvarint), for the first message the record
// (length, JSON), then the chunks (count, then each: length, bytes), and
// for impDelete the import's id (uvarint).
const msgImport = 'i'

const (
	impPart   = 'p'
	impDelete = 'd'
	impAbort  = 'a'
	impFirst  = 1
	impLast   = 2
)

// importStateChunk is the chunk of import 0 that holds a website's import
// state in cluster mode (importState, JSON); chunk 0 holds the last id.
const importStateChunk = 1

// importPendingTTL is how long, by the log's clock, an import may stay
// pending (between its first message and its last).
const importPendingTTL = time.Hour

// importWait bounds how long an import or a deletion waits for this node
// to apply it, once published. Its messages are all published by then:
// what is left is this node's follower reaching the last one, seconds
// when it keeps up. A minute leaves room for a lagging follower while an
// HTTP request stays within what proxies commonly allow; past it the
// caller is told the outcome is unknown (the list of imports tells).
const importWait = time.Minute

// importState is a website's import state in cluster mode: the log
// position of the last import message applied, the imports (id and rows)
// and the pending ones. Bounded by MaxImports.
type importState struct {
	Seq     uint64          `json:"seq"`
	Imports []importSum     `json:"imports,omitempty"`
	Pending []importPending `json:"pending,omitempty"`
}

type importSum struct {
	ID   uint32 `json:"id"`
	Rows int    `json:"rows"`
}

type importPending struct {
	Token  [16]byte  `json:"token"`
	ID     uint32    `json:"id"`
	Rows   int       `json:"rows"`
	At     time.Time `json:"at"`
	Record []byte    `json:"record"`
}

// importMessage is a decoded message of kind msgImport.
type importMessage struct {
	op      byte
	website uint32
	token   [16]byte
	flags   byte
	first   uint32   // impPart: the number of its first chunk
	record  []byte   // impPart with impFirst
	chunks  [][]byte // impPart
	id      uint32   // impDelete
}

func encodeImportMessage(m importMessage) []byte {
	b := append([]byte{msgImport, m.op}, binary.AppendUvarint(nil, uint64(m.website))...)
	b = append(b, m.token[:]...)
	switch m.op {
	case impPart:
		b = append(b, m.flags)
		b = binary.AppendUvarint(b, uint64(m.first))
		if m.flags&impFirst != 0 {
			b = binary.AppendUvarint(b, uint64(len(m.record)))
			b = append(b, m.record...)
		}
		b = binary.AppendUvarint(b, uint64(len(m.chunks)))
		for _, c := range m.chunks {
			b = binary.AppendUvarint(b, uint64(len(c)))
			b = append(b, c...)
		}
	case impDelete:
		b = binary.AppendUvarint(b, uint64(m.id))
	}
	return b
}

// decodeImportMessage reads a message of encodeImportMessage; its slices
// alias msg.
func decodeImportMessage(msg []byte) (importMessage, error) {
	var m importMessage
	bad := fmt.Errorf("engine: import message: %w", wire.ErrRecord)
	if len(msg) < 2 || msg[0] != msgImport {
		return m, bad
	}
	m.op, msg = msg[1], msg[2:]
	uv := func() (uint64, bool) {
		v, k := binary.Uvarint(msg)
		if k <= 0 {
			return 0, false
		}
		msg = msg[k:]
		return v, true
	}
	bytesOf := func() ([]byte, bool) {
		n, ok := uv()
		if !ok || n > uint64(len(msg)) {
			return nil, false
		}
		b := msg[:n]
		msg = msg[n:]
		return b, true
	}
	w, ok := uv()
	if !ok || w == 0 || w > 1<<32-1 || len(msg) < 16 {
		return m, bad
	}
	m.website = uint32(w)
	copy(m.token[:], msg)
	msg = msg[16:]
	switch m.op {
	case impPart:
		if len(msg) < 1 {
			return m, bad
		}
		m.flags, msg = msg[0], msg[1:]
		first, ok := uv()
		if !ok || first == 0 || first > 1<<32-1 {
			return m, bad
		}
		m.first = uint32(first)
		if m.flags&impFirst != 0 {
			if m.record, ok = bytesOf(); !ok {
				return m, bad
			}
		}
		n, ok := uv()
		if !ok || n > uint64(len(msg)) {
			return m, bad
		}
		for range n {
			c, ok := bytesOf()
			if !ok {
				return m, bad
			}
			m.chunks = append(m.chunks, c)
		}
	case impDelete:
		// Id 0 is read (and applied as not found): the decoder takes
		// whatever the encoder makes, or a follower would stop at it.
		id, ok := uv()
		if !ok || id > 1<<32-1 {
			return m, bad
		}
		m.id = uint32(id)
	case impAbort:
	default:
		return m, bad
	}
	if len(msg) != 0 {
		return m, bad
	}
	return m, nil
}

// importResult is what applying an import's message decided, for the
// node that published it.
type importResult struct {
	imp Import
	err error
}

// importWaiters are the imports and deletions this node published and
// waits for, by token.
type importWaiters struct {
	mu sync.Mutex
	m  map[[16]byte]chan importResult
}

func (w *importWaiters) add(token [16]byte) chan importResult {
	ch := make(chan importResult, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = make(map[[16]byte]chan importResult)
	}
	w.m[token] = ch
	w.mu.Unlock()
	return ch
}

func (w *importWaiters) remove(token [16]byte) {
	w.mu.Lock()
	delete(w.m, token)
	w.mu.Unlock()
}

func (w *importWaiters) notify(token [16]byte, r importResult) {
	w.mu.Lock()
	if ch := w.m[token]; ch != nil {
		select {
		case ch <- r:
		default: // the first answer stands
		}
	}
	w.mu.Unlock()
}

// checkImportBounds refuses an import that would give a website more than
// MaxImports imports or MaxImportRows rows.
func checkImportBounds(imports, rows int) error {
	if imports >= MaxImports {
		return &ValidationError{Fields: []FieldError{{Field: "file", Msg: fmt.Sprintf("The website has %d imports, the most it may have; delete one first.", MaxImports)}}}
	}
	if rows > MaxImportRows {
		return &ValidationError{Fields: []FieldError{{Field: "file", Msg: fmt.Sprintf("The website's imports would hold %d rows, more than %d; delete an import first.", rows, MaxImportRows)}}}
	}
	return nil
}

// importHeld refuses, with partitions, an import change made (or a list
// read) on a node that does not hold the website's partition.
func (e *Engine) importHeld(website uint32) error {
	if e.opts.Cluster != nil && !e.applies(website) {
		return ErrImportCluster
	}
	return nil
}

// publishImport publishes an import (cluster mode) and returns it once
// this node applied its last message.
func (o Owner) publishImport(ctx context.Context, website uint32, d *importData) (Import, error) {
	e := o.e
	if err := e.importHeld(website); err != nil {
		return Import{}, err
	}
	// A first check against what this node holds: the one that counts
	// is made when the import applies.
	list, err := o.importsOf(website)
	if err != nil {
		return Import{}, err
	}
	rows := d.Rows
	for _, p := range list {
		rows += p.Rows
	}
	if err := checkImportBounds(len(list), rows); err != nil {
		return Import{}, err
	}
	token, err := e.importToken()
	if err != nil {
		return Import{}, err
	}
	// Room for the message's header (and the record, in the first)
	// beside the chunks: the record as marshalled, whose escapes (<, >,
	// &, invalid UTF-8) may take six bytes each of the name's.
	rec, err := json.Marshal(d.Import)
	if err != nil {
		return Import{}, err
	}
	limit := e.opts.Cluster.MaxMessage() - 64
	chunkLimit := limit - len(rec) - 16
	if chunkLimit < 1024 {
		return Import{}, fmt.Errorf("%w: the cluster's log takes messages of %d bytes, too few for an import's", ErrTooLarge, e.opts.Cluster.MaxMessage())
	}
	chunks, err := encodeImport(d, chunkLimit)
	if err != nil {
		return Import{}, err
	}
	// The messages share the chunks; each is encoded just before it is
	// published.
	var parts []importMessage
	part := importMessage{op: impPart, website: website, token: token, flags: impFirst, first: 1, record: chunks[0]}
	size := 64 + len(chunks[0])
	for i, c := range chunks[1:] {
		if len(part.chunks) > 0 && size+len(c)+10 > limit {
			parts = append(parts, part)
			part = importMessage{op: impPart, website: website, token: token, first: uint32(i + 1)}
			size = 64
		}
		part.chunks = append(part.chunks, c)
		size += len(c) + 10
	}
	part.flags |= impLast
	parts = append(parts, part)
	done := e.importWaiting.add(token)
	defer e.importWaiting.remove(token)
	ctx = context.WithoutCancel(ctx)
	for i, p := range parts {
		select {
		case r := <-done: // refused at its first message
			return r.imp, r.err
		default:
		}
		m := encodeImportMessage(p)
		if len(m) > e.opts.Cluster.MaxMessage() && i == 0 {
			return Import{}, fmt.Errorf("%w: an import's message of %d bytes; the cluster's log takes %d", ErrTooLarge, len(m), e.opts.Cluster.MaxMessage())
		}
		if err := e.publishImportMessage(ctx, website, m); err != nil {
			// Its first message may have been appended (a failed publish
			// may have been). Best effort: a pending import left behind
			// is given up after importPendingTTL anyway.
			abort := encodeImportMessage(importMessage{op: impAbort, website: website, token: token})
			_ = e.publishImportMessage(ctx, website, abort)
			return Import{}, err
		}
	}
	r, err := e.waitImport(ctx, done)
	if err != nil {
		return Import{}, err
	}
	return r.imp, r.err
}

// deleteShared publishes the deletion of import id (cluster mode) and
// returns once this node applied it.
func (o Owner) deleteShared(ctx context.Context, website, id uint32) error {
	e := o.e
	if err := e.importHeld(website); err != nil {
		return err
	}
	token, err := e.importToken()
	if err != nil {
		return err
	}
	done := e.importWaiting.add(token)
	defer e.importWaiting.remove(token)
	ctx = context.WithoutCancel(ctx)
	msg := encodeImportMessage(importMessage{op: impDelete, website: website, token: token, id: id})
	if err := e.publishImportMessage(ctx, website, msg); err != nil {
		return err
	}
	r, err := e.waitImport(ctx, done)
	if err != nil {
		return err
	}
	return r.err
}

func (e *Engine) importToken() ([16]byte, error) {
	var token [16]byte
	if _, err := io.ReadFull(e.opts.Rand, token[:]); err != nil {
		return token, fmt.Errorf("engine: import token: %w", err)
	}
	return token, nil
}

func (e *Engine) publishImportMessage(ctx context.Context, website uint32, msg []byte) error {
	t0 := time.Now()
	if err := e.opts.Cluster.Publish(ctx, website, msg); err != nil {
		e.cluster.publishErrs.Add(1)
		return fmt.Errorf("%w: %w", ErrClusterUnavailable, err)
	}
	e.cluster.publishNs.Add(int64(time.Since(t0)))
	e.cluster.publishes.Add(1)
	return nil
}

// waitImport waits until this node's follower decided a published import
// message.
func (e *Engine) waitImport(ctx context.Context, done chan importResult) (importResult, error) {
	ctx, cancel := context.WithTimeout(ctx, importWait)
	defer cancel()
	select {
	case r := <-done:
		return r, nil
	case <-ctx.Done():
		return importResult{}, fmt.Errorf("%w: %w: this node has not applied it yet: %w", ErrImportUnknown, ErrClusterUnavailable, ctx.Err())
	case <-e.closing:
		// Close waits for the operations in flight: this one ends now.
		return importResult{}, fmt.Errorf("%w: %w: the engine closed before applying it", ErrImportUnknown, ErrClosed)
	case <-e.stop:
		return importResult{}, ErrClosed
	}
}

// importStateOf reads website's import state and last id from the store.
func (e *Engine) importStateOf(website uint32) (importState, uint32, error) {
	var st importState
	last := uint32(0)
	v, err := e.store.GetImport(website, 0, 0)
	switch {
	case err == nil && len(v) == 4:
		last = binary.BigEndian.Uint32(v)
	case err == nil:
		// Read as 0, ids would be given again.
		return st, 0, fmt.Errorf("engine: last import id of website %d: %w: %d bytes", website, snapshot.ErrCorrupt, len(v))
	case !errors.Is(err, snapshot.ErrNotFound):
		return st, 0, err
	}
	v, err = e.store.GetImport(website, 0, importStateChunk)
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

// applyImport applies an import message of log position seq and log time
// at to the store of a node that applies its website's records (see
// above).
func (e *Engine) applyImport(seq uint64, at time.Time, m importMessage) error {
	e.regMu.RLock()
	s := e.sites[m.website]
	e.regMu.RUnlock()
	if s == nil || !e.applies(m.website) {
		switch {
		case s == nil:
			e.importWaiting.notify(m.token, importResult{err: ErrNotFound})
		case m.op == impDelete || m.op == impPart && m.flags&impLast != 0:
			// Published here but the partition went elsewhere: its
			// holders decide. Told now rather than after importWait,
			// and as unknown: a retry could import twice.
			e.importWaiting.notify(m.token, importResult{err: ErrImportUnknown})
		}
		e.seq.Store(seq)
		return nil
	}
	l := &e.imported
	l.write.Lock()
	defer l.write.Unlock()
	st, last, err := e.importStateOf(m.website)
	if err != nil {
		return fmt.Errorf("message %d: %w", seq, err)
	}
	if seq <= st.Seq {
		e.seq.Store(seq)
		return nil
	}
	var ops []snapshot.ImportOp
	var res *importResult
	visible := false
	// Pending imports given up (not this message's own).
	st.Pending = slices.DeleteFunc(st.Pending, func(p importPending) bool {
		if p.Token != m.token && at.Sub(p.At) > importPendingTTL {
			ops = append(ops, snapshot.ImportOp{ID: p.ID, Delete: true})
			return true
		}
		return false
	})
	pending := slices.IndexFunc(st.Pending, func(p importPending) bool { return p.Token == m.token })
	switch m.op {
	case impPart:
		if m.flags&impFirst != 0 && pending < 0 {
			var imp Import
			if err := json.Unmarshal(m.record, &imp); err != nil {
				return fmt.Errorf("message %d: import record: %w: %w", seq, wire.ErrRecord, err)
			}
			rows := imp.Rows
			for _, p := range st.Imports {
				rows += p.Rows
			}
			for _, p := range st.Pending {
				rows += p.Rows
			}
			if err := checkImportBounds(len(st.Imports)+len(st.Pending), rows); err != nil {
				res = &importResult{err: err}
				break
			}
			last++
			ops = append(ops, snapshot.ImportOp{ID: 0, Chunk: 0, Value: binary.BigEndian.AppendUint32(nil, last)})
			st.Pending = append(st.Pending, importPending{Token: m.token, ID: last, Rows: imp.Rows, At: at, Record: m.record})
			pending = len(st.Pending) - 1
		}
		if pending < 0 {
			if m.flags&impLast != 0 {
				res = &importResult{err: fmt.Errorf("%w: the import was given up before its last part", ErrClusterUnavailable)}
			}
			break
		}
		p := st.Pending[pending]
		for i, c := range m.chunks {
			ops = append(ops, snapshot.ImportOp{ID: p.ID, Chunk: m.first + uint32(i), Value: c})
		}
		if m.flags&impLast == 0 {
			break
		}
		var imp Import
		if err := json.Unmarshal(p.Record, &imp); err != nil {
			return fmt.Errorf("message %d: import record: %w: %w", seq, wire.ErrRecord, err)
		}
		imp.ID = p.ID
		rec, err := json.Marshal(imp)
		if err != nil {
			return err
		}
		ops = append(ops, snapshot.ImportOp{ID: p.ID, Chunk: 0, Value: rec})
		st.Pending = slices.Delete(st.Pending, pending, pending+1)
		st.Imports = append(st.Imports, importSum{ID: p.ID, Rows: p.Rows})
		res, visible = &importResult{imp: imp}, true
	case impDelete:
		i := slices.IndexFunc(st.Imports, func(p importSum) bool { return p.ID == m.id })
		if i < 0 {
			res = &importResult{err: ErrNotFound}
			break
		}
		ops = append(ops, snapshot.ImportOp{ID: m.id, Delete: true})
		st.Imports = slices.Delete(st.Imports, i, i+1)
		res, visible = &importResult{}, true
	case impAbort:
		if pending >= 0 {
			ops = append(ops, snapshot.ImportOp{ID: st.Pending[pending].ID, Delete: true})
			st.Pending = slices.Delete(st.Pending, pending, pending+1)
		}
	}
	st.Seq = seq
	v, err := json.Marshal(st)
	if err != nil {
		return err
	}
	ops = append(ops, snapshot.ImportOp{ID: 0, Chunk: importStateChunk, Value: v})
	if err := e.store.WriteImports(m.website, ops); err != nil {
		return fmt.Errorf("message %d: %w", seq, err)
	}
	if visible {
		// Read again from the store by the next query.
		e.dropImports(m.website)
	}
	e.seq.Store(seq)
	if res != nil {
		e.importWaiting.notify(m.token, *res)
	}
	return nil
}

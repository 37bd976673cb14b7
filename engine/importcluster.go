package engine

// Imports in cluster mode (docs/design.md, "The imported layer"; package
// importlog holds the messages and the state they are applied against):
// an import or a deletion is published on its website's subject of the
// shared log and applied, in log order, by every node that applies the
// website's records; the publisher waits for its own node's apply.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/webstats/webstats/engine/internal/imported"
	"github.com/webstats/webstats/engine/internal/importlog"
)

// importWait bounds how long an import or a deletion waits for this node
// to apply it, once published. Its messages are all published by then:
// what is left is this node's follower reaching the last one, seconds
// when it keeps up. A minute leaves room for a lagging follower while an
// HTTP request stays within what proxies commonly allow; past it the
// caller is told the outcome is unknown (the list of imports tells).
const importWait = time.Minute

// importRefusals are what the publisher of a refused import message is
// told.
var importRefusals = importlog.Refusals{
	Bounds:   imported.CheckBounds,
	NotFound: ErrNotFound,
	GivenUp:  fmt.Errorf("%w: the import was given up before its last part", ErrClusterUnavailable),
}

// publishImport publishes an import (cluster mode) and returns it once
// this node applied its last message.
func (o Owner) publishImport(ctx context.Context, website uint32, d *imported.Data) (Import, error) {
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
	if err := imported.CheckRoom(list, d); err != nil {
		return Import{}, err
	}
	r, err := e.publishChange(ctx, website, func(token [16]byte) ([]importlog.Message, error) {
		return e.importParts(website, token, d)
	})
	if err != nil {
		return Import{}, err
	}
	return r.Import, r.Err
}

// deleteShared publishes the deletion of import id (cluster mode) and
// returns once this node applied it.
func (o Owner) deleteShared(ctx context.Context, website, id uint32) error {
	e := o.e
	if err := e.importHeld(website); err != nil {
		return err
	}
	r, err := e.publishChange(ctx, website, func(token [16]byte) ([]importlog.Message, error) {
		return []importlog.Message{{Op: importlog.Delete, Website: website, Token: token, ID: id}}, nil
	})
	if err != nil {
		return err
	}
	return r.Err
}

// publishChange publishes the messages of an import or a deletion, which
// messages makes for a new token, and returns what this node's apply of
// them decided.
func (e *Engine) publishChange(ctx context.Context, website uint32, messages func(token [16]byte) ([]importlog.Message, error)) (importlog.Result, error) {
	token, err := e.importToken()
	if err != nil {
		return importlog.Result{}, err
	}
	parts, err := messages(token)
	if err != nil {
		return importlog.Result{}, err
	}
	done, stop := e.importWaiting.Add(token)
	defer stop()
	ctx = context.WithoutCancel(ctx)
	r, err := e.publishParts(ctx, website, parts, done)
	if err != nil {
		return importlog.Result{}, err
	}
	if r != nil {
		return *r, nil
	}
	return e.waitImport(ctx, done)
}

// importParts returns the messages of import d, each within what the
// cluster's log takes.
func (e *Engine) importParts(website uint32, token [16]byte, d *imported.Data) ([]importlog.Message, error) {
	// Room for the message's header (and the record, in the first)
	// beside the chunks: the record as marshalled, whose escapes (<, >,
	// &, invalid UTF-8) may take six bytes each of the name's.
	rec, err := json.Marshal(d.Import)
	if err != nil {
		return nil, err
	}
	limit := e.opts.Cluster.MaxMessage() - 64
	chunkLimit := limit - len(rec) - 16
	if chunkLimit < 1024 {
		return nil, fmt.Errorf("%w: the cluster's log takes messages of %d bytes, too few for an import's", ErrTooLarge, e.opts.Cluster.MaxMessage())
	}
	chunks, err := d.Chunks(chunkLimit)
	var tooLarge *imported.RowTooLargeError
	if errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	if err != nil {
		return nil, err
	}
	return importlog.Split(website, token, chunks, limit), nil
}

// publishParts publishes the messages of an import change, each encoded
// just before it is published; it stops at the result of one applied
// meanwhile (a refusal of an import's first message) and returns it. On
// a failed publish of an import's message, it publishes an abort, best
// effort.
func (e *Engine) publishParts(ctx context.Context, website uint32, parts []importlog.Message, done <-chan importlog.Result) (*importlog.Result, error) {
	for i, p := range parts {
		select {
		case r := <-done: // refused at its first message
			return &r, nil
		default:
		}
		m := p.Encode()
		if i == 0 && p.Op == importlog.Part && len(m) > e.opts.Cluster.MaxMessage() {
			return nil, fmt.Errorf("%w: an import's message of %d bytes; the cluster's log takes %d", ErrTooLarge, len(m), e.opts.Cluster.MaxMessage())
		}
		if err := e.publishCounted(ctx, website, m); err != nil {
			if p.Op == importlog.Part {
				// Its first message may have been appended (a failed
				// publish may have been). Best effort: a pending import
				// left behind is given up after importlog.PendingTTL
				// anyway.
				abort := importlog.Message{Op: importlog.Abort, Website: website, Token: p.Token}
				_ = e.publishCounted(ctx, website, abort.Encode())
			}
			return nil, err
		}
	}
	return nil, nil
}

func (e *Engine) importToken() ([16]byte, error) {
	var token [16]byte
	if _, err := io.ReadFull(e.opts.Rand, token[:]); err != nil {
		return token, fmt.Errorf("engine: import token: %w", err)
	}
	return token, nil
}

// waitImport waits until this node's follower decided a published import
// message.
func (e *Engine) waitImport(ctx context.Context, done <-chan importlog.Result) (importlog.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, importWait)
	defer cancel()
	select {
	case r := <-done:
		return r, nil
	case <-ctx.Done():
		return importlog.Result{}, fmt.Errorf("%w: %w: this node has not applied it yet: %w", ErrImportUnknown, ErrClusterUnavailable, ctx.Err())
	case <-e.closing:
		// Close waits for the operations in flight: this one ends now.
		return importlog.Result{}, fmt.Errorf("%w: %w: the engine closed before applying it", ErrImportUnknown, ErrClosed)
	case <-e.stop:
		return importlog.Result{}, ErrClosed
	}
}

// importStateOf reads website's import state and last id from the store.
func (e *Engine) importStateOf(website uint32) (importlog.State, uint32, error) {
	return importlog.ReadState(website, func(n uint32) ([]byte, error) { return e.store.GetImport(website, 0, n) })
}

// applyImport applies an import message of log position seq and log time
// at to the store of a node that applies its website's records, and tells
// this node's publisher of it what it decided.
func (e *Engine) applyImport(seq uint64, at time.Time, m importlog.Message) error {
	if !e.appliesImport(m) {
		e.seq.Store(seq)
		return nil
	}
	e.imported.write.Lock()
	defer e.imported.write.Unlock()
	st, last, err := e.importStateOf(m.Website)
	if err != nil {
		return fmt.Errorf("message %d: %w", seq, err)
	}
	if seq <= st.Seq { // applied before this replay
		e.seq.Store(seq)
		return nil
	}
	c, err := st.Apply(seq, at, m, last, importRefusals)
	if err != nil {
		return fmt.Errorf("message %d: %w", seq, err)
	}
	if err := e.store.WriteImports(m.Website, c.Ops); err != nil {
		return fmt.Errorf("message %d: %w", seq, err)
	}
	if c.Visible {
		// Read again from the store by the next query.
		e.dropImports(m.Website)
	}
	e.seq.Store(seq)
	if c.Result != nil {
		e.importWaiting.Notify(m.Token, *c.Result)
	}
	return nil
}

// appliesImport reports whether this node applies m: it holds m's
// website. If not, a publisher of m on this node is told what it can be.
func (e *Engine) appliesImport(m importlog.Message) bool {
	e.regMu.RLock()
	s := e.sites[m.Website]
	e.regMu.RUnlock()
	switch {
	case s == nil:
		e.importWaiting.Notify(m.Token, importlog.Result{Err: ErrNotFound})
		return false
	case e.applies(m.Website):
		return true
	case m.Op == importlog.Delete || m.Op == importlog.Part && m.Flags&importlog.Last != 0:
		// Published here but the partition went elsewhere: its
		// holders decide. Told now rather than after importWait,
		// and as unknown: a retry could import twice.
		e.importWaiting.Notify(m.Token, importlog.Result{Err: ErrImportUnknown})
	}
	return false
}

package engine

import (
	"context"
	"errors"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/idem"
)

// Calls in parts (SPEC §13: an import of 10,000 events grows memory by a
// bounded amount). A call of more than partHits hits is tracked as
// consecutive parts of partHits hits, each enriched, logged and applied as
// a batch of its own, so that what a call holds at once beyond its hits
// (records, log entries, the log's batch) is that of two parts (the one
// logged and the next, looked at first), not of the whole call. Each part
// is atomic per website, as a call of one batch is; an error stops the
// call with the parts before it counted.
//
// A keyed call (TrackOnce) is counted once as a whole although its parts
// are logged apart: each part's mark carries the key with the part's
// place (idem.Mark Part, Parts), the key's entry records the parts applied
// (idem.Entry Done), and a repeat of a call cut short (a crash, a failed
// log write, between two parts) resumes it after them (claimKey): its
// hits, split alike (the same body, sorted alike), are counted from the
// first part not yet applied. A part none of whose hits counts logs
// nothing: its drops go with the next part's mark (Carry), or, after the
// last part that logs, with that part's mark, which then says it is the
// last (Parts), so that the key's entry is whole once the call returns.
// A resumption none of whose parts logs (its hits all dropped now: the
// website's settings changed since) leaves the key partial: like a call
// that counts nothing, which keeps no key, its repeat is decided again.
// The drops of parts that log nothing are counted once the part after
// them is (a failed part stops the count there).

// partHits is the most hits a call logs and applies as one batch.
var partHits = 1000

// Import counts hits handed over by an importer: TrackOnce with key, or
// Track when key is "". It owns hits: in a call of more than one part,
// each part's hits are cleared once enriched (what is kept of them is in
// the part's records by then), so that what an import holds shrinks as
// it counts instead of holding all its hits beside the days they grow
// (SPEC §13: an import of 10,000 events grows memory by a bounded
// amount). The caller must not read hits after the call; the result's
// Reasons still follow their order.
func (e *Engine) Import(ctx context.Context, key string, hits []Hit) (TrackResult, error) {
	if key == "" {
		return e.track(ctx, nil, hits, true)
	}
	return e.trackOnce(ctx, key, hits, true)
}

// track is Track (TrackOnce with a mark), in parts of partHits hits; a
// mark whose part is not 0 resumes a keyed call from that part, the hits
// before it not looked at (their Reasons stay DropNone, and they are not
// in the counts). At return, mark.Res is the counts of the parts this
// call counted. With own (Import), each part's hits are cleared once
// prepared.
func (e *Engine) track(ctx context.Context, mark *idem.Mark, hits []Hit, own bool) (TrackResult, error) {
	if err := ctx.Err(); err != nil {
		return TrackResult{Reasons: make([]DropReason, len(hits))}, err
	}
	if !e.enter() {
		return TrackResult{Reasons: make([]DropReason, len(hits))}, ErrClosed
	}
	defer e.exit()
	now := e.now()
	n := (len(hits) + partHits - 1) / partHits
	if e.opts.MemoryBudget > 0 && len(hits) > 1 && e.sinceRoom.Add(int64(len(hits))) >= int64(partHits) {
		e.sinceRoom.Store(0)
		e.makeRoom()
	}
	if n <= 1 && (mark == nil || mark.Part == 0) {
		b, err := e.prepare(ctx, now, hits)
		if err != nil {
			return TrackResult{Reasons: make([]DropReason, len(hits))}, err
		}
		return e.commit(ctx, &b, mark)
	}
	res := TrackResult{Reasons: make([]DropReason, len(hits))}
	p := &parts{e: e, ctx: ctx, now: now, n: n, res: &res, own: own}
	if mark != nil {
		p.next = int(mark.Part)
	}
	var total idem.Result
	cur, ok, at, carry, skipped, err := p.nextLogging(hits)
	for err == nil && ok {
		next, nextOK, nextAt, after, skippedAfter, nerr := p.nextLogging(hits)
		if nerr != nil {
			cur.release()
			return res, nerr
		}
		var pm *idem.Mark
		if mark != nil {
			c := *mark
			c.Part, c.Parts, c.Carry = uint32(at), uint32(n), carry
			if !nextOK { // the last part that logs: it ends the call
				c.Parts = uint32(at + 1)
				c.Carry.Add(after)
			}
			pm = &c
		}
		var r TrackResult
		r, err = e.commit(ctx, &cur, pm)
		p.tally(skipped) // the parts before cur, counted with it
		p.add(at, r)
		if pm != nil && err == nil {
			total.Add(pm.Res)
		}
		cur, ok, at, carry, skipped = next, nextOK, nextAt, after, skippedAfter
	}
	if ok {
		cur.release()
	} else if err == nil {
		p.tally(skipped) // the parts after the last that logs
	}
	if mark != nil {
		mark.Res = total
	}
	return res, err
}

// parts walks the parts of a call (its hits are passed to nextLogging,
// not kept here: a struct whose contents leak would make every caller's
// hits escape to the heap, Track's one-hit calls included).
type parts struct {
	e    *Engine
	ctx  context.Context
	now  time.Time
	n    int // parts
	next int // the part nextLogging looks at first
	res  *TrackResult
	own  bool // the hits are the call's: cleared once prepared (Import)
}

// dropped is a part none of whose hits logs: its index and its drops.
type dropped struct {
	at      int
	reasons []DropReason
}

// nextLogging prepares the parts from p.next on until one that logs, and
// returns it (ok) with its index; ok is false after the last part. The
// parts before it, which log nothing, are in skipped, with their drops
// summed in drops; they are counted (tally) once the part after them is.
func (p *parts) nextLogging(hits []Hit) (b batch, ok bool, at int, drops idem.Result, skipped []dropped, err error) {
	for ; p.next < p.n; p.next++ {
		lo, hi := p.next*partHits, min((p.next+1)*partHits, len(hits))
		b, err := p.e.prepare(p.ctx, p.now, hits[lo:hi])
		if err != nil {
			return batch{}, false, 0, drops, nil, err
		}
		if p.own {
			clear(hits[lo:hi]) // their records hold what is kept of them
		}
		if b.logs() {
			at := p.next
			p.next++
			return b, true, at, drops, skipped, nil
		}
		reasons := b.res.Reasons
		b.release()
		drops.Add(resultOfReasons(reasons))
		skipped = append(skipped, dropped{p.next, reasons})
	}
	return batch{}, false, 0, drops, skipped, nil
}

// tally counts parts that log nothing into the call's result and the
// engine's counters.
func (p *parts) tally(skipped []dropped) {
	for _, d := range skipped {
		r := TrackResult{Reasons: d.reasons}
		p.e.tally(&r)
		p.add(d.at, r)
	}
}

// add adds part at's result to the call's.
func (p *parts) add(at int, r TrackResult) {
	copy(p.res.Reasons[at*partHits:], r.Reasons)
	p.res.Accepted += r.Accepted
	for i, k := range r.Dropped {
		p.res.Dropped[i] += k
	}
}

// MakeRoom takes a snapshot when the open days before today (outside
// Options.MemoryBudget until a snapshot freezes them: an import's past
// days) hold more than half the budget, counted whole, buckets and
// segments (SPEC §13: imports in a row grow memory by a bounded amount).
// Calls of more than one hit (imports, batches) do so first once partHits
// hits came in such calls since the last look, whatever their size; an
// importer calls it before it reads and decodes a large body, so that the
// snapshot of the days the previous import wrote does not overlap the
// next one's decoding. Calls of one hit (live tracking) never wait for a
// snapshot. Without a budget, or in cluster mode (whose snapshots wait
// for the follower), it does nothing. It reports whether a snapshot made
// room (its own, or one that ran meanwhile).
func (e *Engine) MakeRoom() bool {
	if !e.enter() {
		return false
	}
	defer e.exit()
	return e.makeRoom()
}

// makeRoom is MakeRoom inside a call. An import writes past days, which
// only a snapshot freezes and eviction then pages out; without it,
// imports in a row each left a day of new values open, and the snapshot
// that finally wrote them encoded them all at once beside the next
// import. The call waits for the snapshot: under a small budget imports
// go at the pace of the store. Only the open days before today count:
// what a snapshot freezes (today's rows are sealed by their own rule,
// and a snapshot would not take them out of memory).
func (e *Engine) makeRoom() bool {
	b := e.opts.MemoryBudget
	if b <= 0 || e.opts.Cluster != nil {
		return false
	}
	snaps := e.counters.snapshots.Load()
	if e.pastOpenBytes() <= b/2 {
		return false
	}
	e.roomMu.Lock()
	defer e.roomMu.Unlock()
	if e.counters.snapshots.Load() != snaps {
		return true // another caller's snapshot, or the background one, made room
	}
	if err := e.snapshot(); err != nil {
		// The call goes on: its own log write fails if the store does
		// (a snapshot fails when the store does: its log is the
		// store's), and the next call tries again.
		if !errors.Is(err, ErrClosed) {
			e.opts.Logger.Error("snapshot before an import", "err", err)
		}
		return false
	}
	return true
}

// pastOpenBytes estimates the memory of every website's open days before
// its today, whole (buckets and segments, openSize): what a snapshot
// freezes. A past day a write thawed counts whole too: its frozen copy
// left the budget's resident days when it did. So a small import into a
// large past day under a small budget waits for a snapshot of that day
// (a cost MakeRoom accepts for the bound: counting only what the write
// brought in let a snapshot that froze an import's day midway hide the
// rest of it, and two such days were open at once).
func (e *Engine) pastOpenBytes() int64 {
	now := e.now()
	var n int64
	for _, s := range e.siteList() {
		cfg := s.cfg.Load()
		today := buckets.DateFromTime(now.In(cfg.loc))
		sh := e.shardOf(cfg.id)
		sh.mu.Lock()
		for date, ent := range s.state.days {
			if !ent.frozen && date < today {
				n += ent.openSize()
			}
		}
		sh.mu.Unlock()
	}
	return n
}

// openBytes estimates the memory of every website's open (unfrozen) days:
// their segments alone, and whole (openSize).
func (e *Engine) openBytes() (segs, all int64) {
	for _, s := range e.siteList() {
		sh := e.shardOf(s.state.id)
		sh.mu.Lock()
		for _, ent := range s.state.days {
			if !ent.frozen {
				segs += ent.segSize()
				all += ent.openSize()
			}
		}
		sh.mu.Unlock()
	}
	return segs, all
}

// segSize is the estimated memory of the day's segments.
func (ent *dayEntry) segSize() int64 {
	if ent.seg == nil {
		return 0
	}
	return int64(ent.seg.Size)
}

// openSize is the estimated memory of an open day, its buckets and
// segments, as a frozen day counts in the budget (retention.go): an
// import's day of new values is about as much in its buckets (their own
// dictionary, columns and bitmaps) as in its segments.
func (ent *dayEntry) openSize() int64 {
	n := ent.segSize()
	if ent.day != nil {
		n += int64(ent.day.SizeBytes())
	}
	return n
}

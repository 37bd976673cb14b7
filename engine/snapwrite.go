package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/stored"
	"github.com/webstats/webstats/engine/internal/visitors"
	"github.com/webstats/webstats/snapshot"
)

// Snapshot writes what changed since the last snapshot to the store and
// trims the log behind it. It runs in the background every
// Options.SnapshotEvery and at Close.
func (e *Engine) Snapshot(ctx context.Context) error {
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	return e.snapshot()
}

// The trimmed log is compacted at most every compactLogEvery, or once
// compactLogHits hits were trimmed.
const (
	compactLogEvery = 5 * time.Minute
	compactLogHits  = 1 << 20
)

// pendingDay is a dirty day collected for a snapshot.
type pendingDay struct {
	st   *siteState
	date buckets.Date
	ent  *dayEntry
	day  *buckets.Day // frozen: encoded after the lock is released
	seg  *segments.Day
	data []byte
	// part, when the day's rows are sealed, is the day as it was: its rows
	// are written as part number part.parts, and seg is its value after.
	part *segments.Day
}

// pendingChunks are the changed chunks of a period collected for a
// snapshot, encoded after the lock is released.
type pendingChunks struct {
	st     *siteState
	first  buckets.Date
	p      *period
	chunks []visitors.Chunk
}

// snapshot writes a snapshot, then forgets the salts retention dropped:
// after snapMu is released, since in a cluster that is a network call, and
// the follower (deleting a website) and eviction need snapMu meanwhile.
func (e *Engine) snapshot() error {
	if err := e.writeSnapshot(); err != nil {
		return err
	}
	e.dropOldSalts(e.now())
	return nil
}

// snapBatch is what one snapshot collected: the store's batch, the days
// and visitor-state chunks to encode into it after the locks, the websites
// whose retention cut it writes, and the log position it trims to.
type snapBatch struct {
	sn      *snapshot.Snapshot
	pend    []pendingDay
	chunks  []pendingChunks
	indexed []pendingIndex // the periods whose index the batch extends
	cuts    []*siteState   // retention's deletions: see siteState.cut
	trim    uint64
}

// writeSnapshot writes a snapshot. Eviction runs only under snapMu, so
// nothing collected here (marked clean before it is written) can leave
// memory before the write is done.
func (e *Engine) writeSnapshot() error {
	if p := e.stateFailed.Load(); p != nil {
		return fmt.Errorf("engine: snapshot refused: %w", *p)
	}
	// In cluster mode the flush waits for the follower, which takes
	// snapMu to delete a website's data: it runs before the lock.
	shared := e.opts.Cluster != nil
	if shared {
		select {
		case <-e.stop:
			// Closing: the follower has stopped; Close flushed them
			// before it stopped it.
		default:
			e.flushUses()
		}
	}
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	if !shared {
		e.flushUses()
	}
	start := time.Now()
	// Every record up to trim is applied, except those still pending,
	// which lower it below the first of them (see ingest). It is read
	// before the websites are listed: a website made after the listing
	// has only records after trim.
	b := &snapBatch{sn: &snapshot.Snapshot{}, trim: e.seq.Load()}
	now := e.now()
	snapTick := e.counters.tick.Add(1)

	e.regMu.RLock()
	sites := make([]*site, 0, len(e.sites))
	for _, s := range e.sites {
		sites = append(sites, s)
	}
	e.regMu.RUnlock()

	for _, s := range sites {
		e.collectSite(s, now, b)
	}
	b.sn.Trim = b.trim
	if err := b.encode(); err != nil {
		e.unsaved(sites, b.pend, b.chunks, b.sn)
		return err
	}
	// Retention's deletions are in the batch (sn.DropDays), with the site
	// records that no longer list the days: separate, a crash between the
	// two left dates with no day, or, the other way round, days that the
	// next Open kept when a time zone change had moved its cut back.
	if err := e.store.WriteSnapshot(b.sn); err != nil {
		e.unsaved(sites, b.pend, b.chunks, b.sn)
		return fmt.Errorf("engine: snapshot: %w", err)
	}
	e.snapshotWritten(b)
	e.lastSnapTick = snapTick
	e.compactLogAfter(b.trim, now)
	e.counters.lastSnapNs.Store(int64(time.Since(start)))
	e.evictLocked(now)
	return nil
}

// flushUses writes the last uses of keys and sessions.
func (e *Engine) flushUses() {
	if err := e.flushRecords(); err != nil {
		// Only last-use times: the snapshot goes on, they wait for the
		// next.
		e.opts.Logger.Error("write key and session uses", "err", err)
	}
}

// collectSite adds what changed of website s since the last snapshot to
// b, under its shard's lock, and applies retention to it (maintainLocked).
func (e *Engine) collectSite(s *site, now time.Time, b *snapBatch) {
	cfg := s.cfg.Load()
	sh := e.shardOf(cfg.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := s.state
	if st.deleted {
		return
	}
	if len(st.pending) > 0 {
		b.trim = min(b.trim, st.pending[0].seq-1)
	}
	today := buckets.DateFromTime(now.In(cfg.loc))
	b.sn.DropPeriods = append(b.sn.DropPeriods, st.dropped...)
	st.dropped = nil
	e.maintainLocked(st, today, b.sn)
	if st.cutPending {
		b.cuts = append(b.cuts, st)
		b.sn.DropDays = append(b.sn.DropDays, snapshot.DaysBefore{Website: st.id, Date: int32(st.cut)})
	}
	for date, ent := range st.days {
		if !ent.dirty {
			continue
		}
		ent.dirty = false
		p := pendingDay{st: st, date: date, ent: ent}
		// Encoded after the lock is released: a frozen day never
		// changes, and an open one is marked shared, so the next write
		// copies it first (copy on write) instead of every snapshot
		// encoding today's day under the lock (48–207 ms with 50,000
		// values a dimension, stalling tracking).
		if !ent.frozen {
			ent.shared = true
		}
		p.day, p.seg = ent.day, ent.seg
		if !ent.frozen && !ent.closed && ent.seg.RowBytes() >= e.sealBytes && ent.seg.Hits() > 0 {
			// Its rows go to the store as a part; the value keeps the
			// strings. They leave memory once written (snapshotWritten).
			p.part, p.seg = ent.seg, ent.seg.Sealed()
		}
		b.pend = append(b.pend, p)
	}
	for first, p := range st.periods {
		if p.used > e.lastSnapTick {
			p.idle = 0
		} else {
			p.idle++
		}
		if c := p.TakeDirty(); len(c) > 0 {
			b.chunks = append(b.chunks, pendingChunks{st, first, p, c})
		}
		b.indexLocked(st, first, p, e.overBudget())
	}
	if st.metaDirt {
		st.metaDirt = false
		b.sn.Sites = append(b.sn.Sites, snapshot.SiteRecord{Website: st.id, Data: stored.AppendMeta(nil, st.lastSeq, st.dates, &st.keys)})
	}
}

// encode encodes the collected days, sealed parts and visitor-state chunks
// into the batch, with no lock held.
func (b *snapBatch) encode() error {
	for i := range b.pend {
		p := &b.pend[i]
		if p.day != nil {
			data, err := stored.EncodeDay(p.day, p.seg)
			if err != nil {
				return fmt.Errorf("engine: encode day: %w", err)
			}
			p.data = data
		}
		b.sn.Days = append(b.sn.Days, snapshot.DayRecord{Website: p.st.id, Date: int32(p.date), Data: p.data})
		if p.part != nil {
			b.sn.Parts = append(b.sn.Parts, snapshot.DayPart{Website: p.st.id, Date: int32(p.date), Part: p.part.Parts, Data: p.part.AppendPart(nil)})
		}
	}
	for _, pc := range b.chunks {
		for i := range pc.chunks {
			c := &pc.chunks[i]
			b.sn.Chunks = append(b.sn.Chunks, snapshot.StateChunk{Website: pc.st.id, Period: int32(pc.first), Chunk: c.Index, Data: c.AppendBinary(nil)})
		}
	}
	return nil
}

// snapshotWritten records that b is in the store: retention's cuts are
// done, sealed rows leave memory, and the chunks' periods are stored.
func (e *Engine) snapshotWritten(b *snapBatch) {
	for _, st := range b.cuts {
		// Only snapshots (serialised) and load set cut; a failed write
		// leaves it pending for the next snapshot.
		sh := e.shardOf(st.id)
		sh.mu.Lock()
		st.cutPending = false
		sh.mu.Unlock()
	}
	for _, p := range b.pend {
		if p.part != nil {
			e.dropSealed(p)
		}
	}
	for _, pc := range b.chunks {
		sh := e.shardOf(pc.st.id)
		sh.mu.Lock()
		pc.p.isStored = true
		if !pc.st.deleted {
			pc.st.stored[pc.first] = struct{}{}
		}
		sh.mu.Unlock()
	}
	for _, pi := range b.indexed {
		sh := e.shardOf(pi.st.id)
		sh.mu.Lock()
		pi.p.SetIndexed(pi.n)
		sh.mu.Unlock()
	}
}

// compactLogAfter counts a snapshot that trimmed the log to trim, and
// compacts the log's key range when due: the trimmed log's space comes back
// only when Pebble compacts it, every compactLogEvery, or sooner after many
// hits (by time, not by count of snapshots: early ones come up to one a
// second).
func (e *Engine) compactLogAfter(trim uint64, now time.Time) {
	e.trimmedSince += trim - min(trim, e.lastTrim)
	e.lastTrim = max(trim, e.lastTrim)
	if e.counters.snapshots.Add(1); now.Sub(e.lastCompact) >= compactLogEvery || e.trimmedSince >= compactLogHits {
		e.trimmedSince, e.lastCompact = 0, now
		if err := e.store.CompactLog(); err != nil {
			e.opts.Logger.Error("compact log", "err", err)
		}
	}
}

// dropSealed takes the rows that snapshot p sealed, now in the store, out
// of its day. Only snapshots seal, one at a time, so the day has the parts
// it had then, unless it was deleted or dropped meanwhile; writes since
// then added rows after the sealed ones.
func (e *Engine) dropSealed(p pendingDay) {
	sh := e.shardOf(p.st.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ent := p.st.days[p.date]
	if p.st.deleted || ent != p.ent || ent.frozen || ent.seg.Parts != p.part.Parts {
		return
	}
	ent.seg = ent.seg.DropSealed(p.part)
	ent.shared = false // a new copy: no snapshot encodes it
}

// unsaved marks what a failed snapshot collected as changed again, and
// keeps the visitor state it was to delete for the next one.
func (e *Engine) unsaved(sites []*site, pend []pendingDay, chunks []pendingChunks, sn *snapshot.Snapshot) {
	for _, ref := range sn.DropPeriods {
		e.regMu.RLock()
		s := e.sites[ref.Website]
		e.regMu.RUnlock()
		if s == nil {
			continue
		}
		sh := e.shardOf(ref.Website)
		sh.mu.Lock()
		if !s.state.deleted {
			s.state.dropped = append(s.state.dropped, ref)
		}
		sh.mu.Unlock()
	}
	for _, p := range pend {
		sh := e.shardOf(p.st.id)
		sh.mu.Lock()
		p.ent.dirty = true
		sh.mu.Unlock()
	}
	for _, pc := range chunks {
		sh := e.shardOf(pc.st.id)
		sh.mu.Lock()
		for _, c := range pc.chunks {
			pc.p.MarkChunkDirty(c.Index)
		}
		sh.mu.Unlock()
	}
	for _, s := range sites {
		sh := e.shardOf(s.state.id)
		sh.mu.Lock()
		s.state.metaDirt = true
		sh.mu.Unlock()
	}
}

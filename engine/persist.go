package engine

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/snapshot"
)

// load reads the registry, the salts and each website's saved state, then
// replays the log written after the last snapshot.
func (e *Engine) load() error {
	if err := e.loadRegistry(); err != nil {
		return err
	}
	err := e.store.Scan(snapshot.KindSalt, func(id uint64, v []byte) error {
		if len(v) != 16 {
			return fmt.Errorf("engine: salt %d: %w", id, snapshot.ErrCorrupt)
		}
		e.salts.m[buckets.Date(int32(uint32(id)))] = [16]byte(v)
		return nil
	})
	if err != nil {
		return err
	}
	maxSeq := e.store.Trim()
	err = e.store.ScanSites(func(website uint32, data []byte) error {
		s := e.sites[website]
		if s == nil {
			return nil // deleted; its keys are being removed
		}
		st := s.state
		if err := e.decodeMetaLocked(st, data); err != nil {
			return fmt.Errorf("engine: website %d state: %w", website, err)
		}
		if e.opts.Retention > 0 {
			// Days retention drops now are dropped before replay reads
			// any (a store written before retention's deletions went
			// into the snapshot batch may list dates with no day), and
			// deleted from the store by the snapshot at the end of load.
			cut := buckets.DateFromTime(e.now().In(s.cfg.Load().loc)) - buckets.Date(e.opts.Retention)
			st.keptFrom = max(st.keptFrom, cut)
			for date := range st.dates {
				if date < cut {
					delete(st.dates, date)
					st.cut, st.cutPending, st.metaDirt = cut, true, true
				}
			}
		}
		maxSeq = max(maxSeq, st.lastSeq)
		return nil
	})
	if err != nil {
		return err
	}
	if e.opts.Cluster != nil {
		// Before anything below writes (migrations, retention's
		// snapshot): a directory of another log is left as it is.
		if err := e.checkLog(); err != nil {
			return err
		}
		if e.opts.Partitions != nil {
			if err := e.loadHeld(); err != nil {
				return err
			}
		}
	}
	for id, s := range e.sites {
		st := s.state
		err := e.store.StatePeriods(id, func(first int32) error {
			st.stored[buckets.Date(first)] = struct{}{}
			return nil
		})
		if err != nil {
			return err
		}
		if err := e.migrate(st); err != nil {
			return err
		}
	}
	// Replay: records after the trim point that their website has not seen.
	replayed, last, err := e.replay(e.store.Trim())
	if err != nil {
		return err
	}
	maxSeq = max(maxSeq, last)
	if err := e.rebuildRealtime(); err != nil {
		return err
	}
	dropped := false
	if e.opts.Retention > 0 {
		// Replay may have brought back days retention had dropped (hits
		// logged before the snapshot that dropped them): drop them again,
		// so that what a query sees after Open does not depend on whether
		// the process stopped cleanly.
		for _, s := range e.sites {
			st := s.state
			today := buckets.DateFromTime(e.now().In(s.cfg.Load().loc))
			var sn snapshot.Snapshot
			e.maintainLocked(st, today, &sn)
			st.dropped = append(st.dropped, sn.DropPeriods...)
			dropped = dropped || st.cutPending || len(st.dropped) > 0
		}
	}
	if e.opts.Cluster != nil {
		// Follow the shared log from the last snapshot's trim point, not
		// from the highest sequence a website applied: another website's
		// saved state may lack records before that one. (Also what the
		// retention snapshot below stores as its trim point.)
		maxSeq = e.store.Trim()
	}
	e.seq.Store(maxSeq)
	e.lastTrim = e.store.Trim()
	if dropped {
		// What retention dropped now must stay dropped: a snapshot stores
		// it before Open returns. Left to the next one, a crash before it
		// would bring the days (and visitor state, and the log's hits of
		// those days) back at the next Open if the website's time zone
		// had changed meanwhile and moved the cut back a day.
		if err := e.snapshot(); err != nil {
			return fmt.Errorf("engine: retention: %w", err)
		}
	}
	e.opts.Logger.Info("engine opened", "websites", len(e.sites), "replayed", replayed)
	return nil
}

// replayBatch is how many log records replay decodes before handing them
// to the goroutine that applies them.
const replayBatch = 256

// errReplayStopped stops reading the log when applying failed.
var errReplayStopped = errors.New("engine: replay stopped")

// replayRecs is a batch of decoded log records and their sequences;
// marks[i], when not nil, is the idempotency key logged at seqs[i] in
// place of a record.
type replayRecs struct {
	seqs  []uint64
	recs  []record
	marks []*idemMark
}

// add decodes the log entry seq (a record, or an idempotency key's mark)
// into b.
func (b *replayRecs) add(seq uint64, data []byte, in *interner) error {
	i := len(b.seqs)
	var err error
	if b.marks[i] = nil; len(data) > 0 && data[0] == idemTag {
		b.marks[i] = new(idemMark)
		err = b.marks[i].decode(data)
	} else {
		err = b.recs[i].decodeWith(data, in)
	}
	if err != nil {
		return fmt.Errorf("engine: log entry %d: %w", seq, err)
	}
	b.seqs = append(b.seqs, seq)
	return nil
}

// replay applies the log's records after sequence after that their website
// has not seen, in order, and returns how many it applied and the highest
// sequence it read. Reading and decoding (Pebble's iterator, the strings)
// run in this goroutine, applying in another: they cost about the same, so
// on two cores replay runs nearly twice as fast as either alone. Batches go
// round between the two (at most four in flight), so memory is bounded.
func (e *Engine) replay(after uint64) (replayed int, last uint64, err error) {
	full := make(chan *replayRecs, 4)
	free := make(chan *replayRecs, 4)
	for range cap(free) {
		free <- &replayRecs{seqs: make([]uint64, 0, replayBatch), recs: make([]record, replayBatch), marks: make([]*idemMark, replayBatch)}
	}
	var applyErr error
	var failed atomic.Bool // applyErr is set: reading may stop
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			// A panic applying fails Open, as it would in the caller's
			// goroutine; the batches still in flight are drained.
			if r := recover(); r != nil {
				applyErr = fmt.Errorf("engine: replay: %v", r)
				failed.Store(true)
				for b := range full {
					free <- b // the reader may be waiting for one
				}
			}
		}()
		for b := range full {
			for i, seq := range b.seqs {
				if applyErr != nil {
					break // read on, to hand every batch back
				}
				if m := b.marks[i]; m != nil {
					e.replayMark(seq, m)
					continue
				}
				r := &b.recs[i]
				s := e.sites[r.website]
				if s == nil || seq <= s.state.lastSeq {
					continue
				}
				ent, p, err := e.resolve(s.state, r)
				if err != nil {
					applyErr = err
					failed.Store(true)
					break
				}
				e.applyLocked(s.state, r, s.cfg.Load().domain, ent, p)
				s.state.appliedLocked(seq)
				replayed++
			}
			b.seqs = b.seqs[:0]
			free <- b
		}
	}()
	cur := <-free
	var in interner
	err = e.store.ReplayLog(after, func(seq uint64, data []byte) error {
		if failed.Load() {
			return errReplayStopped
		}
		last = max(last, seq)
		if err := cur.add(seq, data, &in); err != nil {
			return err
		}
		if len(cur.seqs) == replayBatch {
			full <- cur
			cur = <-free
		}
		return nil
	})
	if err == nil && len(cur.seqs) > 0 {
		full <- cur
	}
	close(full)
	<-done
	if err == nil || errors.Is(err, errReplayStopped) {
		err = applyErr // read after done: the applier's last write
	}
	return replayed, last, err
}

// resolve makes the day and visitor state of r resident, reading them from
// the store: replay's version of ingest's pinning (nothing runs beside it).
func (e *Engine) resolve(st *siteState, r *record) (*dayEntry, *period, error) {
	ent, ok := st.days[r.date]
	if _, listed := st.dates[r.date]; listed && (!ok || segMissing(ent)) {
		d, err := e.readDay(st.id, r.date)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			e.fillSegLocked(ent, d.seg)
		} else {
			ent = e.residentLocked(st, r.date, d)
		}
	}
	p, ok := st.periods[r.period]
	if !ok && r.seg.engagement {
		// An engagement report needs the state only to find a visit; it
		// never makes a period (an event numbers its visitor, as in
		// pinLocked).
		if _, stored := st.stored[r.period]; !stored {
			return ent, nil, nil
		}
	}
	if !ok {
		if _, stored := st.stored[r.period]; stored {
			var err error
			if p, err = e.loadPeriod(st.id, r.period); err != nil {
				return nil, nil, err
			}
		}
		if p == nil {
			p = newPeriod(0)
		}
		e.residentPeriodLocked(st, r.period, p)
	}
	// The day of the visit r may continue, when another.
	if id, ok := p.index[r.hash]; ok {
		v := &p.visits[id-p.first]
		if vent, res := st.days[v.day]; (!res || segMissing(vent)) && v.row != noVisit && v.day != r.date {
			if _, listed := st.dates[v.day]; listed {
				d, err := e.readDay(st.id, v.day)
				if err != nil {
					return nil, nil, err
				}
				if res {
					e.fillSegLocked(vent, d.seg)
				} else {
					e.residentLocked(st, v.day, d)
				}
			}
		}
	}
	return ent, p, nil
}

// Site meta record: version, last sequence, then the dates with data as
// delta-coded varints; version 2 adds the idempotency keys (idemTable),
// which are applied with the same records as lastSeq. A website without
// keys is written as version 1, which older versions read.
const metaVersion = 2

func (st *siteState) appendMeta(b []byte) []byte {
	keyed := len(st.keys.order) > 0
	if keyed {
		b = append(b, metaVersion)
	} else {
		b = append(b, 1)
	}
	b = binary.AppendUvarint(b, st.lastSeq)
	dates := make([]buckets.Date, 0, len(st.dates))
	for d := range st.dates {
		dates = append(dates, d)
	}
	slices.Sort(dates)
	b = binary.AppendUvarint(b, uint64(len(dates)))
	prev := int64(0)
	for _, d := range dates {
		b = binary.AppendVarint(b, int64(d)-prev)
		prev = int64(d)
	}
	if !keyed {
		return b
	}
	return st.keys.appendBinary(b)
}

// decodeMetaLocked is st.decodeMeta, with the keys' bytes counted.
func (e *Engine) decodeMetaLocked(st *siteState, b []byte) error {
	before := st.keys.bytes()
	err := st.decodeMeta(b)
	e.counters.keys.Add(st.keys.bytes() - before)
	return err
}

func (st *siteState) decodeMeta(b []byte) error {
	d := decoder{b: b}
	v := d.byte()
	if v < 1 || v > metaVersion {
		return fmt.Errorf("unknown version %d: %w", v, snapshot.ErrCorrupt)
	}
	st.lastSeq = d.uvarint()
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		return fmt.Errorf("bad header: %w", snapshot.ErrCorrupt)
	}
	prev := int64(0)
	for range n {
		prev += d.varint()
		if d.bad || prev < -1<<31 || prev > 1<<31-1 {
			return fmt.Errorf("bad dates: %w", snapshot.ErrCorrupt)
		}
		st.dates[buckets.Date(prev)] = struct{}{}
	}
	st.keys = idemTable{}
	if v >= 2 {
		if err := st.keys.decode(&d); err != nil {
			return fmt.Errorf("%w: %w", err, snapshot.ErrCorrupt)
		}
	}
	if len(d.b) != 0 {
		return fmt.Errorf("trailing bytes: %w", snapshot.ErrCorrupt)
	}
	return nil
}

// storedDay is a day as the store holds it: its buckets and its segments.
type storedDay struct {
	day *buckets.Day
	seg *segDay
	// open reports a day that may change: scanDays passes it under the
	// shard lock.
	open bool
}

// dayEnvelope is the first byte of a day value holding buckets and
// segments: [dayEnvelope][uvarint length][buckets day][segments]. A value
// starting with another byte is a buckets day alone (stores written before
// the segments store; buckets days start with their version, 1 or 2), read
// with empty segments.
const dayEnvelope = 0xd5

// encodeDay encodes a day for the store.
func encodeDay(d *buckets.Day, seg *segDay) ([]byte, error) {
	bd, err := d.MarshalBinary()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(bd)+16+seg.hits()*4)
	b = append(b, dayEnvelope)
	b = binary.AppendUvarint(b, uint64(len(bd)))
	b = append(b, bd...)
	return seg.appendBinary(b), nil
}

// splitDay splits a day value of the store into its buckets day and its
// segments; a value without the envelope is a buckets day alone.
func splitDay(data []byte) (bd, segs []byte, enveloped bool, err error) {
	if len(data) > 0 && data[0] != dayEnvelope {
		return data, nil, false, nil
	}
	n, k := binary.Uvarint(data[min(1, len(data)):])
	if k <= 0 || n > uint64(len(data)-1-k) {
		return nil, nil, false, fmt.Errorf("day envelope: %w", snapshot.ErrCorrupt)
	}
	body := data[1+k:]
	return body[:n], body[n:], true, nil
}

// decodeDay decodes a day value of the store; its segments too when
// withSeg (else seg is nil).
func decodeDay(data []byte, withSeg bool) (storedDay, error) {
	d := buckets.NewDay(0)
	bd, segs, enveloped, err := splitDay(data)
	if err != nil {
		return storedDay{}, err
	}
	if err := d.UnmarshalBinary(bd); err != nil {
		return storedDay{}, err
	}
	switch {
	case !withSeg:
		return storedDay{day: d}, nil
	case !enveloped:
		return storedDay{day: d, seg: newSegDay()}, nil
	}
	seg, err := decodeSegDay(segs)
	if err != nil {
		return storedDay{}, fmt.Errorf("%w: %w", snapshot.ErrCorrupt, err)
	}
	return storedDay{day: d, seg: seg}, nil
}

// readDay reads one day from the store.
func (e *Engine) readDay(website uint32, date buckets.Date) (storedDay, error) {
	data, err := e.store.Day(website, int32(date))
	if err != nil {
		return storedDay{}, fmt.Errorf("engine: website %d day %v: %w", website, date, err)
	}
	d, err := decodeDay(data, true)
	if err != nil {
		return storedDay{}, fmt.Errorf("engine: website %d day %v: %w", website, date, err)
	}
	return d, nil
}

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
	seg  *segDay
	data []byte
	// part, when the day's rows are sealed, is the day as it was: its rows
	// are written as part number part.parts, and seg is its value after.
	part *segDay
}

// pendingChunks are the changed chunks of a period collected for a
// snapshot, encoded after the lock is released.
type pendingChunks struct {
	st     *siteState
	first  buckets.Date
	p      *period
	chunks []chunkCopy
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

// writeSnapshot writes a snapshot. Eviction runs only under snapMu, so
// nothing collected here (marked clean before it is written) can leave
// memory before the write is done.
func (e *Engine) writeSnapshot() error {
	// In cluster mode the flush waits for the follower, which takes
	// snapMu to delete a website's data: it runs before the lock.
	shared := e.opts.Cluster != nil
	flush := func() {
		if err := e.flushRecords(); err != nil {
			// Only last-use times: the snapshot goes on, they wait for
			// the next.
			e.opts.Logger.Error("write key and session uses", "err", err)
		}
	}
	if shared {
		select {
		case <-e.stop:
			// Closing: the follower has stopped; Close flushed them
			// before it stopped it.
		default:
			flush()
		}
	}
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	if !shared {
		flush()
	}
	start := time.Now()
	// Every record up to trim is applied, except those still pending,
	// which lower it below the first of them (see ingest).
	trim := e.seq.Load()
	now := e.now()
	snapTick := e.counters.tick.Add(1)

	e.regMu.RLock()
	sites := make([]*site, 0, len(e.sites))
	for _, s := range e.sites {
		sites = append(sites, s)
	}
	e.regMu.RUnlock()

	sn := &snapshot.Snapshot{}
	var pend []pendingDay
	var chunks []pendingChunks
	var cuts []*siteState // retention's deletions: see siteState.cut
	for _, s := range sites {
		cfg := s.cfg.Load()
		sh := e.shardOf(cfg.id)
		sh.mu.Lock()
		st := s.state
		if st.deleted {
			sh.mu.Unlock()
			continue
		}
		if len(st.pending) > 0 {
			trim = min(trim, st.pending[0].seq-1)
		}
		today := buckets.DateFromTime(now.In(cfg.loc))
		sn.DropPeriods = append(sn.DropPeriods, st.dropped...)
		st.dropped = nil
		e.maintainLocked(st, today, sn)
		if st.cutPending {
			cuts = append(cuts, st)
			sn.DropDays = append(sn.DropDays, snapshot.DaysBefore{Website: st.id, Date: int32(st.cut)})
		}
		for date, ent := range st.days {
			if !ent.dirty {
				continue
			}
			ent.dirty = false
			p := pendingDay{st: st, date: date, ent: ent}
			// Encoded after the lock is released: a frozen day never
			// changes, and an open one is marked shared, so the next
			// write copies it first (copy on write) instead of every
			// snapshot encoding today's day under the lock (48–207 ms
			// with 50,000 values a dimension, stalling tracking).
			if !ent.frozen {
				ent.shared = true
			}
			p.day, p.seg = ent.day, ent.seg
			if !ent.frozen && !ent.closed && ent.seg.rowBytes() >= e.sealBytes && ent.seg.hits() > 0 {
				// Its rows go to the store as a part; the value keeps
				// the strings. They leave memory once written (below).
				p.part, p.seg = ent.seg, ent.seg.sealed()
			}
			pend = append(pend, p)
		}
		for first, p := range st.periods {
			if p.used > e.lastSnapTick {
				p.idle = 0
			} else {
				p.idle++
			}
			if c := p.takeDirty(); len(c) > 0 {
				chunks = append(chunks, pendingChunks{st, first, p, c})
			}
		}
		if st.metaDirt {
			st.metaDirt = false
			sn.Sites = append(sn.Sites, snapshot.SiteRecord{Website: st.id, Data: st.appendMeta(nil)})
		}
		sh.mu.Unlock()
	}
	sn.Trim = trim
	for i := range pend {
		p := &pend[i]
		if p.day != nil {
			data, err := encodeDay(p.day, p.seg)
			if err != nil {
				e.unsaved(sites, pend, chunks, sn)
				return fmt.Errorf("engine: encode day: %w", err)
			}
			p.data = data
		}
		sn.Days = append(sn.Days, snapshot.DayRecord{Website: p.st.id, Date: int32(p.date), Data: p.data})
		if p.part != nil {
			sn.Parts = append(sn.Parts, snapshot.DayPart{Website: p.st.id, Date: int32(p.date), Part: p.part.parts, Data: p.part.appendPart(nil)})
		}
	}
	for _, pc := range chunks {
		for i := range pc.chunks {
			c := &pc.chunks[i]
			sn.Chunks = append(sn.Chunks, snapshot.StateChunk{Website: pc.st.id, Period: int32(pc.first), Chunk: c.chunk, Data: c.appendBinary(nil)})
		}
	}
	// Retention's deletions are in the batch (sn.DropDays), with the site
	// records that no longer list the days: separate, a crash between the
	// two left dates with no day, or, the other way round, days that the
	// next Open kept when a time zone change had moved its cut back.
	if err := e.store.WriteSnapshot(sn); err != nil {
		e.unsaved(sites, pend, chunks, sn)
		return fmt.Errorf("engine: snapshot: %w", err)
	}
	for _, st := range cuts {
		// Only snapshots (serialised) and load set cut; a failed write
		// leaves it pending for the next snapshot.
		sh := e.shardOf(st.id)
		sh.mu.Lock()
		st.cutPending = false
		sh.mu.Unlock()
	}
	for _, p := range pend {
		if p.part != nil {
			e.dropSealed(p)
		}
	}
	for _, pc := range chunks {
		sh := e.shardOf(pc.st.id)
		sh.mu.Lock()
		pc.p.isStored = true
		if !pc.st.deleted {
			pc.st.stored[pc.first] = struct{}{}
		}
		sh.mu.Unlock()
	}

	e.lastSnapTick = snapTick
	// The trimmed log's space comes back only when Pebble compacts it: every
	// compactLogEvery, or sooner after many hits (by time, not by count of
	// snapshots: early ones come up to one a second).
	e.trimmedSince += trim - min(trim, e.lastTrim)
	e.lastTrim = max(trim, e.lastTrim)
	if e.counters.snapshots.Add(1); now.Sub(e.lastCompact) >= compactLogEvery || e.trimmedSince >= compactLogHits {
		e.trimmedSince, e.lastCompact = 0, now
		if err := e.store.CompactLog(); err != nil {
			e.opts.Logger.Error("compact log", "err", err)
		}
	}
	e.counters.lastSnapNs.Store(int64(time.Since(start)))
	e.evictLocked(now)
	return nil
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
	if p.st.deleted || ent != p.ent || ent.frozen || ent.seg.parts != p.part.parts {
		return
	}
	ent.seg = ent.seg.dropSealed(p.part)
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
			pc.p.markDirty(pc.p.first + c.chunk*chunkVisitors)
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

// maintainLocked freezes the days before today (compacting them) and
// applies retention in memory. When it drops days it sets st.cut for the
// next snapshot to delete them from the store (the highest cut pending: a
// time zone change may lower today's). Dropped visitor state goes into sn.
func (e *Engine) maintainLocked(st *siteState, today buckets.Date, sn *snapshot.Snapshot) {
	for date, ent := range st.days {
		if ent.closed && date >= today {
			ent.closed = false // today again (the website's time zone changed)
		}
		if !ent.frozen && date < today {
			// No encoder reads it now (snapshots are serialised, and
			// this one encodes after maintenance).
			ent.shared = false
			ent.day.Compact()
			ent.seg.compact()
			ent.seg.size = ent.seg.estimate()
			ent.frozen, ent.closed, ent.size = true, true, ent.day.SizeBytes()+ent.seg.size
			ent.used = e.counters.tick.Add(1)
			e.counters.resident.Add(int64(ent.size))
		}
	}
	if e.opts.Retention <= 0 {
		return
	}
	cut := today - buckets.Date(e.opts.Retention)
	dropped := false
	for date := range st.dates {
		if date < cut {
			delete(st.dates, date)
			e.invalidateRollupsLocked(st, date)
			dropped = true
		}
	}
	// Pinned ones too: a logged hit waiting for a dropped day gets a new
	// one (writableDayLocked), a query keeps its own pointer; left here, a
	// dropped day's old content was counted again.
	forget := false
	for date, ent := range st.days {
		if date < cut {
			if ent.frozen {
				e.counters.resident.Add(-int64(ent.size))
				ent.releaseMemo()
			}
			delete(st.days, date)
			st.evictGen++
			forget = true
		}
	}
	if forget || dropped { // resident or not, a day may have values in it
		e.forgetValues() // the table of query values
		// The rows of visits in the dropped days went with them, but the
		// visitor state of a salt period that ends after the cut stays:
		// a row number kept would name a row of the day made again by a
		// late import. (Stored state not resident forgets them when read
		// back, by keptFrom.)
		for first, p := range st.periods {
			if first < cut {
				p.forgetRowsBefore(cut)
			}
		}
	}
	st.keptFrom = max(st.keptFrom, cut)
	// Visitor state of periods that ended before the cut.
	for first := range st.stored {
		if periodEnd(first, e.opts.SaltPeriod) < cut {
			delete(st.stored, first)
			sn.DropPeriods = append(sn.DropPeriods, snapshot.PeriodRef{Website: st.id, Period: int32(first)})
		}
	}
	for first, p := range st.periods {
		if periodEnd(first, e.opts.SaltPeriod) < cut {
			// Pinned ones too (their hits are of dropped days): a
			// waiting hit still applies to p, which counts no more.
			e.counters.state.Add(-int64(p.size))
			p.gone = true
			delete(st.periods, first)
			st.evictGen++
			if !p.isStored {
				sn.DropPeriods = append(sn.DropPeriods, snapshot.PeriodRef{Website: st.id, Period: int32(first)})
			}
		}
	}
	if dropped {
		st.metaDirt = true
		if !st.cutPending || cut > st.cut {
			st.cut = cut
		}
		st.cutPending = true
	}
}

// periodEnd returns the last day of the salt period starting on first.
func periodEnd(first buckets.Date, p SaltPeriod) buckets.Date {
	switch p {
	case SaltWeek:
		return first + 6
	case SaltMonth:
		_, last := monthOf(first)
		return last
	}
	return first
}

// dropSaltsWithin bounds the time a snapshot spends dropping shared salts.
const dropSaltsWithin = 10 * time.Second

// dropOldSalts forgets the salts of salt periods that retention dropped.
// Salts of older periods are kept as long as their data is: an import into
// a past period must give a returning visitor the same id (SPEC §2.2), and
// the salt is what makes them the same visitor. Without retention they are
// kept (16 bytes a period), on disk only, never exposed.
func (e *Engine) dropOldSalts(now time.Time) {
	if e.opts.Retention <= 0 {
		return
	}
	// The earliest local day anywhere is a day before UTC's.
	cut := buckets.DateFromTime(now.UTC()) - 1 - buckets.Date(e.opts.Retention)
	var old []buckets.Date
	e.salts.mu.Lock()
	for first := range e.salts.m {
		if periodEnd(first, e.opts.SaltPeriod) < cut {
			old = append(old, first)
		}
	}
	e.salts.mu.Unlock()
	// In a cluster the shared salt goes first: a salt the cluster could
	// not drop stays here too, and is tried again at the next snapshot.
	// All of them share one deadline, so an unreachable cluster delays a
	// snapshot by dropSaltsWithin at most; the last snapshot, at Close,
	// leaves them to the next Open.
	ctx, cancel := context.WithTimeout(context.Background(), dropSaltsWithin)
	defer cancel()
	for _, first := range old {
		if c := e.opts.Cluster; c != nil {
			select {
			case <-e.stop:
				return
			default:
			}
			if err := c.DropSalt(ctx, int32(first)); err != nil {
				e.opts.Logger.Error("drop shared salt (tried again at the next snapshot)", "period", first.String(), "err", err)
				if ctx.Err() != nil {
					return
				}
				continue
			}
		}
		// Both under the lock: a new salt for the period can only be
		// made, and stored, once it is gone from the map.
		e.salts.mu.Lock()
		delete(e.salts.m, first)
		if err := e.store.Delete(snapshot.KindSalt, saltID(first)); err != nil {
			e.opts.Logger.Error("drop salt", "err", err)
		}
		e.salts.mu.Unlock()
	}
}

// The kinds of eviction candidates.
const (
	candDay = iota
	candState
	candRollup
)

// budgetBytes is what Options.MemoryBudget bounds: the resident closed
// days and rollups and what their memos keep, the visitor state, the realtime slots (capped, not
// evicted: realtime.go) and the idempotency keys (never evicted: they make
// room by the others' eviction).
func (e *Engine) budgetBytes() int64 {
	return e.counters.resident.Load() + e.counters.dimMemos.Load() + e.counters.state.Load() + e.counters.realtime.Load() + e.counters.keys.Load()
}

// maybeEvict evicts unless a snapshot is running (which evicts when done).
func (e *Engine) maybeEvict() {
	if b := e.opts.MemoryBudget; b > 0 && e.budgetBytes() > b && e.snapMu.TryLock() {
		e.evictLocked(e.now())
		e.snapMu.Unlock()
	}
}

// evictLocked drops from memory what the store holds and nothing waits
// for: the visitor state of past salt periods idle for two snapshots, and,
// while the resident days and visitor state exceed the memory budget, the
// least recently used frozen clean days and stored visitor state of
// periods other than the current one. e.snapMu must be held: a snapshot
// marks what it writes clean before the write is done, and nothing may
// leave memory before it is.
func (e *Engine) evictLocked(now time.Time) {
	budget := e.opts.MemoryBudget
	type cand struct {
		s    *site
		date buckets.Date
		kind int // candDay, candState (period date) or candRollup (roll)
		roll rollKey
		used int64
	}
	var cands []cand
	e.regMu.RLock()
	sites := make([]*site, 0, len(e.sites))
	for _, s := range e.sites {
		sites = append(sites, s)
	}
	e.regMu.RUnlock()
	over := func() bool { return budget > 0 && e.budgetBytes() > budget }
	for _, s := range sites {
		sh := e.shardOf(s.state.id)
		sh.mu.Lock()
		st := s.state
		today := buckets.DateFromTime(now.In(s.cfg.Load().loc))
		cur := periodStart(today, e.opts.SaltPeriod)
		prev := periodStart(cur-1, e.opts.SaltPeriod)
		for first, p := range st.periods {
			if first == cur || p.nDirty > 0 || p.pins > 0 || !p.isStored {
				continue
			}
			if first < prev && p.idle >= 2 {
				e.counters.state.Add(-int64(p.size))
				delete(st.periods, first)
				st.evictGen++
				continue
			}
			if over() {
				cands = append(cands, cand{s: s, date: first, kind: candState, used: p.used})
			}
		}
		if over() {
			for date, ent := range st.days {
				if ent.frozen && !ent.dirty && ent.pins == 0 {
					cands = append(cands, cand{s: s, date: date, kind: candDay, used: ent.used})
				}
			}
			for k, m := range st.rollups {
				cands = append(cands, cand{s: s, kind: candRollup, roll: k, used: m.used})
			}
		}
		sh.mu.Unlock()
	}
	if !over() {
		return
	}
	// Evict down to 90% of the budget, so that queries just over it do
	// not each pay for a pass.
	low := budget - budget/10
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(a.used, b.used) })
	for _, c := range cands {
		if e.budgetBytes() <= low {
			return
		}
		sh := e.shardOf(c.s.state.id)
		sh.mu.Lock()
		st := c.s.state
		switch c.kind {
		case candRollup:
			if m, ok := st.rollups[c.roll]; ok {
				delete(st.rollups, c.roll)
				e.counters.resident.Add(-int64(m.size))
			}
		case candState:
			if p, ok := st.periods[c.date]; ok && p.nDirty == 0 && p.pins == 0 && p.isStored {
				delete(st.periods, c.date)
				st.evictGen++
				e.counters.state.Add(-int64(p.size))
				e.counters.evicted.Add(1)
			}
		default:
			if ent, ok := st.days[c.date]; ok && ent.frozen && !ent.dirty && ent.pins == 0 {
				delete(st.days, c.date)
				st.evictGen++
				e.counters.resident.Add(-int64(ent.size))
				ent.releaseMemo()
				e.counters.evicted.Add(1)
			}
		}
		sh.mu.Unlock()
	}
}

// Metrics are the engine's running counts.
type Metrics struct {
	Tracked       uint64                // hits counted since Open
	Dropped       map[DropReason]uint64 // hits dropped since Open, by reason
	ResidentBytes int64                 // bytes of resident closed days, what their memos keep with them
	StateBytes    int64                 // bytes of resident visitor state
	KeyBytes      int64                 // bytes of the idempotency keys (TrackOnce), counted in MemoryBudget
	RealtimeBytes int64                 // bytes of the realtime visitor slots (in MemoryBudget)
	Evicted       uint64                // days and visitor state evicted since Open
	Overflow      uint64                // values counted as "(other)" (Options.MaxValues) since Open
	Snapshots     uint64                // snapshots written since Open
	LastSnapshot  time.Duration         // how long the last snapshot took
	Websites      int
	// OpenSegmentBytes estimates the segments rows of open days (today's):
	// exact filtered statistics keep a row per hit and per visit (SPEC
	// §10.1), so this grows with the day's hits, not with MemoryBudget.
	OpenSegmentBytes int64
	// LogSeq is the sequence of the last log record applied (or skipped:
	// its website was gone). In cluster mode it is the shared log's, and
	// every node that has caught up reports the same.
	LogSeq uint64
	// SnapshotSeq is the log sequence the last snapshot in the store
	// covers: a restart replays the log after it (0: none).
	SnapshotSeq uint64
	// Cluster is nil unless the engine is a node of a cluster
	// (Options.Cluster).
	Cluster *ClusterMetrics
}

// SnapshotSeq is Metrics().SnapshotSeq, without the rest: the log sequence
// the last snapshot in the store covers.
func (e *Engine) SnapshotSeq() uint64 { return e.store.Trim() }

// Metrics returns the engine's running counts.
func (e *Engine) Metrics() Metrics {
	m := Metrics{
		Tracked:       e.counters.tracked.Load(),
		Dropped:       make(map[DropReason]uint64),
		ResidentBytes: e.counters.resident.Load() + e.counters.dimMemos.Load(),
		StateBytes:    e.counters.state.Load(),
		KeyBytes:      e.counters.keys.Load(),
		RealtimeBytes: e.counters.realtime.Load(),
		Evicted:       e.counters.evicted.Load(),
		Overflow:      e.counters.overflow.Load(),
		Snapshots:     e.counters.snapshots.Load(),
		LastSnapshot:  time.Duration(e.counters.lastSnapNs.Load()),
		LogSeq:        e.seq.Load(),
		SnapshotSeq:   e.store.Trim(),
		Cluster:       e.ClusterMetrics(),
	}
	for _, r := range DropReasons() {
		m.Dropped[r] = e.counters.dropped[r].Load()
	}
	e.regMu.RLock()
	m.Websites = len(e.sites)
	sites := make([]*site, 0, len(e.sites))
	for _, s := range e.sites {
		sites = append(sites, s)
	}
	e.regMu.RUnlock()
	for _, s := range sites {
		sh := e.shardOf(s.cfg.Load().id)
		sh.mu.Lock()
		for _, ent := range s.state.days {
			if !ent.frozen {
				m.OpenSegmentBytes += int64(ent.seg.size)
			}
		}
		sh.mu.Unlock()
	}
	return m
}

// StoreUsage is what the engine's store holds, by part (snapshot.Usage):
// the bytes of its live keys and values, for measurements (webstats-bench
// reports disk per hit by part). It reads the whole store.
type StoreUsage = snapshot.Usage

// StoreUsage reads the whole store once and sums its bytes by part; a
// day's segments are told apart from its buckets. Like Metrics it covers
// every website and shows only sizes. It takes as long as reading the
// store (Close waits for it): not for a server's requests.
func (e *Engine) StoreUsage(ctx context.Context) (StoreUsage, error) {
	if !e.enter() {
		return StoreUsage{}, ErrClosed
	}
	defer e.exit()
	return e.store.Usage(ctx, func(day []byte) int {
		_, seg, _, err := splitDay(day)
		if err != nil {
			return 0
		}
		return len(seg)
	})
}

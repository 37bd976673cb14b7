package engine

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/enrich"
	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/idem"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/salts"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/snapshot"
)

// Track counts hits: each goes through the drops, the enrichment, the visitor
// numbering and visit detection, and is applied to its day bucket, in the
// order given. The hits of one website are logged as one atomic batch, and
// applied only once that batch is durable in the log (unless
// Options.NoSync; under Options.SyncInterval once the operating system has
// it), so what a query or a snapshot sees is always in the log:
// an acknowledged hit is never lost and a failed call counted nothing of
// that website. A hit of a website deleted meanwhile is dropped as unknown.
// A call of more than a thousand hits is counted in parts of a thousand,
// one after the other, each atomic as a call is (its memory is that of one
// part): an error leaves the parts before it counted.
//
// On an error (ErrDiskFull, a log write error) the hits of the website
// whose batch failed, and of the websites after it, are not counted; those
// of websites before it are (Track is atomic per website; imports are for
// one website).
func (e *Engine) Track(ctx context.Context, hits ...Hit) (TrackResult, error) {
	return e.track(ctx, nil, hits, false)
}

// batch is hits of a call enriched, grouped by website, not yet logged:
// the call's one batch, or one of its parts (trackparts.go). Its groups
// are in its scratch.
type batch struct {
	sc  *trackScratch
	res TrackResult // Reasons: the drops enrichment decided
}

// group is a website's hits in a batch, in the order of the website's
// first hit.
type group struct {
	website uint32
	idx     []int // its hits
}

// groupsMapped is how many websites a batch looks for by a linear search
// of its groups before it indexes them by a map.
const groupsMapped = 8

// prepare runs steps 1 and 2 of the pipeline (drops, enrichment) on hits.
// The batch holds a scratch until commit or release.
func (e *Engine) prepare(ctx context.Context, now time.Time, hits []Hit) (batch, error) {
	b := batch{sc: getTrackScratch(len(hits)), res: TrackResult{Reasons: make([]DropReason, len(hits))}}
	recs, cfgs := b.sc.recs, b.sc.cfgs
	for i := range hits {
		var err error
		if cfgs[i], b.res.Reasons[i], err = e.enrich(ctx, &hits[i], now, &recs[i]); err != nil {
			b.release()
			return batch{}, err
		}
		if b.res.Reasons[i] == DropNone {
			b.sc.addToGroup(recs[i].Website, i)
		}
	}
	return b, nil
}

// addToGroup adds hit i to website's group, made if it is the first.
func (sc *trackScratch) addToGroup(website uint32, i int) {
	g := -1
	if sc.where != nil {
		if k, ok := sc.where[website]; ok {
			g = k
		}
	} else {
		for k := range sc.groups {
			if sc.groups[k].website == website {
				g = k
				break
			}
		}
	}
	if g < 0 {
		g = len(sc.groups)
		if g < cap(sc.groups) {
			sc.groups = sc.groups[:g+1]
			sc.groups[g].website, sc.groups[g].idx = website, sc.groups[g].idx[:0]
		} else {
			sc.groups = append(sc.groups, group{website: website})
		}
		if sc.where == nil && len(sc.groups) > groupsMapped {
			sc.where = make(map[uint32]int, 2*groupsMapped)
			for k := range sc.groups {
				sc.where[sc.groups[k].website] = k
			}
		} else if sc.where != nil {
			sc.where[website] = g
		}
	}
	sc.groups[g].idx = append(sc.groups[g].idx, i)
}

// logs reports whether committing b logs anything: some hit was not
// dropped.
func (b *batch) logs() bool { return len(b.sc.groups) > 0 }

// release returns b's scratch.
func (b *batch) release() {
	if b.sc != nil {
		b.sc.put()
		b.sc = nil
	}
}

// commit logs b, each website's hits as one atomic batch, and applies
// them once durable (ingest), or publishes them in cluster mode; with a
// mark (TrackOnce: hits of mark's website only), the mark, with b's
// counts and mark.Carry, is logged after the website's batch. It
// releases b and returns b's result.
func (e *Engine) commit(ctx context.Context, b *batch, mark *idem.Mark) (TrackResult, error) {
	defer b.release()
	res, recs, cfgs := b.res, b.sc.recs, b.sc.cfgs
	if mark != nil {
		// What the call answers if its batch is counted: its drops are
		// decided, the rest is accepted.
		mark.Res = resultOfReasons(res.Reasons)
		mark.Res.Add(mark.Carry)
	}
	var err error
	groups := b.sc.groups
	for gi := range groups {
		var ok bool
		website, idx := groups[gi].website, groups[gi].idx
		m := mark.Of(website)
		if e.opts.Cluster != nil {
			ok, err = e.publish(ctx, website, recs, idx, m)
		} else {
			ok, err = e.ingest(website, cfgs[idx[0]].domain, b.sc, idx, m)
		}
		if err != nil {
			// This website and the later ones are not counted.
			for _, g := range groups[gi:] {
				for _, i := range g.idx {
					res.Reasons[i] = dropFailed
				}
			}
			break
		}
		if !ok {
			for _, i := range idx {
				res.Reasons[i] = DropUnknownSite
			}
		}
	}
	e.tally(&res)
	if err != nil {
		return res, fmt.Errorf("engine: write log: %w", err)
	}
	return res, nil
}

// tally counts res's Reasons into its counts and the engine's counters.
func (e *Engine) tally(res *TrackResult) {
	for i, r := range res.Reasons {
		switch r {
		case DropNone:
			res.Accepted++
		case dropFailed:
			res.Reasons[i] = DropNone // not dropped: not counted, and the error says so
		default:
			res.Dropped[r]++
			e.counters.dropped[r].Add(1)
		}
	}
	e.counters.tracked.Add(uint64(res.Accepted))
}

// trackScratch is the records of one Track call and their configurations,
// and ingest's log entries and pending hits, reused from call to call
// (trackPool): a record is about 400 bytes, and a tracker calls Track once
// a hit. Nothing keeps any of them once Track returns: the log copies the
// entries into its batch, and ingest applies its pending hits (which point
// to the records; the site's queue holds copies) or drops them before it
// returns.
type trackScratch struct {
	recs []record.Hit
	cfgs []*siteConfig
	// groups are the websites of the records, where indexes them past
	// groupsMapped of them (prepare).
	groups []group
	where  map[uint32]int

	buf     []byte // the entries' encoded records
	entries []snapshot.LogEntry
	hits    []pendingHit
}

var trackPool = sync.Pool{New: func() any { return new(trackScratch) }}

// trackScratchMax is the most records a trackScratch keeps for the next
// call: an import's 10,000 hits a call are not kept.
const trackScratchMax = 64

// getTrackScratch returns a trackScratch of n zero records.
func getTrackScratch(n int) *trackScratch {
	if n > trackScratchMax {
		return &trackScratch{recs: make([]record.Hit, n), cfgs: make([]*siteConfig, n)}
	}
	sc := trackPool.Get().(*trackScratch)
	if cap(sc.recs) < n {
		sc.recs, sc.cfgs = make([]record.Hit, n, trackScratchMax), make([]*siteConfig, n, trackScratchMax)
	}
	sc.recs, sc.cfgs = sc.recs[:n], sc.cfgs[:n]
	return sc
}

// put zeroes sc's records and pending hits (their strings and pointers are
// not kept alive) and returns it to the pool.
func (sc *trackScratch) put() {
	if cap(sc.recs) > trackScratchMax {
		return
	}
	clear(sc.recs)
	clear(sc.cfgs)
	sc.groups, sc.where = sc.groups[:0], nil
	clear(sc.hits[:cap(sc.hits)]) // a later website's batch may have been shorter
	// The entries point into buffers, the current one or one a batch
	// outgrew: none is kept through them.
	clear(sc.entries[:cap(sc.entries)])
	if cap(sc.buf) > trackScratchBufMax {
		sc.buf = nil // a batch of large records (long props): not kept
	}
	sc.buf, sc.entries, sc.hits = sc.buf[:0], sc.entries[:0], sc.hits[:0]
	trackPool.Put(sc)
}

// recordBytes is what ingest reserves in its buffer for a hit's encoded
// record; trackScratchBufMax the largest buffer a trackScratch keeps.
const (
	recordBytes        = 256
	trackScratchBufMax = 2 * trackScratchMax * recordBytes
)

// encodeChunk is the size of the buffers a large batch's records are
// encoded into (encodeLarge).
const encodeChunk = 1 << 20

// encodeLarge numbers and encodes the records of a large batch (an
// import) into entries, in buffers of encodeChunk bytes that are never
// grown: each entry points into its own, so growing one by append kept
// every outgrown copy alive as well, 40 MiB of buffers for the 10 MiB of
// records of a 10,000-event import (issue #38 row 7).
func encodeLarge(e *Engine, hits []pendingHit, entries []snapshot.LogEntry) []snapshot.LogEntry {
	var buf, one []byte
	for i := range hits {
		hits[i].seq = e.seq.Add(1)
		one = hits[i].rec.AppendBinary(one[:0])
		if cap(buf)-len(buf) < len(one) {
			buf = make([]byte, 0, max(encodeChunk, len(one)))
		}
		start := len(buf)
		buf = append(buf, one...)
		entries = append(entries, snapshot.LogEntry{Seq: hits[i].seq, Data: buf[start:len(buf):len(buf)]})
	}
	return entries
}

// dropFailed marks, inside Track, a hit whose batch failed.
const dropFailed = numDropReasons

// ingest logs the records sc.recs[i] (i in idx) of one website as one batch
// and applies them once the batch is durable. ok is false when the website
// is gone.
//
// The order of the log is the order of application: sequence numbers are
// taken and the batch enters the log under the shard lock, and the records
// wait in the website's pending queue until a caller whose batch is durable
// applies the queue up to its own records (the log syncs a prefix, so every
// record before a durable one is durable). Applying cannot fail: the days
// and visitor state the records need are read from the store and pinned
// resident before they are logged.
func (e *Engine) ingest(website uint32, domain string, sc *trackScratch, idx []int, mark *idem.Mark) (ok bool, err error) {
	e.regMu.RLock()
	s := e.sites[website]
	e.regMu.RUnlock()
	if s == nil {
		return false, nil
	}
	st := s.state
	sh := e.shardOf(website)
	sh.mu.Lock()
	hits, err := e.pinLocked(sh, st, sc.recs, idx, sc.hits[:0])
	if err != nil || hits == nil {
		sh.mu.Unlock()
		return false, err
	}
	sc.hits = hits
	pend, last, err := e.logLocked(sc, hits, mark)
	if err != nil {
		e.unpinLocked(st, hits)
		sh.mu.Unlock()
		return false, err
	}
	st.pending = append(st.pending, hits...)
	sh.mu.Unlock()

	if err := pend.Wait(); err != nil {
		return false, e.syncFailed(sh, st, hits[0].seq, err)
	}
	sh.mu.Lock()
	e.drainLocked(st, last, domain)
	deleted := st.deleted
	sh.mu.Unlock()
	return !deleted, nil
}

// logLocked numbers the records of hits, encodes them into sc's buffers
// and appends them, with mark after them if not nil, to the log as one
// batch. It returns the batch's pending write and its last sequence
// number. The shard lock is held: the order of the log is the order of
// application.
func (e *Engine) logLocked(sc *trackScratch, hits []pendingHit, mark *idem.Mark) (*snapshot.Pending, uint64, error) {
	// Most records encode to less than recordBytes (the benchmark's
	// stream averages 162); longer ones grow buf by append.
	entries := slices.Grow(sc.entries[:0], len(hits)+1)
	if len(hits) <= trackScratchMax {
		buf := slices.Grow(sc.buf[:0], recordBytes*len(hits))
		for i := range hits {
			hits[i].seq = e.seq.Add(1)
			start := len(buf)
			buf = hits[i].rec.AppendBinary(buf)
			entries = append(entries, snapshot.LogEntry{Seq: hits[i].seq, Data: buf[start:len(buf):len(buf)]})
		}
		sc.buf, sc.entries = buf, entries
	} else {
		entries = encodeLarge(e, hits, entries)
	}
	last := hits[len(hits)-1].seq
	if mark != nil {
		// The key goes last, in the same atomic batch: applied with the
		// batch's last record (drainLocked), and never trimmed from the
		// log before the records it answers for.
		mark.Seq = e.seq.Add(1)
		entries = append(entries, snapshot.LogEntry{Seq: mark.Seq, Data: mark.AppendBinary(nil)})
		hits[len(hits)-1].mark = mark
		last = mark.Seq
	}
	if p := e.logFailed.Load(); p != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrLogFailed, *p)
	}
	if p := e.stateFailed.Load(); p != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrLogFailed, *p)
	}
	pend, err := e.store.AppendAsync(entries...)
	return pend, last, err
}

// syncFailed handles err, the log's failure to sync a batch whose first
// record is first, of website st. Pebble's sync errors are sticky: no
// later batch becomes durable, so nothing pending can ever be applied.
// Every later write is refused (ErrLogFailed), and this website's pending
// records from first on are dropped: whether they reached the disk is
// unknown (a restart replays what did), as after a crash. Records before
// this batch may still be durable: their own callers apply them.
func (e *Engine) syncFailed(sh *shard, st *siteState, first uint64, err error) error {
	e.logFailed.CompareAndSwap(nil, &err)
	sh.mu.Lock()
	k := len(st.pending)
	for k > 0 && st.pending[k-1].seq >= first {
		k--
	}
	e.unpinLocked(st, st.pending[k:])
	clear(st.pending[k:])
	st.pending = st.pending[:k]
	sh.mu.Unlock()
	return fmt.Errorf("%w: %w", ErrLogFailed, err)
}

// pinLocked makes the day and visitor state of every record resident,
// reading what is missing from the store with the shard lock released, and
// pins them until the records are applied. It returns the records as
// pending hits, in dst's array when it has room, or nil when the website
// was deleted meanwhile.
func (e *Engine) pinLocked(sh *shard, st *siteState, recs []record.Hit, idx []int, dst []pendingHit) ([]pendingHit, error) {
	var missing []pinNeed
	// The visitors of paged periods the store did not have: new ones, as
	// long as no chunk is evicted (st.evictGen).
	var absent map[pinNeed]bool
	// Each round reads what was missing; what it reads may be evicted
	// again before the lock is taken back (eviction runs beside), so
	// rounds repeat, a bounded number of times.
	for round := 0; ; round++ {
		if st.deleted {
			return nil, nil
		}
		missing = missingLocked(st, recs, idx, absent, missing[:0])
		if len(missing) == 0 {
			break
		}
		// After a few rounds that eviction kept invalidating (a tiny
		// MemoryBudget under load), read with the lock held: slower for
		// this website, but nothing can be evicted meanwhile.
		locked := round >= 4
		gen := st.evictGen
		if !locked {
			sh.mu.Unlock()
		}
		days, pers, vis, err := e.readMissing(st.id, missing)
		if !locked {
			sh.mu.Lock()
		}
		if err != nil {
			return nil, err
		}
		if st.deleted {
			return nil, nil
		}
		if st.evictGen != gen {
			// Something left memory meanwhile: it was written first, so
			// what was read may be older than it. Read again.
			clear(absent)
			continue
		}
		for j, m := range missing {
			switch m.kind {
			case needDay:
				if ent, ok := st.days[m.date]; !ok {
					e.residentLocked(st, m.date, days[j])
				} else {
					e.fillSegLocked(ent, days[j].seg)
				}
			case needPeriod:
				if _, ok := st.periods[m.first]; !ok && pers[j] != nil {
					e.residentPeriodLocked(st, m.first, pers[j])
				}
			case needVisitor:
				p, ok := st.periods[m.first]
				if !ok || p.First() != m.idFirst {
					continue // the next round decides again
				}
				if !vis[j].found {
					if absent == nil {
						absent = make(map[pinNeed]bool)
					}
					absent[m] = true
				} else if err := e.loadChunkLocked(st, p, vis[j]); err != nil {
					return nil, err
				} else if _, _, ok := p.Find(m.hash); !ok {
					// Asked again, it would be read again, for ever.
					return nil, fmt.Errorf("engine: website %d period %v: the visitor index names chunk %d, which lacks the visitor", st.id, m.first, vis[j].chunk)
				}
			}
		}
	}
	return e.pinHitsLocked(st, recs, idx, dst), nil
}

// pinNeed is a day (or its segments), the visitor state of the period
// starting on first, or a visitor of a paged period (pagein.go), that a
// record needs resident and the store may have.
type pinNeed struct {
	kind        int // needDay, needPeriod or needVisitor
	date, first buckets.Date
	hash        uint64 // the visitor (needVisitor)
	idFirst     uint32 // the first id of its period, when looked for
}

// The kinds of pinNeed.
const (
	needDay = iota
	needPeriod
	needVisitor
)

// missingLocked appends to missing, once each, what the records recs[idx]
// need resident that is only in the store: their days, the visitor state
// of their periods, their visitors of paged periods (but those absent
// lists: the store had none), and the day of the visit each may continue.
func missingLocked(st *siteState, recs []record.Hit, idx []int, absent map[pinNeed]bool, missing []pinNeed) []pinNeed {
	var seen map[pinNeed]bool
	add := func(n pinNeed) {
		if seen == nil {
			seen = make(map[pinNeed]bool)
		}
		if !seen[n] {
			seen[n] = true
			missing = append(missing, n)
		}
	}
	for _, i := range idx {
		r := &recs[i]
		if ent, ok := st.days[r.Date]; !ok || segMissing(ent) {
			if _, ok := st.dates[r.Date]; ok {
				add(pinNeed{kind: needDay, date: r.Date})
			}
		}
		p, ok := st.periods[r.Period]
		if !ok {
			if _, ok := st.stored[r.Period]; ok {
				add(pinNeed{kind: needPeriod, first: r.Period})
			}
			continue
		}
		if p.Paged() {
			if _, _, ok := p.Find(r.Hash); !ok {
				if n := (pinNeed{kind: needVisitor, first: r.Period, hash: r.Hash, idFirst: p.First()}); !absent[n] {
					add(n)
				}
				continue
			}
		}
		// The day of the visit r may continue (weekly and monthly salts:
		// a visit's rows live in the day it started).
		if _, v, ok := p.Find(r.Hash); ok {
			if v.Row != segments.NoVisit && v.Day != r.Date {
				if vent, ok := st.days[v.Day]; !ok || segMissing(vent) {
					if _, ok := st.dates[v.Day]; ok {
						add(pinNeed{kind: needDay, date: v.Day})
					}
				}
			}
		}
	}
	return missing
}

// readMissing reads from the store what missing lists, in its order: a
// day at days[j], a period's visitor state at pers[j] or a visitor's
// chunk at vis[j].
func (e *Engine) readMissing(website uint32, missing []pinNeed) (days []storedDay, pers []*period, vis []visitorRead, err error) {
	days = make([]storedDay, len(missing))
	pers = make([]*period, len(missing))
	vis = make([]visitorRead, len(missing))
	read := map[chunkRef][]byte{} // a chunk of several visitors is read once
	for j, m := range missing {
		switch m.kind {
		case needDay:
			days[j], err = e.readDay(website, m.date)
		case needPeriod:
			pers[j], err = e.loadPeriod(website, m.first)
		case needVisitor:
			vis[j], err = e.readVisitor(website, m.first, m.idFirst, m.hash, read)
		}
		if err != nil {
			return nil, nil, nil, err
		}
	}
	return days, pers, vis, nil
}

// pinHitsLocked pins, for each record recs[idx], its day (made empty when
// new), its period's visitor state (made new for a pageview or custom
// event) and the day of the visit it may continue, and returns the records
// as pending hits in dst's array when it has room.
func (e *Engine) pinHitsLocked(st *siteState, recs []record.Hit, idx []int, dst []pendingHit) []pendingHit {
	hits := slices.Grow(dst[:0], len(idx))[:len(idx)]
	tick := e.counters.tick.Add(1)
	for k, i := range idx {
		r := &recs[i]
		ent, ok := st.days[r.Date]
		if !ok {
			// A new day: an empty entry to pin (not in dates until a
			// hit is applied to it).
			ent = &dayEntry{day: buckets.NewDay(r.Period), seg: segments.NewDay()}
			st.days[r.Date] = ent
		}
		ent.pins++
		ent.used = tick
		hits[k] = pendingHit{rec: r, day: ent}
		p, ok := st.periods[r.Period]
		if !ok && !r.Seg.Engagement {
			// A pageview or custom event numbers its visitor (an event may
			// start a visit of the segments, SPEC §10.1); an engagement
			// report of a period without state has no visit.
			p = new(period)
			e.residentPeriodLocked(st, r.Period, p)
			ok = true
		}
		if ok {
			p.pins++
			p.used = tick
			hits[k].per, hits[k].pgen = p, p.Evictions()
			if _, v, ok := p.Find(r.Hash); ok {
				if vent, ok := st.days[v.Day]; ok && v.Row != segments.NoVisit && v.Day != r.Date {
					vent.pins++
					vent.used = tick
					hits[k].vday = vent
				}
			}
		}
	}
	return hits
}

// unpinLocked releases the pins of hits that were not logged, and drops
// the empty day and visitor state pinLocked made for them.
func (e *Engine) unpinLocked(st *siteState, hits []pendingHit) {
	for _, h := range hits {
		h.day.pins--
		if h.per != nil {
			h.per.pins--
		}
		if h.vday != nil {
			h.vday.pins--
		}
	}
	for _, h := range hits {
		r := h.rec
		if ent, ok := st.days[r.Date]; ok && ent == h.day && ent.pins == 0 && !ent.dirty && !ent.frozen {
			if _, listed := st.dates[r.Date]; !listed {
				delete(st.days, r.Date)
			}
		}
		if p, ok := st.periods[r.Period]; ok && p == h.per && p.pins == 0 && !p.isStored && p.Len() == 0 {
			e.counters.state.Add(-int64(p.size))
			delete(st.periods, r.Period)
		}
	}
}

// drainLocked applies the pending hits up to sequence number upTo, in
// order, and releases their pins.
func (e *Engine) drainLocked(st *siteState, upTo uint64, domain string) {
	n := 0
	for n < len(st.pending) && st.pending[n].seq <= upTo {
		h := &st.pending[n]
		if !st.deleted && e.repinLocked(st, h) {
			e.applyLocked(st, h.rec, domain, h.day, h.per)
			st.appliedLocked(h.seq)
			if h.mark != nil {
				e.applyMarkLocked(st, h.mark)
			}
		}
		h.day.pins--
		if h.per != nil {
			h.per.pins--
		}
		if h.vday != nil {
			h.vday.pins--
		}
		if ent, ok := st.days[h.rec.Date]; ok && ent == h.day && ent.pins == 0 && !ent.dirty && !ent.frozen {
			// Pinned for an engagement report that had no visit: never
			// written.
			if _, listed := st.dates[h.rec.Date]; !listed {
				delete(st.days, h.rec.Date)
			}
		}
		*h = pendingHit{}
		n++
	}
	if n == len(st.pending) {
		st.pending = st.pending[:0]
	} else {
		st.pending = st.pending[n:]
	}
}

// enrich runs steps 1 and 2 of the pipeline on h: the drops, then the
// enrichment into r (package enrich). It needs no lock of the statistics
// state. An error (the salt of a new period could not be stored) fails
// the whole call: a hit hashed without its period's salt would be another
// visitor.
func (e *Engine) enrich(ctx context.Context, h *Hit, now time.Time, r *record.Hit) (*siteConfig, DropReason, error) {
	cfg := e.lookupSite(h)
	switch {
	case cfg == nil:
		return nil, DropUnknownSite, nil
	case !cfg.ips.Empty() && cfg.ips.Contains(h.IP.Unmap()):
		return cfg, DropExcludedIP, nil
	}
	ag := enrich.Agent(h, e.ua.Parse(h.UserAgent))
	if cfg.excludeBots && enrich.Bot(h, ag) {
		return cfg, DropBot, nil
	}
	if h.Prefetch {
		return cfg, DropPrefetch, nil
	}
	pg, ok := enrich.Page(h, cfg.rules)
	if !ok {
		return cfg, DropInvalid, nil
	}
	t := h.Time
	if t.IsZero() {
		t = now
	}
	lt := t.In(cfg.loc)
	r.Website = cfg.id
	r.Date = buckets.DateFromTime(lt)
	r.Hour = uint8(lt.Hour())
	r.Period = e.opts.SaltPeriod.Start(r.Date)
	r.Ms = t.UnixMilli()
	if !enrich.CustomEvent(r, h) {
		return cfg, DropInvalid, nil
	}
	salt, err := e.salt(ctx, r.Period)
	if err != nil {
		return cfg, DropNone, err
	}
	r.Hash = salts.Hash(salt, cfg.id, h.Visitor, h.IP, h.UserAgent)
	enrich.Dims(r, h, pg, ag, func() geo.Location { return e.geo.Lookup(h.IP.Unmap()) })
	return cfg, DropNone, nil
}

// lookupSite finds the website of h: by id, by the Plausible domain, or by
// the page URL's host.
func (e *Engine) lookupSite(h *Hit) *siteConfig {
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	if h.Website != 0 {
		if s := e.sites[h.Website]; s != nil {
			return s.cfg.Load()
		}
		return nil
	}
	id, ok := e.domains[enrich.SiteHost(h)]
	if !ok {
		return nil
	}
	return e.sites[id].cfg.Load()
}

// salt returns the salt of the period starting on first, creating (and
// storing; in cluster mode, agreeing on) a random one the first time. A
// caller waiting for another's making of it gives up when ctx ends.
func (e *Engine) salt(ctx context.Context, first buckets.Date) ([16]byte, error) {
	return e.salts.Get(ctx, first, func() ([16]byte, error) { return e.makeSalt(first) })
}

// makeSalt draws the salt of the period starting on first, agrees on it
// with the cluster, if any, and stores it.
func (e *Engine) makeSalt(first buckets.Date) ([16]byte, error) {
	var s [16]byte
	if _, err := io.ReadFull(e.opts.Rand, s[:]); err != nil {
		return s, fmt.Errorf("engine: new salt: %w", err)
	}
	if c := e.opts.Cluster; c != nil {
		// Every node hashes a visitor with the same salt.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		s, err = c.Salt(ctx, int32(first), s)
		cancel()
		if err != nil {
			return s, fmt.Errorf("%w: shared salt: %w", ErrClusterUnavailable, err)
		}
	}
	if err := e.store.Put(snapshot.KindSalt, salts.ID(first), s[:]); err != nil {
		return s, fmt.Errorf("engine: store salt: %w", err)
	}
	return s, nil
}

package engine

import (
	"sync/atomic"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/idem"
	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/internal/realtime"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/rollup"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/visitors"
	"github.com/webstats/webstats/snapshot"
)

// visitGap is how long a visitor may stay without a pageview (without a
// hit, in the segments) before the next one starts a new visit.
const visitGap = visitors.Gap // ms

// siteState is the statistics state of one website. Every field is guarded
// by the mu of the website's shard.
type siteState struct {
	id      uint32
	deleted bool

	// days holds the resident day buckets; dates every date that has data,
	// resident or only in the store.
	days  map[buckets.Date]*dayEntry
	dates map[buckets.Date]struct{}

	// periods holds the resident visitor state of salt periods, by first
	// day; stored lists the periods whose state is in the store (resident
	// or not).
	periods map[buckets.Date]*period
	stored  map[buckets.Date]struct{}
	// dropped lists visitor state that retention dropped at Open, for the
	// next snapshot to delete.
	dropped []snapshot.PeriodRef
	// cut, when cutPending, is the first day retention keeps: days before
	// it are gone from memory and dates but perhaps not yet from the
	// store. The next snapshot deletes them in the batch that writes the
	// dates without them, so the store never lists a day it does not hold
	// and never holds a day retention dropped, whatever the time zone
	// (and so the cut) is when it is opened again.
	cut        buckets.Date
	cutPending bool
	// keptFrom is the highest retention cut applied (at Open or by a
	// snapshot): every day before it was dropped, so a visitor's segments
	// row there (visit.row) is gone, whatever a later import put in the
	// day made again. Stored visitor state read back forgets such rows.
	keptFrom buckets.Date

	// evictGen counts the days and visitor state that left memory
	// (eviction, retention): a store read made with the lock released is
	// used only if it did not change meanwhile (it may be stale otherwise).
	evictGen uint64

	// pending holds the hits that are in the log but not yet applied, in
	// sequence order (see ingest).
	pending []pendingHit

	// rollups holds rollups of closed months and weeks; rollGen counts
	// the changes to frozen days that invalidate them.
	rollups rollup.Set
	rollGen uint64

	lastSeq  uint64 // last log sequence applied (set by appliedLocked)
	metaDirt bool   // lastSeq, dates or keys changed since the last snapshot

	// keys holds the idempotency keys of the website's imports (idem.go),
	// saved with lastSeq; flights the keyed calls under way here.
	keys    idem.Table
	flights map[idem.Key]*idemFlight

	rt realtime.Window
}

// dayEntry is a resident day bucket.
type dayEntry struct {
	day *buckets.Day
	// seg is the day's segments store; it follows day's rules (frozen,
	// shared, copied on write together). It is nil on a frozen day read
	// from the store for a query of its buckets only (the 17 statistics,
	// month rollups): decoding segments is most of the cost of reading a
	// day, so they stay in the store until a segment query or a write
	// needs them, and are then read and set (fillSegLocked). Only frozen
	// days may lack segments: a day is made writable only with them.
	seg *segments.Day
	// frozen days are never modified: queries read them without the lock,
	// and a write replaces day with a modified clone (copy on write).
	frozen bool
	// closed marks a day a snapshot froze as past: written again (an
	// import), it is open until the next snapshot freezes it again, and
	// never sealed, so its rows ask for no early snapshot.
	closed bool
	dirty  bool // changed since the last snapshot
	// shared marks an open day a snapshot encodes without the lock: it is
	// not modified in place; the next write replaces it with a clone.
	shared bool
	size   int   // SizeBytes when frozen
	used   int64 // LRU clock of the last use
	pins   int   // logged hits waiting to be applied to this day
}

// releaseMemo takes what the day's memo keeps of breakdowns out of the
// budget: the day left memory (evicted, dropped).
func (ent *dayEntry) releaseMemo() {
	if ent.seg != nil {
		ent.seg.ReleaseDims()
	}
}

// pendingHit is a logged hit waiting to be applied, with the day and
// visitor state it pins resident (per is nil for events).
type pendingHit struct {
	seq uint64
	rec *record.Hit
	day *dayEntry
	per *period
	// pgen is per's count of evicted chunks when the hit was pinned: moved
	// when it is applied, the hit's visitor may have left memory.
	pgen uint32
	// vday is the day of the visit the hit may continue, when another
	// than its own (weekly and monthly salts).
	vday *dayEntry
	// mark, on the last hit of a keyed batch (TrackOnce), is its key,
	// recorded when the hit is applied.
	mark *idem.Mark
}

func newSiteState(id uint32) *siteState {
	return &siteState{
		id:      id,
		days:    make(map[buckets.Date]*dayEntry),
		dates:   make(map[buckets.Date]struct{}),
		periods: make(map[buckets.Date]*period),
		stored:  make(map[buckets.Date]struct{}),
	}
}

// releaseLocked drops the state's memory (the website was deleted), and
// takes what it held out of the engine's resident counts.
func (e *Engine) releaseLocked(st *siteState) {
	for _, ent := range st.days {
		if ent.frozen {
			e.counters.resident.Add(-int64(ent.size))
			ent.releaseMemo()
		}
	}
	for _, p := range st.periods {
		e.counters.state.Add(-int64(p.size))
	}
	e.counters.keys.Add(-st.keys.Bytes())
	st.keys = idem.Table{}
	st.pending = nil
	st.stored = make(map[buckets.Date]struct{})
	st.days = make(map[buckets.Date]*dayEntry)
	st.dates = make(map[buckets.Date]struct{})
	st.periods = make(map[buckets.Date]*period)
	e.counters.resident.Add(-st.rollups.Reset())
	e.counters.realtime.Add(-st.rt.Reset())
}

// appliedLocked records that the log record seq was applied. The meta
// record that stores lastSeq is marked changed with it, whatever the record
// changed: a snapshot whose trim point is below seq (another website's
// batch still pending, or a record applied after the trim point was taken)
// may write a day holding the record, and replay skips the record only if
// the stored lastSeq covers it. (An engagement report, which changes no day
// bucket, left the meta clean: the snapshot stored its day but an older
// lastSeq, and a replay after a crash counted the report twice.)
func (st *siteState) appliedLocked(seq uint64) {
	st.lastSeq = seq
	st.metaDirt = true
}

// applyLocked counts r: steps 3–5 of the pipeline (visitor id, visit, day
// bucket). The shard lock must be held. domain is the website's domain; ent
// is the resident entry of r's day if there is one, and p the resident
// visitor state of r's salt period (nil only for an engagement report,
// which numbers no visitor). It cannot fail: ingest makes what it needs resident, and pins
// it, before r is logged, so the state never falls behind the log.
func (e *Engine) applyLocked(st *siteState, r *record.Hit, domain string, ent *dayEntry, p *period) {
	if r.Seg.Engagement {
		e.segEventLocked(st, r, nil, p)
		return
	}
	ent = e.writableDayLocked(st, r.Date, r.Period, ent)
	ent.dirty = true
	st.metaDirt = true
	id, v := e.visitorLocked(st, r, p)
	refSite := norm.SiteHost(r.RefHost)
	external := refSite != "" && refSite != domain
	var host uint64
	if external {
		host = visitors.HostKey(refSite)
	}
	if !r.Event {
		e.pageviewLocked(st, r, ent, id, v, external, host)
		return
	}
	// An event counts only under event in the day buckets, but is a hit
	// of a visit in the segments (SPEC §10.1).
	ent.day.Events++
	e.addLocked(ent.day, buckets.Event, r.EventRow)
	if v == nil {
		e.segEventLocked(st, r, ent, p) // an orphan
	} else {
		e.segHitLocked(st, r, ent, id, v, external, host)
	}
}

// visitorLocked numbers r's visitor in p (step 3) and returns its id and
// current visit, which it marks changed; v is nil without p, and when the
// period's ids are exhausted.
func (e *Engine) visitorLocked(st *siteState, r *record.Hit, p *period) (id uint32, v *visitors.Visit) {
	if p == nil {
		return 0, nil
	}
	id, added, ok := p.Visitor(r.Hash)
	if !ok {
		// 2^32 visitors in one salt period: the hit counts, the visitor
		// cannot.
		e.opts.Logger.Error("visitor ids exhausted", "website", st.id, "period", r.Period)
		return 0, nil
	}
	if added {
		e.setSizeLocked(p)
	}
	p.Touch(id, p.used)
	p.MarkDirty(id)
	return id, p.Visit(id)
}

// pageviewLocked counts pageview r in its day ent (steps 4 and 5): its
// page, and with its visitor's visit v (nil: no visitor id) the visit it
// starts, its row in the segments, the visitor's first hit of the day and
// the realtime slots. host is the external referrer's HostKey (0: none).
func (e *Engine) pageviewLocked(st *siteState, r *record.Hit, ent *dayEntry, id uint32, v *visitors.Visit, external bool, host uint64) {
	d := ent.day
	hour := int(r.Hour)
	d.AddPageview(hour)
	// The segments keep the page's path too (segHitLocked, below): a
	// slice of the day's copy of a new page, not of the hit's URL, so that
	// an open day's new pages (an import's, before the snapshot that
	// freezes the day) are in memory once (SPEC §13). Only a copy of its
	// own (AddKept): never a slice of a compacted day's one allocation,
	// which another day's segments (a visit across midnight) would keep
	// alive whole. Once the day is compacted, its values are copied into
	// one allocation and the page is in memory twice again; the budget
	// counts it twice throughout (an over-count).
	if page, other := d.AddKept(buckets.Page, r.Page, 1, e.opts.MaxValues); other {
		e.counters.overflow.Add(1)
	} else {
		r.Page = page
		if p := r.Seg.Path; len(p) <= len(page) && page[:len(p)] == p {
			r.Seg.Path = page[:len(p)]
		}
	}
	if v == nil {
		return
	}
	if v.Pageview(r.Ms, host) {
		d.Visits++
		e.addLocked(d, buckets.LandingPage, r.Page)
		ref := ""
		if external {
			ref = r.RefHost
		}
		e.addLocked(d, buckets.Referrer, ref)
		if r.Campaign != "" {
			e.addLocked(d, buckets.Campaign, r.Campaign)
		}
	}
	e.segHitLocked(st, r, ent, id, v, external, host)
	if newDay, _ := d.AddVisitor(hour, id); newDay {
		for _, dv := range [...]struct {
			dim buckets.Dim
			v   string
		}{
			{buckets.Browser, r.Browser}, {buckets.OS, r.OS}, {buckets.Device, r.Device},
			{buckets.Resolution, r.Resolution}, {buckets.Language, r.Language},
			{buckets.Country, r.Country}, {buckets.Continent, r.Continent}, {buckets.City, r.City},
		} {
			e.addLocked(d, dv.dim, dv.v)
		}
	}
	e.counters.realtime.Add(st.rt.Add(r.Ms, realtime.Key(r.Period, id)))
}

// addLocked counts one more of value in dim of day d, under the limit of
// distinct values a day keeps (Options.MaxValues; the rest count as
// buckets.Other, SPEC §13).
func (e *Engine) addLocked(d *buckets.Day, dim buckets.Dim, value string) {
	if d.Add(dim, value, 1, e.opts.MaxValues) {
		e.counters.overflow.Add(1)
	}
}

// writableDayLocked returns the entry of date ready to be modified: ent
// (or the entry now resident for date), copied first if it is frozen (copy
// on write), or a new day of salt period first. The day must not be only
// in the store: callers pin it resident first.
func (e *Engine) writableDayLocked(st *siteState, date, first buckets.Date, ent *dayEntry) *dayEntry {
	if cur, ok := st.days[date]; ok {
		ent = cur
	} else {
		// New, or dropped by retention since it was pinned: a new day.
		ent = &dayEntry{day: buckets.NewDay(first), seg: segments.NewDay()}
		st.days[date] = ent
	}
	if _, ok := st.dates[date]; !ok {
		st.dates[date] = struct{}{}
		e.invalidateRollupsLocked(st, date)
	}
	if ent.seg == nil {
		panic("engine: a day made writable without its segments")
	}
	if ent.frozen {
		e.invalidateRollupsLocked(st, date)
		e.counters.resident.Add(-int64(ent.size))
		ent.releaseMemo() // the copy is the day now: the old memo's breakdowns leave the budget with it
		ent.day = ent.day.Clone()
		ent.seg = ent.seg.Clone()
		ent.frozen, ent.size = false, 0
	} else if ent.shared {
		ent.day = ent.day.Clone() // a snapshot may be encoding it
		ent.seg = ent.seg.Clone()
		ent.shared = false
	}
	return ent
}

// residentLocked adds a day read from the store to the resident days,
// frozen; closed when it is past in every time zone (local days lie within
// a day of the UTC date).
func (e *Engine) residentLocked(st *siteState, date buckets.Date, d storedDay) *dayEntry {
	closed := date < buckets.DateFromTime(e.now().UTC())-1
	ent := &dayEntry{day: d.day, seg: d.seg, frozen: true, closed: closed, size: d.day.SizeBytes(), used: e.counters.tick.Add(1)}
	if d.seg != nil {
		ent.size += d.seg.Size
	}
	st.days[date] = ent
	e.counters.resident.Add(int64(ent.size))
	return ent
}

// fillSegLocked gives a resident day read without its segments (frozen,
// unchanged since: a day is made writable only with them) the segments of
// the same day read again from the store, and charges them.
func (e *Engine) fillSegLocked(ent *dayEntry, seg *segments.Day) {
	if ent.seg != nil || !ent.frozen {
		return
	}
	ent.seg = seg
	ent.size += seg.Size
	e.counters.resident.Add(int64(seg.Size))
}

// segMissing reports a day resident without its segments.
func segMissing(ent *dayEntry) bool { return ent.seg == nil }

// residentPeriodLocked adds visitor state read from the store (or new) to
// the resident periods. State read back forgets the rows of its visits in
// days retention dropped since it was written (see maintainLocked).
func (e *Engine) residentPeriodLocked(st *siteState, first buckets.Date, p *period) {
	if p.isStored {
		p.ForgetRowsBefore(st.keptFrom)
	}
	p.used = e.counters.tick.Add(1)
	st.periods[first] = p
	e.setSizeLocked(p)
}

// counters are the engine's running totals, for metrics.
type counters struct {
	tracked    atomic.Uint64
	dropped    [numDropReasons]atomic.Uint64
	resident   atomic.Int64  // bytes of frozen resident days
	dimMemos   atomic.Int64  // bytes the days' memos keep of breakdowns (dimAcct)
	state      atomic.Int64  // bytes of resident visitor state (periods)
	keys       atomic.Int64  // bytes of the idempotency keys (idem.Table.Bytes)
	realtime   atomic.Int64  // bytes of the realtime visitor slots (realtime.Window)
	overflow   atomic.Uint64 // values counted as buckets.Other (MaxValues)
	tick       atomic.Int64  // LRU clock
	snapshots  atomic.Uint64
	lastSnapNs atomic.Int64
	evicted    atomic.Uint64
}

package engine

import (
	"cmp"
	"slices"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/rollup"
)

// The kinds of eviction candidates.
const (
	candDay = iota
	candState
	candRollup
	candChunk
)

// budgetBytes is what Options.MemoryBudget bounds: the resident closed
// days and rollups and what their memos keep, the visitor state, the realtime slots (capped, not
// evicted: realtime.Window) and the idempotency keys (never evicted: they make
// room by the others' eviction).
func (e *Engine) budgetBytes() int64 {
	return e.counters.resident.Load() + e.counters.dimMemos.Load() + e.counters.state.Load() + e.counters.realtime.Load() + e.counters.keys.Load()
}

// overBudget reports whether the memory budget is exceeded.
func (e *Engine) overBudget() bool {
	b := e.opts.MemoryBudget
	return b > 0 && e.budgetBytes() > b
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
	over := func() bool { return budget > 0 && e.budgetBytes() > budget }
	var cands []evictCand
	for _, s := range e.siteList() {
		sh := e.shardOf(s.state.id)
		sh.mu.Lock()
		cands = e.evictIdleLocked(s, now, over, cands)
		if over() {
			cands = evictCandsLocked(s, cands)
		}
		sh.mu.Unlock()
	}
	if !over() {
		return
	}
	// Evict down to 90% of the budget, so that queries just over it do
	// not each pay for a pass.
	low := budget - budget/10
	slices.SortFunc(cands, func(a, b evictCand) int { return cmp.Compare(a.used, b.used) })
	for _, c := range cands {
		if e.budgetBytes() <= low {
			return
		}
		sh := e.shardOf(c.s.state.id)
		sh.mu.Lock()
		e.evictCandLocked(c)
		sh.mu.Unlock()
	}
}

// evictCand is what eviction may drop: a day, a period's visitor state or
// a rollup of a website, last used at used (the LRU clock).
type evictCand struct {
	s     *site
	date  buckets.Date
	kind  int // candDay, candState (period date), candRollup (roll) or candChunk (period date, chunk)
	roll  rollup.Key
	chunk uint32
	used  int64
}

// siteList returns the websites, read under regMu.
func (e *Engine) siteList() []*site {
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	sites := make([]*site, 0, len(e.sites))
	for _, s := range e.sites {
		sites = append(sites, s)
	}
	return sites
}

// evictIdleLocked drops the stored, clean and unpinned visitor state of
// website s's periods before the previous one that two snapshots found
// idle, and appends the others but the current period's to cands while
// over reports the budget exceeded; of the current period, and of periods
// in use, it appends the chunks that may leave memory. The shard lock is
// held.
func (e *Engine) evictIdleLocked(s *site, now time.Time, over func() bool, cands []evictCand) []evictCand {
	st := s.state
	today := buckets.DateFromTime(now.In(s.cfg.Load().loc))
	cur := e.opts.SaltPeriod.Start(today)
	prev := e.opts.SaltPeriod.Start(cur - 1)
	for first, p := range st.periods {
		if first == cur || p.Dirty() > 0 || p.pins > 0 || !p.isStored {
			// Not evicted whole: paged (pagein.go).
			if over() {
				cands = chunkCandsLocked(s, first, p, cands)
			}
			continue
		}
		if first < prev && p.idle >= 2 {
			e.counters.state.Add(-int64(p.size))
			delete(st.periods, first)
			st.evictGen++
			continue
		}
		if over() {
			cands = append(cands, evictCand{s: s, date: first, kind: candState, used: p.used})
		}
	}
	return cands
}

// evictCandsLocked appends website s's frozen, clean and unpinned days and
// its rollups to cands. The shard lock is held.
func evictCandsLocked(s *site, cands []evictCand) []evictCand {
	for date, ent := range s.state.days {
		if ent.frozen && !ent.dirty && ent.pins == 0 {
			cands = append(cands, evictCand{s: s, date: date, kind: candDay, used: ent.used})
		}
	}
	for k, used := range s.state.rollups.Used() {
		cands = append(cands, evictCand{s: s, kind: candRollup, roll: k, used: used})
	}
	return cands
}

// evictCandLocked drops c if it may still go. The shard lock of its
// website is held.
func (e *Engine) evictCandLocked(c evictCand) {
	st := c.s.state
	switch c.kind {
	case candRollup:
		e.counters.resident.Add(-st.rollups.Evict(c.roll))
	case candChunk:
		if p, ok := st.periods[c.date]; ok && p.EvictChunk(c.chunk) {
			st.evictGen++
			e.setSizeLocked(p)
			e.counters.evicted.Add(1)
		}
	case candState:
		if p, ok := st.periods[c.date]; ok && p.Dirty() == 0 && p.pins == 0 && p.isStored {
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
}

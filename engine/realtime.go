package engine

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/segments"
)

// Realtime after a restart (issue #37): the realtime slots (siteState.rt)
// live in memory only, fed by every pageview applied. Open rebuilds them
// from the segments' rows of the last 30 minutes, so that a clean restart
// (or one after a snapshot, whose log tail is empty) keeps showing the
// current visitors; the log's replay alone brought back only the hits
// after the last snapshot.

// rtKey is the key a visitor has in the realtime slots: its salt period
// and dense id, which the segments' visit rows keep too (its hash they do
// not).
func rtKey(period buckets.Date, id uint32) uint64 {
	return uint64(uint32(period))<<32 | uint64(id)
}

// rebuildRealtime sets the realtime slots of every website from its rows
// (rebuildSiteRealtime). It runs at Open, after replay: the slots then
// hold exactly what the rows say, however much of it the log replayed.
func (e *Engine) rebuildRealtime() error {
	for _, s := range e.sites {
		if err := e.rebuildSiteRealtime(s); err != nil {
			return err
		}
	}
	return nil
}

// rebuildSiteRealtime sets the realtime slots of website s from the
// pageviews of its segments of the last 30 minutes (SPEC §10.1 rows, read
// from the local days they span, open ones included), as they are when it
// runs: at Open after replay, and when a cluster node takes a website's
// state from the store (replaceSite), before it applies the log after it.
func (e *Engine) rebuildSiteRealtime(s *site) error {
	now := e.now()
	type pv struct {
		ms  int64
		key uint64
	}
	var pvs []pv
	err := e.realtimeRows(context.Background(), s, now.Add(-30*time.Minute).UnixMilli(), math.MaxInt64, func(ms int64, key uint64) {
		pvs = append(pvs, pv{ms, key})
	})
	if errors.Is(err, ErrNotFound) {
		return nil // deleted meanwhile
	}
	var qe *QueryError
	if errors.As(err, &qe) {
		// A day of more sealed rows than a query may make whole under the
		// memory budget (wholeLimit): realtime keeps what replay gave it
		// rather than keeping the engine (or a partition) from opening.
		e.opts.Logger.Warn("realtime not rebuilt", "website", s.cfg.Load().id, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	slices.SortStableFunc(pvs, func(a, b pv) int { return cmp.Compare(a.ms, b.ms) })
	sh := e.shardOf(s.state.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s.state.deleted {
		// Deleted after the rows were read: its slots were given back
		// (releaseLocked), and bytes added now would never be.
		return nil
	}
	e.counters.realtime.Add(-s.state.rt.reset())
	for _, p := range pvs {
		e.counters.realtime.Add(s.state.rt.add(p.ms, p.key))
	}
	return nil
}

// realtimeRows calls fn with the time and visitor key (rtKey) of every
// pageview of website s in its segments rows whose time is in [since,
// until), read from the local days they span, open ones included. The
// shard lock must not be held.
func (e *Engine) realtimeRows(ctx context.Context, s *site, since, until int64, fn func(ms int64, key uint64)) error {
	loc := s.cfg.Load().loc
	from := buckets.DateFromTime(time.UnixMilli(since).In(loc))
	to := buckets.DateFromTime(e.now().In(loc))
	if e.opts.SaltPeriod != SaltDay {
		// A visit's hits live in the day it started: yesterday's rows
		// hold the visits that passed midnight. A visit still going
		// after more than a day of hits less than 30 minutes apart
		// started earlier and is left out, so that Open reads two days
		// of every website, not up to a month of each.
		from = min(from, to-1)
	}
	return e.scanSegs(ctx, s, from, to, func(_ buckets.Date, sd *segments.Day, _ bool) {
		for i, ms := range sd.HMs {
			v := sd.HVisit[i]
			if ms < since || ms >= until || sd.HKind[i] != segments.KindPageview || v == segments.NoVisit || int(v) >= len(sd.VVisitor) {
				continue
			}
			fn(ms, rtKey(buckets.Date(sd.VPeriod[v]), sd.VVisitor[v]))
		}
	})
}

// Realtime's memory (SPEC §13: the realtime window is counted in the
// budget and capped; issue #38 row 9). The pageviews of the last 30
// minutes are a counter a minute. The visitors are needed for the last 5
// minutes only (Realtime.Visitors), as visitor keys a minute, at most
// rtSlotKeys distinct ones in a minute's slot: 32 KiB, 160 KiB a website
// in all, counted in Engine.counters.realtime (webstats_realtime_bytes)
// and in MemoryBudget. (Before, every one of the 30 slots kept up to
// 65,536 keys, 15.7 MB a website outside the budget, and a minute of more
// visitors than that was undercounted.) A slot that fills up is marked
// over, and Realtime then counts the visitors from the segments rows of
// those minutes instead: exact, at the cost of a scan of the day's rows
// while a flood lasts.
type realtime struct {
	pv  [30]rtMinute
	vis [5]rtVisitors
	// dropped is the last Unix minute whose 5-minute visitors miss a key
	// that add dropped because its slot held a later minute (an imported
	// time ahead of now, up to a day: httpd maxFuture). read reports the
	// window over until then, so Realtime counts from the rows.
	dropped int64
}

type rtMinute struct {
	minute    int64 // Unix minute
	pageviews uint32
}

type rtVisitors struct {
	minute int64    // Unix minute
	keys   []uint64 // visitor keys (rtKey) of the minute's pageviews
	over   bool     // more than rtSlotKeys distinct keys came: keys is partial
}

// rtSlotKeys is the most distinct visitor keys a minute's slot keeps.
const rtSlotKeys = 4096

// add counts a pageview of visitor key at ms. It returns the bytes the
// slots grew by.
func (rt *realtime) add(ms int64, key uint64) int64 {
	m := ms / 60000
	if m < 0 {
		return 0
	}
	p := &rt.pv[m%30]
	if p.minute != m {
		if p.minute > m {
			rt.dropped = max(rt.dropped, m+4)
			return 0 // older than the window
		}
		*p = rtMinute{minute: m}
	}
	p.pageviews++
	v := &rt.vis[m%5]
	if v.minute != m {
		if v.minute > m {
			rt.dropped = max(rt.dropped, m+4)
			return 0 // older than the visitors' window
		}
		v.minute, v.keys, v.over = m, v.keys[:0], false
	}
	if v.over || len(v.keys) > 0 && v.keys[len(v.keys)-1] == key {
		return 0
	}
	if len(v.keys) == rtSlotKeys {
		// Full: keep each key once; still 3/4 full, the minute has too
		// many visitors to keep.
		slices.Sort(v.keys)
		v.keys = slices.Compact(v.keys)
		if len(v.keys) >= rtSlotKeys*3/4 {
			v.over = true
			return 0
		}
	}
	before := cap(v.keys)
	v.keys = append(v.keys, key)
	return int64(cap(v.keys)-before) * 8
}

// reset empties rt and returns the bytes it held.
func (rt *realtime) reset() int64 {
	var n int64
	for i := range rt.vis {
		n += int64(cap(rt.vis[i].keys)) * 8
	}
	*rt = realtime{}
	return n
}

// read returns the realtime view at Unix minute now; over reports that a
// slot of the last 5 minutes is over (Visitors is then a lower bound).
func (rt *realtime) read(now int64) (out Realtime, over bool) {
	seen := make(map[uint64]struct{})
	for i := range 30 {
		m := now - 29 + int64(i)
		if m < 0 {
			continue
		}
		if p := &rt.pv[m%30]; p.minute == m {
			out.Pageviews[i] = uint64(p.pageviews)
		}
		if v := &rt.vis[m%5]; i >= 25 && v.minute == m {
			over = over || v.over
			for _, k := range v.keys {
				seen[k] = struct{}{}
			}
		}
	}
	out.Visitors = len(seen)
	return out, over || now <= rt.dropped
}

// realtimeVisitors counts the distinct visitors with a pageview in the 5
// minutes up to Unix minute now from website s's segments rows (a slot of
// them was over). The shard lock must not be held.
func (e *Engine) realtimeVisitors(ctx context.Context, s *site, now int64) (int, error) {
	seen := make(map[uint64]struct{})
	err := e.realtimeRows(ctx, s, (now-4)*60000, (now+1)*60000, func(_ int64, key uint64) {
		seen[key] = struct{}{}
	})
	return len(seen), err
}

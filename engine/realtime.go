package engine

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/realtime"
	"github.com/webstats/webstats/engine/internal/segments"
)

// Realtime after a restart (issue #37): the realtime window (siteState.rt)
// lives in memory only, fed by every pageview applied. Open rebuilds it
// from the segments' rows of the last 30 minutes, so that a clean restart
// (or one after a snapshot, whose log tail is empty) keeps showing the
// current visitors; the log's replay alone brought back only the hits
// after the last snapshot.

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
	var pvs []realtime.Pageview
	err := e.realtimeRows(context.Background(), s, now.Add(-30*time.Minute).UnixMilli(), math.MaxInt64, func(ms int64, key uint64) {
		pvs = append(pvs, realtime.Pageview{Ms: ms, Key: key})
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
	realtime.SortPageviews(pvs) // not under the lock: a busy website's 30 minutes
	sh := e.shardOf(s.state.id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s.state.deleted {
		// Deleted after the rows were read: its slots were given back
		// (releaseLocked), and bytes added now would never be.
		return nil
	}
	e.counters.realtime.Add(s.state.rt.Rebuild(pvs))
	return nil
}

// realtimeRows calls fn with the time and visitor key (realtime.Key) of every
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
		sd.Pageviews(since, until, func(ms int64, period int32, visitor uint32) {
			fn(ms, realtime.Key(buckets.Date(period), visitor))
		})
	})
}

// readRealtime is the realtime view of w at Unix minute now; over reports
// that a slot of the last 5 minutes is over: Visitors is then a lower
// bound, and Realtime counts the visitors from the segments rows of those
// minutes instead (realtimeVisitors), exact at the cost of a scan of the
// day's rows while a flood lasts. The window's memory is counted in
// Engine.counters.realtime (webstats_realtime_bytes) and in MemoryBudget.
func readRealtime(w *realtime.Window, now int64) (out Realtime, over bool) {
	out.Pageviews, out.Visitors, over = w.Read(now)
	return out, over
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

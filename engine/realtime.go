package engine

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/webstats/webstats/buckets"
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
	since := now.Add(-30 * time.Minute).UnixMilli()
	loc := s.cfg.Load().loc
	from := buckets.DateFromTime(now.Add(-30 * time.Minute).In(loc))
	to := buckets.DateFromTime(now.In(loc))
	if e.opts.SaltPeriod != SaltDay {
		// A visit's hits live in the day it started: yesterday's rows
		// hold the visits that passed midnight. A visit still going
		// after more than a day of hits less than 30 minutes apart
		// started earlier and is left out, so that Open reads two days
		// of every website, not up to a month of each.
		from = to - 1
	}
	type pv struct {
		ms  int64
		key uint64
	}
	var pvs []pv
	err := e.scanSegs(context.Background(), s, from, to, func(_ buckets.Date, sd *segDay, _ bool) {
		for i, ms := range sd.hMs {
			v := sd.hVisit[i]
			if ms < since || sd.hKind[i] != hkPageview || v == noVisit || int(v) >= len(sd.vVisitor) {
				continue
			}
			pvs = append(pvs, pv{ms, rtKey(buckets.Date(sd.vPeriod[v]), sd.vVisitor[v])})
		}
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
	s.state.rt = realtime{}
	for _, p := range pvs {
		s.state.rt.add(p.ms, p.key)
	}
	return nil
}

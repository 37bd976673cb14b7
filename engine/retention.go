package engine

import (
	"context"
	"time"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/salts"
	"github.com/webstats/webstats/snapshot"
)

// maintainLocked freezes the days before today (compacting them) and
// applies retention in memory. When it drops days it sets st.cut for the
// next snapshot to delete them from the store (the highest cut pending: a
// time zone change may lower today's). Dropped visitor state goes into sn.
func (e *Engine) maintainLocked(st *siteState, today buckets.Date, sn *snapshot.Snapshot) {
	e.freezeLocked(st, today)
	if e.opts.Retention <= 0 {
		return
	}
	cut := today - buckets.Date(e.opts.Retention)
	dropped := e.dropDaysLocked(st, cut)
	st.keptFrom = max(st.keptFrom, cut)
	e.dropPeriodsLocked(st, cut, sn)
	if dropped {
		st.metaDirt = true
		if !st.cutPending || cut > st.cut {
			st.cut = cut
		}
		st.cutPending = true
	}
}

// freezeLocked freezes (and compacts) st's open days before today, and
// opens again the closed days that are today or later (the website's time
// zone changed).
func (e *Engine) freezeLocked(st *siteState, today buckets.Date) {
	for date, ent := range st.days {
		if ent.closed && date >= today {
			ent.closed = false // today again (the website's time zone changed)
		}
		if !ent.frozen && date < today {
			// No encoder reads it now (snapshots are serialised, and
			// this one encodes after maintenance).
			ent.shared = false
			ent.day.Compact()
			ent.seg.Compact()
			ent.seg.Size = ent.seg.Estimate()
			ent.frozen, ent.closed, ent.size = true, true, ent.day.SizeBytes()+ent.seg.Size
			ent.used = e.counters.tick.Add(1)
			e.counters.resident.Add(int64(ent.size))
		}
	}
}

// dropDaysLocked drops st's days before cut, listed and resident, and the
// rows their visits had; dropped reports whether a listed date went.
func (e *Engine) dropDaysLocked(st *siteState, cut buckets.Date) (dropped bool) {
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
				p.ForgetRowsBefore(cut)
			}
		}
	}
	return dropped
}

// dropPeriodsLocked drops the visitor state of st's salt periods that
// ended before cut, resident or stored; what the store holds goes into
// sn.
func (e *Engine) dropPeriodsLocked(st *siteState, cut buckets.Date, sn *snapshot.Snapshot) {
	for first := range st.stored {
		if e.opts.SaltPeriod.End(first) < cut {
			delete(st.stored, first)
			sn.DropPeriods = append(sn.DropPeriods, snapshot.PeriodRef{Website: st.id, Period: int32(first)})
		}
	}
	for first, p := range st.periods {
		if e.opts.SaltPeriod.End(first) < cut {
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
	old := e.salts.Ended(e.opts.SaltPeriod, cut)
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
		e.salts.Drop(first, func() {
			if err := e.store.Delete(snapshot.KindSalt, salts.ID(first)); err != nil {
				e.opts.Logger.Error("drop salt", "err", err)
			}
		})
	}
}

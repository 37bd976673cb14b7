package engine

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/idem"
	"github.com/webstats/webstats/engine/internal/record"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/stored"
	"github.com/webstats/webstats/engine/internal/wire"
	"github.com/webstats/webstats/snapshot"
)

// load reads the registry, the salts and each website's saved state, then
// replays the log written after the last snapshot.
func (e *Engine) load() error {
	if err := e.loadRegistry(); err != nil {
		return err
	}
	if err := e.loadSalts(); err != nil {
		return err
	}
	maxSeq, err := e.loadSites()
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
	dropped := e.retainAfterReplay()
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

// loadSalts reads the salts of the salt periods kept.
func (e *Engine) loadSalts() error {
	return e.store.Scan(snapshot.KindSalt, func(id uint64, v []byte) error {
		if len(v) != 16 {
			return fmt.Errorf("engine: salt %d: %w", id, snapshot.ErrCorrupt)
		}
		e.salts.Set(buckets.Date(int32(uint32(id))), [16]byte(v))
		return nil
	})
}

// loadSites reads each website's saved state, dropping the dates retention
// drops now, and returns the highest log sequence number the snapshot and
// the websites applied.
func (e *Engine) loadSites() (maxSeq uint64, err error) {
	maxSeq = e.store.Trim()
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
	return maxSeq, err
}

// retainAfterReplay applies retention again after the replay, and reports
// whether it dropped anything. Replay may have brought back days retention
// had dropped (hits logged before the snapshot that dropped them): they are
// dropped again, so that what a query sees after Open does not depend on
// whether the process stopped cleanly.
func (e *Engine) retainAfterReplay() (dropped bool) {
	if e.opts.Retention <= 0 {
		return false
	}
	for _, s := range e.sites {
		st := s.state
		today := buckets.DateFromTime(e.now().In(s.cfg.Load().loc))
		var sn snapshot.Snapshot
		e.maintainLocked(st, today, &sn)
		st.dropped = append(st.dropped, sn.DropPeriods...)
		dropped = dropped || st.cutPending || len(st.dropped) > 0
	}
	return dropped
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
	recs  []record.Hit
	marks []*idem.Mark
}

// add decodes the log entry seq (a record, or an idempotency key's mark)
// into b.
func (b *replayRecs) add(seq uint64, data []byte, in *wire.Interner) error {
	i := len(b.seqs)
	var err error
	if b.marks[i] = nil; len(data) > 0 && data[0] == idem.Tag {
		b.marks[i] = new(idem.Mark)
		err = b.marks[i].Decode(data)
	} else {
		err = b.recs[i].DecodeWith(data, in)
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
		free <- &replayRecs{seqs: make([]uint64, 0, replayBatch), recs: make([]record.Hit, replayBatch), marks: make([]*idem.Mark, replayBatch)}
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
				s := e.sites[r.Website]
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
	var in wire.Interner
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
func (e *Engine) resolve(st *siteState, r *record.Hit) (*dayEntry, *period, error) {
	ent, ok := st.days[r.Date]
	if _, listed := st.dates[r.Date]; listed && (!ok || segMissing(ent)) {
		d, err := e.readDay(st.id, r.Date)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			e.fillSegLocked(ent, d.seg)
		} else {
			ent = e.residentLocked(st, r.Date, d)
		}
	}
	p, ok := st.periods[r.Period]
	if !ok && r.Seg.Engagement {
		// An engagement report needs the state only to find a visit; it
		// never makes a period (an event numbers its visitor, as in
		// pinLocked).
		if _, stored := st.stored[r.Period]; !stored {
			return ent, nil, nil
		}
	}
	if !ok {
		if _, stored := st.stored[r.Period]; stored {
			var err error
			if p, err = e.loadPeriod(st.id, r.Period); err != nil {
				return nil, nil, err
			}
		}
		if p == nil {
			p = new(period)
		}
		e.residentPeriodLocked(st, r.Period, p)
	}
	if err := e.pageInLocked(st, r.Period, p, r.Hash); err != nil {
		return nil, nil, err
	}
	if err := e.visitDayInLocked(st, r, p); err != nil {
		return nil, nil, err
	}
	return ent, p, nil
}

// visitDayInLocked reads from the store, with the shard lock held, the
// day of the visit r may continue, when another than r's and not resident
// with its segments.
func (e *Engine) visitDayInLocked(st *siteState, r *record.Hit, p *period) error {
	_, v, ok := p.Find(r.Hash)
	if !ok {
		return nil
	}
	vent, res := st.days[v.Day]
	if (res && !segMissing(vent)) || v.Row == segments.NoVisit || v.Day == r.Date {
		return nil
	}
	if _, listed := st.dates[v.Day]; !listed {
		return nil
	}
	d, err := e.readDay(st.id, v.Day)
	if err != nil {
		return err
	}
	if res {
		e.fillSegLocked(vent, d.seg)
	} else {
		e.residentLocked(st, v.Day, d)
	}
	return nil
}

// repinLocked makes resident again, with the shard lock held, the
// visitor of pending hit h and the day of the visit it may continue, when
// a chunk of its period left memory since h was pinned (pagein.go), and
// reports whether h may be applied. A store that fails to read (twice)
// leaves h unapplied: numbered without its chunk, its visitor would be
// numbered twice. The engine then stops (stateFailed): no write and no
// snapshot, so a restart replays h from the log.
func (e *Engine) repinLocked(st *siteState, h *pendingHit) bool {
	if e.stateFailed.Load() != nil {
		return false
	}
	if h.per == nil || h.per.Evictions() == h.pgen {
		return true
	}
	r := h.rec
	var err error
	for range 2 {
		if err = e.pageInLocked(st, r.Period, h.per, r.Hash); err == nil {
			err = e.visitDayInLocked(st, r, h.per)
		}
		if err == nil {
			h.pgen = h.per.Evictions()
			return true
		}
	}
	err = fmt.Errorf("engine: website %d: a logged hit's visitor could not be read back; restart: %w", st.id, err)
	e.stateFailed.CompareAndSwap(nil, &err)
	e.opts.Logger.Error("engine stopped: restart to replay the log", "err", err)
	return false
}

// decodeMetaLocked reads st's meta record (stored.DecodeMeta), with the
// keys' bytes counted.
func (e *Engine) decodeMetaLocked(st *siteState, b []byte) error {
	before := st.keys.Bytes()
	seq, err := stored.DecodeMeta(b, st.dates, &st.keys)
	if err == nil {
		st.lastSeq = seq
	}
	e.counters.keys.Add(st.keys.Bytes() - before)
	return err
}

// storedDay is a day as the store holds it: its buckets and its segments.
type storedDay struct {
	day *buckets.Day
	seg *segments.Day
	// open reports a day that may change: scanDays passes it under the
	// shard lock.
	open bool
}

// decodeDay decodes a day value of the store; its segments too when
// withSeg (else seg is nil).
func decodeDay(data []byte, withSeg bool) (storedDay, error) {
	d, seg, err := stored.DecodeDay(data, withSeg)
	return storedDay{day: d, seg: seg}, err
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

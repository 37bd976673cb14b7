package engine

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
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
		if err := st.decodeMeta(data); err != nil {
			return fmt.Errorf("engine: website %d state: %w", website, err)
		}
		if e.opts.Retention > 0 {
			// Retention deletes days before the snapshot that forgets
			// them: a crash in between leaves dates with no day.
			cut := buckets.DateFromTime(e.now().In(s.cfg.Load().loc)) - buckets.Date(e.opts.Retention)
			for date := range st.dates {
				if date < cut {
					delete(st.dates, date)
				}
			}
		}
		maxSeq = max(maxSeq, st.lastSeq)
		return nil
	})
	if err != nil {
		return err
	}
	for id, s := range e.sites {
		st := s.state
		err := e.store.ScanStrings(id, func(from uint32, data []byte) error {
			if int(from) != st.strs.Len() {
				return fmt.Errorf("engine: website %d strings: chunk at %d after %d: %w", id, from, st.strs.Len(), snapshot.ErrCorrupt)
			}
			if err := st.strs.AppendChunk(data); err != nil {
				return fmt.Errorf("engine: website %d strings at %d: %w: %w", id, from, snapshot.ErrCorrupt, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		st.strsSaved = uint32(st.strs.Len())
		err = e.store.ScanStates(id, func(first int32, data []byte) error {
			p, err := decodePeriod(data)
			if err != nil {
				return fmt.Errorf("engine: website %d period %v: %w", id, buckets.Date(first), err)
			}
			st.periods[buckets.Date(first)] = p
			return nil
		})
		if err != nil {
			return err
		}
	}
	// Replay: records after the trim point that their website has not seen.
	var r record
	replayed := 0
	err = e.store.ReplayLog(e.store.Trim(), func(seq uint64, data []byte) error {
		maxSeq = max(maxSeq, seq)
		if err := r.decode(data); err != nil {
			return fmt.Errorf("engine: log entry %d: %w", seq, err)
		}
		s := e.sites[r.website]
		if s == nil || seq <= s.state.lastSeq {
			return nil
		}
		if err := e.applyLocked(s.state, &r, s.cfg.Load().domain); err != nil {
			return err
		}
		s.state.lastSeq = seq
		replayed++
		return nil
	})
	if err != nil {
		return err
	}
	e.seq.Store(maxSeq)
	e.lastTrim = e.store.Trim()
	e.opts.Logger.Info("engine opened", "websites", len(e.sites), "replayed", replayed)
	return nil
}

// Site meta record: version, last sequence, then the dates with data as
// delta-coded varints.
const metaVersion = 1

func (st *siteState) appendMeta(b []byte) []byte {
	b = append(b, metaVersion)
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
	return b
}

func (st *siteState) decodeMeta(b []byte) error {
	d := decoder{b: b}
	if v := d.byte(); v != metaVersion {
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
	if len(d.b) != 0 {
		return fmt.Errorf("trailing bytes: %w", snapshot.ErrCorrupt)
	}
	return nil
}

// readDay reads one day from the store.
func (e *Engine) readDay(website uint32, date buckets.Date) (*buckets.Day, error) {
	data, err := e.store.Day(website, int32(date))
	if err != nil {
		return nil, fmt.Errorf("engine: website %d day %v: %w", website, date, err)
	}
	d := buckets.NewDay(0)
	if err := d.UnmarshalBinary(data); err != nil {
		return nil, fmt.Errorf("engine: website %d day %v: %w", website, date, err)
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

// The trimmed log is compacted every compactLogEvery snapshots (5 minutes
// at the default interval), or once compactLogHits hits were trimmed.
const (
	compactLogEvery = 10
	compactLogHits  = 1 << 20
)

// pendingDay is a dirty day collected for a snapshot.
type pendingDay struct {
	st   *siteState
	date buckets.Date
	ent  *dayEntry
	day  *buckets.Day // frozen: encoded after the lock is released
	data []byte
}

func (e *Engine) snapshot() error {
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	start := time.Now()
	trim := e.seq.Load() // every record up to here is applied: see docs/design.md
	now := e.now()

	e.regMu.RLock()
	sites := make([]*site, 0, len(e.sites))
	for _, s := range e.sites {
		sites = append(sites, s)
	}
	e.regMu.RUnlock()

	sn := &snapshot.Snapshot{Trim: trim}
	var pend []pendingDay
	type strsMark struct {
		st   *siteState
		from uint32
	}
	var marks []strsMark
	var periodsDirty []*period
	inUse := make(map[buckets.Date]bool) // salt periods with visitor state
	for _, s := range sites {
		cfg := s.cfg.Load()
		sh := e.shardOf(cfg.id)
		sh.mu.Lock()
		st := s.state
		if st.deleted {
			sh.mu.Unlock()
			continue
		}
		today := buckets.DateFromTime(now.In(cfg.loc))
		e.maintainLocked(st, today, sn)
		for date, ent := range st.days {
			if !ent.dirty {
				continue
			}
			ent.dirty = false
			p := pendingDay{st: st, date: date, ent: ent}
			if ent.frozen {
				p.day = ent.day
			} else {
				data, err := ent.day.MarshalBinary()
				if err != nil {
					sh.mu.Unlock()
					return fmt.Errorf("engine: encode day: %w", err)
				}
				p.data = data
			}
			pend = append(pend, p)
		}
		if n := uint32(st.strs.Len()); n > st.strsSaved {
			sn.Strings = append(sn.Strings, snapshot.StringsChunk{Website: st.id, From: st.strsSaved, Data: st.strs.AppendBinary(nil, st.strsSaved)})
			marks = append(marks, strsMark{st, st.strsSaved})
			st.strsSaved = n
		}
		for first, p := range st.periods {
			inUse[first] = true
			if p.dirty {
				p.dirty, p.idle = false, 0
				periodsDirty = append(periodsDirty, p)
				sn.States = append(sn.States, snapshot.StateRecord{Website: st.id, Period: int32(first), Data: p.appendBinary(nil)})
			}
		}
		if st.metaDirt {
			st.metaDirt = false
			sn.Sites = append(sn.Sites, snapshot.SiteRecord{Website: st.id, Data: st.appendMeta(nil)})
		}
		sh.mu.Unlock()
	}
	for i := range pend {
		p := &pend[i]
		if p.day != nil {
			data, err := p.day.MarshalBinary()
			if err != nil {
				return fmt.Errorf("engine: encode day: %w", err)
			}
			p.data = data
		}
		sn.Days = append(sn.Days, snapshot.DayRecord{Website: p.st.id, Date: int32(p.date), Data: p.data})
	}
	if err := e.store.WriteSnapshot(sn); err != nil {
		// Nothing was written: mark everything dirty again.
		for _, p := range pend {
			sh := e.shardOf(p.st.id)
			sh.mu.Lock()
			p.ent.dirty = true
			p.st.metaDirt = true
			sh.mu.Unlock()
		}
		for _, m := range marks {
			sh := e.shardOf(m.st.id)
			sh.mu.Lock()
			m.st.strsSaved = min(m.st.strsSaved, m.from)
			m.st.metaDirt = true
			sh.mu.Unlock()
		}
		for _, s := range sites {
			sh := e.shardOf(s.state.id)
			sh.mu.Lock()
			for _, p := range s.state.periods {
				p.dirty = true
			}
			s.state.metaDirt = true
			sh.mu.Unlock()
		}
		return fmt.Errorf("engine: snapshot: %w", err)
	}
	e.dropOldSalts(now, inUse)
	// The trimmed log's space comes back only when Pebble compacts it: every
	// compactLogEvery snapshots, or sooner after many hits.
	e.trimmedSince += trim - min(trim, e.lastTrim)
	e.lastTrim = trim
	if n := e.counters.snapshots.Add(1); n%compactLogEvery == 0 || e.trimmedSince >= compactLogHits {
		e.trimmedSince = 0
		if err := e.store.CompactLog(); err != nil {
			e.opts.Logger.Error("compact log", "err", err)
		}
	}
	e.counters.lastSnapNs.Store(int64(time.Since(start)))
	e.evict()
	return nil
}

// maintainLocked freezes the days before today (compacting them), drops the
// visitor state of salt periods older than the previous one, and applies
// retention. Deletions go into sn.
func (e *Engine) maintainLocked(st *siteState, today buckets.Date, sn *snapshot.Snapshot) {
	for date, ent := range st.days {
		if !ent.frozen && date < today {
			ent.day.Compact()
			ent.frozen, ent.size = true, ent.day.SizeBytes()
			ent.used = e.counters.tick.Add(1)
			e.counters.resident.Add(int64(ent.size))
		}
	}
	cur := periodStart(today, e.opts.SaltPeriod)
	prev := periodStart(cur-1, e.opts.SaltPeriod)
	for first, p := range st.periods {
		if !p.dirty {
			p.idle++
		}
		if first < prev && p.idle >= 2 {
			st.clearCacheLocked()
			delete(st.periods, first)
			sn.States = append(sn.States, snapshot.StateRecord{Website: st.id, Period: int32(first)})
		}
	}
	if e.opts.Retention > 0 {
		cut := today - buckets.Date(e.opts.Retention)
		dropped := false
		for date := range st.dates {
			if date < cut {
				delete(st.dates, date)
				st.invalidateMonthLocked(date)
				if ent, ok := st.days[date]; ok {
					if ent.frozen {
						e.counters.resident.Add(-int64(ent.size))
					}
					st.clearCacheLocked()
					delete(st.days, date)
				}
				dropped = true
			}
		}
		if dropped {
			st.metaDirt = true
			if err := e.store.DeleteDaysBefore(st.id, int32(cut)); err != nil {
				e.opts.Logger.Error("retention", "website", st.id, "err", err)
			}
		}
	}
}

// dropOldSalts forgets the salts no open period needs: salts are kept for
// the current and the previous period of every time zone, and for the
// periods that still have visitor state.
func (e *Engine) dropOldSalts(now time.Time, inUse map[buckets.Date]bool) {
	// The earliest local day anywhere is a day before UTC's.
	today := buckets.DateFromTime(now.UTC()) - 1
	keep := periodStart(periodStart(today, e.opts.SaltPeriod)-1, e.opts.SaltPeriod)
	e.salts.mu.Lock()
	defer e.salts.mu.Unlock()
	for first := range e.salts.m {
		if first < keep && !inUse[first] {
			delete(e.salts.m, first)
			if err := e.store.Delete(snapshot.KindSalt, saltID(first)); err != nil {
				e.opts.Logger.Error("drop salt", "err", err)
			}
		}
	}
}

// evict drops the least recently used frozen, clean days until the resident
// frozen days fit in the memory budget.
func (e *Engine) evict() {
	budget := e.opts.MemoryBudget
	if budget <= 0 || e.counters.resident.Load() <= budget {
		return
	}
	type cand struct {
		s    *site
		date buckets.Date
		used int64
	}
	var cands []cand
	e.regMu.RLock()
	sites := make([]*site, 0, len(e.sites))
	for _, s := range e.sites {
		sites = append(sites, s)
	}
	e.regMu.RUnlock()
	for _, s := range sites {
		sh := e.shardOf(s.state.id)
		sh.mu.Lock()
		for date, ent := range s.state.days {
			if ent.frozen && !ent.dirty {
				cands = append(cands, cand{s, date, ent.used})
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Compare(a.used, b.used) })
	for _, c := range cands {
		if e.counters.resident.Load() <= budget {
			return
		}
		sh := e.shardOf(c.s.state.id)
		sh.mu.Lock()
		if ent, ok := c.s.state.days[c.date]; ok && ent.frozen && !ent.dirty {
			c.s.state.clearCacheLocked()
			delete(c.s.state.days, c.date)
			e.counters.resident.Add(-int64(ent.size))
			e.counters.evicted.Add(1)
		}
		sh.mu.Unlock()
	}
}

// Metrics are the engine's running counts.
type Metrics struct {
	Tracked       uint64                // hits counted since Open
	Dropped       map[DropReason]uint64 // hits dropped since Open, by reason
	ResidentBytes int64                 // bytes of resident closed days
	Evicted       uint64                // days evicted since Open
	Snapshots     uint64                // snapshots written since Open
	LastSnapshot  time.Duration         // how long the last snapshot took
	Websites      int
}

// Metrics returns the engine's running counts.
func (e *Engine) Metrics() Metrics {
	m := Metrics{
		Tracked:       e.counters.tracked.Load(),
		Dropped:       make(map[DropReason]uint64),
		ResidentBytes: e.counters.resident.Load(),
		Evicted:       e.counters.evicted.Load(),
		Snapshots:     e.counters.snapshots.Load(),
		LastSnapshot:  time.Duration(e.counters.lastSnapNs.Load()),
	}
	for _, r := range DropReasons() {
		m.Dropped[r] = e.counters.dropped[r].Load()
	}
	e.regMu.RLock()
	m.Websites = len(e.sites)
	e.regMu.RUnlock()
	return m
}

var _ = errors.New

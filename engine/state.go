package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/norm"
)

// visitGap is how long a visitor may stay without a pageview before the
// next one starts a new visit.
const visitGap = 30 * 60 * 1000 // ms

// siteState is the statistics state of one website. Every field is guarded
// by the mu of the website's shard.
type siteState struct {
	id      uint32
	deleted bool

	strs      buckets.Strings // interned values of every dimension
	strsSaved uint32          // strs.Len() at the last snapshot

	// days holds the resident day buckets; dates every date that has data,
	// resident or only in the store.
	days  map[buckets.Date]*dayEntry
	dates map[buckets.Date]struct{}

	// periods holds the visitor state of open salt periods, by first day.
	periods map[buckets.Date]*period

	// months holds rollups of closed months, by first day (rollup.go);
	// rollGen counts the changes to frozen days that invalidate them.
	months  map[buckets.Date]*buckets.Day
	rollGen uint64

	// The period and day the last hit went to: most hits go where the
	// previous one did, so applyLocked skips two map lookups. Cleared
	// whenever an entry leaves days or periods (clearCacheLocked).
	hotFirst  buckets.Date
	hotPeriod *period
	hotDate   buckets.Date
	hotDay    *dayEntry

	lastSeq  uint64 // last log sequence applied
	metaDirt bool   // lastSeq or dates changed since the last snapshot

	rt realtime
}

// dayEntry is a resident day bucket.
type dayEntry struct {
	day *buckets.Day
	// frozen days are never modified: queries read them without the lock,
	// and a write replaces day with a modified clone (copy on write).
	frozen bool
	dirty  bool  // changed since the last snapshot
	size   int   // SizeBytes when frozen
	used   int64 // LRU clock of the last use
}

func newSiteState(id uint32) *siteState {
	return &siteState{
		id:      id,
		days:    make(map[buckets.Date]*dayEntry),
		dates:   make(map[buckets.Date]struct{}),
		periods: make(map[buckets.Date]*period),
		months:  make(map[buckets.Date]*buckets.Day),
	}
}

// clearCacheLocked forgets the hot period and day.
func (st *siteState) clearCacheLocked() { st.hotPeriod, st.hotDay = nil, nil }

// release drops the state's memory (the website was deleted).
func (st *siteState) release() {
	st.clearCacheLocked()
	st.strs = buckets.Strings{}
	st.days = make(map[buckets.Date]*dayEntry)
	st.dates = make(map[buckets.Date]struct{})
	st.periods = make(map[buckets.Date]*period)
	st.months = make(map[buckets.Date]*buckets.Day)
	st.rt = realtime{}
}

// period is the visitor state of one salt period of one website: the dense
// numbering of visitor hashes and each visitor's visit.
type period struct {
	first  uint32            // id of the first visitor numbered here
	index  map[uint64]uint32 // visitor hash → dense id
	hashes []uint64          // dense id → visitor hash
	visits []visit           // dense id → current visit
	dirty  bool
	// idle counts the snapshots since the period last changed; the state
	// of a past period is dropped only once it is idle, so an import
	// running through old days keeps the periods it is still writing.
	idle int
}

// visit is a visitor's current visit.
type visit struct {
	last int64  // Unix ms of the last pageview; 0 with no pageview yet
	host uint32 // 1 + interned id of the (www-less) host that started it; 0: direct or internal
}

func newPeriod(first uint32) *period {
	return &period{index: make(map[uint64]uint32), hashes: make([]uint64, 0, 16), first: first}
}

// errVisitorIDs: a salt period numbered 2^32 visitors.
var errVisitorIDs = errors.New("engine: visitor ids of the salt period exhausted")

// visitor returns the dense id of hash, numbering it if new.
func (p *period) visitor(hash uint64) (uint32, error) {
	if id, ok := p.index[hash]; ok {
		return id, nil
	}
	if uint64(p.first)+uint64(len(p.hashes)) >= 1<<32-1 {
		return 0, errVisitorIDs
	}
	id := p.first + uint32(len(p.hashes))
	p.index[hash] = id
	p.hashes = append(p.hashes, hash)
	p.visits = append(p.visits, visit{})
	return id, nil
}

const periodVersion = 1

// appendBinary encodes the period: version, first id, count, then for each
// visitor its hash, last pageview and visit host.
func (p *period) appendBinary(b []byte) []byte {
	b = append(b, periodVersion)
	b = binary.AppendUvarint(b, uint64(p.first))
	b = binary.AppendUvarint(b, uint64(len(p.hashes)))
	for i, h := range p.hashes {
		b = binary.LittleEndian.AppendUint64(b, h)
		b = binary.AppendVarint(b, p.visits[i].last)
		b = binary.AppendUvarint(b, uint64(p.visits[i].host))
	}
	return b
}

func decodePeriod(b []byte) (*period, error) {
	d := decoder{b: b}
	if v := d.byte(); v != periodVersion {
		return nil, fmt.Errorf("engine: visitor state: unknown version %d", v)
	}
	first, n := d.uvarint(), d.uvarint()
	if d.bad || first > 1<<32-1 || n > uint64(len(d.b))/10+1 || first+n > 1<<32 {
		return nil, fmt.Errorf("engine: visitor state: bad header")
	}
	p := &period{index: make(map[uint64]uint32, n), hashes: make([]uint64, n), visits: make([]visit, n), first: uint32(first)}
	for i := range p.hashes {
		p.hashes[i] = d.uint64()
		p.visits[i].last = d.varint()
		host := d.uvarint()
		if d.bad || host > 1<<32-1 {
			return nil, fmt.Errorf("engine: visitor state: truncated at visitor %d", i)
		}
		p.visits[i].host = uint32(host)
		p.index[p.hashes[i]] = p.first + uint32(i)
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("engine: visitor state: %d trailing bytes", len(d.b))
	}
	return p, nil
}

// applyLocked counts r: steps 3–5 of the pipeline (visitor id, visit, day
// bucket). The shard lock must be held. domain is the website's domain.
func (e *Engine) applyLocked(st *siteState, r *record, domain string) error {
	p := st.hotPeriod
	if p == nil || st.hotFirst != r.period {
		var err error
		if p, err = e.periodLocked(st, r.period); err != nil {
			return err
		}
		st.hotFirst, st.hotPeriod = r.period, p
	}
	id, err := p.visitor(r.hash)
	if err != nil {
		return err
	}
	p.dirty = true
	ent := st.hotDay
	if ent == nil || st.hotDate != r.date || ent.frozen {
		if ent, err = e.dayForWriteLocked(st, r.date, r.period); err != nil {
			return err
		}
		st.hotDate, st.hotDay = r.date, ent
	}
	d := ent.day
	ent.dirty = true
	st.metaDirt = true
	if r.event {
		d.Events++
		d.Add(buckets.Event, st.strs.Intern(r.eventRow), 1)
		return nil
	}
	hour := int(r.hour)
	d.AddPageview(hour)
	page := st.strs.Intern(r.page)
	d.Add(buckets.Page, page, 1)

	v := &p.visits[id-p.first]
	refSite := norm.SiteHost(r.refHost)
	external := refSite != "" && refSite != domain
	var host uint32
	if external {
		host = st.strs.Intern(refSite) + 1
	}
	if v.last == 0 || r.ms-v.last > visitGap || r.ms < v.last-visitGap || (external && host != v.host) {
		v.host = host
		d.Visits++
		d.Add(buckets.LandingPage, page, 1)
		ref := ""
		if external {
			ref = r.refHost
		}
		d.Add(buckets.Referrer, st.strs.Intern(ref), 1)
		if r.campaign != "" {
			d.Add(buckets.Campaign, st.strs.Intern(r.campaign), 1)
		}
	}
	if r.ms > v.last {
		v.last = r.ms
	}
	if newDay, _ := d.AddVisitor(hour, id); newDay {
		for _, dv := range [...]struct {
			dim buckets.Dim
			v   string
		}{
			{buckets.Browser, r.browser}, {buckets.OS, r.os}, {buckets.Device, r.device},
			{buckets.Resolution, r.resolution}, {buckets.Language, r.language},
			{buckets.Country, r.country}, {buckets.Continent, r.continent}, {buckets.City, r.city},
		} {
			d.Add(dv.dim, st.strs.Intern(dv.v), 1)
		}
	}
	st.rt.add(r.ms, r.hash)
	return nil
}

// periodLocked returns the visitor state of the salt period starting on
// first, creating it if needed. A period whose state was dropped (older than
// the previous period) continues its numbering after the largest id its days
// hold, so new visitors never take the id of a counted one.
func (e *Engine) periodLocked(st *siteState, first buckets.Date) (*period, error) {
	if p, ok := st.periods[first]; ok {
		return p, nil
	}
	var next uint32
	for date := range st.dates {
		if date < first || date > first+31 {
			continue
		}
		ent, err := e.dayLocked(st, date)
		if err != nil {
			return nil, err
		}
		if ent != nil && ent.day.Period == first {
			if m, ok := ent.day.MaxVisitor(); ok {
				next = max(next, uint32(min(uint64(m)+1, 1<<32-1)))
			}
		}
	}
	p := newPeriod(next)
	st.periods[first] = p
	return p, nil
}

// dayLocked returns the resident entry of date, reading it from the store if
// it has data there, or nil when the date has no data.
func (e *Engine) dayLocked(st *siteState, date buckets.Date) (*dayEntry, error) {
	if ent, ok := st.days[date]; ok {
		return ent, nil
	}
	if _, ok := st.dates[date]; !ok {
		return nil, nil
	}
	d, err := e.readDay(st.id, date)
	if err != nil {
		return nil, err
	}
	ent := e.residentLocked(st, date, d)
	return ent, nil
}

// dayForWriteLocked returns a day entry that may be modified, creating the
// day (in salt period first) or copying a frozen one.
func (e *Engine) dayForWriteLocked(st *siteState, date, first buckets.Date) (*dayEntry, error) {
	ent, err := e.dayLocked(st, date)
	if err != nil {
		return nil, err
	}
	if ent == nil {
		ent = &dayEntry{day: buckets.NewDay(first)}
		st.days[date] = ent
		st.dates[date] = struct{}{}
		st.invalidateMonthLocked(date)
		return ent, nil
	}
	if ent.frozen {
		st.invalidateMonthLocked(date)
		e.counters.resident.Add(-int64(ent.size))
		ent.day = ent.day.Clone()
		ent.frozen, ent.size = false, 0
	}
	return ent, nil
}

// residentLocked adds a day read from the store to the resident days, frozen.
func (e *Engine) residentLocked(st *siteState, date buckets.Date, d *buckets.Day) *dayEntry {
	ent := &dayEntry{day: d, frozen: true, size: d.SizeBytes(), used: e.counters.tick.Add(1)}
	st.days[date] = ent
	e.counters.resident.Add(int64(ent.size))
	return ent
}

// realtime keeps the pageviews and visitors of the last 30 minutes, a slot a
// minute.
type realtime struct {
	slots [30]rtSlot
}

type rtSlot struct {
	minute    int64 // Unix minute
	pageviews uint32
	visitors  []uint64 // visitor hashes, possibly repeated
}

func (rt *realtime) add(ms int64, hash uint64) {
	m := ms / 60000
	if m < 0 {
		return
	}
	s := &rt.slots[m%30]
	if s.minute != m {
		if s.minute > m {
			return // older than the window
		}
		*s = rtSlot{minute: m, visitors: s.visitors[:0]}
	}
	s.pageviews++
	if len(s.visitors) < 1<<16 && (len(s.visitors) == 0 || s.visitors[len(s.visitors)-1] != hash) {
		s.visitors = append(s.visitors, hash)
	}
}

// counters are the engine's running totals, for metrics.
type counters struct {
	tracked    atomic.Uint64
	dropped    [numDropReasons]atomic.Uint64
	resident   atomic.Int64 // bytes of frozen resident days
	tick       atomic.Int64 // LRU clock
	snapshots  atomic.Uint64
	lastSnapNs atomic.Int64
	evicted    atomic.Uint64
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/paging"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/internal/stat"
	"github.com/webstats/webstats/engine/query"
	"github.com/webstats/webstats/snapshot"
)

// The statistics names of SPEC §2.3, besides the dimensions of buckets.
const (
	StatPageviews      = stat.Pageviews
	StatPageviewsHours = stat.PageviewsHours
	StatVisitors       = stat.Visitors
	StatVisitorsHours  = stat.VisitorsHours
)

// StatNames lists the 17 statistics, in the order the API documents them.
func StatNames() []string { return stat.Names() }

// MaxRangeDays bounds the days one query may span: a century. A query's
// work is bounded by the days that have data, not by the range.
const MaxRangeDays = query.MaxRangeDays

// StatQuery asks for one statistic of a website over a range of local days.
// Its zero sort is the largest counts first.
type StatQuery struct {
	// Website is the website id.
	Website uint32
	// Name is one of StatNames, or the alias pageviews_hour / visitors_hour.
	Name string
	// From and To are inclusive local days of the website.
	From, To Date
	// Search keeps the rows whose value holds it (case-insensitive).
	Search string
	// SortBy is "count" (default) or "value". Rows come in descending order
	// unless Asc. Equal counts are ordered by value ascending, bytewise.
	SortBy string
	Asc    bool
	// Page counts from 1 (< 1 means 1); PerPage defaults to 10.
	Page, PerPage int
}

// Validate checks the query: a known name, From not after To, a range of at
// most MaxRangeDays.
func (q *StatQuery) Validate() error { return stat.Check(q.Name, q.SortBy, q.From, q.To) }

// Row and Page are a statistic's rows, and one page of them (package stat).
type (
	Row  = stat.Row
	Page = stat.Page
)

// Stat answers a statistic query on one of the handle's websites.
func (o Owner) Stat(ctx context.Context, q StatQuery) (Page, error) {
	e := o.e
	if err := q.Validate(); err != nil {
		return Page{}, err
	}
	name, _ := stat.Canonical(q.Name)
	s, err := o.site(q.Website)
	if err != nil {
		return Page{}, err
	}
	far, done, err := o.elsewhere(q.Website)
	if err != nil {
		return Page{}, err
	}
	if far {
		rep, err := o.ask(ctx, q.Website, askRequest{Op: askStat, Stat: q})
		return rep.Page, err
	}
	defer done()
	rows, err := e.rows(ctx, s, name, q.From, q.To)
	if err != nil {
		return Page{}, err
	}
	rows = stat.Search(rows, q.Search)
	per, page, last, lo, hi := paging.Bounds(len(rows), q.PerPage, q.Page)
	stat.Sort(rows, q.SortBy == "value", !q.Asc, hi)
	out := Page{Rows: slices.Clone(rows[lo:hi]), Total: len(rows), Page: page, PerPage: per, LastPage: last}
	return out, nil
}

// rows computes every row of statistic name over [from, to].
func (e *Engine) rows(ctx context.Context, s *site, name string, from, to buckets.Date) ([]Row, error) {
	switch name {
	case StatPageviews, StatVisitors:
		var rows []Row
		err := e.scan(ctx, s, from, to, nil, func(date buckets.Date, d *buckets.Day) {
			n := d.Pageviews()
			if name == StatVisitors {
				n = d.Visitors()
			}
			if n > 0 {
				rows = append(rows, Row{Value: date.String(), Count: n})
			}
		})
		return rows, err
	case StatPageviewsHours, StatVisitorsHours:
		var hours [24]uint64
		err := e.scan(ctx, s, from, to, nil, func(_ buckets.Date, d *buckets.Day) {
			for h := range 24 {
				if name == StatPageviewsHours {
					hours[h] += d.Hours[h]
				} else {
					hours[h] += d.HourVisitors(h)
				}
			}
		})
		var rows []Row
		for h, n := range hours {
			if n > 0 {
				rows = append(rows, Row{Value: stat.Hour(h), Count: n})
			}
		}
		return rows, err
	}
	dim, _ := buckets.ParseDim(name)
	sums, err := e.sumDim(ctx, s, dim, from, to)
	if err != nil {
		return nil, err
	}
	rows := make([]Row, 0, len(sums))
	for _, r := range sums {
		if r.Count > 0 {
			rows = append(rows, Row{Value: r.Value, Count: r.Count})
		}
	}
	return rows, nil
}

// scan calls fn for every day with data in [from, to], in no particular
// order. Days that may change (open days) are passed under the shard lock;
// frozen days after it is released, so a long query never holds up tracking.
// locked, when not nil, is called under the lock first.
func (e *Engine) scan(ctx context.Context, s *site, from, to buckets.Date, locked func(*siteState), fn func(buckets.Date, *buckets.Day)) error {
	return e.scanDays(ctx, s, from, to, false, locked, func(date buckets.Date, d storedDay) { fn(date, d.day) })
}

// scanDays is scan giving each day's segments too when withSeg (else a
// day's seg may be nil).
func (e *Engine) scanDays(ctx context.Context, s *site, from, to buckets.Date, withSeg bool, locked func(*siteState), fn func(buckets.Date, storedDay)) error {
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	sh := e.shardOf(s.cfg.Load().id)
	loaded, pinned, err := e.loadRange(s, sh, from, to, withSeg)
	if err != nil {
		return err
	}
	defer e.maybeEvict() // after the query: it holds the days it loaded
	type ref struct {
		date buckets.Date
		day  storedDay
	}
	var frozen []ref
	tick := e.counters.tick.Add(1)
	sh.mu.Lock()
	unpinDaysLocked(pinned)
	st := s.state
	if st.deleted {
		sh.mu.Unlock()
		return ErrNotFound
	}
	if locked != nil {
		locked(st)
	}
	visit := func(date buckets.Date, ent *dayEntry) {
		ent.used = tick
		if withSeg && segMissing(ent) {
			return // loadRange read it whole for this query (below)
		}
		if ent.frozen {
			frozen = append(frozen, ref{date, storedDay{day: ent.day, seg: ent.seg}})
		} else {
			fn(date, storedDay{day: ent.day, seg: ent.seg, open: true})
		}
	}
	for date, d := range loaded {
		if ent, ok := st.days[date]; !ok || withSeg && segMissing(ent) {
			// Evicted meanwhile, or resident without the segments this
			// query needs (loadRange could not set them).
			frozen = append(frozen, ref{date, d})
		}
	}
	if int(to-from)+1 > len(st.days) {
		for date, ent := range st.days {
			if date >= from && date <= to {
				visit(date, ent)
			}
		}
	} else {
		for date := from; date <= to; date++ {
			if ent, ok := st.days[date]; ok {
				visit(date, ent)
			}
		}
	}
	sh.mu.Unlock()
	for i, r := range frozen {
		if i%64 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		fn(r.date, r.day)
	}
	return nil
}

// loadRange makes every day of [from, to] that has data resident, with its
// segments when withSeg, reading the missing ones from the store without
// holding the shard lock. It returns the days it read: eviction may drop
// them from the resident days before the caller uses them.
func (e *Engine) loadRange(s *site, sh *shard, from, to buckets.Date, withSeg bool) (map[buckets.Date]storedDay, []*dayEntry, error) {
	st := s.state
	absent := func(date buckets.Date) bool {
		ent, ok := st.days[date]
		return !ok || withSeg && segMissing(ent)
	}
	for round := 0; ; round++ {
		sh.mu.Lock()
		var missing []buckets.Date
		if int(to-from)+1 > len(st.dates) {
			for date := range st.dates {
				if date >= from && date <= to && absent(date) {
					missing = append(missing, date)
				}
			}
		} else {
			for date := from; date <= to; date++ {
				if _, ok := st.dates[date]; ok && absent(date) {
					missing = append(missing, date)
				}
			}
		}
		gen := st.evictGen
		if len(missing) == 0 {
			pinned := pinRangeLocked(st, from, to)
			sh.mu.Unlock()
			return nil, pinned, nil
		}
		sh.mu.Unlock()
		slices.Sort(missing)
		loaded, err := e.readDays(st.id, missing, withSeg)
		if err != nil {
			return nil, nil, err
		}
		sh.mu.Lock()
		if st.evictGen != gen && round < 8 {
			// A day left memory meanwhile (written first): what was read
			// may be older than it. Read again.
			sh.mu.Unlock()
			continue
		}
		for _, date := range missing {
			_, listed := st.dates[date]
			ent, resident := st.days[date]
			if withSeg && resident && segMissing(ent) {
				resident = false // its segments are what was read
			}
			if _, ok := loaded[date]; !ok && listed && !resident && !st.deleted {
				sh.mu.Unlock()
				return nil, nil, fmt.Errorf("engine: website %d day %v: listed but not in the store: %w", st.id, date, snapshot.ErrCorrupt)
			}
		}
		for date, d := range loaded {
			ent, resident := st.days[date]
			_, listed := st.dates[date]
			switch {
			case resident && (!segMissing(ent) || d.seg == nil) || !listed || st.deleted:
				delete(loaded, date) // resident already (perhaps changed), or gone
			case st.evictGen != gen:
				// Still evicting after many rounds: the copy serves this
				// query only.
			case resident:
				e.fillSegLocked(ent, d.seg) // withSeg: it was missing them
			default:
				e.residentLocked(st, date, d)
			}
		}
		pinned := pinRangeLocked(st, from, to)
		sh.mu.Unlock()
		return loaded, pinned, nil
	}
}

// readDaysInTurn is the number of days below which readDays reads them in
// the calling goroutine: handing days over costs more than it saves.
const readDaysInTurn = 16

// readDays reads the days of dates (ascending, each with data) of website
// from the store and decodes them, with their segments when withSeg. Many
// days are read in parts, one per processor (at most 8), each part by its
// own goroutine with its own iterator: Pebble's reading and the decoding
// cost about the same, and both are then shared out (on two cores the
// first query over a year after a restart takes about half the time).
func (e *Engine) readDays(website uint32, dates []buckets.Date, withSeg bool) (map[buckets.Date]storedDay, error) {
	n := min(runtime.GOMAXPROCS(0), len(dates)/readDaysInTurn, 8)
	if n < 2 {
		loaded := make(map[buckets.Date]storedDay, len(dates))
		return loaded, e.readDaysInto(loaded, website, dates, withSeg, nil)
	}
	got := make([]map[buckets.Date]storedDay, n)
	errs := make([]error, n)
	var stop atomic.Bool // a part failed: the others may stop
	var wg sync.WaitGroup
	for k := range n {
		part := dates[k*len(dates)/n : (k+1)*len(dates)/n]
		got[k] = make(map[buckets.Date]storedDay, len(part))
		wg.Go(func() {
			defer func() {
				// A panic decoding is the query's error, as it would be
				// in the caller's goroutine (where the server recovers it;
				// the store closes its iterator either way).
				if r := recover(); r != nil {
					errs[k] = fmt.Errorf("engine: website %d: reading days: %v\n%s", website, r, debug.Stack())
					stop.Store(true)
				}
			}()
			if errs[k] = e.readDaysInto(got[k], website, part, withSeg, &stop); errs[k] != nil {
				stop.Store(true)
			}
		})
	}
	wg.Wait()
	// The first failure in date order; the others stopped because of it.
	for _, err := range errs {
		if err != nil && !errors.Is(err, errReadStopped) {
			return nil, err
		}
	}
	loaded := got[0]
	for _, m := range got[1:] {
		maps.Copy(loaded, m)
	}
	return loaded, nil
}

// errReadStopped stops reading a part of the days when another failed.
var errReadStopped = errors.New("engine: reading days stopped")

// readDaysInto reads and decodes the days of dates (ascending) into
// loaded, in this goroutine; it gives up when stop (if not nil) is set.
func (e *Engine) readDaysInto(loaded map[buckets.Date]storedDay, website uint32, dates []buckets.Date, withSeg bool, stop *atomic.Bool) error {
	if len(dates) == 0 {
		return nil
	}
	want := func(date int32) bool {
		_, ok := slices.BinarySearch(dates, buckets.Date(date))
		return ok // else resident: not needed
	}
	decode := func(date int32, data []byte, parts [][]byte) error {
		if stop != nil && stop.Load() {
			return errReadStopped
		}
		d, err := decodeDay(data, withSeg)
		if err == nil && withSeg && segments.Chunks(d.seg, e.wholeLimit) == 1 {
			// A day read for queries is made whole: its sealed parts
			// with it; one too large for that stays as stored, and
			// scanSegs reads it in chunks (segments.Chunks).
			d.seg, err = d.seg.Whole(parts, e.parts)
		}
		if err != nil {
			return fmt.Errorf("engine: website %d day %v: %w", website, buckets.Date(date), err)
		}
		loaded[buckets.Date(date)] = d
		return nil
	}
	from, to := int32(dates[0]), int32(dates[len(dates)-1])
	// Without segments, the days' parts are not read (DaysWanted), and a
	// day's data is valid only during the call.
	if withSeg {
		return e.store.DaysWithParts(website, from, to, want, decode)
	}
	return e.store.DaysWanted(website, from, to, want, func(date int32, data []byte) error { return decode(date, data, nil) })
}

// pinRangeLocked pins the resident days of [from, to], so that eviction
// keeps them until the caller has taken what it needs under the lock
// (unpinDaysLocked): a day resident when the range was read and evicted
// before the query took the lock again was missed.
func pinRangeLocked(st *siteState, from, to buckets.Date) []*dayEntry {
	var pinned []*dayEntry
	if int64(to)-int64(from)+1 > int64(len(st.days)) {
		for date, ent := range st.days {
			if date >= from && date <= to {
				ent.pins++
				pinned = append(pinned, ent)
			}
		}
	} else {
		for date := from; date <= to; date++ {
			if ent, ok := st.days[date]; ok {
				ent.pins++
				pinned = append(pinned, ent)
			}
		}
	}
	return pinned
}

// unpinDaysLocked releases the pins of pinRangeLocked.
func unpinDaysLocked(pinned []*dayEntry) {
	for _, ent := range pinned {
		ent.pins--
	}
}

// Totals are a website's totals over a range.
type Totals struct {
	// Visitors is the number of unique visitors of the range: exact within a
	// salt period, summed over the periods the range touches.
	Visitors  uint64
	Pageviews uint64
	Visits    uint64
	Events    uint64
}

// Totals returns website's totals over the local days [from, to].
func (o Owner) Totals(ctx context.Context, website uint32, from, to Date) (Totals, error) {
	e := o.e
	if err := stat.CheckRange(from, to); err != nil {
		return Totals{}, err
	}
	s, err := o.site(website)
	if err != nil {
		return Totals{}, err
	}
	far, done, err := o.elsewhere(website)
	if err != nil {
		return Totals{}, err
	}
	if far {
		rep, err := o.ask(ctx, website, askRequest{Op: askTotals, From: from, To: to})
		return rep.Totals, err
	}
	defer done()
	var t Totals
	var days []*buckets.Day
	err = e.scan(ctx, s, from, to, nil, func(_ buckets.Date, d *buckets.Day) {
		t.Pageviews += d.Pageviews()
		t.Visits += d.Visits
		t.Events += d.Events
		days = append(days, d.VisitorsOnly())
	})
	t.Visitors = buckets.UniqueVisitors(days...)
	return t, err
}

// Realtime is what happened on a website in the last minutes.
type Realtime struct {
	// Visitors counts the distinct visitors with a pageview in the last 5
	// minutes.
	Visitors int
	// Pageviews holds the pageviews of each of the last 30 minutes, oldest
	// first; the last entry is the current minute.
	Pageviews [30]uint64
}

// Realtime returns the website's realtime view at the engine's clock.
func (o Owner) Realtime(ctx context.Context, website uint32) (Realtime, error) {
	e := o.e
	s, err := o.site(website)
	if err != nil {
		return Realtime{}, err
	}
	far, done, err := o.elsewhere(website)
	if err != nil {
		return Realtime{}, err
	}
	if far {
		rep, err := o.ask(ctx, website, askRequest{Op: askRealtime})
		return rep.Realtime, err
	}
	defer done()
	now := e.now().UnixMilli() / 60000
	sh := e.shardOf(website)
	sh.mu.Lock()
	rt, over := readRealtime(&s.state.rt, now)
	sh.mu.Unlock()
	if over {
		// A minute of more visitors than its slot keeps: count them
		// from the rows (realtime.go).
		n, err := e.realtimeVisitors(ctx, s, now)
		var qe *QueryError
		switch {
		case errors.As(err, &qe):
			// A day too large to read under the memory budget: the
			// slots' count, a lower bound (README, "Limits").
			e.opts.Logger.Warn("realtime visitors from the slots only", "website", website, "err", err)
		case err != nil:
			return Realtime{}, err
		default:
			rt.Visitors = n
		}
	}
	return rt, nil
}

// Today returns the current local day of a website, in its time zone.
func (o Owner) Today(ctx context.Context, website uint32) (Date, error) {
	s, err := o.site(website)
	if err != nil {
		return 0, err
	}
	return buckets.DateFromTime(o.e.now().In(s.cfg.Load().loc)), nil
}

// Cities reports whether the engine locates cities: Options.GeoIP names a
// City (or Enterprise) .mmdb. Without one, visit:city, visit:region and
// their names are empty on every visit (SPEC §10.2).
func (e *Engine) Cities() bool { return e.geo.Cities() }

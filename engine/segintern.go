package engine

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// internTable gives each value a query groups by an id that is the same on
// every day. A day's dictionary ids are its own (days are self-contained:
// a flood of unique values is forgotten with its day, SPEC §13), so a
// query by one dimension used to find a value's group once per day it
// appears, by its string: over 30 days of the large site by page, about
// 150,000 string-map lookups at about 290 ns each, a fifth of the query's
// CPU. With the table a query finds it once per query (plan.valueGroup);
// each day keeps its dictionary's ids in the table (dayGids, on its memo).
//
// Bounded: the table holds at most maxBytes of strings and entries
// (internEntryBytes each; a string longer than a 64th of that is never
// taken). A full table takes no new string: a query finds the group of
// such a value by its string, as without the table, and days without ids
// in it get none. A full table is replaced by an empty one at most once
// per internRefill (Engine.interns), and each day's ids in the old one
// are found again as queries meet the day (dayGids.gen). The table sits
// outside the memory budget, like the query caches: a sixteenth of it,
// between 1 and 16 MiB; a replaced one lives on while queries that
// started with it run. It holds copies of values, so a website's delete
// and retention's drops forget it (Engine.forgetValues).
type internTable struct {
	gen      uint64 // unique: internGens
	maxBytes int
	made     time.Time    // by the monotonic clock: a bound on work, not statistics
	stats    *internStats // the engine's

	mu    sync.RWMutex
	ids   map[string]uint32
	bytes int
	full  atomic.Bool
}

// internEntryBytes is what an entry of internTable costs beside its
// string: the map's slot (a string header and an id), its share of free
// slots and control bytes, and the string's rounding to a size class.
const internEntryBytes = 64

// internRefill is how often a full table may be replaced: each new table
// costs every day the next queries meet a new dayGids. A variable for the
// tests (export_test.go).
var internRefill = time.Minute

// internGens numbers the tables of every engine.
var internGens atomic.Uint64

// internStats counts, for the tests, the tables an engine made, the days
// queries scanned with their values' ids in one (stale: after dropping
// those of an older table), and the groups found by a value's id.
type internStats struct {
	tables, days, stale, found atomic.Int64
}

// internMaxBytes is the most an engine's table holds. A variable for the
// tests' small tables (export_test.go).
var internMaxBytes = 16 << 20

// internBytes is the size of an engine's table for a memory budget (0:
// none).
func internBytes(budget int64) int {
	if budget <= 0 {
		return internMaxBytes
	}
	return int(min(max(budget/16, 1<<20), int64(internMaxBytes)))
}

// interns returns the engine's table: a new one if there is none, or if
// it is full and was made internRefill ago.
func (e *Engine) interns() *internTable {
	t := e.intern.Load()
	if t != nil && (!t.full.Load() || time.Since(t.made) < internRefill) {
		return t
	}
	n := &internTable{gen: internGens.Add(1), maxBytes: internBytes(e.opts.MemoryBudget), made: time.Now(), stats: &e.internStats, ids: make(map[string]uint32)}
	if e.intern.CompareAndSwap(t, n) {
		e.internStats.tables.Add(1)
		return n
	}
	return e.intern.Load()
}

// forgetValues drops the engine's table of values (the next query makes
// a new one): called when values must no longer be kept, a website
// deleted or days dropped by retention.
func (e *Engine) forgetValues() { e.intern.Store(nil) }

// id returns the id of s, false if s is new and the table full (or s too
// long for it).
func (t *internTable) id(s string) (uint32, bool) {
	t.mu.RLock()
	id, ok := t.ids[s]
	t.mu.RUnlock()
	if ok {
		return id, true
	}
	if len(s) > t.maxBytes/64 {
		return 0, false // not full: shorter ones still fit
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[s]; ok {
		return id, true
	}
	if t.bytes+len(s)+internEntryBytes > t.maxBytes {
		t.full.Store(true)
		return 0, false
	}
	id = uint32(len(t.ids))
	t.ids[strings.Clone(s)] = id // not the day's: the table outlives it
	t.bytes += len(s) + internEntryBytes
	return id, true
}

// dayGids is a day's dictionary in one internTable: ids[i] is 1 + the
// table's id of the day's string i, 0 while no query has looked it up.
// Queries read and write it at once: each entry is atomic, and every
// writer writes the one value the table gives.
type dayGids struct {
	gen uint64
	ids []atomic.Uint32
}

// gidsBytes is what a day's dayGids costs, for a day of ns strings.
func gidsBytes(ns int) int { return 4 * ns }

// gids returns the ids in table t of a day of ns strings; nil when the
// day keeps those of a newer table (the query's is then a full one: it
// finds its groups by their strings), or has none and t is full.
func (m *dayMemo) gids(t *internTable, ns int) *dayGids {
	gen := t.gen
	g := m.gidMap.Load()
	for g == nil || g.gen < gen {
		if t.full.Load() {
			return nil // no new ids: not worth 4 bytes a string
		}
		n := &dayGids{gen: gen, ids: make([]atomic.Uint32, ns)}
		if m.gidMap.CompareAndSwap(g, n) {
			if g != nil {
				t.stats.stale.Add(1)
			}
			return n
		}
		g = m.gidMap.Load()
	}
	if g.gen != gen || len(g.ids) != ns {
		return nil // the length: never, but not assumed
	}
	return g
}

// gidPageBits is the log2 of the size of the pages of plan.gidGroups
// (512 entries, 4 KiB): a query of few values whose ids are far apart
// (the table is the engine's) allocates a page for each. A variable for
// the tests (export_test.go), read once per plan (plan.gidBits).
var gidPageBits = 9

// valueGroup returns the group of the plan's one dimension's value id
// (the key's; a dictionary id of sd), creating it: found by the value's
// id in the engine's table when the day has them (plan.gids), else by
// its string (globalGroup).
func (p *plan) valueGroup(sd *segDay, id uint32) *group {
	if p.gids == nil || int(id) >= len(p.gids.ids) {
		return p.globalGroup(sd)
	}
	x := p.gids.ids[id].Load()
	if x == 0 {
		if p.intern.full.Load() {
			return p.globalGroup(sd) // no new ids: no lock to take
		}
		gid, ok := p.intern.id(sd.strs[id])
		if !ok {
			return p.globalGroup(sd)
		}
		x = gid + 1
		p.gids.ids[id].Store(x)
	}
	bits := p.gidBits
	page, off := int((x-1)>>bits), (x-1)&(1<<bits-1)
	if page >= len(p.gidGroups) {
		p.gidGroups = append(p.gidGroups, make([][]*group, page+1-len(p.gidGroups))...)
	}
	if p.gidGroups[page] == nil {
		p.gidGroups[page] = make([]*group, 1<<bits)
	}
	if g := p.gidGroups[page][off]; g != nil {
		p.gidFound++
		return g
	}
	g := p.globalGroup(sd)
	if g != nil {
		p.gidGroups[page][off] = g
	}
	return g
}

// dictValue reports whether the ids of dimension s are dictionary ids of
// the day (a column's: hitCol, visitCol), those valueGroup takes.
func (s dimSpec) dictValue() bool {
	switch s.kind {
	case dkGoal, dkProp, dkTime, dkCity:
		return false
	}
	return true
}

package engine

import (
	"strings"
	"sync"
	"sync/atomic"
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
// (internEntryBytes each). A full table takes no new string (a query
// finds the group of such a value by its string, as without the table);
// the next query starts a new table (Engine.interns), and each day's ids
// in the old one are found again as queries meet the day (dayGids.gen).
// The table sits outside the memory budget, like the query caches: a
// sixteenth of it, between 1 and 16 MiB.
type internTable struct {
	gen      uint64 // unique: internGens
	maxBytes int
	stats    *internStats // the engine's

	mu    sync.Mutex
	ids   map[string]uint32
	bytes int
	full  atomic.Bool
}

// internEntryBytes is what an entry of internTable costs beside its
// string: the map's slot (a string header and an id) and its share of
// free slots and control bytes.
const internEntryBytes = 48

// internGens numbers the tables of every engine.
var internGens atomic.Uint64

// internStats counts, for the tests, the tables an engine made and the
// days queries scanned with their values' ids in one.
type internStats struct {
	tables, days atomic.Int64
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

// interns returns the engine's table, a new one if it is full.
func (e *Engine) interns() *internTable {
	t := e.intern.Load()
	if t != nil && !t.full.Load() {
		return t
	}
	n := &internTable{gen: internGens.Add(1), maxBytes: internBytes(e.opts.MemoryBudget), stats: &e.internStats, ids: make(map[string]uint32)}
	if e.intern.CompareAndSwap(t, n) {
		e.internStats.tables.Add(1)
		return n
	}
	return e.intern.Load()
}

// id returns the id of s, false if s is new and the table full.
func (t *internTable) id(s string) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.ids[s]; ok {
		return id, true
	}
	if t.bytes+len(s)+internEntryBytes > t.maxBytes {
		t.full.Store(true)
		return 0, false
	}
	id := uint32(len(t.ids))
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

// gids returns the ids in table gen of a day of ns strings, nil when
// the day keeps those of a newer table (the query's is then a full one:
// it finds its groups by their strings).
func (m *dayMemo) gids(gen uint64, ns int) *dayGids {
	g := m.gidMap.Load()
	for g == nil || g.gen < gen {
		n := &dayGids{gen: gen, ids: make([]atomic.Uint32, ns)}
		if m.gidMap.CompareAndSwap(g, n) {
			return n
		}
		g = m.gidMap.Load()
	}
	if g.gen != gen || len(g.ids) != ns {
		return nil // the length: never, but not assumed
	}
	return g
}

// gidPage is the size of the pages of plan.gidGroups.
const gidPage = 4096

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
		gid, ok := p.intern.id(sd.strs[id])
		if !ok {
			return p.globalGroup(sd)
		}
		x = gid + 1
		p.gids.ids[id].Store(x)
	}
	page, off := int((x-1)/gidPage), (x-1)%gidPage
	if page >= len(p.gidGroups) {
		p.gidGroups = append(p.gidGroups, make([][]*group, page+1-len(p.gidGroups))...)
	}
	if p.gidGroups[page] == nil {
		p.gidGroups[page] = make([]*group, gidPage)
	}
	if g := p.gidGroups[page][off]; g != nil {
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

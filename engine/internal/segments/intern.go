package segments

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Interns gives each value a query groups by an id that is the same on
// every day. A day's dictionary ids are its own (days are self-contained:
// a flood of unique values is forgotten with its day, SPEC §13), so a
// query by one dimension used to find a value's group once per day it
// appears, by its string: over 30 days of the large site by page, about
// 150,000 string-map lookups at about 290 ns each, a fifth of the query's
// CPU. With the table a query finds it once per query (Plan.valueGroup);
// each day keeps its dictionary's ids in the table (Gids, on its memo).
//
// Bounded: the table holds at most maxBytes of strings and entries
// (internEntryBytes each; a string longer than a 64th of that is never
// taken). A full table takes no new string: a query finds the group of
// such a value by its string, as without the table, and days without ids
// in it get none. A full table is replaced by an empty one at most once
// per InternRefill (Engine.interns), and each day's ids in the old one
// are found again as queries meet the day (Gids.gen). The table sits
// outside the memory budget, like the query caches: a sixteenth of it,
// between 1 and 16 MiB; a replaced one lives on while queries that
// started with it run. It holds copies of values, so a website's delete
// and retention's drops forget it (Engine.forgetValues).
type Interns struct {
	Gen      uint64 // unique: internGens
	MaxBytes int
	Made     time.Time    // by the monotonic clock: a bound on work, not statistics
	Stats    *InternStats // the engine's

	Mu    sync.RWMutex
	ids   map[string]uint32
	bytes int
	Full  atomic.Bool
}

// NewInterns returns an empty table of at most maxBytes, counting in stats.
func NewInterns(maxBytes int, stats *InternStats) *Interns {
	return &Interns{Gen: internGens.Add(1), MaxBytes: maxBytes, Made: time.Now(), Stats: stats, ids: make(map[string]uint32)}
}

// Values returns how many values t holds.
func (t *Interns) Values() int {
	t.Mu.RLock()
	defer t.Mu.RUnlock()
	return len(t.ids)
}

// internEntryBytes is what an entry of Interns costs beside its
// string: the map's slot (a string header and an id), its share of free
// slots and control bytes, and the string's rounding to a size class.
const internEntryBytes = 64

// InternRefill is how often a full table may be replaced: each new table
// costs every day the next queries meet a new Gids. A variable for the
// tests (export_test.go).
var InternRefill = time.Minute

// internGens numbers the tables of every engine.
var internGens atomic.Uint64

// InternStats counts, for the tests, the tables an engine made, the days
// queries scanned with their values' ids in one (stale: after dropping
// those of an older table), and the groups found by a value's id.
type InternStats struct {
	Tables, Days, Stale, Found atomic.Int64
}

// InternMaxBytes is the most an engine's table holds. A variable for the
// tests' small tables (export_test.go).
var InternMaxBytes = 16 << 20

// InternBytes is the size of an engine's table for a memory budget (0:
// none).
func InternBytes(budget int64) int {
	if budget <= 0 {
		return InternMaxBytes
	}
	return int(min(max(budget/16, 1<<20), int64(InternMaxBytes)))
}

// ID returns the id of s, false if s is new and the table full (or s too
// long for it).
func (t *Interns) ID(s string) (uint32, bool) {
	t.Mu.RLock()
	id, ok := t.ids[s]
	t.Mu.RUnlock()
	if ok {
		return id, true
	}
	if len(s) > t.MaxBytes/64 {
		return 0, false // not full: shorter ones still fit
	}
	t.Mu.Lock()
	defer t.Mu.Unlock()
	if id, ok := t.ids[s]; ok {
		return id, true
	}
	if t.bytes+len(s)+internEntryBytes > t.MaxBytes {
		t.Full.Store(true)
		return 0, false
	}
	id = uint32(len(t.ids))
	t.ids[strings.Clone(s)] = id // not the day's: the table outlives it
	t.bytes += len(s) + internEntryBytes
	return id, true
}

// Gids is a day's dictionary in one Interns: ids[i] is 1 + the
// table's id of the day's string i, 0 while no query has looked it up.
// Queries read and write it at once: each entry is atomic, and every
// writer writes the one value the table gives.
type Gids struct {
	gen uint64
	IDs []atomic.Uint32
}

// gidsBytes is what a day's Gids costs, for a day of ns strings.
func gidsBytes(ns int) int { return 4 * ns }

// Gids returns the ids in table t of a day of ns strings; nil when the
// day keeps those of a newer table (the query's is then a full one: it
// finds its groups by their strings), or has none and t is full.
func (m *Memo) Gids(t *Interns, ns int) *Gids {
	gen := t.Gen
	g := m.gidMap.Load()
	for g == nil || g.gen < gen {
		if t.Full.Load() {
			return nil // no new ids: not worth 4 bytes a string
		}
		n := &Gids{gen: gen, IDs: make([]atomic.Uint32, ns)}
		if m.gidMap.CompareAndSwap(g, n) {
			if g != nil {
				t.Stats.Stale.Add(1)
			}
			return n
		}
		g = m.gidMap.Load()
	}
	if g.gen != gen || len(g.IDs) != ns {
		return nil // the length: never, but not assumed
	}
	return g
}

// GidPageBits is the log2 of the size of the pages of Plan.gidGroups
// (512 entries, 4 KiB): a query of few values whose ids are far apart
// (the table is the engine's) allocates a page for each. A variable for
// the tests (export_test.go), read once per plan (Plan.GidBits).
var GidPageBits = 9

package engine

import (
	"time"

	"github.com/webstats/webstats/engine/internal/segments"
)

// interns returns the engine's table: a new one if there is none, or if
// it is full and was made segments.InternRefill ago.
func (e *Engine) interns() *segments.Interns {
	t := e.intern.Load()
	if t != nil && (!t.Full.Load() || time.Since(t.Made) < segments.InternRefill) {
		return t
	}
	n := segments.NewInterns(segments.InternBytes(e.opts.MemoryBudget), &e.internStats)
	if e.intern.CompareAndSwap(t, n) {
		e.internStats.Tables.Add(1)
		return n
	}
	return e.intern.Load()
}

// forgetValues drops the engine's table of values (the next query makes
// a new one): called when values must no longer be kept, a website
// deleted or days dropped by retention.
func (e *Engine) forgetValues() { e.intern.Store(nil) }

// valueGroup returns the group of the plan's one dimension's value id
// (the key's; a dictionary id of sd), creating it: found by the value's
// id in the engine's table when the day has them (plan.gids), else by
// its string (globalGroup).
func (p *plan) valueGroup(sd *segments.Day, id uint32) *group {
	if p.gids == nil || int(id) >= len(p.gids.IDs) {
		return p.globalGroup(sd)
	}
	x := p.gids.IDs[id].Load()
	if x == 0 {
		if p.intern.Full.Load() {
			return p.globalGroup(sd) // no new ids: no lock to take
		}
		gid, ok := p.intern.ID(sd.Strs[id])
		if !ok {
			return p.globalGroup(sd)
		}
		x = gid + 1
		p.gids.IDs[id].Store(x)
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

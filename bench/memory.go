package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

// MemoryResult is the outcome of the memory run: the medium site's history
// grown day by day, measured at each of RunConfig.HistoryDays, without and
// with a memory budget.
type MemoryResult struct {
	// Site is the site loaded ("medium").
	Site string
	// Budget is the MemoryBudget of the budgeted variant.
	Budget int64
	// Fixed is the heap of an engine with the website and no hits: the
	// engine's fixed cost (user-agent and geo tables, Pebble's Go objects).
	Fixed int64
	// FixedDisk is the size of a data directory with the website and no
	// hits, after Close: Pebble's fixed files (log, manifest, options).
	FixedDisk int64
	// Points holds a measurement per variant and history length.
	Points []MemoryPoint
}

// MemoryPoint is one measurement of the memory run.
type MemoryPoint struct {
	// Size is the site size loaded: "medium" for the main series; "small"
	// for the one point measured at the longest history, for the capacity
	// model (a small site's day costs more per hit).
	Size string
	// Budget is the engine's MemoryBudget (0: none).
	Budget int64
	Days   int
	// Hits counts the hits counted so far.
	Hits int
	// Heap is the live Go heap after runtime.GC, less the heap before
	// the engine was opened and its Fixed cost; Resident is the engine's
	// own count of resident closed-day bytes (Metrics.ResidentBytes).
	Heap, Resident int64
	// Disk is the size of the data directory after Close; Store the size
	// of the same directory with no hits (MemoryResult.FixedDisk).
	Disk, Store int64
	// DiskOpen is everything in the data directory while the engine is
	// open, after the snapshot: the bytes the file system allocated
	// (dirAllocated), Pebble's write-ahead log files (allocated ahead of
	// their writes, and recycled ones kept for reuse) included. It is what the disk holds
	// at steady state.
	DiskOpen int64
	// Usage is what the store's live keys hold by part then
	// (engine.StoreUsage), to tell what the disk is made of.
	Usage *engine.StoreUsage `json:",omitempty"`
}

// MemPerHit is Heap per hit.
func (p MemoryPoint) MemPerHit() float64 { return float64(p.Heap) / float64(max(1, p.Hits)) }

// DiskOpenPerHit is DiskOpen per hit: everything, no fixed cost taken off.
func (p MemoryPoint) DiskOpenPerHit() float64 {
	return float64(p.DiskOpen) / float64(max(1, p.Hits))
}

// DiskPerHit is Disk less Store per hit.
func (p MemoryPoint) DiskPerHit() float64 {
	return float64(max(0, p.Disk-p.Store)) / float64(max(1, p.Hits))
}

// Longest returns the point of the longest history of the site of size
// size, without a budget.
func (m *MemoryResult) Longest(size string) (MemoryPoint, bool) {
	return m.longest(func(p MemoryPoint) bool { return p.Size == size && p.Budget == 0 })
}

// Last returns the point of the longest history of a variant.
func (m *MemoryResult) Last(budgeted bool) (MemoryPoint, bool) {
	return m.longest(func(p MemoryPoint) bool { return p.Size == m.Site && (p.Budget > 0) == budgeted })
}

// longest returns the point of the longest history among those of match.
func (m *MemoryResult) longest(match func(MemoryPoint) bool) (out MemoryPoint, ok bool) {
	if m == nil {
		return out, false
	}
	for _, p := range m.Points {
		if match(p) && (!ok || p.Days > out.Days) {
			out, ok = p, true
		}
	}
	return out, ok
}

// heapInUse returns the live heap (HeapAlloc) after two collections: the
// heap in use (HeapInuse) also counts the free space of partly used spans,
// which varies from run to run by megabytes.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

func (r *runner) memory(ctx context.Context, rep *Report) error {
	c := r.cfg
	res := &MemoryResult{Site: "medium", Budget: c.MemoryBudget}
	rep.Memory = res
	// Warm up: the first hits an engine parses initialise package-level
	// tables (user agents, geo) that would otherwise count as the first
	// measurement's memory.
	if e, err := engine.Open(nil); err == nil {
		if _, _, _, err := setup(ctx, e, Medium.Domain); err == nil {
			_, _ = trackBatches(ctx, e, pipelineStream(c.Seed+5, 20_000), 1000)
		}
		e.Close()
	}
	dir := r.newDir("memory-empty")
	e, err := engine.Open(&engine.Options{Dir: dir, NoSync: true, SnapshotEvery: -1})
	if err != nil {
		return err
	}
	_, _, _, err = setup(ctx, e, Medium.Domain)
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		res.FixedDisk, err = dirSize(dir)
	}
	removeAll(dir)
	if err != nil {
		return err
	}
	for _, budget := range []int64{0, c.MemoryBudget} {
		if err := r.memoryVariant(ctx, res, "medium", budget, c.HistoryDays); err != nil {
			return err
		}
	}
	return r.memoryVariant(ctx, res, "small", 0, c.HistoryDays[len(c.HistoryDays)-1:])
}

// memoryVariant grows the history of one site size with one budget and
// measures it at each of checkpoints (ascending) days.
func (r *runner) memoryVariant(ctx context.Context, res *MemoryResult, size string, budget int64, checkpoints []int) error {
	c := r.cfg
	site, _ := siteBySize(size)
	days := checkpoints[len(checkpoints)-1]
	g := NewGenerator(Config{Seed: c.Seed + 3, Sites: []Site{site}, Days: days})
	dir := r.newDir("memory")
	defer removeAll(dir)
	clk := newClock(DefaultStart)
	opts := &engine.Options{Dir: dir, NoSync: true, SnapshotEvery: -1, MemoryBudget: budget, Now: clk.fn()}
	before := heapInUse()
	e, err := engine.Open(opts)
	if err != nil {
		return err
	}
	defer func() {
		if e != nil {
			e.Close()
		}
	}()
	_, _, ids, err := setup(ctx, e, site.Domain)
	if err != nil {
		return err
	}
	fixed := heapInUse() - before
	if budget == 0 && size == res.Site {
		res.Fixed = fixed
	}
	hits, loaded := 0, 0
	label := "no budget"
	if budget > 0 {
		label = "budget " + formatBytes(float64(budget))
	}
	for _, cp := range checkpoints {
		r.prog.step("memory: %d days of the %s site, %s", cp, size, label)
		for day := loaded; day < cp; day++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			clk.set(DefaultStart.AddDate(0, 0, day).Add(23*time.Hour + 59*time.Minute))
			n, err := trackBatches(ctx, e, g.Day(day, 0), 1000)
			if err != nil {
				return err
			}
			hits += n
			if day%7 == 6 {
				if err := e.Snapshot(ctx); err != nil {
					return err
				}
			}
		}
		loaded = cp
		clk.set(DefaultStart.AddDate(0, 0, cp).Add(time.Hour))
		if err := e.Snapshot(ctx); err != nil {
			return err
		}
		p := MemoryPoint{Size: size, Budget: budget, Days: cp, Hits: hits, Store: res.FixedDisk}
		p.Heap = max(0, heapInUse()-before-fixed)
		p.Resident = e.Metrics().ResidentBytes
		if budget == 0 && size == res.Site && cp == days {
			err := r.heapProfile(Profile{Name: "memory-heap", What: fmt.Sprintf("the live heap with %d days of the %s site, no budget", cp, size),
				Targets: []string{"memory per hit"}})
			if err != nil {
				return err
			}
		}
		var err error
		if p.DiskOpen, err = dirAllocated(dir); err != nil {
			return err
		}
		if cp == days { // the report gives the longest history's
			u, err := e.StoreUsage(ctx)
			if err != nil {
				return err
			}
			p.Usage = &u
		}
		err = e.Close()
		e = nil
		if err != nil {
			return err
		}
		if p.Disk, err = dirSize(dir); err != nil {
			return err
		}
		res.Points = append(res.Points, p)
		if cp == days {
			break
		}
		if e, err = engine.Open(opts); err != nil {
			return err
		}
		if budget == 0 {
			// Make the history resident again, as it was before Close.
			from, _ := engine.ParseDate(DefaultStart.Format(time.DateOnly))
			if _, err := e.Unscoped().Totals(ctx, ids[site.Domain], from, from+engine.MaxRangeDays-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// diskPartsMD writes what the disk of the longest history of each site and
// budget is made of, per hit.
func (r *Report) diskPartsMD(b *strings.Builder) {
	m := r.Memory
	var rows [][]string
	for _, p := range m.Points {
		if p.Usage == nil || p.Hits == 0 {
			continue
		}
		if last, _ := m.longest(func(q MemoryPoint) bool { return q.Size == p.Size && q.Budget == p.Budget }); last.Days != p.Days {
			continue
		}
		u := p.Usage
		perHit := func(n int64) string { return fmt.Sprintf("%.2f", float64(n)/float64(p.Hits)) }
		live := u.Days + u.DaySegments + u.Parts + u.State + u.Strings + u.Log + u.Registry + u.Sites + u.Meta
		budget := "none"
		if p.Budget > 0 {
			budget = formatBytes(float64(p.Budget))
		}
		rows = append(rows, []string{p.Size, budget, strconv.Itoa(p.Days), perHit(p.DiskOpen),
			perHit(u.Days), perHit(u.DaySegments + u.Parts), perHit(u.State), perHit(u.Strings), perHit(u.Log),
			perHit(u.Registry + u.Sites + u.Meta), perHit(p.DiskOpen - live)})
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("What the disk holds at the longest history, in bytes per hit: the live keys and values of each part as the store reads them (`engine.StoreUsage`, before Pebble compresses its blocks), and what the files hold beyond them (Pebble's write-ahead log and manifest, space its compactions have not yet reclaimed, less what its compression saves).\n\n")
	table(b, []string{"site", "budget", "days", "disk while open", "day buckets", "segments (visit and hit rows)", "visitor state", "strings", "log", "registry and other", "Pebble's files beyond the live data"}, rows)
}

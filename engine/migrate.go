package engine

import (
	"fmt"
	"math"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/visitors"
	"github.com/webstats/webstats/snapshot"
)

// migrateBatchDays bounds the days one migration batch rewrites.
const migrateBatchDays = 64

// migrate converts a website's stored data from the layout before
// self-contained days, once, at Open:
//
//   - day buckets of encoding version 1 counted by ids of a string table
//     shared by all the website's days: each becomes a version 2 day with its
//     own strings, and the shared table is deleted;
//   - visitor state of format version 1 (one value a period, visit hosts as
//     ids of that table): written as chunks.
//
// It is idempotent: a crash in the middle leaves the string table, and the
// next Open converts again (a version 2 day is read as it is).
func (e *Engine) migrate(st *siteState) error {
	var strs buckets.Strings
	err := e.store.ScanStrings(st.id, func(from uint32, data []byte) error {
		if int(from) != strs.Len() {
			return fmt.Errorf("chunk at %d after %d: %w", from, strs.Len(), snapshot.ErrCorrupt)
		}
		if err := strs.AppendChunk(data); err != nil {
			return fmt.Errorf("chunk at %d: %w: %w", from, snapshot.ErrCorrupt, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("engine: website %d strings: %w", st.id, err)
	}
	hostOf := func(id uint32) string {
		v, _ := strs.Value(id)
		return v
	}
	sn := &snapshot.Snapshot{Trim: e.store.Trim()}
	err = e.store.ScanStates(st.id, func(first int32, data []byte) error {
		p, err := visitors.DecodeLegacy(data, hostOf)
		if err != nil {
			return fmt.Errorf("engine: website %d period %v: %w", st.id, buckets.Date(first), err)
		}
		sn.DropPeriods = append(sn.DropPeriods, snapshot.PeriodRef{Website: st.id, Period: first})
		for _, c := range p.TakeDirty() {
			sn.Chunks = append(sn.Chunks, snapshot.StateChunk{Website: st.id, Period: first, Chunk: c.Index, Data: c.AppendBinary(nil)})
		}
		st.stored[buckets.Date(first)] = struct{}{}
		return nil
	})
	if err != nil {
		return err
	}
	if strs.Len() == 0 && len(sn.DropPeriods) == 0 {
		return nil
	}
	flush := func() error {
		if err := e.store.WriteSnapshot(sn); err != nil {
			return fmt.Errorf("engine: website %d: migrate: %w", st.id, err)
		}
		sn = &snapshot.Snapshot{Trim: e.store.Trim()}
		return nil
	}
	if strs.Len() > 0 {
		err = e.store.Days(st.id, math.MinInt32, math.MaxInt32, func(date int32, data []byte) error {
			d := buckets.NewDay(0)
			if err := d.UnmarshalBinaryV1(data, strs.Value); err != nil {
				return fmt.Errorf("engine: website %d day %v: %w", st.id, buckets.Date(date), err)
			}
			b, err := d.MarshalBinary()
			if err != nil {
				return err
			}
			sn.Days = append(sn.Days, snapshot.DayRecord{Website: st.id, Date: date, Data: b})
			if len(sn.Days) >= migrateBatchDays {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if strs.Len() > 0 {
		if err := e.store.DeleteStrings(st.id); err != nil {
			return fmt.Errorf("engine: website %d: migrate: %w", st.id, err)
		}
	}
	e.opts.Logger.Info("migrated website data to self-contained days", "website", st.id, "strings", strs.Len())
	return nil
}

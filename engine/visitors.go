package engine

import (
	"fmt"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/visitors"
)

// period is the visitor state of one salt period of one website
// (visitors.Period) with what the engine keeps to decide when it is
// resident. Every field is guarded by the shard lock of the website.
//
// It is persisted in chunks (of 256 visitors), so a
// snapshot writes only the chunks that changed since the previous one (a
// month-long salt period of a large site holds millions of visitors, of
// whom a snapshot interval touches a few hundred). A period leaves memory
// only when every chunk is saved and no logged hit waits for it (pins),
// and it is read back when a hit of the period comes again, so a returning
// visitor keeps their id however long ago the period was last written
// (SPEC §2.2).
type period struct {
	visitors.Period

	pins     int   // logged hits waiting to be applied to this period
	used     int64 // LRU clock of the last use
	idle     int   // snapshots since the period was last used
	size     int   // bytes counted in Engine.counters.state
	isStored bool  // has chunks in the store
	gone     bool  // dropped by retention: its size counts no more
	// paging: the snapshots index the period's visitors by hash in the
	// store, so that its chunks may leave memory (pagein.go).
	paging  bool
	snapLen int // visitors numbered at the last snapshot that indexed it
}

// setSizeLocked recomputes p's memory estimate and moves the difference
// into the engine's count of resident visitor state.
func (e *Engine) setSizeLocked(p *period) {
	n := p.Bytes()
	if !p.gone {
		e.counters.state.Add(int64(n - p.size))
	}
	p.size = n
}

// loadPeriod reads the visitor state of the salt period starting on first
// from the store: nil, nil when it has none there. A period the store
// indexes whole is read paged: its last chunk only (pagein.go).
func (e *Engine) loadPeriod(website uint32, first buckets.Date) (*period, error) {
	p, err := e.loadPaged(website, first)
	if p != nil || err != nil {
		return p, err
	}
	err = e.store.ScanStateChunks(website, int32(first), func(c uint32, data []byte) error {
		if p == nil {
			p = new(period)
		}
		return p.AddChunk(c, data)
	})
	if err != nil {
		return nil, fmt.Errorf("engine: website %d period %v: %w", website, first, err)
	}
	if p != nil {
		p.isStored = true
		p.snapLen = p.Len() // stored: none of them is new since the last snapshot
	}
	return p, nil
}

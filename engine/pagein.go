package engine

import (
	"errors"
	"fmt"
	"math"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/visitors"
	"github.com/webstats/webstats/snapshot"
)

// Paging the visitor state of a salt period (SPEC §13: the current salt
// period's visitor state is counted in the memory budget and paged like
// the rest; issue #38 row 9).
//
// A period that is at least pageMinBytes while the budget is exceeded
// starts paging: from then on each snapshot also writes, with the
// period's changed chunks, the store's index of its visitors by hash (up
// to indexPerSnapshot new ones a snapshot), and a chunk whose visitors
// are all indexed and which is saved may be evicted like a day, least
// recently used first. The last chunk stays: new visitors are numbered
// into it. A hit whose visitor the period does not find while it is
// paged looks the hash up in the store's index first (pinLocked, with the
// shard lock released): found, its chunk is read back; not found, the
// visitor is new. What was found so stays true until a chunk of the
// period is evicted (visitors.Period.Evictions): a pending hit that sees
// the count moved when it is applied looks again, with the lock held
// (pageInLocked). A period the store indexes whole is read back paged at
// start or after eviction: its last chunk only.
//
// Periods that never exceed the budget are never indexed: the index costs
// a key a visitor on disk.
const indexPerSnapshot = 1 << 16

// pageMinBytes is the size from which a period pages (a variable for
// tests: SetPaging).
var pageMinBytes = 64 << 10

// loadPaged reads the period starting on first of website paged, when
// the store indexes every visitor of it: its last chunk only. It returns
// nil and how many visitors the store indexes otherwise.
func (e *Engine) loadPaged(website uint32, first buckets.Date) (*period, int, error) {
	indexed, err := e.store.PeriodIndexed(website, int32(first))
	if err != nil || indexed == 0 {
		return nil, 0, err
	}
	c, data, ok, err := e.store.LastStateChunk(website, int32(first))
	if err != nil || !ok {
		return nil, indexed, err
	}
	hdr, err := visitors.ChunkHeader(data)
	if err != nil {
		return nil, 0, fmt.Errorf("engine: website %d period %v: visitor chunk %d: %w", website, first, c, err)
	}
	if hdr.End(c) != indexed {
		return nil, indexed, nil // read whole; the next snapshots index the rest
	}
	p := &period{Period: visitors.NewPaged(hdr.First, indexed), isStored: true, paging: true}
	if err := p.LoadChunk(c, data, math.MinInt32, 0); err != nil {
		return nil, 0, fmt.Errorf("engine: website %d period %v: %w", website, first, err)
	}
	return p, indexed, nil
}

// visitorRead is a visitor of a paged period looked up in the store: the
// chunk that holds it and its stored bytes, when found.
type visitorRead struct {
	found bool
	chunk uint32
	data  []byte
}

// readVisitor looks hash up in the store's index of website's period
// starting on first, whose first visitor id is idFirst, and reads the
// chunk that holds it.
func (e *Engine) readVisitor(website uint32, first buckets.Date, idFirst uint32, hash uint64) (visitorRead, error) {
	id, ok, err := e.store.VisitorID(website, int32(first), hash)
	if err != nil || !ok {
		return visitorRead{}, err
	}
	if id < idFirst {
		return visitorRead{}, fmt.Errorf("engine: website %d period %v: visitor index names id %d before the period's first %d", website, first, id, idFirst)
	}
	c := visitors.ChunkOfID(idFirst, id)
	data, err := e.store.StateChunk(website, int32(first), c)
	if errors.Is(err, snapshot.ErrNotFound) {
		return visitorRead{}, fmt.Errorf("engine: website %d period %v: visitor chunk %d indexed but not stored", website, first, c)
	}
	return visitorRead{found: true, chunk: c, data: data}, err
}

// loadChunkLocked makes the chunk rd read resident in p, unless it is.
// The shard lock of website st is held.
func (e *Engine) loadChunkLocked(st *siteState, p *period, rd visitorRead) error {
	if !rd.found || p.Resident(rd.chunk) {
		return nil
	}
	if err := p.LoadChunk(rd.chunk, rd.data, st.keptFrom, e.counters.tick.Add(1)); err != nil {
		return fmt.Errorf("engine: website %d: %w", st.id, err)
	}
	e.setSizeLocked(p)
	return nil
}

// pageInLocked makes the visitor of hash resident in p, the period of st
// starting on first, if p numbered it and its chunk is only in the store;
// it reads the store with the shard lock held (replay, and a pending hit
// whose period evicted a chunk since it was pinned).
func (e *Engine) pageInLocked(st *siteState, first buckets.Date, p *period, hash uint64) error {
	if !p.Paged() {
		return nil
	}
	if _, _, ok := p.Find(hash); ok {
		return nil
	}
	rd, err := e.readVisitor(st.id, first, p.First(), hash)
	if err != nil {
		return err
	}
	return e.loadChunkLocked(st, p, rd)
}

// indexLocked adds to b the next entries of the store's index of p, the
// period of st starting on first, if it pages; a period of pageMinBytes
// starts paging when the budget is exceeded (over). The shard lock is
// held.
func (b *snapBatch) indexLocked(st *siteState, first buckets.Date, p *period, over bool) {
	if over && p.Bytes() >= pageMinBytes {
		p.paging = true
	}
	if !p.paging || p.Indexed() >= p.Len() {
		return
	}
	ents := p.Unindexed(indexPerSnapshot)
	for _, en := range ents {
		b.sn.Index = append(b.sn.Index, snapshot.VisitorIndex{Website: st.id, Period: int32(first), Hash: en.Hash, ID: en.ID})
	}
	n := p.Indexed() + len(ents)
	b.sn.Indexed = append(b.sn.Indexed, snapshot.PeriodIndexed{Website: st.id, Period: int32(first), N: uint32(n)})
	b.indexed = append(b.indexed, pendingIndex{st: st, p: p, n: n})
}

// pendingIndex is how many visitors of period p of st the store indexes
// once a snapshot is written.
type pendingIndex struct {
	st *siteState
	p  *period
	n  int
}

// chunkCandsLocked appends the chunks of p, website s's period starting
// on first, that may leave memory to cands; a period of pageMinBytes
// starts paging. The shard lock is held.
func chunkCandsLocked(s *site, first buckets.Date, p *period, cands []evictCand) []evictCand {
	if !p.paging && p.Bytes() >= pageMinBytes {
		p.paging = true
	}
	p.Evictable(func(c uint32, used int64) {
		cands = append(cands, evictCand{s: s, date: first, kind: candChunk, chunk: c, used: used})
	})
	return cands
}

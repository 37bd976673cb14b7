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
// period's changed chunks, the store's index of its visitors by hash
// (those numbered since the last snapshot, and up to indexPerSnapshot
// older ones), and a chunk whose visitors
// are all indexed and which is saved may be evicted like a day, least
// recently used first. The last chunk stays: new visitors are numbered
// into it. A hit whose visitor the period does not find while it is
// paged looks the hash up in the store's index first (pinLocked, with the
// shard lock released): found, its chunk is read back; not found, the
// visitor is new. What was found so stays true until a chunk of the
// period is evicted (visitors.Period.Evictions): a pending hit that sees
// the count moved when it is applied looks again, with the lock held
// (repinLocked). A period the store indexes is read back paged at start
// or after eviction: its last chunk, and the chunks of the visitors not
// indexed yet.
//
// Periods that never exceed the budget are never indexed: the index costs
// a key a visitor on disk.
//
// pageMinBytes and indexPerSnapshot are variables for tests (SetPaging).
var (
	pageMinBytes     = 64 << 10
	indexPerSnapshot = 1 << 16
)

// loadPaged reads the period starting on first of website paged, when
// the store indexes its visitors: the chunks of those it does not index
// yet (at most the index's lag, indexPerSnapshot and a snapshot
// interval's new visitors) and the last chunk. It returns nil when the
// store indexes none of them.
func (e *Engine) loadPaged(website uint32, first buckets.Date) (*period, error) {
	indexed, err := e.store.PeriodIndexed(website, int32(first))
	if err != nil || indexed == 0 {
		return nil, err
	}
	c, data, ok, err := e.store.LastStateChunk(website, int32(first))
	if err != nil || !ok {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("engine: website %d period %v: %w", website, first, err) }
	hdr, err := visitors.ChunkHeader(data)
	if err != nil {
		return nil, fail(fmt.Errorf("visitor chunk %d: %w", c, err))
	}
	n := hdr.End(c)
	if indexed > n {
		return nil, fail(fmt.Errorf("%d visitors indexed of %d", indexed, n))
	}
	p := &period{Period: visitors.NewPaged(hdr.First, n, indexed), isStored: true, paging: true, snapLen: n}
	for k := visitors.ChunkOfID(hdr.First, hdr.First+uint32(indexed)); k < c; k++ {
		b, err := e.store.StateChunk(website, int32(first), k)
		if err == nil {
			err = p.LoadChunk(k, b, math.MinInt32, 0)
		}
		if err != nil {
			return nil, fail(err)
		}
	}
	if err := p.LoadChunk(c, data, math.MinInt32, 0); err != nil {
		return nil, fail(err)
	}
	return p, nil
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
// chunk that holds it, or takes it from read (the chunks read for the
// same call, by period and number; nil: none kept).
func (e *Engine) readVisitor(website uint32, first buckets.Date, idFirst uint32, hash uint64, read map[chunkRef][]byte) (visitorRead, error) {
	id, ok, err := e.store.VisitorID(website, int32(first), hash)
	if err != nil || !ok {
		return visitorRead{}, err
	}
	if id < idFirst {
		return visitorRead{}, fmt.Errorf("engine: website %d period %v: visitor index names id %d before the period's first %d", website, first, id, idFirst)
	}
	c := visitors.ChunkOfID(idFirst, id)
	ref := chunkRef{first, c}
	if data, ok := read[ref]; ok {
		return visitorRead{found: true, chunk: c, data: data}, nil
	}
	data, err := e.store.StateChunk(website, int32(first), c)
	if errors.Is(err, snapshot.ErrNotFound) {
		return visitorRead{}, fmt.Errorf("engine: website %d period %v: visitor chunk %d indexed but not stored", website, first, c)
	}
	if err == nil && read != nil {
		read[ref] = data
	}
	return visitorRead{found: true, chunk: c, data: data}, err
}

// chunkRef names a chunk of a website's visitor state: its period and
// number.
type chunkRef struct {
	first buckets.Date
	chunk uint32
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
	rd, err := e.readVisitor(st.id, first, p.First(), hash, nil)
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
	since := max(p.Len()-p.snapLen, 0)
	p.snapLen = p.Len()
	if over && p.Bytes() >= pageMinBytes {
		p.paging = true
	}
	if !p.paging || p.Indexed() >= p.Len() {
		return
	}
	// Every visitor numbered since the last snapshot, and as many as
	// indexPerSnapshot of the older ones: the index's lag shrinks.
	ents := p.Unindexed(indexPerSnapshot + since)
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

package engine

// The imported layer (SPEC §14): daily aggregates of a peer's export
// (Plausible's CSV zip, package plausiblezip), kept per website per import
// beside the segments, as Plausible keeps its imported_* tables apart from
// its events (lib/plausible/imported/*.ex). Queries merge them in
// (imported_query.go); they never become hits. An import is stored as
// chunks under the website's prefix (snapshot/imports.go): chunk 0 its
// record, then its tables' rows; it is read whole into memory the first
// time a query of its website asks for imports.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/webstats/webstats/engine/plausiblezip"
)

// ErrImportCluster is the refusal, with partitions (Options.Partitions),
// of an import or a deletion made on a node that does not hold the
// website's partition: the imported layer is kept by the nodes that hold
// it, and goes through the log to them only, so this node could not learn
// what its messages decided.
var ErrImportCluster = errors.New("engine: this node does not hold the website's partition; import and delete its imports through a node that holds it")

// ErrImportUnknown is the answer to an import or a deletion published to
// the cluster's log whose outcome this node could not learn: it stopped
// applying the website (its partition moved) or did not apply the change
// in time. The nodes that hold the website's partition apply it (or
// refuse it) alike; list the imports before trying again, or the import
// may be made twice.
var ErrImportUnknown = errors.New("engine: the import change was published to the cluster but its outcome is unknown here (it is applied by the nodes that hold the website's partition); list the imports before trying again")

// MaxImports bounds the imports of one website.
const MaxImports = 100

// importChunkRows is how many rows one stored chunk holds.
const importChunkRows = 50_000

// Import is one import of a website's imported layer.
type Import struct {
	ID uint32 `json:"id"`
	// Source is where it came from: "plausible".
	Source string `json:"source"`
	// File is the name of the imported file, as given.
	File string `json:"file"`
	// From and To are the first and last day the export covers.
	From Date `json:"from"`
	To   Date `json:"to"`
	// Rows counts the daily aggregates of every table.
	Rows    int       `json:"rows"`
	Created time.Time `json:"created_at"`
}

// importData is an import in memory: its record and its tables' rows,
// never modified once built.
type importData struct {
	Import
	tables map[string][]plausiblezip.Row
	bytes  int64 // importBytes of its rows
}

// importChunk is how a chunk of rows is stored.
type importChunk struct {
	Table string
	Rows  []plausiblezip.Row
}

// MaxImportRows bounds the rows of all the imports of one website
// together: what one query with include.imports holds in memory.
const MaxImportRows = plausiblezip.MaxRows

// importedCacheBytes is the most the imports loaded for queries hold, by
// importBytes, without Options.MemoryBudget; with one, an eighth of it
// (at least 16 MiB). The website a query just loaded is kept whatever its
// size (MaxImportRows bounds it); the least recently used others are
// dropped and read again from the store when asked for.
var importedCacheBytes int64 = 256 << 20

// importedLimit is the bound of the loaded imports for a memory budget.
func importedLimit(budget int64) int64 {
	if budget > 0 {
		return max(budget/8, 16<<20)
	}
	return importedCacheBytes
}

// importedLayer holds the imports of the websites loaded lately.
type importedLayer struct {
	write sync.Mutex // one import or deletion at a time
	mu    sync.Mutex
	sites map[uint32][]*importData // replaced, never modified, under mu
	// Under mu: the bytes of each loaded website's imports and their
	// sum, and when each was last used (a tick of the layer).
	bytes map[uint32]int64
	used  map[uint32]uint64
	total int64
	tick  uint64
	// last is the last import id given of each loaded website (the
	// store's record of it, or the largest id loaded).
	last map[uint32]uint32
}

// setLocked caches list as website's imports and evicts the least
// recently used other websites' until the layer is within limit.
func (l *importedLayer) setLocked(website uint32, list []*importData, limit int64) {
	if l.sites == nil {
		l.sites, l.bytes, l.used = map[uint32][]*importData{}, map[uint32]int64{}, map[uint32]uint64{}
		l.last = map[uint32]uint32{}
	}
	last := l.last[website]
	l.dropLocked(website)
	for _, d := range list {
		last = max(last, d.ID)
	}
	l.last[website] = last
	n := int64(0)
	for _, d := range list {
		n += d.bytes
	}
	l.sites[website], l.bytes[website] = list, n
	l.total += n
	l.touchLocked(website)
	for l.total > limit && len(l.sites) > 1 {
		oldest, at := website, l.tick
		for id, t := range l.used {
			if id != website && t < at {
				oldest, at = id, t
			}
		}
		l.dropLocked(oldest)
	}
}

func (l *importedLayer) touchLocked(website uint32) {
	l.tick++
	l.used[website] = l.tick
}

// dropLocked forgets website's loaded imports.
func (l *importedLayer) dropLocked(website uint32) {
	l.total -= l.bytes[website]
	delete(l.sites, website)
	delete(l.bytes, website)
	delete(l.used, website)
	delete(l.last, website)
}

// importBytes estimates the memory rows hold: each row, its slice of
// values and their bytes (read from the store, values are not shared).
func importBytes(rows []plausiblezip.Row) int64 {
	n := int64(0)
	for i := range rows {
		n += int64(unsafe.Sizeof(rows[i])) + int64(len(rows[i].Dims))*int64(unsafe.Sizeof(""))
		for _, v := range rows[i].Dims {
			n += int64(len(v))
		}
	}
	return n
}

// ImportPlausible stores a read Plausible export as a new import of
// website's imported layer; file names it in Imports.
func (o Owner) ImportPlausible(ctx context.Context, website uint32, x *plausiblezip.Export, file string) (Import, error) {
	e := o.e
	if _, err := o.site(website); err != nil {
		return Import{}, err
	}
	if !e.enter() {
		return Import{}, ErrClosed
	}
	defer e.exit()
	if e.opts.Cluster != nil {
		// Through the log, applied by every node (importcluster.go).
		d := newImportData(x, file, e.now())
		return o.publishImport(ctx, website, d)
	}
	// Imports and deletions are one at a time (write); queries wait on
	// mu only while the list is read or replaced, not while an import is
	// encoded and written.
	l := &e.imported
	l.write.Lock()
	defer l.write.Unlock()
	// Again under write: a deletion of the website (dropSiteData takes
	// write too) either ran before, or waits until this import is stored
	// and then deletes its keys with the website's.
	if _, err := o.site(website); err != nil {
		return Import{}, err
	}
	l.mu.Lock()
	list, err := e.importsLocked(website) // cached from here on
	last := l.last[website]               // read under mu: an eviction drops it
	l.mu.Unlock()
	if err != nil {
		return Import{}, err
	}
	d := newImportData(x, file, e.now())
	rows := d.Rows
	for _, p := range list {
		rows += p.Rows
	}
	if err := checkImportBounds(len(list), rows); err != nil {
		return Import{}, err
	}
	d.ID = last + 1 // never a deleted import's
	chunks, err := encodeImport(d, 0)
	if err != nil {
		return Import{}, err
	}
	if err := e.store.PutImport(website, d.ID, chunks); err != nil {
		return Import{}, err
	}
	l.mu.Lock()
	// If the website's list was evicted meanwhile, the next query reads
	// it again, this import with it.
	if cur, ok := l.sites[website]; ok {
		l.setLocked(website, append(slices.Clip(cur), d), importedLimit(e.opts.MemoryBudget))
	}
	l.mu.Unlock()
	return d.Import, nil
}

// MaxImportFile is the most bytes of an import's file name kept: a longer
// one (from an upload's header, the CLI's argument) is cut there, at a
// character's boundary. It is a label, and in cluster mode it travels in
// the import's first message.
const MaxImportFile = 255

// importFileName cuts file to MaxImportFile bytes.
func importFileName(file string) string {
	if len(file) <= MaxImportFile {
		return file
	}
	n := MaxImportFile
	for n > 0 && !utf8.RuneStart(file[n]) {
		n--
	}
	return file[:n]
}

// newImportData builds an import of x (its id 0: given when stored).
func newImportData(x *plausiblezip.Export, file string, now time.Time) *importData {
	file = importFileName(file)
	d := &importData{Import: Import{Source: "plausible", File: file, From: x.From, To: x.To,
		Created: now.UTC().Truncate(time.Second)}, tables: map[string][]plausiblezip.Row{}}
	for _, f := range x.Files {
		d.tables[f.Table.Name] = f.Rows
		d.Rows += len(f.Rows)
		d.bytes += importBytes(f.Rows)
	}
	return d
}

// Imports lists the imports of website, oldest first.
func (o Owner) Imports(ctx context.Context, website uint32) ([]Import, error) {
	if _, err := o.site(website); err != nil {
		return nil, err
	}
	// With partitions, a node that does not hold the website's asks one
	// that does.
	far, done, err := o.elsewhere(website)
	if err != nil {
		return nil, err
	}
	if far {
		rep, err := o.ask(ctx, website, askRequest{Op: askImports})
		if err == nil && rep.List == nil {
			rep.List = []Import{}
		}
		return rep.List, err
	}
	// Held until the list is read: the partition stays local meanwhile.
	defer done()
	list, err := o.importsOf(website)
	if err != nil {
		return nil, err
	}
	out := make([]Import, len(list))
	for i, d := range list {
		out[i] = d.Import
	}
	return out, nil
}

// DeleteImport deletes import id of website as a whole: ErrNotFound if
// the website has none of that id.
func (o Owner) DeleteImport(ctx context.Context, website, id uint32) error {
	e := o.e
	if _, err := o.site(website); err != nil {
		return err
	}
	if id == 0 {
		// No import has id 0 (the website's own keys); in cluster mode
		// it is not published at all.
		return ErrNotFound
	}
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	if e.opts.Cluster != nil {
		// Through the log, applied by every node (importcluster.go).
		return o.deleteShared(ctx, website, id)
	}
	l := &e.imported
	l.write.Lock()
	defer l.write.Unlock()
	if _, err := o.site(website); err != nil {
		return err // deleted meanwhile (see ImportPlausible)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	list, err := e.importsLocked(website)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(list, func(d *importData) bool { return d.ID == id })
	if i < 0 {
		return ErrNotFound
	}
	if err := e.store.DeleteImport(website, id); err != nil {
		return err
	}
	l.setLocked(website, slices.Delete(slices.Clone(list), i, i+1), importedLimit(e.opts.MemoryBudget))
	return nil
}

// importsOf returns the imports of website, which the handle must own.
func (o Owner) importsOf(website uint32) ([]*importData, error) {
	e := o.e
	if _, err := o.site(website); err != nil {
		return nil, err
	}
	if !e.enter() {
		return nil, ErrClosed
	}
	defer e.exit()
	if err := e.importHeld(website); err != nil {
		return nil, err
	}
	e.imported.mu.Lock()
	defer e.imported.mu.Unlock()
	return e.importsLocked(website)
}

// importsLocked returns website's imports, reading them from the store
// the first time. e.imported.mu must be held.
func (e *Engine) importsLocked(website uint32) ([]*importData, error) {
	l := &e.imported
	if list, ok := l.sites[website]; ok {
		l.touchLocked(website)
		return list, nil
	}
	var list []*importData
	var cur *importData
	last := uint32(0)
	err := e.store.ScanImports(website, func(id, n uint32, data []byte) error {
		if id == 0 { // the last id given (snapshot.PutImport), the cluster's state
			if n == 0 && len(data) == 4 {
				last = binary.BigEndian.Uint32(data)
			}
			return nil
		}
		if n == 0 {
			cur = &importData{tables: map[string][]plausiblezip.Row{}}
			if err := json.Unmarshal(data, &cur.Import); err != nil {
				return fmt.Errorf("engine: import %d of website %d: %w", id, website, err)
			}
			list = append(list, cur)
			return nil
		}
		if cur == nil || cur.ID != id {
			if e.opts.Cluster != nil {
				return nil // pending: its record comes with its last message
			}
			return fmt.Errorf("engine: import %d of website %d has no record", id, website)
		}
		var c importChunk
		if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
			return fmt.Errorf("engine: import %d of website %d, chunk %d: %w", id, website, n, err)
		}
		cur.tables[c.Table] = append(cur.tables[c.Table], c.Rows...)
		cur.bytes += importBytes(c.Rows)
		return nil
	})
	if err != nil {
		return nil, err
	}
	l.setLocked(website, list, importedLimit(e.opts.MemoryBudget))
	l.last[website] = max(l.last[website], last)
	return list, nil
}

// dropImports forgets the imports of a deleted website (its keys are
// gone with the website's).
func (e *Engine) dropImports(website uint32) {
	e.imported.mu.Lock()
	e.imported.dropLocked(website)
	e.imported.mu.Unlock()
}

// encodeImport returns the chunks d is stored as; with limit > 0, each of
// its rows' chunks holds at most limit bytes (fewer rows than
// importChunkRows when needed).
func encodeImport(d *importData, limit int) ([][]byte, error) {
	rec, err := json.Marshal(d.Import)
	if err != nil {
		return nil, err
	}
	chunks := [][]byte{rec}
	names := make([]string, 0, len(d.tables))
	for name := range d.tables {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rows := d.tables[name]
		for len(rows) > 0 {
			n := min(len(rows), importChunkRows)
			var b bytes.Buffer
			for {
				b.Reset()
				if err := gob.NewEncoder(&b).Encode(importChunk{Table: name, Rows: rows[:n]}); err != nil {
					return nil, err
				}
				if limit <= 0 || b.Len() <= limit {
					break
				}
				if n == 1 {
					return nil, fmt.Errorf("%w: a row of the import takes %d bytes; the cluster's log takes %d", ErrTooLarge, b.Len(), limit)
				}
				n /= 2
			}
			chunks = append(chunks, b.Bytes())
			rows = rows[n:]
		}
	}
	return chunks, nil
}

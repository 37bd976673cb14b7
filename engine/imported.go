package engine

// The imported layer (SPEC §14; package imported holds its data, encoding
// and merge): the engine loads a website's imports from the store the
// first time a query of it asks for them, caches them, and writes and
// deletes imports one at a time (through the cluster's log in cluster
// mode: importcluster.go).

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/webstats/webstats/engine/internal/imported"
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

// Import is one import of a website's imported layer.
type Import = imported.Import

const (
	// MaxImports bounds the imports of one website.
	MaxImports = imported.MaxImports
	// MaxImportRows bounds the rows of all the imports of one website
	// together: what one query with include.imports holds in memory.
	MaxImportRows = imported.MaxRows
	// MaxImportFile is the most bytes of an import's file name kept: a
	// longer one is cut there, at a character's boundary.
	MaxImportFile = imported.MaxFile
)

// importedCacheBytes is the most the imports loaded for queries hold, by
// their estimated bytes, without Options.MemoryBudget; with one, an eighth
// of it (at least 16 MiB). The website a query just loaded is kept
// whatever its size (MaxImportRows bounds it); the least recently used
// others are dropped and read again from the store when asked for.
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
	mu    sync.Mutex // guards cache
	cache imported.Cache
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
		return o.publishImport(ctx, website, imported.New(x, file, e.now()))
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
	last := l.cache.Last(website)         // read under mu: an eviction drops it
	l.mu.Unlock()
	if err != nil {
		return Import{}, err
	}
	d := imported.New(x, file, e.now())
	if err := imported.CheckRoom(list, d); err != nil {
		return Import{}, err
	}
	d.ID = last + 1 // never a deleted import's
	chunks, err := d.Chunks(0)
	if err != nil {
		return Import{}, err
	}
	if err := e.store.PutImport(website, d.ID, chunks); err != nil {
		return Import{}, err
	}
	l.mu.Lock()
	// If the website's list was evicted meanwhile, the next query reads
	// it again, this import with it.
	if cur, ok := l.cache.Get(website); ok {
		l.cache.Set(website, append(slices.Clip(cur), d), 0, importedLimit(e.opts.MemoryBudget))
	}
	l.mu.Unlock()
	return d.Import, nil
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
	i := slices.IndexFunc(list, func(d *imported.Data) bool { return d.ID == id })
	if i < 0 {
		return ErrNotFound
	}
	if err := e.store.DeleteImport(website, id); err != nil {
		return err
	}
	l.cache.Set(website, slices.Delete(slices.Clone(list), i, i+1), 0, importedLimit(e.opts.MemoryBudget))
	return nil
}

// importsOf returns the imports of website, which the handle must own.
func (o Owner) importsOf(website uint32) ([]*imported.Data, error) {
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
func (e *Engine) importsLocked(website uint32) ([]*imported.Data, error) {
	l := &e.imported
	if list, ok := l.cache.Get(website); ok {
		return list, nil
	}
	s := imported.Scan{Website: website, Pending: e.opts.Cluster != nil}
	if err := e.store.ScanImports(website, s.Chunk); err != nil {
		return nil, err
	}
	l.cache.Set(website, s.List, s.Last, importedLimit(e.opts.MemoryBudget))
	return s.List, nil
}

// dropImports forgets the imports of a deleted website (its keys are
// gone with the website's).
func (e *Engine) dropImports(website uint32) {
	e.imported.mu.Lock()
	e.imported.cache.Drop(website)
	e.imported.mu.Unlock()
}

// importHeld refuses, with partitions, an import change made (or a list
// read) on a node that does not hold the website's partition.
func (e *Engine) importHeld(website uint32) error {
	if e.opts.Cluster != nil && !e.applies(website) {
		return ErrImportCluster
	}
	return nil
}

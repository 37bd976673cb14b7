// Package imported is the imported layer (SPEC §14): a website's imports
// of Plausible's export, daily aggregates kept beside the segments, with
// their tables' rows, their encoding as stored chunks, the filters on them
// and their merge into a query's native answer the way Plausible merges
// its imported tables.
//
// # Data
//
// An import (Data) is its record (Import) and its tables' rows
// (plausiblezip.Row), never modified once built: New builds one from a
// read export. Plausible keeps its imported_* tables apart from its events
// (lib/plausible/imported/*.ex) and so does webstats: the rows never
// become hits.
//
// # Stored chunks
//
// An import is stored as chunks under the website's prefix
// (snapshot/imports.go): chunk 0 its record (JSON), then its tables' rows
// (gob, at most 50,000 rows a chunk). Data.Chunks encodes them; Scan reads
// a website's imports back from its chunks in the store's order. Import 0
// is not an import: its chunk 0 holds the last id given (4 bytes,
// big-endian), its chunk 1 the cluster's import state (package
// importlog).
//
// # Cache
//
// Cache holds the imports of the websites loaded lately, bounded by an
// estimate of their bytes; it is not synchronised: its owner locks it.
//
// # Queries
//
// Decide tells whether the imports answer a query (or Plausible's reason
// for leaving them out), and a Merge adds the native rows and the imported
// table's rows by dimension values, then sorts and pages them
// (lib/plausible/stats/imported/imported.ex, merge_imported).
package imported

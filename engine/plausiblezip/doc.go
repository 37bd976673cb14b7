// Package plausiblezip reads the zip of Plausible's "Export data" (SPEC §14):
// one CSV file per imported table (imported_visitors, imported_sources, …),
// each named <table>_YYYYMMDD_YYYYMMDD.csv, of daily aggregates.
//
// Read validates every file of the zip fully before it returns anything: a
// wrong header, a bad date or number, a truncated archive or an over-long
// line is an *Error naming the file, line and column, and nothing of the
// zip is returned. The engine's imported layer stores what Read returns.
//
// The columns are Plausible's, read in its source: the export queries
// (lib/plausible/exports.ex) and the importer's input structures
// (lib/plausible/imported/csv_importer.ex); older exports lack some of
// them, which are then optional.
package plausiblezip

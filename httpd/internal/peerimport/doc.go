// Package peerimport converts the exports of webstats' peers into import
// lines (SPEC §14, package importline): GoatCounter's CSV export and
// Umami's session and website_event tables as CSV. It has one job, reading
// those formats (and NDJSON import lines, in Lines: the files of an import
// as both the command line and the web page's upload read them); sending
// the lines (chunks, Idempotency-Key, progress) is theirs, and checking a
// line is the import endpoint's.
//
// Every reader checks a whole file before the caller counts anything of it:
// Read with a nil function checks only; a bad row is an *Error naming the
// file, the line and the column.
package peerimport

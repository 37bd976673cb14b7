// Package segments is the engine's segments store (SPEC §10.1): a
// website's visit and hit rows of one day in dictionary-encoded columns
// (and the rows a record writes: VisitAttrs, HitOf), their binary
// encoding and sealed parts, the caches and memo of what queries read of
// them, and the scan (Plan, Batch) that answers a resolved query from the
// days the engine hands it, with the cache of those answers (Answers).
package segments

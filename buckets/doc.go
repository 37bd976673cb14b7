// Package buckets holds the pure data structures of webstats: day buckets of
// one website's aggregates, the string table their value ids refer to, the
// functions that merge buckets over a date range, and their binary encoding.
//
// The package does no I/O, takes no locks, reads no clock and starts no
// goroutines. None of its types is safe for concurrent use: callers
// synchronise (the engine touches a website's buckets only under its shard
// lock). Read-only methods may run concurrently with each other.
//
// # Dates
//
// A [Date] is a civil date counted in days since 1970-01-01. It has no time
// zone: the engine decides which local day a hit belongs to (with
// [DateFromTime] on a time in the website's location) and from then on only
// dates are stored.
//
// # Strings
//
// Every string value of a website (pages, referrers, browsers, countries, ...)
// is interned once in its [Strings] table; buckets count dense uint32 ids.
// Ids never change, so a table is persisted incrementally:
// [Strings.AppendBinary] encodes the values added since a given id (a chunk)
// and [Strings.AppendChunk] applies chunks in order.
//
// # Days
//
// A [Day] is one website's aggregates for one local day: a value-id → count
// column per [Dim], 24 hourly pageview counters, visits, events, and roaring
// bitmaps of the visitor ids seen that day and in each hour. Visitor ids are
// dense numbers inside one salt period ([Day.Period]); ids of different
// periods are unrelated.
//
// While a day is open its columns are hash maps. [Day.Compact] turns a closed
// day into sorted id/count slices and run-compressed bitmaps: smaller, and
// summed quickly by [SumCounts]. A compacted day still accepts updates.
//
// # Ranges
//
// [SumCounts] adds one dimension's counts over many days into a dense
// accumulator indexed by value id; [UniqueVisitors] counts the distinct
// visitors of many days, exactly within each salt period (the union of the
// day bitmaps) and summed over periods.
//
// # Encoding
//
// [Day.MarshalBinary] and [Strings.AppendBinary] write a compact versioned
// format (the first byte is the format version, currently 1; uvarints,
// delta-coded sorted ids, roaring's portable format for bitmaps). Decoders
// accept untrusted input: they never panic, allocate at most in proportion to
// the input, copy what they keep (the input may be reused by the caller), and
// report problems as errors wrapping [ErrCorrupt], [ErrVersion] or
// [ErrChunkOrder] (use errors.Is).
package buckets

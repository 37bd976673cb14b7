// Package buckets holds the pure data structures of webstats: day buckets of
// one website's aggregates, each with its own dictionary of the strings it
// counts, the functions that merge buckets over a date range, and their
// binary encoding.
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
// # Days
//
// A [Day] is one website's aggregates for one local day: a value → count
// column per [Dim], 24 hourly pageview counters, visits, events, and roaring
// bitmaps of the visitor ids seen that day and in each hour. Visitor ids are
// dense numbers inside one salt period ([Day.Period]); ids of different
// periods are unrelated.
//
// A day is self-contained: the strings it counts (pages, referrers,
// browsers, ...) live in the day's own dictionary, each stored once however
// many dimensions count it, and its columns count by dictionary id. So a
// day's strings are reclaimed with the day (eviction, retention, deletion),
// and [Day.SizeBytes] counts them. [Day.Add] copies a new value, never
// keeping the caller's memory.
//
// # Limits
//
// [Day.Add] takes a limit on the distinct values of the dimension (SPEC
// §13; the engine passes its -max-values). Once a dimension holds that many
// values, new ones are counted under the value [Other] and Add reports it;
// values already counted keep counting, and Other does not count against
// the limit. So a day holds at most NumDims × (limit + 1) strings.
//
// While a day is open its columns and its dictionary's index are hash maps.
// [Day.Compact] sorts the dictionary, packs its strings into one
// allocation, drops the index and turns the columns into sorted id/count
// slices: smaller, and summed quickly by [Sum]. A compacted day still
// accepts updates.
//
// # Ranges
//
// [Sum] adds one dimension's counts over many days value by value, at a
// cost proportional to the rows of those days (times at most the logarithm
// of their number), whatever values other days hold; [Rollup] sums many
// days into one Day (a closed month); [UniqueVisitors] counts the distinct
// visitors of many days, exactly within each salt period (the union of the
// day bitmaps) and summed over periods.
//
// # Encoding
//
// [Day.MarshalBinary] writes a compact versioned format (the first byte is
// the format version, currently 2): the day's sorted strings, then its
// columns (uvarints, delta-coded sorted ids), then its bitmaps (roaring's
// portable format). Decoders accept untrusted input: they never panic,
// allocate at most in proportion to the input, copy what they keep (the
// input may be reused by the caller), and report problems as errors
// wrapping [ErrCorrupt] or [ErrVersion] (use errors.Is).
//
// Format version 1 counted ids into a string table shared by all the days
// of a website, [Strings]. It is read only to migrate old stores:
// [Day.UnmarshalBinary] refuses it with [ErrVersion1], and
// [Day.UnmarshalBinaryV1] decodes it given the website's table.
package buckets

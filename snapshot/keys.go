package snapshot

// This file is the only place in webstats where Pebble keys are built or
// parsed. Everything else passes typed arguments (a Kind and an id, a website
// and a date, ...) to the Store.
//
// # Key layout (format version 2)
//
// Every key starts with a one-byte prefix naming its family. Integers are
// fixed-width big-endian, so that byte order is numeric order; signed
// integers (dates, periods) have their sign bit flipped first, so that
// negative values sort before positive ones.
//
//	0x01 'v'                           format version      value: uint64 BE
//	0x01 't'                           trim point          value: uint64 BE
//	0x02 kind(1) id(8)                 registry record     value: opaque
//	0x03 seq(8)                        log entry           value: opaque
//	0x04 website(4) 0x01 date(4^)      day bucket          value: opaque
//	0x04 website(4) 0x01 date(4^) part(4)
//	                                   sealed part of a day value: opaque
//	0x04 website(4) 0x01 date(4^) 0xff piece(4)
//	                                   piece of a day value: bytes (pieces.go)
//	0x04 website(4) 0x02 from(4)       strings chunk       value: opaque
//	0x04 website(4) 0x03 period(4^)    visitor state       value: opaque
//	0x04 website(4) 0x04 period(4^) chunk(4)
//	                                   period-state chunk  value: opaque
//	0x04 website(4) 0x05 import(4) chunk(4)
//	                                   imported layer chunk value: opaque (imports.go)
//	0x04 website(4) 0x06 period(4^)    visitors indexed    value: uvarint
//	0x04 website(4) 0x06 period(4^) hash(8)
//	                                   visitor's id        value: uvarint (visitorindex.go)
//	0x05 website(4)                    site record         value: opaque
//
// (4^ is a big-endian int32 with its sign bit flipped.)
//
// A period-state chunk is one piece of a salt period's visitor state, so
// that a snapshot rewrites only the chunks that changed. The chunks of one
// period are contiguous (one DeleteRange drops them; one scan reads them), and
// periods follow each other in numeric order. The 0x03 visitor state is the
// older, one-value-per-period form, still read for the engine's migration.
// The chunk sub-family was added without a format version change: older
// stores simply have no such keys.
//
// The visitor index (0x06) is written only for the periods the engine
// pages: a chunk of their state may leave memory, and its visitors are
// found again by hash. DropPeriods deletes it with the chunks. Added
// without a format version change: older stores have no such keys.
//
// A day's sealed parts hold rows the engine moved out of an open day's value
// (SPEC §13: today's memory is bounded); their keys extend the day's key, so
// they sort right after it, a scan of a date range reads each day with its
// parts, and DeleteDaysBefore drops them with their days. Added without a
// format version change: older stores have no such keys.
//
// A day value of more than 128 KiB is stored in pieces (format version
// 2, pieces.go): a stub under the day's key and the value's pieces under
// keys that extend it with 0xff, after its parts, so that Pebble never
// writes a block of megabytes; a reader puts them together.
//
// Days, strings and states of one website share the prefix 0x04 website, so
// DeleteWebsite is one DeleteRange over that prefix plus one point delete of
// the site record. Site records have their own family so that ScanSites is one
// contiguous scan that does not step over every website's days.
//
// Prefix 0x00 and prefixes above 0x05 are unused; new families take new
// prefix bytes, never new meanings for old ones (that needs a format version
// and a migration).

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Family prefixes. Never renumber: they are on disk.
const (
	prefixMeta     byte = 0x01
	prefixRegistry byte = 0x02
	prefixLog      byte = 0x03
	prefixWebsite  byte = 0x04
	prefixSite     byte = 0x05
)

// Meta key names (second byte of a prefixMeta key).
const (
	metaVersion byte = 'v'
	metaTrim    byte = 't'
)

// Sub-families under prefixWebsite, after the website id.
const (
	subDay     byte = 0x01
	subStrings byte = 0x02
	subState   byte = 0x03
	subChunk   byte = 0x04 // period-state chunks
	subIndex   byte = 0x06 // index of a period's visitors by hash (0x05: imports.go)
)

const (
	registryKeyLen = 1 + 1 + 8
	logKeyLen      = 1 + 8
	websiteKeyLen  = 1 + 4 + 1 + 4 // day, strings and state keys
	chunkKeyLen    = websiteKeyLen + 4
	partKeyLen     = websiteKeyLen + 4
	siteKeyLen     = 1 + 4
)

var (
	versionKey = []byte{prefixMeta, metaVersion}
	trimKey    = []byte{prefixMeta, metaTrim}
)

// flipSign maps an int32 to a uint32 that sorts the same way.
func flipSign(v int32) uint32 { return uint32(v) ^ (1 << 31) }

// unflipSign is the inverse of flipSign.
func unflipSign(u uint32) int32 { return int32(u ^ (1 << 31)) }

// prefixEnd returns the smallest key greater than every key that starts with
// p (the exclusive upper bound of the prefix), or nil when there is none.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// registryKey is the key of registry record (k, id).
func registryKey(k Kind, id uint64) []byte {
	b := make([]byte, registryKeyLen)
	b[0] = prefixRegistry
	b[1] = byte(k)
	binary.BigEndian.PutUint64(b[2:], id)
	return b
}

// registryPrefix is the prefix of every record of kind k.
func registryPrefix(k Kind) []byte { return []byte{prefixRegistry, byte(k)} }

// parseRegistryKey returns the kind and id of a registry key.
func parseRegistryKey(key []byte) (Kind, uint64, error) {
	if len(key) != registryKeyLen || key[0] != prefixRegistry {
		return 0, 0, malformedKey("registry", key)
	}
	return Kind(key[1]), binary.BigEndian.Uint64(key[2:]), nil
}

// logKey is the key of the log entry with sequence number seq.
func logKey(seq uint64) []byte {
	return appendLogKey(make([]byte, 0, logKeyLen), seq)
}

// appendLogKey appends the key of log entry seq to b.
func appendLogKey(b []byte, seq uint64) []byte {
	b = append(b, prefixLog)
	return binary.BigEndian.AppendUint64(b, seq)
}

// logEnd is the exclusive upper bound of the log.
var logEnd = []byte{prefixLog + 1}

// parseLogKey returns the sequence number of a log key.
func parseLogKey(key []byte) (uint64, error) {
	if len(key) != logKeyLen || key[0] != prefixLog {
		return 0, malformedKey("log", key)
	}
	return binary.BigEndian.Uint64(key[1:]), nil
}

// websitePrefix is the prefix of every day, strings and state key of website.
func websitePrefix(website uint32) []byte {
	b := make([]byte, 0, 5)
	b = append(b, prefixWebsite)
	return binary.BigEndian.AppendUint32(b, website)
}

// websiteSubPrefix is the prefix of one sub-family of website.
func websiteSubPrefix(website uint32, sub byte) []byte {
	return append(websitePrefix(website), sub)
}

// websiteKey builds a day, strings or state key, or the period prefix of
// chunk keys (with room for the chunk number); v is the raw (already
// sign-flipped where needed) 32-bit value.
func websiteKey(website uint32, sub byte, v uint32) []byte {
	b := make([]byte, 0, chunkKeyLen)
	b = append(b, prefixWebsite)
	b = binary.BigEndian.AppendUint32(b, website)
	b = append(b, sub)
	return binary.BigEndian.AppendUint32(b, v)
}

// dayKey is the key of the day bucket of website on date.
func dayKey(website uint32, date int32) []byte {
	return websiteKey(website, subDay, flipSign(date))
}

// partKey is the key of sealed part number part of website's day on date.
func partKey(website uint32, date int32, part uint32) []byte {
	return binary.BigEndian.AppendUint32(dayKey(website, date), part)
}

// parsePartKey returns the website, date and part number of a part key.
func parsePartKey(key []byte) (website uint32, date int32, part uint32, err error) {
	if len(key) != partKeyLen || key[0] != prefixWebsite || key[5] != subDay {
		return 0, 0, 0, malformedKey("day part", key)
	}
	return binary.BigEndian.Uint32(key[1:5]), unflipSign(binary.BigEndian.Uint32(key[6:10])),
		binary.BigEndian.Uint32(key[10:]), nil
}

// stringsKey is the key of the strings chunk of website starting at from.
func stringsKey(website uint32, from uint32) []byte {
	return websiteKey(website, subStrings, from)
}

// stateKey is the key of the visitor state of website for a salt period.
func stateKey(website uint32, period int32) []byte {
	return websiteKey(website, subState, flipSign(period))
}

// parseWebsiteKey splits a day, strings or state key. It checks the length
// and the prefix, and that the sub-family is sub.
func parseWebsiteKey(key []byte, sub byte) (website uint32, v uint32, err error) {
	if len(key) != websiteKeyLen || key[0] != prefixWebsite || key[5] != sub {
		return 0, 0, malformedKey(subName(sub), key)
	}
	return binary.BigEndian.Uint32(key[1:5]), binary.BigEndian.Uint32(key[6:]), nil
}

// parseDayKey returns the website and date of a day key.
func parseDayKey(key []byte) (uint32, int32, error) {
	w, v, err := parseWebsiteKey(key, subDay)
	return w, unflipSign(v), err
}

// parseStringsKey returns the website and first string id of a strings key.
func parseStringsKey(key []byte) (uint32, uint32, error) {
	return parseWebsiteKey(key, subStrings)
}

// parseStateKey returns the website and period of a state key.
func parseStateKey(key []byte) (uint32, int32, error) {
	w, v, err := parseWebsiteKey(key, subState)
	return w, unflipSign(v), err
}

// chunkPeriodPrefix is the prefix of every chunk of website's period.
func chunkPeriodPrefix(website uint32, period int32) []byte {
	return websiteKey(website, subChunk, flipSign(period))
}

// chunkKey is the key of chunk number chunk of website's period state.
func chunkKey(website uint32, period int32, chunk uint32) []byte {
	return binary.BigEndian.AppendUint32(chunkPeriodPrefix(website, period), chunk)
}

// parseChunkKey returns the website, period and chunk number of a chunk key.
func parseChunkKey(key []byte) (website uint32, period int32, chunk uint32, err error) {
	if len(key) != chunkKeyLen || key[0] != prefixWebsite || key[5] != subChunk {
		return 0, 0, 0, malformedKey("chunk", key)
	}
	return binary.BigEndian.Uint32(key[1:5]), unflipSign(binary.BigEndian.Uint32(key[6:10])),
		binary.BigEndian.Uint32(key[10:]), nil
}

func subName(sub byte) string {
	switch sub {
	case subDay:
		return "day"
	case subStrings:
		return "strings"
	case subState:
		return "state"
	case subChunk:
		return "chunk"
	case subIndex:
		return "visitor index"
	}
	return "website"
}

// siteKey is the key of the site record of website.
func siteKey(website uint32) []byte {
	b := make([]byte, 0, siteKeyLen)
	b = append(b, prefixSite)
	return binary.BigEndian.AppendUint32(b, website)
}

// sitesPrefix is the prefix of every site record.
var sitesPrefix = []byte{prefixSite}

// parseSiteKey returns the website of a site key.
func parseSiteKey(key []byte) (uint32, error) {
	if len(key) != siteKeyLen || key[0] != prefixSite {
		return 0, malformedKey("site", key)
	}
	return binary.BigEndian.Uint32(key[1:]), nil
}

// encodeUint64 encodes a meta value (format version, trim point).
func encodeUint64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// decodeUint64 decodes a meta value written by encodeUint64; what names it in
// the error.
func decodeUint64(what string, b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, &corruptError{fmt.Sprintf("%s value is %d bytes (%x), want 8", what, len(b), clip(b))}
	}
	return binary.BigEndian.Uint64(b), nil
}

// decodeVersion decodes the format version value.
func decodeVersion(b []byte) (uint64, error) {
	v, err := decodeUint64("format version", b)
	if err == nil && v == 0 {
		return 0, &corruptError{"format version value is 0"}
	}
	return v, err
}

// decodeTrim decodes the trim point value.
func decodeTrim(b []byte) (uint64, error) { return decodeUint64("trim point", b) }

// malformedKey is the error for a key that does not parse as a what key.
func malformedKey(what string, key []byte) error {
	return &corruptError{fmt.Sprintf("malformed %s key %x", what, clip(key))}
}

// clip shortens b for an error message.
func clip(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// minDate and maxDate bound the dates a day key can hold.
const (
	minDate = math.MinInt32
	maxDate = math.MaxInt32
)

// family is the family of a key, as Usage sums them.
type family int

const (
	familyMeta family = iota // the format version, the trim point, anything else
	familyRegistry
	familyLog
	familySite
	familyDay
	familyPart
	familyStrings
	familyState // visitor state, both forms
)

// familyOf returns the family of key.
func familyOf(key []byte) family {
	switch {
	case len(key) == 0:
		return familyMeta
	case key[0] == prefixRegistry:
		return familyRegistry
	case key[0] == prefixLog:
		return familyLog
	case key[0] == prefixSite:
		return familySite
	case key[0] != prefixWebsite || len(key) < websiteKeyLen:
		return familyMeta
	}
	switch key[5] {
	case subDay:
		if len(key) == partKeyLen {
			return familyPart
		}
		return familyDay
	case subStrings:
		return familyStrings
	case subState, subChunk, subIndex:
		return familyState
	}
	return familyMeta
}

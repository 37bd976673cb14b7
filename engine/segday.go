package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/wire"
)

// segDay is the segments store of one website for one local day (SPEC
// §10.1): a row per visit that started that day and a row per hit of those
// visits (and per orphan event of the day), in columns of dictionary ids
// into the day's own strings. A visit's hits live with it in the day it
// started, even when (weekly or monthly salts) they come after midnight;
// queries read back from the first day of the salt period for that.
//
// A segDay belongs to its dayEntry and follows its rules: written under the
// shard lock, frozen (never modified, read without the lock) once its day is
// closed, copied on write.
type segDay struct {
	strs []string          // id → string; strs[0] is ""
	ids  map[string]uint32 // string → id; nil until the day is written
	// counts holds how many strings each kind of value added (SPEC §13:
	// at most MaxValues new values a kind and day; more are "(other)").
	counts [numSegCats]int32

	// Visits, by row.
	vPeriod    []int32 // first day of the visitor's salt period
	vVisitor   []uint32
	vFirst     []int64 // Unix ms of the first hit (pageview or event)
	vStart     []int64 // Unix ms of the first pageview (vFirst while none)
	vEnd       []int64 // Unix ms of the last hit (pageview or event)
	vLastPV    []int64 // Unix ms of the last pageview (the exit page's)
	vPageviews []uint32
	vFlags     []uint8 // vfInteractive, vfFirstInteractive
	vEntry     []uint32
	vExit      []uint32
	vEntryHost []uint32
	vExitHost  []uint32
	vCityID    []uint32
	vAttr      [numVA][]uint32 // by attribute, a column each: a filter's scan reads one in order

	// Hits, by row, in the order they were applied.
	hVisit   []uint32 // visit row, or noVisit
	hMs      []int64
	hKind    []uint8 // hkPageview, hkEvent, hkEngagement
	hName    []uint32
	hPage    []uint32
	hHost    []uint32
	hValue   []uint32 // event value ("5.5"), for revenue
	hUnit    []uint32 // event unit ("USD")
	hEngaged []uint32 // engaged ms of an engagement report
	hScroll  []int8   // scroll depth of an engagement report; -1 unknown
	hFlags   []uint8  // hfInteractive
	hPropEnd []uint32 // hit i's props are props[2*hPropEnd[i-1] : 2*hPropEnd[i]]
	props    []uint32 // key id, value id pairs

	// grouped reports that the hits are ordered by visit row (orphans
	// last), each visit's by time, as compact leaves a closed day; hitEnd
	// then holds, by visit row, the end of its hits (they start at the
	// previous visit's end).
	grouped bool
	hitEnd  []uint32

	// Sealed rows (SPEC §13: an open day's memory is bounded): a snapshot
	// moves an open day's rows into a part in the store once they pass
	// Engine.sealBytes. The first offV visit rows and offH hit rows of the
	// day are then in parts [0, parts) and the columns hold the rows after
	// them (row numbers, as in hVisit and the visitor state, count from the
	// day's first row). A sealed visit's columns are not updated: they are
	// derived from its hits when the day is made whole (whole), which is
	// the only form queries read. tail is the day a whole one was made
	// from, what its value in the store holds and what writes continue.
	parts      uint32
	offV, offH uint32
	tail       *segDay
	// lone: a chunk (segstream.go) of the only day of its scan read in
	// chunks, which scanSegs passes after every other day of the scan.
	lone bool

	size int // memory estimate, bytes

	// dm is what queries keep of the day once it no longer changes
	// (dayMemo); set when the day is made, never written once it is
	// shared; nil for a day that may change, or a small one.
	dm *dayMemo
}

// segCat is the kind of value a string of the dictionary was added for;
// each kind has its own bound.
type segCat uint8

const (
	catPath segCat = iota
	catHost
	catEvent    // event names, values and units
	catPropKey  // custom property keys
	catPropVal  // custom property values
	catReferrer // referrer URLs and sources
	catUTM      // the five UTM values
	catVisit    // the other visit attributes (device, browser, versions, location, ...)
	numSegCats
)

// Visit attribute columns, in vAttr order.
const (
	vaSource = iota
	vaReferrer
	vaChannel
	vaUTMMedium
	vaUTMSource
	vaUTMCampaign
	vaUTMContent
	vaUTMTerm
	vaDevice
	vaBrowser
	vaBrowserVer
	vaOS
	vaOSVer
	vaCountry // ISO code
	vaRegion  // ISO 3166-2
	vaCity    // English name
	vaRegionName
	vaLanguage
	vaScreen
	numVA
)

const (
	hkPageview uint8 = iota
	hkEvent
	hkEngagement
)

// Visit flags (SPEC §10.1: a visit bounces unless an interactive hit, a
// pageview or an interactive custom event, comes after its first hit).
const (
	// vfInteractive marks a visit with an interactive hit after its first.
	vfInteractive uint8 = 1
	// vfFirstInteractive marks a visit whose first hit is interactive (it
	// makes the visit no bounce once an earlier hit is imported).
	vfFirstInteractive uint8 = 2
)

// Hit flags.
const (
	// hfInteractive marks an interactive event (it makes its visit no
	// bounce).
	hfInteractive uint8 = 1
	// hfDay marks a hit whose local day (SPEC §10.1: the day it was
	// counted under, in the time zone then in force) is in its flags: the
	// date of the day its rows live in plus the signed 6-bit offset of
	// the flags' top bits (weekly and monthly salts: a visit's hits after
	// midnight live in the day it started). Hits written before have no
	// day: queries read it from their time (hitDay).
	hfDay uint8 = 2
)

// dayFlags returns the hit flags saying a hit's local day is delta days
// after the day its rows live in (clamped to a visit's longest span).
func dayFlags(delta buckets.Date) uint8 {
	delta = min(max(delta, -32), 31)
	return hfDay | uint8(delta&63)<<2
}

// flagDay returns the day offset dayFlags put in flags, and whether it did.
func flagDay(flags uint8) (delta buckets.Date, ok bool) {
	if flags&hfDay == 0 {
		return 0, false
	}
	delta = buckets.Date(flags >> 2)
	if delta >= 32 {
		delta -= 64
	}
	return delta, true
}

// noVisit is the visit of an orphan event (written before events had
// visits of their own, SPEC §10.1; still read).
const noVisit = ^uint32(0)

// segOther is the value a string becomes once the day's dictionary is full.
const segOther = "(other)"

func newSegDay() *segDay {
	return &segDay{strs: []string{""}, ids: map[string]uint32{"": 0}}
}

// id returns the id of s, adding it; beyond limit distinct strings a new
// string is counted as segOther (SPEC §13). other reports that.
func (d *segDay) id(s string, cat segCat, limit int) (id uint32, other bool) {
	if s == "" {
		return 0, false // strs[0]; most of a visit's attributes are blank
	}
	if d.ids == nil {
		d.ids = make(map[string]uint32, len(d.strs))
		for i, s := range d.strs {
			d.ids[s] = uint32(i)
		}
	}
	if id, ok := d.ids[s]; ok {
		return id, false
	}
	if limit > 0 && int(d.counts[cat]) >= limit {
		s, other = segOther, true
		if id, ok := d.ids[s]; ok {
			return id, true
		}
	} else {
		d.counts[cat]++
	}
	id = uint32(len(d.strs))
	d.strs = append(d.strs, s)
	d.ids[s] = id
	d.size += len(s) + 16 + 40
	return id, other
}

// addVisit appends a visit row and returns its number.
func (d *segDay) addVisit(period int32, visitor uint32, ms int64, attr *[numVA]uint32, cityID, entry, host uint32) uint32 {
	n := d.offV + uint32(len(d.vStart))
	d.vPeriod = append(d.vPeriod, period)
	d.vVisitor = append(d.vVisitor, visitor)
	d.vFirst = append(d.vFirst, ms)
	d.vStart = append(d.vStart, ms)
	d.vEnd = append(d.vEnd, ms)
	d.vLastPV = append(d.vLastPV, ms)
	d.vPageviews = append(d.vPageviews, 0)
	d.vFlags = append(d.vFlags, 0)
	d.vEntry = append(d.vEntry, entry)
	d.vExit = append(d.vExit, entry)
	d.vEntryHost = append(d.vEntryHost, host)
	d.vExitHost = append(d.vExitHost, host)
	d.vCityID = append(d.vCityID, cityID)
	for a, id := range attr {
		d.vAttr[a] = append(d.vAttr[a], id)
	}
	d.size += segVisitBytes
	return n
}

// segHit is one hit row to append.
type segHit struct {
	visit            uint32
	ms               int64
	kind             uint8
	name, page, host uint32
	value, unit      uint32
	engaged          uint32
	scroll           int8
	flags            uint8
	props            []uint32
}

func (d *segDay) addHit(h *segHit) {
	d.grouped, d.hitEnd = false, nil
	d.hVisit = append(d.hVisit, h.visit)
	d.hMs = append(d.hMs, h.ms)
	d.hKind = append(d.hKind, h.kind)
	d.hName = append(d.hName, h.name)
	d.hPage = append(d.hPage, h.page)
	d.hHost = append(d.hHost, h.host)
	d.hValue = append(d.hValue, h.value)
	d.hUnit = append(d.hUnit, h.unit)
	d.hEngaged = append(d.hEngaged, h.engaged)
	d.hScroll = append(d.hScroll, h.scroll)
	d.hFlags = append(d.hFlags, h.flags)
	d.props = append(d.props, h.props...)
	d.hPropEnd = append(d.hPropEnd, uint32(len(d.props)/2))
	d.size += segHitBytes + 4*len(h.props)
}

// Memory estimates of a row, bytes.
const (
	segVisitBytes = 4 + 4 + 8 + 8 + 8 + 8 + 4 + 1 + 4*4 + 4 + 4*numVA
	segHitBytes   = 4 + 8 + 1 + 4*7 + 1 + 1
)

// rowBytes estimates the memory of d's rows (what sealing frees).
func (d *segDay) rowBytes() int {
	return len(d.vStart)*(segVisitBytes+4) + len(d.hMs)*segHitBytes + 4*len(d.props)
}

// compact orders the hits by visit (orphans last), each visit's by time,
// so that a query can skip the hits of a visit its filters exclude. It is
// run once, when the day closes (the day is not shared with any reader).
// A day with sealed parts is left as it is: its rows are ordered when it is
// made whole.
func (d *segDay) compact() {
	if d.parts == 0 {
		d.sortByVisit()
		d.dm = newDayMemo(d.visits()) // closed: queries read it unlocked
	} else {
		d.dm = nil // never read: queries read it made whole
	}
}

// sortByVisit orders d's hits by visit, each visit's by time (ties in the
// order they were applied).
func (d *segDay) sortByVisit() {
	if d.grouped {
		return
	}
	n := d.hits()
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortStableFunc(order, func(a, b uint32) int {
		if c := cmp.Compare(d.hVisit[a], d.hVisit[b]); c != 0 { // noVisit is the largest
			return c
		}
		return cmp.Compare(d.hMs[a], d.hMs[b])
	})
	d.hVisit = permute(d.hVisit, order)
	d.hMs = permute(d.hMs, order)
	d.hKind = permute(d.hKind, order)
	d.hName = permute(d.hName, order)
	d.hPage = permute(d.hPage, order)
	d.hHost = permute(d.hHost, order)
	d.hValue = permute(d.hValue, order)
	d.hUnit = permute(d.hUnit, order)
	d.hEngaged = permute(d.hEngaged, order)
	d.hScroll = permute(d.hScroll, order)
	d.hFlags = permute(d.hFlags, order)
	props := make([]uint32, 0, len(d.props))
	ends := make([]uint32, n)
	for k, i := range order {
		props = append(props, d.propsOf(int(i))...)
		ends[k] = uint32(len(props) / 2)
	}
	d.props, d.hPropEnd = props, ends
	d.index()
}

// index sets grouped and hitEnd when the hits are ordered by visit, and
// each visit's by time (never for the rows of a day with sealed parts).
func (d *segDay) index() {
	if d.offV != 0 || d.offH != 0 {
		return
	}
	for i := 1; i < len(d.hVisit); i++ {
		if d.hVisit[i] < d.hVisit[i-1] || d.hVisit[i] == d.hVisit[i-1] && d.hMs[i] < d.hMs[i-1] {
			return
		}
	}
	d.grouped = true
	d.hitEnd = make([]uint32, d.visits())
	k := 0
	for v := range d.hitEnd {
		for k < len(d.hVisit) && d.hVisit[k] <= uint32(v) {
			k++
		}
		d.hitEnd[v] = uint32(k)
	}
}

// visitHits returns the range of visit v's hits of a grouped day.
func (d *segDay) visitHits(v uint32) (lo, hi int) {
	if v > 0 {
		lo = int(d.hitEnd[v-1])
	}
	return lo, int(d.hitEnd[v])
}

func permute[T any](col []T, order []uint32) []T {
	out := make([]T, len(col))
	for k, i := range order {
		out[k] = col[i]
	}
	return out
}

// propsOf returns hit i's key/value id pairs.
func (d *segDay) propsOf(i int) []uint32 {
	lo := uint32(0)
	if i > 0 {
		lo = d.hPropEnd[i-1]
	}
	return d.props[2*lo : 2*d.hPropEnd[i]]
}

func (d *segDay) visits() int { return len(d.vStart) }
func (d *segDay) hits() int   { return len(d.hMs) }

// clone copies d for a write (copy on write of a frozen day); a day made
// whole is copied as the day it was made from.
func (d *segDay) clone() *segDay {
	if d.tail != nil {
		return d.tail.clone()
	}
	c := *d
	c.dm = nil // c changes
	if d.dm != nil {
		c.size -= memoBytes(d.visits(), len(d.strs))
	}
	// The strings only grow, and only the writer (the copy) adds any: the
	// copy shares them, its appends past d's length never seen by d (the
	// capacity is cut), and the map of ids, which only the writer reads.
	// (Copying them cost a 50,000-value day tens of MB at each snapshot.)
	c.strs = d.strs[:len(d.strs):len(d.strs)]
	c.vPeriod, c.vVisitor = slices.Clone(d.vPeriod), slices.Clone(d.vVisitor)
	c.vFirst, c.vStart, c.vEnd, c.vLastPV = slices.Clone(d.vFirst), slices.Clone(d.vStart), slices.Clone(d.vEnd), slices.Clone(d.vLastPV)
	c.vPageviews, c.vFlags = slices.Clone(d.vPageviews), slices.Clone(d.vFlags)
	c.vEntry, c.vExit = slices.Clone(d.vEntry), slices.Clone(d.vExit)
	c.vEntryHost, c.vExitHost = slices.Clone(d.vEntryHost), slices.Clone(d.vExitHost)
	c.vCityID = slices.Clone(d.vCityID)
	for a := range numVA {
		c.vAttr[a] = slices.Clone(d.vAttr[a])
	}
	c.hVisit, c.hMs, c.hKind = slices.Clone(d.hVisit), slices.Clone(d.hMs), slices.Clone(d.hKind)
	c.hName, c.hPage, c.hHost = slices.Clone(d.hName), slices.Clone(d.hPage), slices.Clone(d.hHost)
	c.hValue, c.hUnit = slices.Clone(d.hValue), slices.Clone(d.hUnit)
	c.hEngaged, c.hScroll, c.hFlags = slices.Clone(d.hEngaged), slices.Clone(d.hScroll), slices.Clone(d.hFlags)
	c.hPropEnd, c.props = slices.Clone(d.hPropEnd), slices.Clone(d.props)
	c.hitEnd = slices.Clone(d.hitEnd)
	return &c
}

// segVersion is the version of the encoding of a segDay. Version 1 (still
// read) had no sealed parts and no hit flags.
const segVersion = 2

var (
	zEnc    *zstd.Encoder
	zOnce   sync.Once
	segBufs = sync.Pool{New: func() any { return new([]byte) }}
	// zDecs holds stream decoders: read through one, a value cannot
	// expand past the length it announces (no decompression bomb).
	zDecs = sync.Pool{New: func() any {
		d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		return d
	}}
)

func zstdEncoder() *zstd.Encoder {
	zOnce.Do(func() {
		zEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true),
			// A 1 MiB window, not the level's 8 MiB: the encoder keeps its
			// history for good (issue #38 row 7).
			zstd.WithWindowSize(1<<20))
	})
	return zEnc
}

// maxSegColumns bounds the announced length of a day's uncompressed
// columns (2 GiB: some 80 million hits of one website in one day). The
// bound is absolute, not a ratio to the compressed size: a closed day of
// many alike hits compresses far better than 64:1, and must read back.
const maxSegColumns = 1<<31 - 1

// unzstd decompresses b, which must expand to exactly n bytes. It
// allocates as the data decompresses, not n up front, so a corrupt length
// cannot make it allocate more than b really expands to.
func unzstd(b []byte, n int) ([]byte, error) {
	d := zDecs.Get().(*zstd.Decoder)
	defer zDecs.Put(d)
	if err := d.Reset(bytes.NewReader(b)); err != nil {
		return nil, err
	}
	// Enough for the usual ratios at once; more grows as it comes.
	buf := bytes.NewBuffer(make([]byte, 0, min(n, 32*len(b)+4096)))
	if _, err := buf.ReadFrom(io.LimitReader(d, int64(n)+1)); err != nil {
		return nil, err
	}
	switch {
	case buf.Len() < n:
		return nil, errors.New("shorter than announced")
	case buf.Len() > n:
		return nil, errors.New("longer than announced")
	}
	return buf.Bytes(), nil
}

// appendBinary appends the encoding of d as its day's value holds it: a
// version byte, the length of the columns, the length of their compression,
// then the columns, zstd-compressed:
//
//	strings     count, then each (length, bytes); id 0 ("") is implied
//	counts      the values added, by kind
//	parts       how many parts are sealed in the store
//	rows        (see appendRows)
//
// A day with sealed parts holds only the rows since the last seal; a day
// made whole from its parts is encoded as the day it was made from.
func (d *segDay) appendBinary(b []byte) []byte {
	if d.tail != nil {
		return d.tail.appendBinary(b)
	}
	return d.encode(b, true)
}

// appendPart appends the encoding of d's rows as a sealed part: the same
// envelope, its columns only the rows (its strings are its day's).
func (d *segDay) appendPart(b []byte) []byte { return d.encode(b, false) }

func (d *segDay) encode(b []byte, day bool) []byte {
	bp := segBufs.Get().(*[]byte)
	c := (*bp)[:0]
	if day {
		c = binary.AppendUvarint(c, uint64(len(d.strs)))
		for _, x := range d.strs[1:] {
			c = binary.AppendUvarint(c, uint64(len(x)))
			c = append(c, x...)
		}
		for _, n := range d.counts {
			c = binary.AppendUvarint(c, uint64(n))
		}
		c = binary.AppendUvarint(c, uint64(d.parts))
	}
	c = d.appendRows(c)
	enc := zstdEncoder()
	b = append(b, segVersion)
	b = binary.AppendUvarint(b, uint64(len(c)))
	z := enc.EncodeAll(c, nil)
	b = binary.AppendUvarint(b, uint64(len(z)))
	b = append(b, z...)
	*bp = c
	segBufs.Put(bp)
	return b
}

// appendRows appends d's rows:
//
//	first       the numbers of the first visit and hit rows (rows before
//	            them are sealed in parts)
//	visits      count; period and visitor id deltas; grouped flag;
//	            [ungrouped: start, end and last-pageview times, pageviews,
//	            entry, exit, entry host, exit host]; city id; flags;
//	            the numVA attribute columns
//	hits        count; [grouped: hits per visit | ungrouped: visit row
//	            deltas]; times; kind, name, page, host, value, unit,
//	            engaged ms, scroll, flags; props per hit; the props
//	milliseconds of every time above, in order
//
// Times are varint deltas in seconds, their milliseconds in the last
// column (all zeros: segments keep whole seconds, but the format does not
// depend on it). A grouped day (closed: hits ordered by visit) leaves out
// what its hits determine: a visit's start, end, last pageview, pageviews,
// entry and exit come from its hits; a hit's time is a delta from the
// previous hit of its visit, a visit's first from the previous visit's.
// Only rows from row 0 are written grouped.
func (d *segDay) appendRows(c []byte) []byte {
	u := func(v uint64) { c = binary.AppendUvarint(c, v) }
	s := func(v int64) { c = binary.AppendVarint(c, v) }
	u32 := func(col []uint32) {
		for _, v := range col {
			u(uint64(v))
		}
	}
	var rems []int64
	ms := func(delta int64) {
		sec := floorDiv(delta, 1000)
		s(sec)
		rems = append(rems, delta-sec*1000)
	}
	u(uint64(d.offV))
	u(uint64(d.offH))
	grouped := d.grouped && d.offV == 0 && d.offH == 0
	nv := len(d.vStart)
	u(uint64(nv))
	var prev int64
	for _, v := range d.vPeriod {
		s(int64(v) - prev)
		prev = int64(v)
	}
	prev = 0
	for _, v := range d.vVisitor {
		s(int64(v) - prev) // new visitors come in order: mostly 1
		prev = int64(v)
	}
	if grouped {
		c = append(c, 1)
	} else {
		c = append(c, 0)
		prev = 0
		for i, v := range d.vStart {
			ms(v - prev)
			prev = v
			ms(d.vEnd[i] - v)
			ms(d.vLastPV[i] - v)
		}
		for _, col := range [][]uint32{d.vPageviews, d.vEntry, d.vExit, d.vEntryHost, d.vExitHost} {
			u32(col)
		}
	}
	u32(d.vCityID)
	c = append(c, d.vFlags...)
	for a := range numVA {
		for _, id := range d.vAttr[a][:nv] {
			u(uint64(id))
		}
	}
	nh := len(d.hMs)
	u(uint64(nh))
	if grouped {
		lo := 0
		for v := range nv {
			_, hi := d.visitHits(uint32(v))
			u(uint64(hi - lo))
			lo = hi
		}
		prev = 0
		for i, t := range d.hMs {
			if i > 0 && d.hVisit[i-1] == d.hVisit[i] {
				ms(t - d.hMs[i-1])
			} else {
				ms(t - prev) // a visit's first hit (or the first orphan)
				prev = t
			}
		}
	} else {
		prev = 0
		for _, v := range d.hVisit {
			s(int64(v+1) - prev) // noVisit+1 is 0
			prev = int64(v + 1)
		}
		prev = 0
		for _, t := range d.hMs {
			ms(t - prev)
			prev = t
		}
	}
	c = append(c, d.hKind...)
	for _, col := range [][]uint32{d.hName, d.hPage, d.hHost, d.hValue, d.hUnit, d.hEngaged} {
		u32(col)
	}
	for _, v := range d.hScroll {
		c = append(c, byte(v))
	}
	c = append(c, d.hFlags...)
	var pe uint32
	for _, v := range d.hPropEnd {
		u(uint64(v - pe))
		pe = v
	}
	u32(d.props)
	for _, r := range rems {
		u(uint64(r))
	}
	return c
}

// segColumns checks the envelope of an encoded value and decompresses its
// columns. It returns the encoding's version.
func segColumns(b []byte) ([]byte, byte, error) {
	bad := func(what string) ([]byte, byte, error) {
		return nil, 0, fmt.Errorf("segments: %s: %w", what, wire.ErrRecord)
	}
	if len(b) == 0 || b[0] < 1 || b[0] > segVersion {
		return bad("version")
	}
	raw, n := binary.Uvarint(b[1:])
	if n <= 0 || raw > maxSegColumns {
		return bad("length")
	}
	zl, k := binary.Uvarint(b[1+n:])
	if k <= 0 || zl != uint64(len(b)-1-n-k) {
		return bad("compressed length") // truncated, or trailing bytes
	}
	c, err := unzstd(b[1+n+k:], int(raw))
	if err != nil {
		return bad("compressed columns")
	}
	return c, b[0], nil
}

// decodeSegDay decodes a day's value (appendBinary). It never panics, and
// bounds what it allocates by the size of the data.
func decodeSegDay(b []byte) (*segDay, error) {
	c, version, err := segColumns(b)
	if err != nil {
		return nil, err
	}
	bad := func(what string) (*segDay, error) {
		return nil, fmt.Errorf("segments: %s: %w", what, wire.ErrRecord)
	}
	dd := wire.Decoder{B: c}
	d := &segDay{}
	ns := dd.Count()
	if ns == 0 {
		return bad("strings")
	}
	d.strs = make([]string, ns)
	for i := 1; i < ns; i++ {
		d.strs[i] = dd.String()
	}
	for i := range d.counts {
		n := dd.Uvarint()
		if n > uint64(ns) {
			dd.Bad = true
		}
		d.counts[i] = int32(n)
	}
	if version >= 2 {
		n := dd.Uvarint()
		if n > maxParts {
			dd.Bad = true
		}
		d.parts = uint32(n)
	}
	if dd.Bad {
		return bad("header")
	}
	if err := d.decodeRows(&dd, ns, version); err != nil {
		return nil, err
	}
	if d.parts == 0 && (d.offV != 0 || d.offH != 0) {
		return bad("rows before the first without parts")
	}
	if d.parts == 0 {
		d.dm = newDayMemo(d.visits()) // a day with parts is read made whole
	}
	d.size = d.estimate()
	return d, nil
}

// maxParts bounds the sealed parts of one day.
const maxParts = 1 << 20

// decodePart decodes a sealed part (appendPart) of a day with ns strings.
// strCols returns the columns of d that hold string ids.
func (d *segDay) strCols() [][]uint32 {
	cols := [][]uint32{d.vEntry, d.vExit, d.vEntryHost, d.vExitHost, d.hName, d.hPage, d.hHost, d.hValue, d.hUnit, d.props}
	return append(cols, d.vAttr[:]...)
}

func decodePart(b []byte, ns int) (*segDay, error) {
	c, version, err := segColumns(b)
	if err != nil {
		return nil, err
	}
	if version < 2 {
		return nil, fmt.Errorf("segments: part of version %d: %w", version, wire.ErrRecord)
	}
	dd := wire.Decoder{B: c}
	d := &segDay{strs: make([]string, 0)}
	if err := d.decodeRows(&dd, ns, version); err != nil {
		return nil, err
	}
	return d, nil
}

// decodeRows decodes appendRows' encoding into d, whose strings number ns.
func (d *segDay) decodeRows(dd *wire.Decoder, ns int, version byte) error {
	bad := func(what string) error {
		return fmt.Errorf("segments: %s: %w", what, wire.ErrRecord)
	}
	u32s := func(n int) []uint32 {
		out := make([]uint32, n)
		for i := range out {
			v := dd.Uvarint()
			if v > 1<<32-1 {
				dd.Bad = true
			}
			out[i] = uint32(v)
		}
		return out
	}
	// Times are read as whole-second deltas; their milliseconds come at
	// the end, added through these pointers.
	var pending []*int64
	ms := func(dst *int64) {
		*dst = dd.Varint() * 1000
		pending = append(pending, dst)
	}
	if version >= 2 {
		ov, oh := dd.Uvarint(), dd.Uvarint()
		if ov > 1<<32-1 || oh > 1<<32-1 {
			dd.Bad = true
		}
		d.offV, d.offH = uint32(ov), uint32(oh)
	}
	nv := dd.Count()
	if uint64(d.offV)+uint64(nv) >= uint64(noVisit) {
		dd.Bad = true
	}
	d.vPeriod = make([]int32, nv)
	var prev int64
	for i := range d.vPeriod {
		prev += dd.Varint()
		d.vPeriod[i] = int32(prev)
	}
	d.vVisitor = make([]uint32, nv)
	prev = 0
	for i := range d.vVisitor {
		prev += dd.Varint()
		if prev < 0 || prev > 1<<32-1 {
			dd.Bad = true
		}
		d.vVisitor[i] = uint32(prev)
	}
	grouped := dd.Byte() == 1
	if grouped && (d.offV != 0 || d.offH != 0) {
		dd.Bad = true
	}
	d.vFirst, d.vStart, d.vEnd, d.vLastPV = make([]int64, nv), make([]int64, nv), make([]int64, nv), make([]int64, nv)
	if !grouped {
		for i := range nv {
			ms(&d.vStart[i])
			ms(&d.vEnd[i])
			ms(&d.vLastPV[i])
		}
		d.vPageviews, d.vEntry, d.vExit = u32s(nv), u32s(nv), u32s(nv)
		d.vEntryHost, d.vExitHost = u32s(nv), u32s(nv)
	}
	d.vCityID = u32s(nv)
	d.vFlags = make([]uint8, nv)
	for i := range d.vFlags {
		d.vFlags[i] = dd.Byte()
	}
	for a := range numVA {
		col := make([]uint32, nv)
		for i := range col {
			v := dd.Uvarint()
			if v > 1<<32-1 {
				dd.Bad = true
			}
			col[i] = uint32(v)
		}
		d.vAttr[a] = col
	}
	nh := dd.Count()
	d.hVisit, d.hMs = make([]uint32, nh), make([]int64, nh)
	if grouped {
		k := 0
		for v := range nv {
			n := dd.Uvarint()
			if n == 0 || n > uint64(nh-k) {
				dd.Bad = true // a visit has at least its first hit
				break
			}
			for range n {
				d.hVisit[k] = uint32(v)
				k++
			}
		}
		for ; k < nh; k++ {
			d.hVisit[k] = noVisit
		}
	} else {
		prev = 0
		for i := range nh {
			prev += dd.Varint()
			d.hVisit[i] = uint32(prev - 1)
		}
	}
	for i := range nh {
		ms(&d.hMs[i])
	}
	if dd.Bad {
		return bad("rows")
	}
	d.hKind = make([]uint8, nh)
	for i := range d.hKind {
		d.hKind[i] = dd.Byte()
	}
	d.hName, d.hPage, d.hHost = u32s(nh), u32s(nh), u32s(nh)
	d.hValue, d.hUnit, d.hEngaged = u32s(nh), u32s(nh), u32s(nh)
	d.hScroll = make([]int8, nh)
	for i := range d.hScroll {
		d.hScroll[i] = int8(dd.Byte())
	}
	d.hFlags = make([]uint8, nh)
	if version >= 2 {
		for i := range d.hFlags {
			d.hFlags[i] = dd.Byte()
		}
	}
	d.hPropEnd = make([]uint32, nh)
	var pe uint64
	for i := range nh {
		pe += dd.Uvarint()
		if pe > uint64(len(dd.B)) {
			dd.Bad = true
			break
		}
		d.hPropEnd[i] = uint32(pe)
	}
	if dd.Bad {
		return bad("columns")
	}
	d.props = u32s(int(2 * pe))
	for _, p := range pending {
		*p += int64(dd.Uvarint())
	}
	if dd.Bad || len(dd.B) != 0 {
		return bad("columns")
	}
	// Every reference must be in range, so that queries index without checks.
	for _, col := range d.strCols() {
		for _, v := range col {
			if int(v) >= ns {
				return bad("string id")
			}
		}
	}
	end := uint64(d.offV) + uint64(nv)
	for i, v := range d.hVisit {
		if v != noVisit && uint64(v) >= end || d.hKind[i] > hkEngagement || i > 0 && d.hPropEnd[i] < d.hPropEnd[i-1] {
			return bad("hit row")
		}
	}
	// Times: deltas to absolute.
	if grouped {
		prev = 0
		for i := range nh {
			if i > 0 && d.hVisit[i-1] == d.hVisit[i] {
				d.hMs[i] += d.hMs[i-1]
			} else {
				d.hMs[i] += prev
				prev = d.hMs[i]
			}
		}
		if !d.visitsFromHits() {
			return bad("a visit without a pageview or event")
		}
	} else {
		prev = 0
		for i := range nv {
			d.vStart[i] += prev
			prev = d.vStart[i]
			d.vEnd[i] += prev
			d.vLastPV[i] += prev
		}
		prev = 0
		for i := range nh {
			d.hMs[i] += prev
			prev = d.hMs[i]
		}
		d.firstFromHits()
	}
	if d.offV != 0 || d.offH != 0 {
		return nil // rows of a day with sealed parts: never grouped
	}
	d.index()
	if grouped && !d.grouped {
		return bad("hit order")
	}
	if !grouped && d.grouped {
		// Stored in hit order, and that order happens to be by visit: it
		// counts as grouped only if the visit columns agree with the hits
		// (a grouped encoding derives them).
		c := *d
		c.vFirst, c.vStart, c.vEnd, c.vLastPV = slices.Clone(d.vFirst), slices.Clone(d.vStart), slices.Clone(d.vEnd), slices.Clone(d.vLastPV)
		c.vFlags = slices.Clone(d.vFlags)
		if !c.visitsFromHits() || !slices.Equal(c.vStart, d.vStart) || !slices.Equal(c.vEnd, d.vEnd) ||
			!slices.Equal(c.vFirst, d.vFirst) || !slices.Equal(c.vFlags, d.vFlags) ||
			!slices.Equal(c.vLastPV, d.vLastPV) || !slices.Equal(c.vPageviews, d.vPageviews) ||
			!slices.Equal(c.vEntry, d.vEntry) || !slices.Equal(c.vExit, d.vExit) ||
			!slices.Equal(c.vEntryHost, d.vEntryHost) || !slices.Equal(c.vExitHost, d.vExitHost) {
			d.grouped, d.hitEnd = false, nil
		}
	}
	return nil
}

// visitsFromHits sets what a grouped day's hits determine of its visits
// (hits are ordered by time, ties in the order they were applied, as apply
// decides entry and exit): first hit and end from the first and last
// pageview or custom event, start and entry from the first pageview, last
// pageview and exit from the last (a visit without pageviews, started by a
// custom event, keeps its first hit's time and blank pages), pageviews, and
// the interactivity flags (SPEC §10.1). False when a visit has no pageview
// and no custom event.
func (d *segDay) visitsFromHits() bool {
	nv := d.visits()
	d.vPageviews = make([]uint32, nv)
	d.vEntry, d.vExit = make([]uint32, nv), make([]uint32, nv)
	d.vEntryHost, d.vExitHost = make([]uint32, nv), make([]uint32, nv)
	seen := make([]bool, nv)
	for i, v := range d.hVisit {
		if v == noVisit {
			break
		}
		kind := d.hKind[i]
		if kind == hkEngagement {
			continue
		}
		t := d.hMs[i]
		inter := kind == hkPageview || d.hFlags[i]&hfInteractive != 0
		if !seen[v] {
			seen[v] = true
			d.vFirst[v], d.vStart[v], d.vEnd[v], d.vLastPV[v] = t, t, t, t
			d.vFlags[v] &^= vfInteractive | vfFirstInteractive
			if inter {
				d.vFlags[v] |= vfFirstInteractive
			}
		} else if inter {
			d.vFlags[v] |= vfInteractive
		}
		d.vEnd[v] = max(d.vEnd[v], t)
		if kind == hkPageview {
			if d.vPageviews[v] == 0 {
				d.vStart[v], d.vEntry[v], d.vEntryHost[v] = t, d.hPage[i], d.hHost[i]
			}
			d.vPageviews[v]++
			d.vLastPV[v], d.vExit[v], d.vExitHost[v] = t, d.hPage[i], d.hHost[i]
		}
	}
	for v := range seen {
		if !seen[v] {
			return false
		}
	}
	return true
}

// firstFromHits sets, for the visit rows of an ungrouped day's columns
// (every hit of such a row is among its hits, after it), the first hit's
// time and interactivity, which the encoding leaves out.
func (d *segDay) firstFromHits() {
	seen := make([]bool, len(d.vFirst))
	copy(d.vFirst, d.vStart)
	for i, v := range d.hVisit {
		if v == noVisit || v < d.offV || d.hKind[i] == hkEngagement {
			continue
		}
		r := v - d.offV
		if int(r) >= len(seen) {
			continue
		}
		if t := d.hMs[i]; !seen[r] || t < d.vFirst[r] {
			seen[r] = true
			d.vFirst[r] = t
			d.vFlags[r] &^= vfFirstInteractive
			if d.hKind[i] == hkPageview || d.hFlags[i]&hfInteractive != 0 {
				d.vFlags[r] |= vfFirstInteractive
			}
		}
	}
}

// estimate recomputes the memory estimate of d.
func (d *segDay) estimate() int {
	n := int(unsafe.Sizeof(*d)) + len(d.vStart)*(segVisitBytes+4) + len(d.hMs)*segHitBytes + 4*len(d.props)
	if d.dm != nil {
		n += memoBytes(len(d.vStart), len(d.strs))
	}
	for _, s := range d.strs {
		n += len(s) + 16
	}
	return n
}

// whole returns d made whole from its sealed parts (the encodings of
// appendPart, parts[i] being part i; more than d has are ignored): every row
// of the day in its columns, hits ordered by visit, sealed visits' columns
// derived from their hits. A day without parts, or whole already, is
// returned as it is. d is not modified, and must not be afterwards: the
// whole day keeps it as its tail and shares its strings. cache decodes the
// parts (nil: no cache).
func (d *segDay) whole(parts [][]byte, cache *partCache) (*segDay, error) {
	if d.parts == 0 || d.tail != nil {
		return d, nil
	}
	if len(parts) < int(d.parts) {
		return nil, fmt.Errorf("segments: %d of %d sealed parts: %w", len(parts), d.parts, wire.ErrRecord)
	}
	w := &segDay{strs: d.strs, counts: d.counts, parts: d.parts, tail: d}
	w.grow(int(d.offV)+d.visits(), int(d.offH)+d.hits())
	for i, b := range parts[:d.parts] {
		p, err := cache.decode(b, len(d.strs))
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		if err := w.appendRowsOf(p); err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
	}
	if err := w.appendRowsOf(d); err != nil {
		return nil, err
	}
	w.sortByVisit()
	// (A sealed visit's columns and flags are as they were when it was
	// sealed: they are derived from its hits.)
	if !w.visitsFromHits() {
		return nil, fmt.Errorf("segments: a visit without a pageview or event: %w", wire.ErrRecord)
	}
	w.dm = newDayMemo(w.visits())
	w.size = w.estimate() + d.rowBytes()
	return w, nil
}

// grow makes room for nv visit rows and nh hit rows in every column of
// w, so that the parts appended to it (appendRowsOf) are copied once: a
// day of 300,000 hits grown part by part allocated ten times its rows.
func (w *segDay) grow(nv, nh int) {
	w.vPeriod = slices.Grow(w.vPeriod, nv)
	w.vVisitor = slices.Grow(w.vVisitor, nv)
	w.vFirst = slices.Grow(w.vFirst, nv)
	w.vStart = slices.Grow(w.vStart, nv)
	w.vEnd = slices.Grow(w.vEnd, nv)
	w.vLastPV = slices.Grow(w.vLastPV, nv)
	w.vPageviews = slices.Grow(w.vPageviews, nv)
	w.vFlags = slices.Grow(w.vFlags, nv)
	w.vEntry = slices.Grow(w.vEntry, nv)
	w.vExit = slices.Grow(w.vExit, nv)
	w.vEntryHost = slices.Grow(w.vEntryHost, nv)
	w.vExitHost = slices.Grow(w.vExitHost, nv)
	w.vCityID = slices.Grow(w.vCityID, nv)
	for a := range numVA {
		w.vAttr[a] = slices.Grow(w.vAttr[a], nv)
	}
	w.hVisit = slices.Grow(w.hVisit, nh)
	w.hMs = slices.Grow(w.hMs, nh)
	w.hKind = slices.Grow(w.hKind, nh)
	w.hName = slices.Grow(w.hName, nh)
	w.hPage = slices.Grow(w.hPage, nh)
	w.hHost = slices.Grow(w.hHost, nh)
	w.hValue = slices.Grow(w.hValue, nh)
	w.hUnit = slices.Grow(w.hUnit, nh)
	w.hEngaged = slices.Grow(w.hEngaged, nh)
	w.hScroll = slices.Grow(w.hScroll, nh)
	w.hFlags = slices.Grow(w.hFlags, nh)
	w.hPropEnd = slices.Grow(w.hPropEnd, nh)
}

// appendRowsOf appends p's rows, which must be the next rows of w's day.
func (w *segDay) appendRowsOf(p *segDay) error {
	if p.offV != uint32(w.visits()) || p.offH != uint32(w.hits()) {
		return fmt.Errorf("segments: rows from %d/%d after %d/%d: %w", p.offV, p.offH, w.visits(), w.hits(), wire.ErrRecord)
	}
	w.vPeriod = append(w.vPeriod, p.vPeriod...)
	w.vVisitor = append(w.vVisitor, p.vVisitor...)
	w.vFirst = append(w.vFirst, p.vFirst...)
	w.vStart = append(w.vStart, p.vStart...)
	w.vEnd = append(w.vEnd, p.vEnd...)
	w.vLastPV = append(w.vLastPV, p.vLastPV...)
	w.vPageviews = append(w.vPageviews, p.vPageviews...)
	w.vFlags = append(w.vFlags, p.vFlags...)
	w.vEntry = append(w.vEntry, p.vEntry...)
	w.vExit = append(w.vExit, p.vExit...)
	w.vEntryHost = append(w.vEntryHost, p.vEntryHost...)
	w.vExitHost = append(w.vExitHost, p.vExitHost...)
	w.vCityID = append(w.vCityID, p.vCityID...)
	for a := range numVA {
		w.vAttr[a] = append(w.vAttr[a], p.vAttr[a]...)
	}
	w.hVisit = append(w.hVisit, p.hVisit...)
	w.hMs = append(w.hMs, p.hMs...)
	w.hKind = append(w.hKind, p.hKind...)
	w.hName = append(w.hName, p.hName...)
	w.hPage = append(w.hPage, p.hPage...)
	w.hHost = append(w.hHost, p.hHost...)
	w.hValue = append(w.hValue, p.hValue...)
	w.hUnit = append(w.hUnit, p.hUnit...)
	w.hEngaged = append(w.hEngaged, p.hEngaged...)
	w.hScroll = append(w.hScroll, p.hScroll...)
	w.hFlags = append(w.hFlags, p.hFlags...)
	base := uint32(len(w.props) / 2)
	for _, e := range p.hPropEnd {
		w.hPropEnd = append(w.hPropEnd, base+e)
	}
	w.props = append(w.props, p.props...)
	return nil
}

// sealed returns what d's value holds once its rows are sealed as part
// d.parts: its strings, no rows. It shares d's strings and must not be
// written.
func (d *segDay) sealed() *segDay {
	return &segDay{
		strs: d.strs, counts: d.counts, parts: d.parts + 1,
		offV: d.offV + uint32(d.visits()), offH: d.offH + uint32(d.hits()),
	}
}

// dropSealed returns d without the rows that part (an earlier form of d,
// sealed as part number part.parts) moved to the store: d may have gained
// rows since; a sealed visit's columns change no more (see whole).
func (d *segDay) dropSealed(part *segDay) *segDay {
	nv, nh := part.visits(), part.hits()
	c := &segDay{
		strs: d.strs, ids: d.ids, counts: d.counts, parts: part.parts + 1,
		offV: d.offV + uint32(nv), offH: d.offH + uint32(nh),
	}
	c.vPeriod, c.vVisitor = slices.Clone(d.vPeriod[nv:]), slices.Clone(d.vVisitor[nv:])
	c.vFirst, c.vStart, c.vEnd, c.vLastPV = slices.Clone(d.vFirst[nv:]), slices.Clone(d.vStart[nv:]), slices.Clone(d.vEnd[nv:]), slices.Clone(d.vLastPV[nv:])
	c.vPageviews, c.vFlags = slices.Clone(d.vPageviews[nv:]), slices.Clone(d.vFlags[nv:])
	c.vEntry, c.vExit = slices.Clone(d.vEntry[nv:]), slices.Clone(d.vExit[nv:])
	c.vEntryHost, c.vExitHost = slices.Clone(d.vEntryHost[nv:]), slices.Clone(d.vExitHost[nv:])
	c.vCityID = slices.Clone(d.vCityID[nv:])
	for a := range numVA {
		c.vAttr[a] = slices.Clone(d.vAttr[a][nv:])
	}
	c.hVisit, c.hMs, c.hKind = slices.Clone(d.hVisit[nh:]), slices.Clone(d.hMs[nh:]), slices.Clone(d.hKind[nh:])
	c.hName, c.hPage, c.hHost = slices.Clone(d.hName[nh:]), slices.Clone(d.hPage[nh:]), slices.Clone(d.hHost[nh:])
	c.hValue, c.hUnit = slices.Clone(d.hValue[nh:]), slices.Clone(d.hUnit[nh:])
	c.hEngaged, c.hScroll, c.hFlags = slices.Clone(d.hEngaged[nh:]), slices.Clone(d.hScroll[nh:]), slices.Clone(d.hFlags[nh:])
	var base uint32
	if nh > 0 {
		base = d.hPropEnd[nh-1]
	}
	c.props = slices.Clone(d.props[2*base:])
	c.hPropEnd = make([]uint32, 0, len(d.hPropEnd)-nh)
	for _, e := range d.hPropEnd[nh:] {
		c.hPropEnd = append(c.hPropEnd, e-base)
	}
	c.size = c.estimate()
	return c
}

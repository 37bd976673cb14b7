package segments

import (
	"cmp"
	"math"
	"slices"

	"github.com/webstats/webstats/buckets"
)

// Day is the segments store of one website for one local day (SPEC
// §10.1): a row per visit that started that day and a row per hit of those
// visits (and per orphan event of the day), in columns of dictionary ids
// into the day's own strings. A visit's hits live with it in the day it
// started, even when (weekly or monthly salts) they come after midnight;
// queries read back from the first day of the salt period for that.
//
// A Day belongs to its dayEntry and follows its rules: written under the
// shard lock, frozen (never modified, read without the lock) once its day is
// closed, copied on write.
type Day struct {
	Strs []string          // id → string; strs[0] is ""
	ids  map[string]uint32 // string → id; nil until the day is written
	// counts holds how many strings each kind of value added (SPEC §13:
	// at most MaxValues new values a kind and day; more are "(other)").
	counts [numSegCats]int32

	// Visits, by row.
	VPeriod    []int32 // first day of the visitor's salt period
	VVisitor   []uint32
	VFirst     []int64 // Unix ms of the first hit (pageview or event)
	vStart     []int64 // Unix ms of the first pageview (vFirst while none)
	VEnd       []int64 // Unix ms of the last hit (pageview or event)
	VLastPV    []int64 // Unix ms of the last pageview (the exit page's)
	VPageviews []uint32
	VFlags     []uint8 // VisitInteractive, VisitFirstInteractive
	VEntry     []uint32
	VExit      []uint32
	VEntryHost []uint32
	VExitHost  []uint32
	VCityID    []uint32
	VAttr      [NumAttrs][]uint32 // by attribute, a column each: a filter's scan reads one in order

	// Hits, by row, in the order they were applied.
	HVisit   []uint32 // visit row, or NoVisit
	HMs      []int64
	HKind    []uint8 // KindPageview, KindEvent, KindEngagement
	HName    []uint32
	HPage    []uint32
	HHost    []uint32
	HValue   []uint32 // event value ("5.5"), for revenue
	HUnit    []uint32 // event unit ("USD")
	HEngaged []uint32 // engaged ms of an engagement report
	HScroll  []int8   // scroll depth of an engagement report; -1 unknown
	HFlags   []uint8  // HitInteractive
	hPropEnd []uint32 // hit i's props are props[2*hPropEnd[i-1] : 2*hPropEnd[i]]
	Props    []uint32 // key id, value id pairs

	// grouped reports that the hits are ordered by visit row (orphans
	// last), each visit's by time, as compact leaves a closed day; hitEnd
	// then holds, by visit row, the end of its hits (they start at the
	// previous visit's end).
	Grouped bool
	HitEnd  []uint32

	// Sealed rows (SPEC §13: an open day's memory is bounded): a snapshot
	// moves an open day's rows into a part in the store once they pass
	// Engine.sealBytes. The first offV visit rows and offH hit rows of the
	// day are then in parts [0, parts) and the columns hold the rows after
	// them (row numbers, as in hVisit and the visitor state, count from the
	// day's first row). A sealed visit's columns are not updated: they are
	// derived from its hits when the day is made whole (whole), which is
	// the only form queries read. tail is the day a whole one was made
	// from, what its value in the store holds and what writes continue.
	Parts      uint32
	OffV, OffH uint32
	Tail       *Day
	// lone: a chunk (Chunked.Chunk; Chunks) of the only day of its scan read in
	// chunks, which scanSegs passes after every other day of the scan.
	Lone bool

	Size int // memory estimate, bytes

	// dm is what queries keep of the day once it no longer changes
	// (Memo); set when the day is made, never written once it is
	// shared; nil for a day that may change, or a small one.
	dm *Memo
}

// Cat is the kind of value a string of the dictionary was added for;
// each kind has its own bound.
type Cat uint8

const (
	CatPath Cat = iota
	CatHost
	CatEvent    // event names, values and units
	CatPropKey  // custom property keys
	CatPropVal  // custom property values
	CatReferrer // referrer URLs and sources
	CatUTM      // the five UTM values
	CatVisit    // the other visit attributes (device, browser, versions, location, ...)
	numSegCats
)

// Visit attribute columns, in vAttr order.
const (
	AttrSource = iota
	AttrReferrer
	AttrChannel
	AttrUTMMedium
	AttrUTMSource
	AttrUTMCampaign
	AttrUTMContent
	AttrUTMTerm
	AttrDevice
	AttrBrowser
	AttrBrowserVer
	AttrOS
	AttrOSVer
	AttrCountry // ISO code
	AttrRegion  // ISO 3166-2
	AttrCity    // English name
	AttrRegionName
	AttrLanguage
	AttrScreen
	NumAttrs
)

const (
	KindPageview uint8 = iota
	KindEvent
	KindEngagement
)

// Visit flags (SPEC §10.1: a visit bounces unless an interactive hit, a
// pageview or an interactive custom event, comes after its first hit).
const (
	// VisitInteractive marks a visit with an interactive hit after its first.
	VisitInteractive uint8 = 1
	// VisitFirstInteractive marks a visit whose first hit is interactive (it
	// makes the visit no bounce once an earlier hit is imported).
	VisitFirstInteractive uint8 = 2
)

// Hit flags.
const (
	// HitInteractive marks an interactive event (it makes its visit no
	// bounce).
	HitInteractive uint8 = 1
	// HitDay marks a hit whose local day (SPEC §10.1: the day it was
	// counted under, in the time zone then in force) is in its flags: the
	// date of the day its rows live in plus the signed 6-bit offset of
	// the flags' top bits (weekly and monthly salts: a visit's hits after
	// midnight live in the day it started). Hits written before have no
	// day: queries read it from their time (hitDay).
	HitDay uint8 = 2
)

// DayFlags returns the hit flags saying a hit's local day is delta days
// after the day its rows live in (clamped to a visit's longest span).
func DayFlags(delta buckets.Date) uint8 {
	delta = min(max(delta, -32), 31)
	return HitDay | uint8(delta&63)<<2
}

// flagDay returns the day offset DayFlags put in flags, and whether it did.
func flagDay(flags uint8) (delta buckets.Date, ok bool) {
	if flags&HitDay == 0 {
		return 0, false
	}
	delta = buckets.Date(flags >> 2)
	if delta >= 32 {
		delta -= 64
	}
	return delta, true
}

// NoVisit is the visit of an orphan event (written before events had
// visits of their own, SPEC §10.1; still read).
const NoVisit = ^uint32(0)

// segOther is the value a string becomes once the day's dictionary is full.
const segOther = "(other)"

// NewDay returns an empty day to write, its dictionary holding "" as id 0.
func NewDay() *Day {
	return &Day{Strs: []string{""}, ids: map[string]uint32{"": 0}}
}

// ID returns the id of s, adding it; beyond limit distinct strings a new
// string is counted as segOther (SPEC §13). other reports that.
func (d *Day) ID(s string, cat Cat, limit int) (id uint32, other bool) {
	if s == "" {
		return 0, false // strs[0]; most of a visit's attributes are blank
	}
	if d.ids == nil {
		d.ids = make(map[string]uint32, len(d.Strs))
		for i, s := range d.Strs {
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
	id = uint32(len(d.Strs))
	d.Strs = append(d.Strs, s)
	d.ids[s] = id
	d.Size += len(s) + 16 + 40
	return id, other
}

// AddVisit appends a visit row and returns its number.
func (d *Day) AddVisit(period int32, visitor uint32, ms int64, attr *[NumAttrs]uint32, cityID, entry, host uint32) uint32 {
	n := d.OffV + uint32(len(d.vStart))
	d.VPeriod = append(d.VPeriod, period)
	d.VVisitor = append(d.VVisitor, visitor)
	d.VFirst = append(d.VFirst, ms)
	d.vStart = append(d.vStart, ms)
	d.VEnd = append(d.VEnd, ms)
	d.VLastPV = append(d.VLastPV, ms)
	d.VPageviews = append(d.VPageviews, 0)
	d.VFlags = append(d.VFlags, 0)
	d.VEntry = append(d.VEntry, entry)
	d.VExit = append(d.VExit, entry)
	d.VEntryHost = append(d.VEntryHost, host)
	d.VExitHost = append(d.VExitHost, host)
	d.VCityID = append(d.VCityID, cityID)
	for a, id := range attr {
		d.VAttr[a] = append(d.VAttr[a], id)
	}
	d.Size += VisitBytes
	return n
}

// Hit is one hit row to append.
type Hit struct {
	Visit            uint32
	Ms               int64
	Kind             uint8
	Name, Page, Host uint32
	Value, Unit      uint32
	Engaged          uint32
	Scroll           int8
	Flags            uint8
	Props            []uint32
}

// AddHit appends the row of hit h; the hits are then in the order they
// were added (not grouped by visit).
func (d *Day) AddHit(h *Hit) {
	d.Grouped, d.HitEnd = false, nil
	d.HVisit = append(d.HVisit, h.Visit)
	d.HMs = append(d.HMs, h.Ms)
	d.HKind = append(d.HKind, h.Kind)
	d.HName = append(d.HName, h.Name)
	d.HPage = append(d.HPage, h.Page)
	d.HHost = append(d.HHost, h.Host)
	d.HValue = append(d.HValue, h.Value)
	d.HUnit = append(d.HUnit, h.Unit)
	d.HEngaged = append(d.HEngaged, h.Engaged)
	d.HScroll = append(d.HScroll, h.Scroll)
	d.HFlags = append(d.HFlags, h.Flags)
	d.Props = append(d.Props, h.Props...)
	d.hPropEnd = append(d.hPropEnd, uint32(len(d.Props)/2))
	d.Size += HitBytes + 4*len(h.Props)
}

// Memory estimates of a row, bytes.
const (
	VisitBytes = 4 + 4 + 8 + 8 + 8 + 8 + 4 + 1 + 4*4 + 4 + 4*NumAttrs
	HitBytes   = 4 + 8 + 1 + 4*7 + 1 + 1
)

// RowBytes estimates the memory of d's rows (what sealing frees).
func (d *Day) RowBytes() int {
	return len(d.vStart)*(VisitBytes+4) + len(d.HMs)*HitBytes + 4*len(d.Props)
}

// Compact orders the hits by visit (orphans last), each visit's by time,
// so that a query can skip the hits of a visit its filters exclude. It is
// run once, when the day closes (the day is not shared with any reader).
// A day with sealed parts is left as it is: its rows are ordered when it is
// made whole.
func (d *Day) Compact() {
	if d.Parts == 0 {
		d.sortByVisit()
		d.dm = newMemo(d.Visits()) // closed: queries read it unlocked
	} else {
		d.dm = nil // never read: queries read it made whole
	}
}

// sortByVisit orders d's hits by visit, each visit's by time (ties in the
// order they were applied).
func (d *Day) sortByVisit() {
	if d.Grouped {
		return
	}
	n := d.Hits()
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortStableFunc(order, func(a, b uint32) int {
		if c := cmp.Compare(d.HVisit[a], d.HVisit[b]); c != 0 { // NoVisit is the largest
			return c
		}
		return cmp.Compare(d.HMs[a], d.HMs[b])
	})
	d.HVisit = permute(d.HVisit, order)
	d.HMs = permute(d.HMs, order)
	d.HKind = permute(d.HKind, order)
	d.HName = permute(d.HName, order)
	d.HPage = permute(d.HPage, order)
	d.HHost = permute(d.HHost, order)
	d.HValue = permute(d.HValue, order)
	d.HUnit = permute(d.HUnit, order)
	d.HEngaged = permute(d.HEngaged, order)
	d.HScroll = permute(d.HScroll, order)
	d.HFlags = permute(d.HFlags, order)
	props := make([]uint32, 0, len(d.Props))
	ends := make([]uint32, n)
	for k, i := range order {
		props = append(props, d.PropsOf(int(i))...)
		ends[k] = uint32(len(props) / 2)
	}
	d.Props, d.hPropEnd = props, ends
	d.index()
}

// index sets grouped and hitEnd when the hits are ordered by visit, and
// each visit's by time (never for the rows of a day with sealed parts).
func (d *Day) index() {
	if d.OffV != 0 || d.OffH != 0 {
		return
	}
	for i := 1; i < len(d.HVisit); i++ {
		if d.HVisit[i] < d.HVisit[i-1] || d.HVisit[i] == d.HVisit[i-1] && d.HMs[i] < d.HMs[i-1] {
			return
		}
	}
	d.Grouped = true
	d.HitEnd = make([]uint32, d.Visits())
	k := 0
	for v := range d.HitEnd {
		for k < len(d.HVisit) && d.HVisit[k] <= uint32(v) {
			k++
		}
		d.HitEnd[v] = uint32(k)
	}
}

// VisitHits returns the range of visit v's hits of a grouped day.
func (d *Day) VisitHits(v uint32) (lo, hi int) {
	if v > 0 {
		lo = int(d.HitEnd[v-1])
	}
	return lo, int(d.HitEnd[v])
}

func permute[T any](col []T, order []uint32) []T {
	out := make([]T, len(col))
	for k, i := range order {
		out[k] = col[i]
	}
	return out
}

// PropsOf returns hit i's key/value id pairs.
func (d *Day) PropsOf(i int) []uint32 {
	lo := uint32(0)
	if i > 0 {
		lo = d.hPropEnd[i-1]
	}
	return d.Props[2*lo : 2*d.hPropEnd[i]]
}

// Visits returns the number of d's visit rows, Hits its hit rows'.
func (d *Day) Visits() int { return len(d.vStart) }
func (d *Day) Hits() int   { return len(d.HMs) }

// Clone copies d for a write (copy on write of a frozen day); a day made
// whole is copied as the day it was made from.
func (d *Day) Clone() *Day {
	if d.Tail != nil {
		return d.Tail.Clone()
	}
	c := *d
	c.dm = nil // c changes
	if d.dm != nil {
		c.Size -= memoBytes(d.Visits(), len(d.Strs))
	}
	// The strings only grow, and only the writer (the copy) adds any: the
	// copy shares them, its appends past d's length never seen by d (the
	// capacity is cut), and the map of ids, which only the writer reads.
	// (Copying them cost a 50,000-value day tens of MB at each snapshot.)
	c.Strs = d.Strs[:len(d.Strs):len(d.Strs)]
	c.VPeriod, c.VVisitor = slices.Clone(d.VPeriod), slices.Clone(d.VVisitor)
	c.VFirst, c.vStart, c.VEnd, c.VLastPV = slices.Clone(d.VFirst), slices.Clone(d.vStart), slices.Clone(d.VEnd), slices.Clone(d.VLastPV)
	c.VPageviews, c.VFlags = slices.Clone(d.VPageviews), slices.Clone(d.VFlags)
	c.VEntry, c.VExit = slices.Clone(d.VEntry), slices.Clone(d.VExit)
	c.VEntryHost, c.VExitHost = slices.Clone(d.VEntryHost), slices.Clone(d.VExitHost)
	c.VCityID = slices.Clone(d.VCityID)
	for a := range NumAttrs {
		c.VAttr[a] = slices.Clone(d.VAttr[a])
	}
	c.HVisit, c.HMs, c.HKind = slices.Clone(d.HVisit), slices.Clone(d.HMs), slices.Clone(d.HKind)
	c.HName, c.HPage, c.HHost = slices.Clone(d.HName), slices.Clone(d.HPage), slices.Clone(d.HHost)
	c.HValue, c.HUnit = slices.Clone(d.HValue), slices.Clone(d.HUnit)
	c.HEngaged, c.HScroll, c.HFlags = slices.Clone(d.HEngaged), slices.Clone(d.HScroll), slices.Clone(d.HFlags)
	c.hPropEnd, c.Props = slices.Clone(d.hPropEnd), slices.Clone(d.Props)
	c.HitEnd = slices.Clone(d.HitEnd)
	return &c
}

// Pageviews calls fn with the time, salt period and visitor id of every
// pageview of d in a visit row whose time is in [since, until).
func (d *Day) Pageviews(since, until int64, fn func(ms int64, period int32, visitor uint32)) {
	for i, ms := range d.HMs {
		v := d.HVisit[i]
		if ms < since || ms >= until || d.HKind[i] != KindPageview || v == NoVisit || int(v) >= len(d.VVisitor) {
			continue
		}
		fn(ms, d.VPeriod[v], d.VVisitor[v])
	}
}

// PeriodSpan returns the first and last salt periods of sd's visits
// (MaxInt32, MinInt32 for a day without visits: a period of none).
func PeriodSpan(sd *Day) (lo, hi int32) {
	lo, hi = math.MaxInt32, math.MinInt32
	for _, per := range sd.VPeriod {
		lo, hi = min(lo, per), max(hi, per)
	}
	return lo, hi
}

// FloorDiv returns a/b rounded down (toward negative infinity).
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// hitSpan returns the first and last hit times of sd (Unix ms).
func hitSpan(sd *Day) (lo, hi int64) {
	lo, hi = int64(math.MaxInt64), int64(math.MinInt64)
	for _, ms := range sd.HMs {
		lo, hi = min(lo, ms), max(hi, ms)
	}
	return lo, hi
}

// ExtendVisit updates the columns of visit row i (an open row) for its new
// hit h, a pageview or custom event; fresh: h started the row.
func (d *Day) ExtendVisit(i uint32, h *Hit, fresh bool) {
	at := h.Ms
	inter := h.Kind == KindPageview || h.Flags&HitInteractive != 0
	switch {
	case fresh:
		if inter {
			d.VFlags[i] |= VisitFirstInteractive
		}
	case at >= d.VFirst[i]:
		if inter {
			d.VFlags[i] |= VisitInteractive
		}
	default:
		// An earlier hit imported later: it is the first, and the one
		// that was is after it.
		if d.VFlags[i]&VisitFirstInteractive != 0 {
			d.VFlags[i] |= VisitInteractive
		}
		d.VFlags[i] &^= VisitFirstInteractive
		if inter {
			d.VFlags[i] |= VisitFirstInteractive
		}
		d.VFirst[i] = at
	}
	d.VEnd[i] = max(d.VEnd[i], at)
	if h.Kind != KindPageview {
		if d.VPageviews[i] == 0 && at < d.vStart[i] {
			// No pageview yet: start and last pageview stay the first
			// hit's time, as the hits of a closed day say (visitsFromHits).
			d.vStart[i], d.VLastPV[i] = at, at
		}
		return
	}
	if d.VPageviews[i] == 0 || at < d.vStart[i] {
		// The first pageview, or an earlier one imported later: the entry.
		d.vStart[i], d.VEntry[i], d.VEntryHost[i] = at, h.Page, h.Host
	}
	if d.VPageviews[i] == 0 || at >= d.VLastPV[i] {
		d.VLastPV[i], d.VExit[i], d.VExitHost[i] = at, h.Page, h.Host
	}
	d.VPageviews[i]++
}

// maxStrID returns the largest string id d's rows refer to, -1 for none.
func (d *Day) maxStrID() int {
	m := -1
	for _, col := range d.strCols() {
		for _, v := range col {
			m = max(m, int(v))
		}
	}
	return m
}

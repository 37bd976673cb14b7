package engine

import (
	"encoding/binary"
	"fmt"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/wire"
)

// record is an enriched hit: what the write-ahead log holds. Replaying
// records in sequence order on the state of the last snapshot reproduces the
// statistics exactly (visitor numbering and visits are decided at apply time).
// The local day, hour and salt period are fixed at enrichment, in the time
// zone then in force, so a later change of time zone moves no old hit.
type record struct {
	website uint32
	date    buckets.Date
	period  buckets.Date // first day of the salt period
	hour    uint8
	event   bool
	ms      int64  // Unix milliseconds
	hash    uint64 // visitor hash (salted)

	page, refHost, campaign                   string
	browser, os, device, resolution, language string
	country, continent, city                  string
	eventRow                                  string // "name:value:unit"

	seg segFields // what the segments store keeps besides (version 2)
}

// segFields are the fields of a record only the segments store reads
// (SPEC §10.1).
type segFields struct {
	engagement     bool // a Plausible engagement report: counted nowhere else
	nonInteractive bool // an event sent with interactive: false

	path, host string // page path without the query; the URL's host
	refURL     string // referrer without scheme, www. and query: "news.ycombinator.com/item"
	// landing holds the landing URL's parameters that decide a visit's
	// source and channel (utm_*, source, ref, click ids), as a query string.
	landing                      string
	browserVer, osVer            string
	region, regionName, cityName string
	cityID                       uint32
	props                        []Prop
	engagedMs                    int64
	scroll                       int8 // -1: unknown
	// name and unit are a custom event's name and unit as sent, ':'
	// kept (SPEC §2.4; version 3): eventRow has them with ':' made a
	// space, for the phpAnalytics event statistic. Empty in older
	// records, whose events the segments read from eventRow.
	name, unit string
}

func (f *segFields) strs() [9]*string {
	return [9]*string{&f.path, &f.host, &f.refURL, &f.landing, &f.browserVer, &f.osVer,
		&f.region, &f.regionName, &f.cityName}
}

// recordVersion is the version of the record encoding: 2 adds the segment
// fields, 3 an event's exact name and unit; older records (older logs)
// decode with the fields they lack empty.
const recordVersion = 3

func (r *record) strs() [12]*string {
	return [12]*string{&r.page, &r.refHost, &r.campaign, &r.browser, &r.os, &r.device,
		&r.resolution, &r.language, &r.country, &r.continent, &r.city, &r.eventRow}
}

// appendBinary appends the encoding of r to b.
func (r *record) appendBinary(b []byte) []byte {
	b = append(b, recordVersion)
	b = binary.AppendUvarint(b, uint64(r.website))
	b = binary.AppendVarint(b, int64(r.date))
	b = binary.AppendVarint(b, int64(r.date-r.period))
	flags := r.hour
	if r.event {
		flags |= 0x80
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, r.ms)
	b = binary.LittleEndian.AppendUint64(b, r.hash)
	for _, s := range r.strs() {
		b = binary.AppendUvarint(b, uint64(len(*s)))
		b = append(b, *s...)
	}
	f := &r.seg
	var sf byte
	if f.engagement {
		sf |= 1
	}
	if f.nonInteractive {
		sf |= 2
	}
	b = append(b, sf)
	for _, s := range f.strs() {
		b = binary.AppendUvarint(b, uint64(len(*s)))
		b = append(b, *s...)
	}
	b = binary.AppendUvarint(b, uint64(f.cityID))
	b = binary.AppendUvarint(b, uint64(len(f.props)))
	for _, p := range f.props {
		b = binary.AppendUvarint(b, uint64(len(p.Key)))
		b = append(b, p.Key...)
		b = binary.AppendUvarint(b, uint64(len(p.Value)))
		b = append(b, p.Value...)
	}
	b = binary.AppendVarint(b, f.engagedMs)
	b = append(b, byte(f.scroll))
	for _, s := range [2]string{f.name, f.unit} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// decode parses b into r. It never panics and copies the strings out of b.
func (r *record) decode(b []byte) error { return r.decodeWith(b, nil) }

// decodeWith is decode taking r's strings from in (nil: none), which
// saves allocating a string that in holds already.
func (r *record) decodeWith(b []byte, in *wire.Interner) error {
	d := wire.Decoder{B: b, In: in}
	v := d.Byte()
	if v < 1 || v > recordVersion {
		return fmt.Errorf("%w: version %d", wire.ErrRecord, v)
	}
	w, date, back := d.Uvarint(), d.Varint(), d.Varint()
	if d.Bad || w > 1<<32-1 || date < -1<<31 || date > 1<<31-1 || back < 0 || back > 31 {
		return fmt.Errorf("%w: header", wire.ErrRecord)
	}
	r.website, r.date, r.period = uint32(w), buckets.Date(date), buckets.Date(date-back)
	flags := d.Byte()
	r.hour, r.event = flags&0x1f, flags&0x80 != 0
	r.ms = d.Varint()
	r.hash = d.Uint64()
	if d.Bad || r.hour > 23 {
		return fmt.Errorf("%w: hour, time or hash", wire.ErrRecord)
	}
	for i, s := range r.strs() {
		if s == &r.eventRow {
			*s = d.UniqueString() // event values rarely repeat
		} else {
			*s = d.String()
		}
		if d.Bad {
			return fmt.Errorf("%w: string %d", wire.ErrRecord, i)
		}
	}
	r.seg = segFields{scroll: -1}
	if v >= 2 {
		if err := r.seg.decode(&d, v); err != nil {
			return err
		}
	}
	if len(d.B) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", wire.ErrRecord, len(d.B))
	}
	return nil
}

func (f *segFields) decode(d *wire.Decoder, version byte) error {
	sf := d.Byte()
	f.engagement, f.nonInteractive = sf&1 != 0, sf&2 != 0
	for _, s := range f.strs() {
		if s == &f.landing {
			*s = d.UniqueString() // click ids make it unique to a visit
		} else {
			*s = d.String()
		}
	}
	id := d.Uvarint()
	n := d.Uvarint()
	if d.Bad || id > 1<<32-1 || n > MaxProps {
		return fmt.Errorf("%w: segment fields", wire.ErrRecord)
	}
	f.cityID = uint32(id)
	if n > 0 {
		f.props = make([]Prop, n)
		for i := range f.props {
			f.props[i] = Prop{Key: d.String(), Value: d.String()}
		}
	}
	f.engagedMs = d.Varint()
	f.scroll = int8(d.Byte())
	if d.Bad || f.scroll < -1 || f.scroll > 100 {
		return fmt.Errorf("%w: segment fields", wire.ErrRecord)
	}
	if version >= 3 {
		f.name, f.unit = d.String(), d.String()
		if d.Bad {
			return fmt.Errorf("%w: event name", wire.ErrRecord)
		}
	}
	return nil
}

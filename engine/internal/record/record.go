package record

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/wire"
)

// Hit is an enriched hit: what the write-ahead log holds. Replaying
// records in sequence order on the state of the last snapshot reproduces the
// statistics exactly (visitor numbering and visits are decided at apply time).
// The local day, hour and salt period are fixed at enrichment, in the time
// zone then in force, so a later change of time zone moves no old hit.
type Hit struct {
	Website uint32
	Date    buckets.Date
	Period  buckets.Date // first day of the salt period
	Hour    uint8
	Event   bool
	Ms      int64  // Unix milliseconds
	Hash    uint64 // visitor hash (salted)

	Page, RefHost, Campaign                   string
	Browser, OS, Device, Resolution, Language string
	Country, Continent, City                  string
	EventRow                                  string // "name:value:unit"

	Seg Seg // what the segments store keeps besides (version 2)
}

// Seg are the fields of a record only the segments store reads
// (SPEC §10.1).
type Seg struct {
	Engagement     bool // a Plausible engagement report: counted nowhere else
	NonInteractive bool // an event sent with interactive: false

	Path, Host string // page path without the query; the URL's host
	RefURL     string // referrer without scheme, www. and query: "news.ycombinator.com/item"
	// landing holds the landing URL's parameters that decide a visit's
	// source and channel (utm_*, source, ref, click ids), as a query string.
	Landing                      string
	BrowserVer, OSVer            string
	Region, RegionName, CityName string
	CityID                       uint32
	Props                        []Prop
	EngagedMs                    int64
	Scroll                       int8 // -1: unknown
	// name and unit are a custom event's name and unit as sent, ':'
	// kept (SPEC §2.4; version 3): eventRow has them with ':' made a
	// space, for the phpAnalytics event statistic. Empty in older
	// records, whose events the segments read from eventRow.
	Name, Unit string
}

func (f *Seg) strs() [9]*string {
	return [9]*string{&f.Path, &f.Host, &f.RefURL, &f.Landing, &f.BrowserVer, &f.OSVer,
		&f.Region, &f.RegionName, &f.CityName}
}

// Version is the version of the record encoding: 2 adds the segment
// fields, 3 an event's exact name and unit; older records (older logs)
// decode with the fields they lack empty.
const Version = 3

func (r *Hit) strs() [12]*string {
	return [12]*string{&r.Page, &r.RefHost, &r.Campaign, &r.Browser, &r.OS, &r.Device,
		&r.Resolution, &r.Language, &r.Country, &r.Continent, &r.City, &r.EventRow}
}

// appendBinary appends the encoding of r to b.
func (r *Hit) AppendBinary(b []byte) []byte {
	b = append(b, Version)
	b = binary.AppendUvarint(b, uint64(r.Website))
	b = binary.AppendVarint(b, int64(r.Date))
	b = binary.AppendVarint(b, int64(r.Date-r.Period))
	flags := r.Hour
	if r.Event {
		flags |= 0x80
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, r.Ms)
	b = binary.LittleEndian.AppendUint64(b, r.Hash)
	for _, s := range r.strs() {
		b = binary.AppendUvarint(b, uint64(len(*s)))
		b = append(b, *s...)
	}
	f := &r.Seg
	var sf byte
	if f.Engagement {
		sf |= 1
	}
	if f.NonInteractive {
		sf |= 2
	}
	b = append(b, sf)
	for _, s := range f.strs() {
		b = binary.AppendUvarint(b, uint64(len(*s)))
		b = append(b, *s...)
	}
	b = binary.AppendUvarint(b, uint64(f.CityID))
	b = binary.AppendUvarint(b, uint64(len(f.Props)))
	for _, p := range f.Props {
		b = binary.AppendUvarint(b, uint64(len(p.Key)))
		b = append(b, p.Key...)
		b = binary.AppendUvarint(b, uint64(len(p.Value)))
		b = append(b, p.Value...)
	}
	b = binary.AppendVarint(b, f.EngagedMs)
	b = append(b, byte(f.Scroll))
	for _, s := range [2]string{f.Name, f.Unit} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// decode parses b into r. It never panics and copies the strings out of b.
func (r *Hit) Decode(b []byte) error { return r.DecodeWith(b, nil) }

// decodeWith is decode taking r's strings from in (nil: none), which
// saves allocating a string that in holds already.
func (r *Hit) DecodeWith(b []byte, in *wire.Interner) error {
	d := wire.Decoder{B: b, In: in}
	v := d.Byte()
	if v < 1 || v > Version {
		return fmt.Errorf("%w: version %d", wire.ErrRecord, v)
	}
	w, date, back := d.Uvarint(), d.Varint(), d.Varint()
	if d.Bad || w > 1<<32-1 || date < -1<<31 || date > 1<<31-1 || back < 0 || back > 31 {
		return fmt.Errorf("%w: header", wire.ErrRecord)
	}
	r.Website, r.Date, r.Period = uint32(w), buckets.Date(date), buckets.Date(date-back)
	flags := d.Byte()
	r.Hour, r.Event = flags&0x1f, flags&0x80 != 0
	r.Ms = d.Varint()
	r.Hash = d.Uint64()
	if d.Bad || r.Hour > 23 {
		return fmt.Errorf("%w: hour, time or hash", wire.ErrRecord)
	}
	for i, s := range r.strs() {
		if s == &r.EventRow {
			*s = d.UniqueString() // event values rarely repeat
		} else {
			*s = d.String()
		}
		if d.Bad {
			return fmt.Errorf("%w: string %d", wire.ErrRecord, i)
		}
	}
	r.Seg = Seg{Scroll: -1}
	if v >= 2 {
		if err := r.Seg.decode(&d, v); err != nil {
			return err
		}
	}
	if len(d.B) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", wire.ErrRecord, len(d.B))
	}
	return nil
}

func (f *Seg) decode(d *wire.Decoder, version byte) error {
	sf := d.Byte()
	f.Engagement, f.NonInteractive = sf&1 != 0, sf&2 != 0
	for _, s := range f.strs() {
		if s == &f.Landing {
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
	f.CityID = uint32(id)
	if n > 0 {
		f.Props = make([]Prop, n)
		for i := range f.Props {
			f.Props[i] = Prop{Key: d.String(), Value: d.String()}
		}
	}
	f.EngagedMs = d.Varint()
	f.Scroll = int8(d.Byte())
	if d.Bad || f.Scroll < -1 || f.Scroll > 100 {
		return fmt.Errorf("%w: segment fields", wire.ErrRecord)
	}
	if version >= 3 {
		f.Name, f.Unit = d.String(), d.String()
		if d.Bad {
			return fmt.Errorf("%w: event name", wire.ErrRecord)
		}
	}
	return nil
}

// CustomEvent returns custom event r's name, value and unit for the
// segments: the name and unit as sent (records of version 3 on), else
// those of EventRow, where older records have them with ':' made a space.
func (r *Hit) CustomEvent() (name, value, unit string) {
	name, rest, _ := strings.Cut(r.EventRow, ":")
	value, unit, _ = strings.Cut(rest, ":")
	if r.Seg.Name != "" {
		name, unit = r.Seg.Name, r.Seg.Unit
	}
	return name, value, unit
}

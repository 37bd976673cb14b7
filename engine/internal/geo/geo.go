package geo

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strings"
	"sync"

	"github.com/oschwald/maxminddb-golang/v2"
	"github.com/phuslu/iploc"
)

// Location is where an IP address is, formatted as the statistics show it.
type Location struct {
	Country   string // "US:United States"; "" when unknown
	Continent string // "NA:North America"; "" when unknown
	City      string // "US:Chicago, IL" (CC:City name[, SUBDIVISION iso code]); "" without a .mmdb or when unknown

	// The segments store's finer fields (SPEC §10), all "" or 0 without a
	// City .mmdb or when unknown.
	Region     string // ISO 3166-2 code of the first subdivision: "US-IL"
	RegionName string // its English name: "Illinois"
	CityName   string // the city's English name: "Chicago"
	CityID     uint32 // its GeoNames id: 4887398
}

// Locator looks up IP addresses. It is safe for concurrent use, except that
// Close must not run concurrently with Lookup.
type Locator struct {
	db *maxminddb.Reader // nil without a .mmdb, or after Close
	// cities: the .mmdb is a City (or Enterprise) database, which names
	// cities; a Country one does not.
	cities bool

	// pool holds *record values to decode into, so that decoding a record
	// with subdivisions reuses its slice.
	pool sync.Pool
}

// record is the part of a GeoIP2/GeoLite2/DB-IP City or Country record the
// package reads.
type record struct {
	City struct {
		GeoNameID uint32 `maxminddb:"geoname_id"`
		Names     struct {
			En string `maxminddb:"en"`
		} `maxminddb:"names"`
	} `maxminddb:"city"`
	Continent struct {
		Code string `maxminddb:"code"`
	} `maxminddb:"continent"`
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	RegisteredCountry struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"registered_country"`
	Subdivisions []struct {
		ISOCode string `maxminddb:"iso_code"`
		Names   struct {
			En string `maxminddb:"en"`
		} `maxminddb:"names"`
	} `maxminddb:"subdivisions"`
}

// Open returns a Locator. mmdbPath "" uses only the embedded database
// (phuslu/iploc: country only). Otherwise it opens a MaxMind/DB-IP City or
// Country .mmdb with oschwald/maxminddb-golang/v2; a bad path or file is an
// error naming the path. The file is memory-mapped: do not rewrite it in place
// while the Locator is open (replace it and open a new Locator instead).
func Open(mmdbPath string) (*Locator, error) {
	l := &Locator{}
	l.pool.New = func() any { return new(record) }
	if mmdbPath == "" {
		return l, nil
	}
	db, err := maxminddb.Open(mmdbPath)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is said once, below
		}
		return nil, fmt.Errorf("geo: open %s: %w", mmdbPath, err)
	}
	if t := strings.ToLower(db.Metadata.DatabaseType); !strings.Contains(t, "city") &&
		!strings.Contains(t, "country") && !strings.Contains(t, "enterprise") {
		db.Close()
		return nil, fmt.Errorf("geo: open %s: %w (database type %q)", mmdbPath, ErrNotGeoDatabase, db.Metadata.DatabaseType)
	}
	l.db = db
	t := strings.ToLower(db.Metadata.DatabaseType)
	l.cities = strings.Contains(t, "city") || strings.Contains(t, "enterprise")
	return l, nil
}

// Cities reports whether the Locator was opened with a database that names
// cities (a City or Enterprise .mmdb): without one, every city is unknown.
func (l *Locator) Cities() bool { return l.cities }

// ErrNotGeoDatabase is returned (wrapped; use errors.Is) by Open for a valid
// .mmdb file that holds neither City nor Country data, such as an ASN
// database.
var ErrNotGeoDatabase = errors.New("not a City or Country database")

// Close releases the .mmdb file, if any. Lookups after Close use only the
// embedded database.
func (l *Locator) Close() error {
	if l.db == nil {
		return nil
	}
	err := l.db.Close()
	l.db = nil
	return err
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598), which
// netip does not count as private.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// public reports whether ip can be located.
func public(ip netip.Addr) bool {
	return ip.IsValid() && ip.IsGlobalUnicast() && !ip.IsPrivate() && !cgnat.Contains(ip)
}

// Lookup returns the location of ip. IPv4-mapped IPv6 addresses
// (::ffff:1.2.3.4) are looked up as IPv4. Unknown, private and reserved
// addresses give the zero Location.
func (l *Locator) Lookup(ip netip.Addr) Location {
	ip = ip.Unmap()
	if !public(ip) {
		return Location{}
	}
	var loc Location
	if l.db != nil {
		loc = l.lookupDB(ip)
		if loc.Country != "" {
			return loc
		}
	}
	if c, ok := lookupCountry(iploc.IPCountry(ip)); ok {
		loc.Country, loc.Continent = c.label, c.contLabel
	}
	return loc
}

// lookupDB reads ip's record from the .mmdb. The Location has no Country
// when the record names none (and may then carry only a Continent).
func (l *Locator) lookupDB(ip netip.Addr) Location {
	res := l.db.Lookup(ip)
	if !res.Found() {
		return Location{}
	}
	r := l.pool.Get().(*record)
	defer l.pool.Put(r)
	*r = record{Subdivisions: r.Subdivisions[:0]}
	if err := res.Decode(r); err != nil {
		return Location{} // a damaged record: fall back to the embedded data
	}
	code := r.Country.ISOCode
	if code == "" {
		code = r.RegisteredCountry.ISOCode
	}
	c, ok := lookupCountry(code)
	if !ok {
		return Location{Continent: continentLabels[r.Continent.Code]}
	}
	loc := Location{Country: c.label, Continent: c.contLabel}
	if len(r.Subdivisions) > 0 && r.Subdivisions[0].ISOCode != "" && code == r.Country.ISOCode {
		loc.Region = code + "-" + r.Subdivisions[0].ISOCode
		loc.RegionName = r.Subdivisions[0].Names.En
	}
	if city := r.City.Names.En; city != "" && code == r.Country.ISOCode {
		loc.CityName, loc.CityID = city, r.City.GeoNameID
		if len(r.Subdivisions) > 0 && r.Subdivisions[0].ISOCode != "" {
			loc.City = code + ":" + city + ", " + r.Subdivisions[0].ISOCode
		} else {
			loc.City = code + ":" + city
		}
	}
	return loc
}

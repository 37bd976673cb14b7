// Package geo locates IP addresses: country and continent always, city when
// a MaxMind or DB-IP .mmdb database is configured.
//
// Without a database file, countries come from the IP2Location LITE data
// embedded by github.com/phuslu/iploc (country only). With one, its record
// wins whenever it names a country; the embedded data fills the gaps.
//
// Country and continent labels are "CC:Name" (US:United States,
// EU:Europe). Names are English and fixed by this package (see CountryName),
// not taken from the database, so that the same country is one row whatever
// the source. Continents are derived from the country (see ContinentOf).
// Private, loopback, link-local, multicast, CGNAT and unspecified addresses
// have no location.
package geo

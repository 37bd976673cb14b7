package geo

import "strings"

// FromCodes returns the Location of a country given by its ISO 3166-1
// alpha-2 code (case ignored), with the finer fields as given: what an
// import that carries a location instead of an IP address (a peer's
// export, webstats' own) is counted under. region is an ISO 3166-2 code
// ("US-IL") of that country or ""; city an English name. An unknown
// country code gives the zero Location: unknown, as an unknown address.
func FromCodes(country, region, regionName, city string, cityID uint32) Location {
	c, ok := lookupCountry(strings.ToUpper(country))
	if !ok {
		return Location{}
	}
	code := strings.ToUpper(country)
	loc := Location{Country: c.label, Continent: c.contLabel}
	sub := ""
	if rest, ok := strings.CutPrefix(strings.ToUpper(region), code+"-"); ok && rest != "" {
		loc.Region, loc.RegionName, sub = code+"-"+rest, regionName, rest
	}
	if city != "" {
		loc.CityName, loc.CityID = city, cityID
		if sub != "" {
			loc.City = code + ":" + city + ", " + sub
		} else {
			loc.City = code + ":" + city
		}
	}
	return loc
}

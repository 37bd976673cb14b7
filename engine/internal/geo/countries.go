package geo

import (
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// Continent codes and names, as MaxMind and GeoNames spell them.
var continentNames = map[string]string{
	"AF": "Africa",
	"AN": "Antarctica",
	"AS": "Asia",
	"EU": "Europe",
	"NA": "North America",
	"OC": "Oceania",
	"SA": "South America",
}

// m49Continents maps UN M.49 regions to continents, most specific first:
// South America is tested before the Americas, whose remainder (Northern and
// Central America, the Caribbean) is North America.
var m49Continents = []struct{ region, continent string }{
	{"AQ", "AN"},
	{"005", "SA"},
	{"019", "NA"},
	{"002", "AF"},
	{"142", "AS"},
	{"150", "EU"},
	{"009", "OC"},
}

// continentOverrides are the countries where MaxMind (which follows
// GeoNames) and UN M.49 disagree; MaxMind wins, so that a country's continent
// is the same with or without a .mmdb. Russia (EU) and Turkey (AS) need no
// override: both sources agree.
var continentOverrides = map[string]string{
	"CY": "EU", // M.49: Western Asia
	"TL": "OC", // M.49: South-eastern Asia
	"CC": "AS", // M.49: Australia and New Zealand
	"CX": "AS",
	"IO": "AS", // M.49: Eastern Africa
	"BV": "AN", // M.49: South America
	"GS": "AN",
	"HM": "AN", // M.49: Australia and New Zealand
	"TF": "AN", // M.49: Eastern Africa
}

// nameOverrides replace CLDR names (as shipped in golang.org/x/text) with the
// names people know and MaxMind uses. Two more rules apply to every name:
// " & " becomes " and ", a leading "St. " becomes "Saint ".
var nameOverrides = map[string]string{
	"CD": "DR Congo",       // CLDR: Congo - Kinshasa
	"CG": "Congo Republic", // CLDR: Congo - Brazzaville
	"CI": "Ivory Coast",    // CLDR: Côte d’Ivoire
	"HK": "Hong Kong",      // CLDR: Hong Kong SAR China
	"MK": "North Macedonia",
	"MM": "Myanmar",   // CLDR: Myanmar (Burma)
	"MO": "Macao",     // CLDR: Macau SAR China
	"PS": "Palestine", // CLDR: Palestinian Territories
	"SZ": "Eswatini",
	"UM": "U.S. Minor Outlying Islands",
}

// notCountries are two-letter codes that CLDR knows as regions but ISO 3166-1
// does not assign to a country (exceptional reservations).
var notCountries = map[string]bool{
	"AC": true, "CP": true, "DG": true, "EA": true, "IC": true, "TA": true,
}

// country is what the package knows about one ISO 3166-1 alpha-2 code.
type country struct {
	name      string // "United States"
	label     string // "US:United States", as Location.Country shows it
	continent string // "NA"
	contLabel string // "NA:North America", as Location.Continent shows it
}

// countries is indexed by countryIndex; built once at start-up so that
// lookups only index an array.
var countries = buildCountries()

// continentLabels maps a continent code to "CC:Name".
var continentLabels = func() map[string]string {
	m := make(map[string]string, len(continentNames))
	for code, name := range continentNames {
		m[code] = code + ":" + name
	}
	return m
}()

func buildCountries() *[26 * 26]country {
	var t [26 * 26]country
	names := display.English.Regions()
	conts := make([]language.Region, len(m49Continents))
	for i, c := range m49Continents {
		conts[i] = language.MustParseRegion(c.region)
	}
	for a := byte('A'); a <= 'Z'; a++ {
		for b := byte('A'); b <= 'Z'; b++ {
			code := string([]byte{a, b})
			r, err := language.ParseRegion(code)
			if err != nil || !r.IsCountry() || r.Canonicalize().String() != code || notCountries[code] {
				continue
			}
			cont := continentOverrides[code]
			for i := 0; cont == "" && i < len(conts); i++ {
				if conts[i].Contains(r) {
					cont = m49Continents[i].continent
				}
			}
			name := nameOverrides[code]
			if name == "" {
				name = names.Name(r)
				name = strings.ReplaceAll(name, " & ", " and ")
				if rest, ok := strings.CutPrefix(name, "St. "); ok {
					name = "Saint " + rest
				}
			}
			if cont == "" || name == "" {
				continue // groupings such as EZ (Eurozone), UN, retired codes
			}
			t[countryIndex(a, b)] = country{
				name:      name,
				label:     code + ":" + name,
				continent: cont,
				contLabel: continentLabels[cont],
			}
		}
	}
	return &t
}

func countryIndex(a, b byte) int { return int(a-'A')*26 + int(b-'A') }

// lookupCountry returns the entry of an upper-case ISO 3166-1 alpha-2 code;
// ok is false for anything else (including "ZZ", "EU", "").
func lookupCountry(code string) (*country, bool) {
	if len(code) != 2 {
		return nil, false
	}
	a, b := code[0], code[1]
	if a < 'A' || a > 'Z' || b < 'A' || b > 'Z' {
		return nil, false
	}
	c := &countries[countryIndex(a, b)]
	return c, c.name != ""
}

// CountryName returns the English name of an ISO 3166-1 alpha-2 country code
// as the statistics show it ("US" → "United States", "KR" → "South Korea",
// "GB" → "United Kingdom"), or "" for a code that names no country. Case is
// ignored.
func CountryName(code string) string {
	c, ok := lookupCountry(strings.ToUpper(code))
	if !ok {
		return ""
	}
	return c.name
}

// ContinentOf returns the continent code (AF, AN, AS, EU, NA, OC, SA) of an
// ISO 3166-1 alpha-2 country code, or "" for a code that names no country.
// Case is ignored. Central America and the Caribbean are North America;
// Russia is Europe, Turkey Asia, Cyprus Europe, as in MaxMind's databases.
func ContinentOf(code string) string {
	c, ok := lookupCountry(strings.ToUpper(code))
	if !ok {
		return ""
	}
	return c.continent
}

// ContinentName returns the English name of a continent code ("EU" →
// "Europe"), or "".
func ContinentName(code string) string {
	return continentNames[strings.ToUpper(code)]
}

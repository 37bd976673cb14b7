package geo

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

var update = flag.Bool("update", false, "rewrite testdata/countries.golden")

// names builds a GeoIP2 "names" map.
func names(en string) mmdbtype.Map {
	return mmdbtype.Map{"en": mmdbtype.String(en), "de": mmdbtype.String(en + " (de)")}
}

// writeDB writes a small database in the GeoIP2-City layout and returns its
// path.
func writeDB(t testing.TB, dbType string) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, RecordSize: 24, Languages: []string{"en", "de"}})
	if err != nil {
		t.Fatal(err)
	}
	continent := func(code, name string) mmdbtype.Map {
		return mmdbtype.Map{"code": mmdbtype.String(code), "geoname_id": mmdbtype.Uint32(1), "names": names(name)}
	}
	country := func(iso, name string) mmdbtype.Map {
		return mmdbtype.Map{"iso_code": mmdbtype.String(iso), "geoname_id": mmdbtype.Uint32(2), "names": names(name)}
	}
	subdivision := func(iso, name string) mmdbtype.Slice {
		return mmdbtype.Slice{
			mmdbtype.Map{"iso_code": mmdbtype.String(iso), "names": names(name)},
			mmdbtype.Map{"iso_code": mmdbtype.String("XX"), "names": names("second level")},
		}
	}
	city := func(name string) mmdbtype.Map {
		return mmdbtype.Map{"geoname_id": mmdbtype.Uint32(3), "names": names(name)}
	}
	records := map[string]mmdbtype.Map{
		"81.2.69.0/24": {
			"city": city("London"), "continent": continent("EU", "Europe"),
			"country": country("GB", "United Kingdom"), "registered_country": country("GB", "United Kingdom"),
			"subdivisions": subdivision("ENG", "England"),
		},
		"216.160.83.0/24": {
			"city": city("Chicago"), "continent": continent("NA", "North America"),
			"country": country("US", "United States"), "subdivisions": subdivision("IL", "Illinois"),
			"location": mmdbtype.Map{"latitude": mmdbtype.Float64(41.88), "longitude": mmdbtype.Float64(-87.63)},
		},
		// A city without subdivision.
		"202.196.224.0/24": {
			"city": city("Singapore"), "continent": continent("AS", "Asia"), "country": country("SG", "Singapore"),
		},
		// Country only, as in a Country database. The name in the file is
		// not the one shown: the package's names win.
		"89.160.20.0/24": {"continent": continent("EU", "Europe"), "country": country("SE", "Kingdom of Sweden")},
		// Registered country only (no "country").
		"67.43.156.0/24": {"continent": continent("AS", "Asia"), "registered_country": country("BT", "Bhutan")},
		// Continent only: the embedded data decides the country.
		"8.8.4.0/24": {"continent": continent("NA", "North America")},
		// A country code that is no country: continent kept, country from
		// the embedded data.
		"9.9.9.0/24": {"continent": continent("EU", "Europe"), "country": country("EU", "European Union")},
		// IPv6.
		"2001:218::/32": {
			"city": city("Tokyo"), "continent": continent("AS", "Asia"), "country": country("JP", "Japan"),
			"subdivisions": subdivision("13", "Tokyo"),
		},
	}
	for cidr, rec := range records {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.Insert(network, rec); err != nil {
			t.Fatalf("insert %s: %v", cidr, err)
		}
	}
	path := filepath.Join(t.TempDir(), "test.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func openTest(t testing.TB, path string) *Locator {
	t.Helper()
	l, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestLookupMMDB(t *testing.T) {
	l := openTest(t, writeDB(t, "GeoIP2-City"))
	tests := []struct {
		ip   string
		want Location
	}{
		{ip: "81.2.69.142", want: Location{Country: "GB:United Kingdom", Continent: "EU:Europe", City: "GB:London, ENG", Region: "GB-ENG", RegionName: "England", CityName: "London", CityID: 3}},
		{ip: "::ffff:81.2.69.142", want: Location{Country: "GB:United Kingdom", Continent: "EU:Europe", City: "GB:London, ENG", Region: "GB-ENG", RegionName: "England", CityName: "London", CityID: 3}},
		{ip: "216.160.83.56", want: Location{Country: "US:United States", Continent: "NA:North America", City: "US:Chicago, IL", Region: "US-IL", RegionName: "Illinois", CityName: "Chicago", CityID: 3}},
		{ip: "202.196.224.1", want: Location{Country: "SG:Singapore", Continent: "AS:Asia", City: "SG:Singapore", CityName: "Singapore", CityID: 3}},
		{ip: "89.160.20.112", want: Location{Country: "SE:Sweden", Continent: "EU:Europe"}},
		{ip: "67.43.156.1", want: Location{Country: "BT:Bhutan", Continent: "AS:Asia"}},
		{ip: "2001:218::1", want: Location{Country: "JP:Japan", Continent: "AS:Asia", City: "JP:Tokyo, 13", Region: "JP-13", RegionName: "Tokyo", CityName: "Tokyo", CityID: 3}},
		// Not in the file, or no country in it: the embedded data.
		{ip: "8.8.8.8", want: Location{Country: "US:United States", Continent: "NA:North America"}},
		{ip: "8.8.4.4", want: Location{Country: "US:United States", Continent: "NA:North America"}},
		{ip: "9.9.9.9", want: Location{Country: "US:United States", Continent: "NA:North America"}},
		{ip: "46.4.0.1", want: Location{Country: "DE:Germany", Continent: "EU:Europe"}},
		// Never located.
		{ip: "192.168.1.1", want: Location{}},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, l.Lookup(netip.MustParseAddr(tt.ip))); diff != "" {
				t.Errorf("Lookup(%s) mismatch (-want +got):\n%s", tt.ip, diff)
			}
		})
	}
	// After Close only the embedded data is left.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := Location{Country: "GB:United Kingdom", Continent: "EU:Europe"}
	if diff := cmp.Diff(want, l.Lookup(netip.MustParseAddr("81.2.69.142"))); diff != "" {
		t.Errorf("Lookup after Close mismatch (-want +got):\n%s", diff)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.mmdb")
	if err := os.WriteFile(corrupt, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.mmdb")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	asn := writeDB(t, "GeoLite2-ASN")
	for _, path := range []string{filepath.Join(dir, "missing.mmdb"), corrupt, empty, dir, asn} {
		l, err := Open(path)
		if err == nil {
			l.Close()
			t.Errorf("Open(%q) succeeded", path)
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("Open(%q) error %q does not name the path", path, err)
		}
	}
	if _, err := Open(asn); !errors.Is(err, ErrNotGeoDatabase) {
		t.Errorf("Open(ASN database) = %v, want ErrNotGeoDatabase", err)
	}
	if _, err := Open(filepath.Join(dir, "missing.mmdb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want os.ErrNotExist", err)
	}
}

// TestLookupEmbedded checks the embedded data against well-known addresses.
// Expected countries were read from phuslu/iploc v1.0.20260915 (IP2Location
// LITE): 1.1.1.1 is Cloudflare's anycast, registered to APNIC's research
// prefix in Australia.
func TestLookupEmbedded(t *testing.T) {
	l := openTest(t, "")
	tests := []struct {
		ip   string
		want string // Location.Country
	}{
		{ip: "8.8.8.8", want: "US:United States"},
		{ip: "9.9.9.9", want: "US:United States"},
		{ip: "1.1.1.1", want: "AU:Australia"},
		{ip: "46.4.0.1", want: "DE:Germany"},            // Hetzner
		{ip: "5.9.0.1", want: "DE:Germany"},             // Hetzner
		{ip: "133.242.0.1", want: "JP:Japan"},           // Sakura Internet
		{ip: "210.130.0.1", want: "JP:Japan"},           // IIJ
		{ip: "200.147.0.1", want: "BR:Brazil"},          // UOL
		{ip: "177.0.0.1", want: "BR:Brazil"},            // LACNIC, Brazil
		{ip: "212.58.244.1", want: "GB:United Kingdom"}, // BBC
		{ip: "2a01:4f8::1", want: "DE:Germany"},
		{ip: "2001:4860:4860::8888", want: "US:United States"},
		{ip: "::ffff:8.8.8.8", want: "US:United States"},
		// Not located.
		{ip: "0.0.0.0", want: ""},
		{ip: "10.1.2.3", want: ""},
		{ip: "100.64.0.1", want: ""},
		{ip: "127.0.0.1", want: ""},
		{ip: "169.254.1.1", want: ""},
		{ip: "172.16.0.1", want: ""},
		{ip: "192.168.1.1", want: ""},
		{ip: "224.0.0.1", want: ""},
		{ip: "255.255.255.255", want: ""},
		{ip: "::", want: ""},
		{ip: "::1", want: ""},
		{ip: "fe80::1", want: ""},
		{ip: "fc00::1", want: ""},
		{ip: "ff02::1", want: ""},
		{ip: "::ffff:192.168.1.1", want: ""},
		{ip: "2001:db8::1", want: ""}, // documentation: ZZ in the data
	}
	for _, tt := range tests {
		got := l.Lookup(netip.MustParseAddr(tt.ip))
		if got.Country != tt.want {
			t.Errorf("Lookup(%s).Country = %q, want %q", tt.ip, got.Country, tt.want)
		}
		if (got.Continent == "") != (tt.want == "") || got.City != "" {
			t.Errorf("Lookup(%s) = %+v: want a continent exactly when a country, never a city", tt.ip, got)
		}
	}
	if got := l.Lookup(netip.Addr{}); got != (Location{}) {
		t.Errorf("Lookup(zero Addr) = %+v, want zero", got)
	}
}

func TestContinentOf(t *testing.T) {
	tests := map[string]string{
		"US": "NA", "CA": "NA", "MX": "NA", "GT": "NA", "PA": "NA", "CU": "NA", "JM": "NA", "GL": "NA",
		"BR": "SA", "AR": "SA", "CO": "SA", "FK": "SA",
		"DE": "EU", "GB": "EU", "FR": "EU", "RU": "EU", "UA": "EU", "CY": "EU", "XK": "EU",
		"TR": "AS", "JP": "AS", "CN": "AS", "IN": "AS", "IL": "AS", "KZ": "AS", "GE": "AS", "AM": "AS", "AZ": "AS", "SA": "AS",
		"EG": "AF", "NG": "AF", "ZA": "AF", "MA": "AF", "KE": "AF",
		"AU": "OC", "NZ": "OC", "FJ": "OC", "PG": "OC", "TL": "OC",
		"AQ": "AN", "BV": "AN", "GS": "AN", "TF": "AN", "HM": "AN",
		"us": "NA", "ZZ": "", "EU": "", "AP": "", "": "", "USA": "", "U1": "", "EZ": "", "UN": "", "AC": "",
	}
	for code, want := range tests {
		if got := ContinentOf(code); got != want {
			t.Errorf("ContinentOf(%q) = %q, want %q", code, got, want)
		}
	}
}

func TestCountryName(t *testing.T) {
	tests := map[string]string{
		"US": "United States", "GB": "United Kingdom", "DE": "Germany", "KR": "South Korea",
		"KP": "North Korea", "RU": "Russia", "CZ": "Czechia", "HK": "Hong Kong", "MO": "Macao",
		"TW": "Taiwan", "VN": "Vietnam", "IR": "Iran", "CI": "Ivory Coast", "CD": "DR Congo",
		"CG": "Congo Republic", "MK": "North Macedonia", "SZ": "Eswatini", "MM": "Myanmar",
		"PS": "Palestine", "BA": "Bosnia and Herzegovina", "LC": "Saint Lucia",
		"TT": "Trinidad and Tobago", "TR": "Turkey", "XK": "Kosovo", "ZZ": "", "": "",
	}
	for code, want := range tests {
		if got := CountryName(code); got != want {
			t.Errorf("CountryName(%q) = %q, want %q", code, got, want)
		}
	}
	if got := ContinentName("EU"); got != "Europe" {
		t.Errorf(`ContinentName("EU") = %q`, got)
	}
}

// TestCountriesGolden pins every country label, so that a golang.org/x/text
// upgrade that renames a country (and would split its statistics) is noticed.
// Run with -update to accept a change deliberately.
func TestCountriesGolden(t *testing.T) {
	var b strings.Builder
	n := 0
	for a := byte('A'); a <= 'Z'; a++ {
		for c := byte('A'); c <= 'Z'; c++ {
			e := countries[countryIndex(a, c)]
			if e.name == "" {
				continue
			}
			n++
			fmt.Fprintf(&b, "%s\t%s\n", e.label, e.contLabel)
			if strings.Contains(e.name, ":") || e.contLabel == "" {
				t.Errorf("bad entry %+v", e)
			}
		}
	}
	if n < 240 || n > 260 {
		t.Errorf("%d countries; ISO 3166-1 has 249 (plus XK)", n)
	}
	path := filepath.Join("testdata", "countries.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("countries mismatch (-want +got):\n%s", diff)
	}
}

func BenchmarkLookup(b *testing.B) {
	ips := []netip.Addr{
		netip.MustParseAddr("81.2.69.142"), netip.MustParseAddr("216.160.83.56"),
		netip.MustParseAddr("89.160.20.112"), netip.MustParseAddr("8.8.8.8"),
		netip.MustParseAddr("2001:218::1"), netip.MustParseAddr("2a01:4f8::1"),
	}
	for _, tc := range []struct{ name, path string }{
		{"db=embedded", ""},
		{"db=mmdb", writeDB(b, "GeoIP2-City")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l := openTest(b, tc.path)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				l.Lookup(ips[i%len(ips)])
				i++
			}
		})
	}
}

// TestCities checks which databases name cities: a City or Enterprise
// .mmdb does, a Country one and the embedded data do not (the statistics
// pages then say how to add one).
func TestCities(t *testing.T) {
	for _, tc := range []struct {
		dbType string
		want   bool
	}{
		{"", false},
		{"GeoIP2-City", true},
		{"DBIP-City-Lite", true},
		{"GeoIP2-Enterprise", true},
		{"GeoLite2-Country", false},
	} {
		path := ""
		if tc.dbType != "" {
			path = writeDB(t, tc.dbType)
		}
		if got := openTest(t, path).Cities(); got != tc.want {
			t.Errorf("%q: Cities() = %v, want %v", tc.dbType, got, tc.want)
		}
	}
}

package httpd

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/webstats/webstats/engine"
)

// givenAgentKeys and givenLocationKeys are the keys an import line may
// carry instead of a user agent and an IP address (SPEC §14: whatever a
// peer's export or webstats' own export holds, an import can record).
var (
	givenAgentKeys    = []string{"browser", "browser_version", "os", "os_version", "device"}
	givenLocationKeys = []string{"country", "region", "region_name", "city"}
)

// checkGiven reads an import line's given device, browser, OS and
// location (README "Moving in and out"): any of the agent keys makes the
// line's agent those values (an absent one unknown); any of the location
// keys, or city_id, its location.
func checkGiven(obj map[string]json.RawMessage, at string, h *engine.Hit, fe *fieldErrors) {
	var g engine.Given
	str := func(name string, dst *string) bool {
		raw, ok := obj[name]
		if !ok || isNull(raw) {
			return false
		}
		v, _, isStr := jsonString(raw)
		switch {
		case !isStr:
			field := at + "." + name
			fe.add(field, "The "+field+" must be a string.")
		case utf8.RuneCountInString(v) > maxImportUnit*8:
			field := at + "." + name
			fe.add(field, "The "+field+" must not be greater than "+strconv.Itoa(maxImportUnit*8)+" characters.")
		default:
			*dst = v
		}
		return true
	}
	agent := [...]*string{&g.Browser, &g.BrowserVersion, &g.OS, &g.OSVersion, &g.Device}
	for i, k := range givenAgentKeys {
		if str(k, agent[i]) {
			g.Agent = true
		}
	}
	switch g.Device {
	case "", "desktop", "mobile", "tablet":
	default:
		fe.add(at+".device", "The "+at+".device must be desktop, mobile or tablet.")
	}
	loc := [...]*string{&g.Country, &g.Region, &g.RegionName, &g.City}
	for i, k := range givenLocationKeys {
		if str(k, loc[i]) {
			g.Location = true
		}
	}
	if raw, ok := obj["city_id"]; ok && !isNull(raw) {
		n, err := strconv.ParseUint(string(raw), 10, 32)
		if err != nil {
			fe.add(at+".city_id", "The "+at+".city_id must be a GeoNames id (a positive integer).")
		}
		g.CityID, g.Location = uint32(n), true
	}
	if g.Agent || g.Location {
		h.Given = &g
	}
}

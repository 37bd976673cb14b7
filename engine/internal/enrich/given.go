package enrich

import (
	"github.com/webstats/webstats/engine/internal/geo"
	"github.com/webstats/webstats/engine/internal/ua"
)

// Given is what an imported hit may carry instead of a user agent and an
// IP address: its device, browser and OS, and its location, as a peer's
// export (GoatCounter, Umami) or webstats' own export (SPEC §14) holds
// them. A hit with a Given is counted under exactly these values.
type Given struct {
	// Agent, when true, makes Browser, BrowserVersion, OS, OSVersion and
	// Device the hit's ("" is unknown); the user agent, if any, then only
	// decides whether the hit is a bot.
	Agent                   bool
	Browser, BrowserVersion string
	OS, OSVersion           string
	Device                  string // "desktop", "mobile", "tablet" or ""
	// Location, when true, makes Country (ISO 3166-1 alpha-2), Region (ISO
	// 3166-2, "US-IL"), RegionName, City (English name) and CityID the
	// hit's location instead of the IP address's.
	Location                          bool
	Country, Region, RegionName, City string
	CityID                            uint32
}

// agent returns the hit's agent: g's when it gives one, else parsed.
func (g *Given) agent(parsed ua.Agent) ua.Agent {
	if g == nil || !g.Agent {
		return parsed
	}
	return ua.Agent{Browser: g.Browser, BrowserVersion: g.BrowserVersion, OS: g.OS, OSVersion: g.OSVersion,
		Device: g.Device, Bot: parsed.Bot}
}

// location returns the hit's location: g's when it gives one, else looked up.
func (g *Given) location(looked func() geo.Location) geo.Location {
	if g == nil || !g.Location {
		return looked()
	}
	return geo.FromCodes(g.Country, g.Region, g.RegionName, g.City, g.CityID)
}

package ua

import "strings"

// The names Plausible gives browsers, operating systems and devices, which
// its own clients send in filters and receive in results (SPEC §10.3:
// Plausible's labels at Plausible's door). webstats keeps its own names
// (Agent's) in what it stores and in the phpAnalytics statistics; the
// Plausible query model shows these, and its filters take either
// spelling. This file is the one table of them.
//
// Plausible names a client by matomo-org/device-detector's lists, which it
// reads through elixir-inspector/ua_inspector
// (regexes/client/browsers.yml and the short code maps of
// matomo-org/device-detector Parser/Client/Browser.php and
// Parser/OperatingSystem.php: "Microsoft Edge", "Samsung Browser",
// "DuckDuckGo Privacy Browser", "Whale Browser"; "Mac", "GNU/Linux",
// "Chrome OS", "BlackBerry OS"), then folds a few of them together in
// plausible/analytics lib/plausible/ingestion/event.ex (browser_name:
// "Mobile Safari" is "Safari", "Opera Mini" is "Opera", a client of type
// "mobile app", such as the Facebook, Instagram and TikTok in-app
// browsers, is "Mobile App"). Names missing here are the same in both.

// plausibleBrowsers maps Agent.Browser names to Plausible's.
var plausibleBrowsers = map[string]string{
	"Edge":             "Microsoft Edge",
	"Opera Mini":       "Opera",
	"Samsung Internet": "Samsung Browser",
	"DuckDuckGo":       "DuckDuckGo Privacy Browser",
	"Whale":            "Whale Browser",
	"Facebook":         "Mobile App",
	"Instagram":        "Mobile App",
	"TikTok":           "Mobile App",
}

// plausibleOSes maps Agent.OS names to Plausible's.
var plausibleOSes = map[string]string{
	"macOS":      "Mac",
	"Linux":      "GNU/Linux",
	"ChromeOS":   "Chrome OS",
	"BlackBerry": "BlackBerry OS",
}

// PlausibleBrowser is Plausible's name of browser b (an Agent.Browser).
func PlausibleBrowser(b string) string {
	if p, ok := plausibleBrowsers[b]; ok {
		return p
	}
	return b
}

// PlausibleOS is Plausible's name of operating system os (an Agent.OS).
func PlausibleOS(os string) string {
	if p, ok := plausibleOSes[os]; ok {
		return p
	}
	return os
}

// PlausibleDevice is Plausible's name of device d (an Agent.Device):
// "Desktop", "Mobile", "Tablet".
func PlausibleDevice(d string) string {
	if d == "" {
		return ""
	}
	return strings.ToUpper(d[:1]) + d[1:]
}

package ua

import (
	"strings"

	"github.com/mileusna/useragent"
)

// Agent is what a user-agent string says about its client.
//
// Browser, OS and Device take their values from fixed sets so that they are
// stable across library upgrades:
//
//   - Browser: "Chrome", "Firefox", "Safari", "Edge", "Opera", "Opera Mini",
//     "Samsung Internet", "Vivaldi", "Yandex Browser", "Brave", "Chromium",
//     "Internet Explorer", "DuckDuckGo", "UC Browser", "QQ Browser", "Whale",
//     "Coc Coc", "Huawei Browser", "MIUI Browser", "Android Browser",
//     "Facebook", "Instagram", "TikTok", "Headless Chrome". Other
//     Chromium-based browsers, Electron apps and in-app web views count as
//     "Chrome", other Gecko-based browsers (Pale Moon, Waterfox, …) as
//     "Firefox"; anything else is "".
//   - OS: "Windows", "macOS", "Linux", "Android", "iOS" (iPadOS included:
//     an iPad says "iOS" with Device "tablet", or looks like a Mac when it
//     asks for desktop sites), "ChromeOS", "FreeBSD", "Windows Phone",
//     "BlackBerry", "HarmonyOS"; "" when unknown.
//   - Device: "desktop", "mobile", "tablet"; "" when unknown.
type Agent struct {
	Browser string // "Chrome", "Firefox", "Safari", "Edge", "Opera", "Samsung Internet", ... ; "" when unknown
	OS      string // "Windows", "macOS", "Linux", "Android", "iOS", "ChromeOS", ... ; "" when unknown
	Device  string // "desktop", "mobile", "tablet"; "" when unknown
	Bot     bool

	// BrowserVersion and OSVersion are "major.minor" ("120.0", "10.15"),
	// "" when unknown or when Browser (OS) is "".
	BrowserVersion, OSVersion string
}

// Device values.
const (
	Desktop = "desktop"
	Mobile  = "mobile"
	Tablet  = "tablet"
)

// browserNames maps the parser's names to ours. Names missing here fall back
// to the engine (see engineBrowser) or to "".
var browserNames = map[string]string{
	useragent.Chrome:           "Chrome",
	useragent.HeadlessChrome:   "Headless Chrome",
	useragent.Firefox:          "Firefox",
	useragent.Safari:           "Safari",
	useragent.MobileSafari:     "Safari",
	useragent.Edge:             "Edge",
	useragent.Opera:            "Opera",
	useragent.OperaMini:        "Opera Mini",
	useragent.OperaTouch:       "Opera",
	useragent.SamsungBrowser:   "Samsung Internet",
	useragent.Vivaldi:          "Vivaldi",
	useragent.InternetExplorer: "Internet Explorer",
	"Trident":                  "Internet Explorer",
	"YaBrowser":                "Yandex Browser",
	"Brave":                    "Brave",
	"Chromium":                 "Chromium",
	"Ubuntu Chromium":          "Chromium",
	"DuckDuckGo":               "DuckDuckGo",
	"Mobile DuckDuckGo":        "DuckDuckGo",
	"UCBrowser":                "UC Browser",
	"QQBrowser":                "QQ Browser",
	"Whale":                    "Whale",
	"coc_coc_browser":          "Coc Coc",
	"Huawei Browser":           "Huawei Browser",
	"Miui Browser":             "MIUI Browser",
	"Android browser":          "Android Browser",
	useragent.FacebookApp:      "Facebook",
	useragent.InstagramApp:     "Instagram",
	useragent.TiktokApp:        "TikTok",
}

// osNames maps the parser's operating systems to ours.
var osNames = map[string]string{
	useragent.Windows:      "Windows",
	useragent.WindowsPhone: "Windows Phone",
	useragent.Android:      "Android",
	useragent.MacOS:        "macOS",
	useragent.IOS:          "iOS",
	useragent.Linux:        "Linux",
	useragent.FreeBSD:      "FreeBSD",
	useragent.ChromeOS:     "ChromeOS",
	useragent.CrOS:         "ChromeOS",
	useragent.BlackBerry:   "BlackBerry",
	useragent.Harmony:      "HarmonyOS",
}

// parse parses one user agent without the cache.
func parse(s string) Agent {
	if s == "" {
		return Agent{Bot: true}
	}
	u := useragent.Parse(s)
	a := Agent{
		Browser: browserNames[u.Name],
		OS:      osNames[u.OS],
	}
	if a.Browser == "" {
		a.Browser = engineBrowser(s)
	}
	if a.OS == "" {
		a.OS = fallbackOS(s)
	}
	if strings.Contains(s, "Windows Phone") {
		// Edge on Windows 10 Mobile also claims Android.
		a.OS = "Windows Phone"
	}
	if a.Browser != "" {
		a.BrowserVersion = majorMinor(u.Version)
	}
	if a.OS != "" {
		a.OSVersion = majorMinor(u.OSVersion)
	}
	switch {
	case u.Tablet:
		a.Device = Tablet
	case u.Mobile && isAndroidTablet(s, u.OS):
		a.Device = Tablet
	case u.Mobile:
		a.Device = Mobile
	case u.Desktop:
		a.Device = Desktop
	}
	a.Bot = u.Bot || isBot(s) || (a.Browser == "" && a.OS == "")
	return a
}

// majorMinor cuts a dotted version to "major.minor" ("88" → "88.0"); ""
// when v does not start with a number. Only digits and one dot reach
// storage.
func majorMinor(v string) string {
	v = strings.ReplaceAll(v, "_", ".")
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	if !allDigits(major) || len(major) > 6 {
		return ""
	}
	if !allDigits(minor) || len(minor) > 6 {
		minor = "0"
	}
	return major + "." + minor
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// engineBrowser names the browser of an agent the parser named after an
// unlisted product token: Chromium-based browsers, Electron apps and in-app
// web views count as Chrome, Gecko-based browsers as Firefox.
func engineBrowser(s string) string {
	switch {
	case strings.Contains(s, "Chrome/"):
		return "Chrome"
	case strings.Contains(s, "Firefox/"):
		return "Firefox"
	}
	return ""
}

// fallbackOS finds the operating systems the parser misses when their token
// carries an architecture ("X11; FreeBSD amd64").
func fallbackOS(s string) string {
	if strings.Contains(s, "FreeBSD") {
		return "FreeBSD"
	}
	return ""
}

// isAndroidTablet applies Google's convention for Chromium-based Android
// browsers: a phone sends "Mobile", a tablet does not. The parser calls every
// Android device mobile. Only agents of the "Mozilla/5.0 (Linux; Android"
// form qualify: Firefox says "Tablet" itself, Opera Mini never says "Mobile",
// and Samsung DeX's desktop mode does not mention Android.
func isAndroidTablet(s, os string) bool {
	return os == useragent.Android &&
		strings.HasPrefix(s, "Mozilla/5.0 (Linux; ") &&
		strings.Contains(s, "Android") &&
		!strings.Contains(s, "Mobile")
}

// HeadlessHint reports markers of automation in other request headers that a
// live request carries (e.g. Sec-CH-UA containing "HeadlessChrome"); used by
// the engine's header heuristics. secCHUA is the Sec-CH-UA header as sent.
func HeadlessHint(secCHUA string) bool {
	return containsFold(secCHUA, "headless")
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// ignoring ASCII case in s. It does not allocate.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for j < len(sub) && lower(s[i+j]) == sub[j] {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

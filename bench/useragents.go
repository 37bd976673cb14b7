package bench

import (
	"fmt"
	"math"
	"strings"
)

// The user-agent table: real browser user-agent templates filled with real
// version numbers and device models (a snapshot of 2025–2026 traffic), about
// 800 distinct strings. Each family has a share of visitors (percent, roughly
// StatCounter's global desktop+mobile mix for a general-audience site); inside
// a family newer versions are more common (each version 0.85× the next one).

// device is the kind of screen a user agent runs on; it picks the resolution.
type device uint8

const (
	devDesktop device = iota // Windows, Linux, ChromeOS
	devMac
	devIPhone
	devIPad
	devAndroid
	devAndroidTablet
	numDevices
)

// uaEntry is one user-agent string of the table.
type uaEntry struct {
	s      string
	family string
	dev    device
	weight float64 // share of visitors, percent
}

// uaFamilies are the families and their shares of visitors in percent.
var uaFamilies = []struct {
	name  string
	share float64
}{
	{"Chrome Windows", 22},
	{"Chrome Android", 15},
	{"Safari iPhone", 13.5},
	{"Edge Windows", 7},
	{"Chrome macOS", 6},
	{"Safari macOS", 5},
	{"Samsung Internet", 3.5},
	{"Firefox Windows", 3},
	{"Android WebView", 3},
	{"Chrome iOS", 2.5},
	{"Opera", 2},
	{"Chrome Android tablet", 1.5},
	{"Safari iPad", 1.5},
	{"Chrome Linux", 1.3},
	{"ChromeOS", 1},
	{"Firefox Linux", 0.8},
	{"Firefox macOS", 0.6},
	{"Yandex Browser", 0.6},
	{"Edge macOS", 0.5},
	{"Firefox Android", 0.5},
	{"Edge Android", 0.3},
	{"Firefox iOS", 0.2},
	{"Edge iOS", 0.2},
}

var (
	chromeMajors = seq(118, 141)
	// Chrome full versions as shipped on iOS and in Android WebViews.
	chromeFull = []string{"120.0.6099.129", "121.0.6167.164", "122.0.6261.119", "124.0.6367.179",
		"126.0.6478.122", "127.0.6533.103", "128.0.6613.127", "129.0.6668.100", "130.0.6723.102",
		"131.0.6778.200", "132.0.6834.163", "134.0.6998.135", "135.0.7049.111", "136.0.7103.125",
		"137.0.7151.89", "138.0.7204.157"}
	// Edge major → full version.
	edgeFull = []string{"120.0.2210.133", "121.0.2277.128", "122.0.2365.92", "123.0.2420.97",
		"124.0.2478.109", "125.0.2535.92", "126.0.2592.113", "127.0.2651.105", "128.0.2739.79",
		"129.0.2792.89", "130.0.2849.80", "131.0.2903.112", "132.0.2957.140", "133.0.3065.92",
		"134.0.3124.93", "135.0.3179.98", "136.0.3240.92", "137.0.3296.93", "138.0.3351.109",
		"139.0.3405.102", "140.0.3485.81", "141.0.3537.85"}
	firefoxMajors = append([]int{115}, seq(120, 144)...)
	// iOS versions as Safari reports them: OS token and Safari version. iOS 26
	// freezes the OS token at 18_6.
	iosVersions = [][2]string{{"16_6_1", "16.6"}, {"16_7_10", "16.6"}, {"17_0_3", "17.0"},
		{"17_1_2", "17.1"}, {"17_2_1", "17.2"}, {"17_3_1", "17.3"}, {"17_4_1", "17.4"},
		{"17_5_1", "17.5"}, {"17_6_1", "17.6"}, {"17_7", "17.7"}, {"18_0_1", "18.0"},
		{"18_1_1", "18.1"}, {"18_2_1", "18.2"}, {"18_3_2", "18.3"}, {"18_4_1", "18.4"},
		{"18_5", "18.5"}, {"18_6_2", "18.6"}, {"18_6", "26.0"}, {"18_6", "26.1"}}
	macSafari = []string{"16.6", "17.0", "17.1", "17.2.1", "17.3.1", "17.4.1", "17.5", "17.6",
		"18.0", "18.0.1", "18.1", "18.1.1", "18.2", "18.3", "18.3.1", "18.4", "18.5", "18.6",
		"26.0", "26.0.1", "26.1"}
	// Samsung Internet version → its Chromium.
	samsungVersions = [][2]string{{"23.0", "115"}, {"24.0", "117"}, {"25.0", "121"},
		{"26.0", "122"}, {"27.0", "125"}, {"28.0", "130"}}
	// Samsung models with their Android version; tablets are SM-X and SM-T.
	samsungModels = [][2]string{{"SM-S938B", "15"}, {"SM-S931B", "15"}, {"SM-S928B", "14"},
		{"SM-S921B", "14"}, {"SM-S926B", "14"}, {"SM-S918B", "14"}, {"SM-S911B", "14"},
		{"SM-S916B", "14"}, {"SM-S908B", "14"}, {"SM-S901B", "13"}, {"SM-S928U", "14"},
		{"SM-S918U", "14"}, {"SM-A566B", "15"}, {"SM-A556B", "14"}, {"SM-A546B", "14"},
		{"SM-A536B", "13"}, {"SM-A346B", "14"}, {"SM-A256B", "14"}, {"SM-A165F", "14"},
		{"SM-A155F", "14"}, {"SM-A145F", "13"}, {"SM-A135F", "13"}, {"SM-A525F", "13"},
		{"SM-G991B", "13"}, {"SM-G998B", "13"}, {"SM-G991U", "13"}, {"SM-G781B", "13"},
		{"SM-F946B", "14"}, {"SM-F731B", "14"}, {"SM-X710", "14"}, {"SM-X200", "14"},
		{"SM-T220", "13"}}
	// Android models of in-app WebViews, with their Android version.
	webviewModels = [][2]string{{"Pixel 9", "15"}, {"Pixel 8 Pro", "15"}, {"Pixel 8", "14"},
		{"Pixel 7a", "14"}, {"Pixel 7", "14"}, {"Pixel 6a", "14"}, {"Pixel 6", "13"},
		{"SM-S928B", "14"}, {"SM-S918B", "14"}, {"SM-S911B", "14"}, {"SM-A546B", "14"},
		{"SM-A536B", "13"}, {"SM-A155F", "14"}, {"SM-G991B", "13"}, {"2201117TG", "13"},
		{"23106RN0DA", "14"}, {"M2101K6G", "13"}, {"22111317G", "14"}, {"CPH2591", "14"},
		{"CPH2449", "14"}, {"V2250", "14"}, {"moto g54 5G", "14"}, {"motorola edge 40", "14"},
		{"LE2123", "13"}, {"RMX3771", "14"}}
	androidBuilds = map[string]string{"12": "SP1A.210812.016", "13": "TP1A.220624.014",
		"14": "UP1A.231005.007", "15": "AP3A.240905.015.A2"}
	operaVersions = [][2]int{{120, 106}, {121, 107}, {122, 108}, {123, 109}, {124, 110},
		{125, 111}, {126, 112}, {127, 113}, {128, 114}, {129, 115}, {130, 116}}
	yandexVersions = [][2]string{{"122", "24.4.0.0"}, {"124", "24.6.0.0"}, {"126", "24.7.0.0"},
		{"128", "24.10.0.0"}, {"130", "24.12.0.0"}, {"132", "25.2.0.0"}}
)

func seq(from, to int) []int {
	var s []int
	for v := from; v <= to; v++ {
		s = append(s, v)
	}
	return s
}

// userAgents is the table, built once.
var userAgents = buildUserAgents()

func buildUserAgents() []uaEntry {
	type variant struct {
		s   string
		dev device
	}
	byFamily := map[string][]variant{} // oldest first
	add := func(family string, dev device, format string, args ...any) {
		byFamily[family] = append(byFamily[family], variant{fmt.Sprintf(format, args...), dev})
	}
	const (
		win    = "Windows NT 10.0; Win64; x64"
		mac    = "Macintosh; Intel Mac OS X 10_15_7"
		linux  = "X11; Linux x86_64"
		webkit = "AppleWebKit/537.36 (KHTML, like Gecko)"
		ios    = "AppleWebKit/605.1.15 (KHTML, like Gecko)"
	)
	for _, v := range chromeMajors {
		add("Chrome Windows", devDesktop, "Mozilla/5.0 (%s) %s Chrome/%d.0.0.0 Safari/537.36", win, webkit, v)
		add("Chrome macOS", devMac, "Mozilla/5.0 (%s) %s Chrome/%d.0.0.0 Safari/537.36", mac, webkit, v)
		add("Chrome Linux", devDesktop, "Mozilla/5.0 (%s) %s Chrome/%d.0.0.0 Safari/537.36", linux, webkit, v)
		add("ChromeOS", devDesktop, "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) %s Chrome/%d.0.0.0 Safari/537.36", webkit, v)
		add("Chrome Android", devAndroid, "Mozilla/5.0 (Linux; Android 10; K) %s Chrome/%d.0.0.0 Mobile Safari/537.36", webkit, v)
		add("Chrome Android tablet", devAndroidTablet, "Mozilla/5.0 (Linux; Android 10; K) %s Chrome/%d.0.0.0 Safari/537.36", webkit, v)
	}
	for _, full := range edgeFull {
		major := full[:strings.IndexByte(full, '.')]
		add("Edge Windows", devDesktop, "Mozilla/5.0 (%s) %s Chrome/%s.0.0.0 Safari/537.36 Edg/%s", win, webkit, major, full)
		add("Edge macOS", devMac, "Mozilla/5.0 (%s) %s Chrome/%s.0.0.0 Safari/537.36 Edg/%s", mac, webkit, major, full)
		add("Edge Android", devAndroid, "Mozilla/5.0 (Linux; Android 10; K) %s Chrome/%s.0.0.0 Mobile Safari/537.36 EdgA/%s", webkit, major, full)
	}
	for _, v := range firefoxMajors {
		add("Firefox Windows", devDesktop, "Mozilla/5.0 (%s; rv:%d.0) Gecko/20100101 Firefox/%d.0", win, v, v)
		add("Firefox macOS", devMac, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:%d.0) Gecko/20100101 Firefox/%d.0", v, v)
		add("Firefox Linux", devDesktop, "Mozilla/5.0 (X11; Linux x86_64; rv:%d.0) Gecko/20100101 Firefox/%d.0", v, v)
		add("Firefox Linux", devDesktop, "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:%d.0) Gecko/20100101 Firefox/%d.0", v, v)
		add("Firefox Android", devAndroid, "Mozilla/5.0 (Android 14; Mobile; rv:%d.0) Gecko/%d.0 Firefox/%d.0", v, v, v)
	}
	for _, v := range iosVersions {
		add("Safari iPhone", devIPhone, "Mozilla/5.0 (iPhone; CPU iPhone OS %s like Mac OS X) %s Version/%s Mobile/15E148 Safari/604.1", v[0], ios, v[1])
		add("Safari iPad", devIPad, "Mozilla/5.0 (iPad; CPU OS %s like Mac OS X) %s Version/%s Mobile/15E148 Safari/604.1", v[0], ios, v[1])
	}
	for i, full := range chromeFull {
		// Chrome on iOS: each release seen on the iOS versions current then.
		for _, v := range iosVersions[3+i/2 : 3+i/2+5] {
			os := v[0]
			if n := strings.Count(os, "_"); n == 2 {
				os = os[:strings.LastIndexByte(os, '_')] // CriOS reports major_minor
			}
			add("Chrome iOS", devIPhone, "Mozilla/5.0 (iPhone; CPU iPhone OS %s like Mac OS X) %s CriOS/%s Mobile/15E148 Safari/604.1", os, ios, full)
		}
	}
	for i, v := range []string{"126.0", "128.0", "131.0", "134.0", "137.0", "140.0", "142.0"} {
		add("Firefox iOS", devIPhone, "Mozilla/5.0 (iPhone; CPU iPhone OS %s like Mac OS X) %s FxiOS/%s Mobile/15E148 Safari/605.1.15", iosVersions[10+i][0], ios, v)
	}
	for i, v := range edgeFull[6:] {
		add("Edge iOS", devIPhone, "Mozilla/5.0 (iPhone; CPU iPhone OS %s like Mac OS X) %s Version/%s EdgiOS/%s Mobile/15E148 Safari/605.1.15", iosVersions[8+i/2][0], ios, iosVersions[8+i/2][1], v)
	}
	for _, v := range macSafari {
		add("Safari macOS", devMac, "Mozilla/5.0 (%s) %s Version/%s Safari/605.1.15", mac, ios, v)
	}
	for _, sv := range samsungVersions {
		for _, m := range samsungModels {
			dev, mobile := devAndroid, "Mobile "
			if strings.HasPrefix(m[0], "SM-X") || strings.HasPrefix(m[0], "SM-T") {
				dev, mobile = devAndroidTablet, ""
			}
			add("Samsung Internet", dev, "Mozilla/5.0 (Linux; Android %s; SAMSUNG %s) %s SamsungBrowser/%s Chrome/%s.0.0.0 %sSafari/537.36", m[1], m[0], webkit, sv[0], sv[1], mobile)
		}
	}
	for i, full := range chromeFull[8:] {
		// In-app browsers: each WebView release on a third of the models.
		for j, m := range webviewModels {
			if (i+j)%3 != 0 {
				continue
			}
			add("Android WebView", devAndroid, "Mozilla/5.0 (Linux; Android %s; %s Build/%s; wv) %s Version/4.0 Chrome/%s Mobile Safari/537.36", m[1], m[0], androidBuilds[m[1]], webkit, full)
		}
	}
	for _, v := range operaVersions {
		add("Opera", devDesktop, "Mozilla/5.0 (%s) %s Chrome/%d.0.0.0 Safari/537.36 OPR/%d.0.0.0", win, webkit, v[0], v[1])
		add("Opera", devMac, "Mozilla/5.0 (%s) %s Chrome/%d.0.0.0 Safari/537.36 OPR/%d.0.0.0", mac, webkit, v[0], v[1])
	}
	for _, v := range yandexVersions {
		add("Yandex Browser", devDesktop, "Mozilla/5.0 (%s) %s Chrome/%s.0.0.0 YaBrowser/%s Yowser/2.5 Safari/537.36", win, webkit, v[0], v[1])
	}

	var table []uaEntry
	for _, f := range uaFamilies {
		vs := byFamily[f.name]
		// Weights grow 1/0.85 per step from the oldest to the newest variant;
		// variants of one release (models, OS versions) come in runs, so a
		// family's step is per string, which keeps old strings present.
		ws := make([]float64, len(vs))
		var sum float64
		for i := range vs {
			ws[i] = math.Pow(0.85, float64(len(vs)-1-i)*24/float64(len(vs)))
			sum += ws[i]
		}
		for i, v := range vs {
			table = append(table, uaEntry{s: v.s, family: f.name, dev: v.dev, weight: f.share * ws[i] / sum})
		}
	}
	return table
}

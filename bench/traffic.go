package bench

import "github.com/webstats/webstats/engine"

// Resolutions by device with their shares among that device's visitors
// (percent; StatCounter-like).
var resolutions = [numDevices][]weighted{
	devDesktop: {{"1920x1080", 34}, {"1366x768", 10}, {"1536x864", 10}, {"2560x1440", 8},
		{"1440x900", 5}, {"1280x720", 4}, {"1600x900", 4}, {"1920x1200", 4}, {"1680x1050", 3},
		{"1280x800", 3}, {"3840x2160", 3}, {"2560x1080", 2}, {"1280x1024", 2}, {"1360x768", 2},
		{"3440x1440", 2}, {"2560x1600", 2}, {"1024x768", 1}, {"800x600", 0.3}},
	devMac: {{"1440x900", 22}, {"1512x982", 16}, {"1728x1117", 12}, {"1470x956", 12},
		{"1280x800", 8}, {"1680x1050", 7}, {"2560x1440", 7}, {"1920x1080", 6}, {"1792x1120", 4},
		{"2056x1329", 3}, {"3008x1692", 1}, {"1536x960", 2}},
	devIPhone: {{"390x844", 22}, {"393x852", 18}, {"430x932", 12}, {"414x896", 10},
		{"375x812", 8}, {"428x926", 7}, {"375x667", 7}, {"402x874", 6}, {"440x956", 5},
		{"360x780", 2}, {"320x568", 1}},
	devIPad: {{"810x1080", 25}, {"820x1180", 25}, {"768x1024", 20}, {"834x1194", 12},
		{"1024x1366", 10}, {"834x1112", 5}, {"744x1133", 3}},
	devAndroid: {{"412x915", 22}, {"360x800", 18}, {"384x854", 9}, {"393x873", 9},
		{"412x892", 7}, {"360x780", 6}, {"412x869", 5}, {"384x832", 4}, {"360x640", 4},
		{"393x851", 4}, {"412x846", 3}, {"360x760", 3}, {"390x844", 2}, {"448x997", 2},
		{"432x960", 2}},
	devAndroidTablet: {{"800x1280", 30}, {"1280x800", 20}, {"1024x1366", 10}, {"962x601", 10},
		{"1340x800", 10}, {"712x1138", 10}, {"753x1205", 10}},
}

// weighted is a value with a weight.
type weighted struct {
	s string
	w float64
}

// External referrers of landing pageviews, as browsers send them (the origin
// and a slash under the default referrer policy). Weights are percent of
// landings; with directShare and internalShare they make 100.
var externalReferrers = []weighted{
	// Search: 20%.
	{"https://www.google.com/", 13}, {"https://www.bing.com/", 2.5}, {"https://duckduckgo.com/", 1.2},
	{"https://www.google.de/", 0.6}, {"https://www.google.co.uk/", 0.5}, {"https://search.yahoo.com/", 0.6},
	{"https://yandex.ru/", 0.4}, {"https://www.ecosia.org/", 0.3}, {"https://search.brave.com/", 0.3},
	{"https://www.google.fr/", 0.3}, {"https://www.baidu.com/", 0.2}, {"https://www.qwant.com/", 0.1},
	// Social: 7%.
	{"https://t.co/", 1.3}, {"https://l.facebook.com/", 1}, {"https://m.facebook.com/", 0.4},
	{"https://www.reddit.com/", 1.2}, {"https://news.ycombinator.com/", 1}, {"https://www.linkedin.com/", 0.7},
	{"https://l.instagram.com/", 0.5}, {"https://www.youtube.com/", 0.5}, {"https://bsky.app/", 0.2},
	{"https://mastodon.social/", 0.2},
	// Other websites: 3%.
	{"https://github.com/", 0.6}, {"https://stackoverflow.com/", 0.4}, {"https://en.wikipedia.org/", 0.4},
	{"https://chatgpt.com/", 0.5}, {"https://www.perplexity.ai/", 0.2}, {"https://medium.com/", 0.3},
	{"https://dev.to/", 0.2}, {"https://lobste.rs/", 0.1}, {"https://substack.com/", 0.3},
}

// The referrer mix of landing pageviews (percent): no referrer, an external
// referrer (externalReferrers, 30% in all) and a page of the same site (a
// tab left open and used again after more than 30 minutes; the statistics
// count it as direct). Later pageviews of a visit have the previous page as
// referrer.
const (
	directShare   = 45
	internalShare = 25
)

// Custom events with their shares of events (percent). Values are shared by
// all hits: callers must not modify them.
var events = []struct {
	ev *engine.Event
	w  float64
}{
	{&engine.Event{Name: "Signup"}, 40},
	{&engine.Event{Name: "Download"}, 35},
	{&engine.Event{Name: "Payment", Value: []byte("5"), Unit: "USD"}, 8},
	{&engine.Event{Name: "Payment", Value: []byte("19"), Unit: "USD"}, 7},
	{&engine.Event{Name: "Payment", Value: []byte("49"), Unit: "USD"}, 4},
	{&engine.Event{Name: "Payment", Value: []byte("99"), Unit: "USD"}, 2},
	{&engine.Event{Name: "Payment"}, 4},
}

// Campaigns: name, source and medium of campaign links.
var campaigns = [][3]string{
	{"spring_sale", "newsletter", "email"}, {"black-friday-2026", "google", "cpc"},
	{"newsletter-2026-11", "newsletter", "email"}, {"launch_v2", "twitter", "social"},
	{"webinar-q4", "linkedin", "social"}, {"retargeting", "facebook", "cpc"},
	{"brand_search", "bing", "cpc"}, {"partner-program", "partner", "referral"},
	{"summer_promo", "instagram", "social"}, {"product-hunt", "producthunt", "referral"},
	{"cyber-monday", "google", "display"}, {"onboarding", "intercom", "email"},
}

// Words for generated paths.
var (
	pathVerbs = []string{"build", "deploy", "test", "scale", "monitor", "migrate", "secure",
		"optimize", "debug", "install", "configure", "backup", "learn", "choose", "write", "design"}
	pathNouns = []string{"kubernetes", "postgres", "react", "api", "website", "dashboard",
		"analytics", "docker", "server", "database", "cache", "garden", "budget", "camera",
		"bicycle", "recipe", "coffee", "resume", "newsletter", "podcast", "laptop", "router",
		"password", "invoice", "startup", "blog", "keyboard", "spreadsheet", "landing-page", "seo"}
	pathAdjectives = []string{"simple", "complete", "practical", "modern", "fast", "cheap",
		"secure", "beginners", "advanced", "ultimate"}
	colors   = []string{"red", "blue", "black", "white", "green", "grey"}
	sizes    = []string{"s", "m", "l", "xl"}
	sections = []string{"getting-started", "guides", "reference", "api", "tutorials", "faq"}
	static   = []string{"/about", "/pricing", "/contact", "/blog", "/products", "/docs",
		"/login", "/signup", "/features", "/careers", "/privacy", "/terms", "/changelog", "/faq"}
)

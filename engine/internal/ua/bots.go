package ua

// botTokens are matched case-insensitively anywhere in a user agent. They are
// written in lower case. Keep each group sorted; add a row to the table test
// with every new token. Tokens ending in "bot" need not be listed when the
// generic word rule (see isBotWord) already catches them, but listing the
// well-known ones documents intent and keeps them if the rule changes.
//
// Deliberately absent: "electron" (desktop apps used by people), "yandex"
// alone (the Yandex search app is a browser; its crawlers say "yandex.com/bots"
// or "Yandex…Bot"), "snapchat", "line/" and other in-app browsers.
var botTokens = []string{
	// Search engines.
	"360spider", "adidxbot", "applebot", "archive.org_bot", "baiduspider",
	"bingbot", "bingpreview", "coccocbot", "daumoa", "duckduckbot",
	"duckduckgo-favicons-bot", "exabot", "google-inspectiontool",
	"google-read-aloud", "google-site-verification", "googlebot",
	"googleother", "google favicon", "ia_archiver", "mojeekbot", "msnbot",
	"naverbot", "petalbot", "qwantbot", "qwantify", "seznambot", "slurp",
	"storebot-google", "yandex.com/bots", "yandexbot",
	"yandeximages", "yandexmobilebot", "yeti/", "yisouspider",
	"adsbot-google", "apis-google", "feedfetcher-google", "mediapartners-google",
	"googleproducer", "googleprober",

	// SEO and marketing crawlers.
	"ahrefsbot", "ahrefssiteaudit", "awariobot", "barkrowler", "blexbot",
	"botify", "contentkingapp", "dataforseobot", "deepcrawl", "dotbot",
	"linkdexbot", "lumar", "megaindex", "mj12bot", "oncrawl", "rogerbot",
	"screaming frog", "semrushbot", "seokicks", "serpstatbot", "siteauditbot",
	"sitebulb", "sistrix", "spbot", "seobilitybot", "ryte",

	// AI crawlers and assistants.
	"ai2bot", "amazonbot", "anthropic-ai", "applebot-extended", "bytespider",
	"ccbot", "chatgpt-user", "claude-searchbot", "claude-user", "claude-web",
	"claudebot", "cohere-ai", "diffbot", "duckassistbot", "facebookbot",
	"friendlycrawler", "google-extended", "gptbot", "iaskspider",
	"icc-crawler", "imagesiftbot", "img2dataset", "meta-externalagent",
	"meta-externalfetcher", "mistralai-user", "oai-searchbot", "omgili",
	"panscient", "perplexitybot", "perplexity-user", "timpibot", "youbot",
	"velenpublicwebcrawler",

	// Link previews and social networks.
	"bluesky", "cardyb", "discordbot", "embedly", "facebookcatalog",
	"facebookexternalhit", "iframely", "linkedinbot", "mastodon",
	"pinterestbot", "redditbot", "skypeuripreview", "slack-imgproxy",
	"slackbot", "telegrambot", "twitterbot", "vkshare", "whatsapp",
	"xing-contenttabreceiver", "google-pagerenderer", "flipboardproxy",

	// Feed readers.
	"feedbin", "feedly", "inoreader", "newsblur", "tiny tiny rss",

	// Uptime and performance monitors.
	"betteruptime", "better uptime", "catchpoint", "checkly",
	"datadogsynthetics", "freshping", "gtmetrix", "hetrixtools", "monitis",
	"newrelicpinger", "nodeping", "pingdom", "ptst/", "ruxitsynthetic",
	"site24x7", "statuscake", "updown.io", "uptime-kuma", "uptime kuma",
	"uptimerobot", "zabbix", "check_http", "blackbox exporter",

	// HTTP libraries and command-line tools.
	"aiohttp", "apache-httpclient", "axios", "cpp-httplib", "curl",
	"dart:io", "deno/", "faraday", "go-http-client", "got (", "guzzlehttp",
	"http.rb", "httpclient", "httpie", "httpx", "hyper/", "insomnia",
	"java/", "libcurl", "libwww-perl", "lwp::", "node-fetch", "okhttp",
	"php/", "postmanruntime", "powershell", "python-requests",
	"python-urllib", "python/", "reqwest", "rest-client", "ruby", "scrapy",
	"superagent", "undici", "wget", "winhttp", "nutch", "heritrix",

	// Security and internet-wide scanners.
	"censysinspect", "expanse", "internetmeasurement", "masscan", "nikto",
	"nmap", "nuclei", "sqlmap", "zgrab", "netcraft", "w3c_validator",
	"w3c-checklink",

	// Headless browsers, automation and page-speed tools.
	"chrome-lighthouse", "cypress/", "headlesschrome", "lighthouse",
	"page speed", "pagespeed", "phantomjs", "playwright", "puppeteer", "selenium",
	"slimerjs", "webdriver",

	// Generic words that only crawlers use.
	"crawl", "fetcher", "preview", "scrape", "spider",
}

// botWordExceptions are words ending in "bot" that name real devices.
var botWordExceptions = []string{"cubot"}

// botMatcher is botTokens compiled once.
var botMatcher = newMatcher(botTokens)

// isBot reports whether the user agent s names a bot by the package's own
// rules (the parser's flag is added by parse).
func isBot(s string) bool {
	if !containsFold(s, "mozilla/") && !containsFold(s, "opera/") {
		return true
	}
	return botMatcher.match(s) || hasBotWord(s)
}

// hasBotWord reports whether s holds a word that ends in "bot" ("Googlebot/",
// "SomeBot;", "robot", "bot-x"): "bot" followed by a non-letter or the end,
// whatever precedes it, unless the whole word is an exception ("Cubot").
func hasBotWord(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if lower(s[i]) != 'b' || lower(s[i+1]) != 'o' || lower(s[i+2]) != 't' {
			continue
		}
		if end := i + 3; end < len(s) && isLetter(s[end]) {
			continue
		}
		start := i
		for start > 0 && (isLetter(s[start-1]) || isDigit(s[start-1])) {
			start--
		}
		if !isException(s[start : i+3]) {
			return true
		}
	}
	return false
}

func isException(word string) bool {
	for _, e := range botWordExceptions {
		if len(word) == len(e) && containsFold(word, e) {
			return true
		}
	}
	return false
}

func isLetter(c byte) bool { return 'a' <= lower(c) && lower(c) <= 'z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// matcher is an Aho-Corasick automaton over ASCII-case-folded bytes: one pass
// over the input finds whether any pattern occurs, whatever the number of
// patterns. Bytes are first mapped to classes (every byte that occurs in no
// pattern shares class 0) to keep the transition table small.
type matcher struct {
	class  [256]uint8
	nclass int
	next   []uint16 // next[state*nclass+class] is the next state
	accept []bool   // accept[state]: some pattern ends at this state
}

// newMatcher compiles lower-case patterns. It panics on patterns it cannot
// hold, which are a programming error in the constant list.
func newMatcher(patterns []string) *matcher {
	m := &matcher{nclass: 1}
	for _, p := range patterns {
		for i := 0; i < len(p); i++ {
			c := p[i]
			if 'A' <= c && c <= 'Z' {
				panic("ua: bot pattern not lower case: " + p)
			}
			if m.class[c] == 0 {
				m.class[c] = uint8(m.nclass)
				if 'a' <= c && c <= 'z' {
					m.class[c-'a'+'A'] = uint8(m.nclass)
				}
				m.nclass++
			}
		}
	}
	if m.nclass > 255 {
		panic("ua: too many byte classes")
	}
	// Trie. State 0 is the root; 0 in a goto slot means "no edge" (the root
	// is never a child).
	n := m.nclass
	goTo := make([]uint16, n)
	m.accept = []bool{false}
	for _, p := range patterns {
		s := 0
		for i := 0; i < len(p); i++ {
			c := int(m.class[p[i]])
			if goTo[s*n+c] == 0 {
				if len(m.accept) >= 1<<16 {
					panic("ua: too many matcher states")
				}
				goTo[s*n+c] = uint16(len(m.accept))
				goTo = append(goTo, make([]uint16, n)...)
				m.accept = append(m.accept, false)
			}
			s = int(goTo[s*n+c])
		}
		m.accept[s] = true
	}
	// Breadth-first: fail links and the full transition table.
	m.next = goTo
	fail := make([]uint16, len(m.accept))
	queue := make([]int, 0, len(m.accept))
	for c := 0; c < n; c++ {
		if t := m.next[c]; t != 0 {
			queue = append(queue, int(t))
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		m.accept[s] = m.accept[s] || m.accept[fail[s]]
		for c := 0; c < n; c++ {
			t := m.next[s*n+c]
			if t != 0 {
				fail[t] = m.next[int(fail[s])*n+c]
				queue = append(queue, int(t))
			} else {
				m.next[s*n+c] = m.next[int(fail[s])*n+c]
			}
		}
	}
	return m
}

// match reports whether any pattern occurs in s, ignoring ASCII case.
func (m *matcher) match(s string) bool {
	state := 0
	for i := 0; i < len(s); i++ {
		state = int(m.next[state*m.nclass+int(m.class[s[i]])])
		if m.accept[state] {
			return true
		}
	}
	return false
}

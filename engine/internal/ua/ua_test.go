package ua

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Shorthands for the table.
func human(browser, os, device string) Agent {
	return Agent{Browser: browser, OS: os, Device: device}
}

func bot(browser, os, device string) Agent {
	return Agent{Browser: browser, OS: os, Device: device, Bot: true}
}

var parseTests = []struct {
	name string
	ua   string
	want Agent
}{
	// Chrome.
	{name: "chrome/windows", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", want: human("Chrome", "Windows", Desktop)},
	{name: "chrome/macos", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", want: human("Chrome", "macOS", Desktop)},
	{name: "chrome/linux", ua: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", want: human("Chrome", "Linux", Desktop)},
	{name: "chrome/chromeos", ua: "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", want: human("Chrome", "ChromeOS", Desktop)},
	{name: "chrome/android phone", ua: "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", want: human("Chrome", "Android", Mobile)},
	{name: "chrome/android tablet", ua: "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", want: human("Chrome", "Android", Tablet)},
	{name: "chrome/galaxy tab", ua: "Mozilla/5.0 (Linux; Android 10; SM-T860) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", want: human("Chrome", "Android", Tablet)},
	{name: "chrome/iphone", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1", want: human("Chrome", "iOS", Mobile)},
	{name: "chrome/ipad", ua: "Mozilla/5.0 (iPad; CPU OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1", want: human("Chrome", "iOS", Tablet)},
	{name: "chrome/android webview", ua: "Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240905.003; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.6778.81 Mobile Safari/537.36", want: human("Chrome", "Android", Mobile)},
	{name: "chrome/xiaomi", ua: "Mozilla/5.0 (Linux; Android 13; M2101K6G) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", want: human("Chrome", "Android", Mobile)},

	// Firefox.
	{name: "firefox/windows", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0", want: human("Firefox", "Windows", Desktop)},
	{name: "firefox/macos", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 14.7; rv:133.0) Gecko/20100101 Firefox/133.0", want: human("Firefox", "macOS", Desktop)},
	{name: "firefox/linux", ua: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", want: human("Firefox", "Linux", Desktop)},
	{name: "firefox/ubuntu", ua: "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", want: human("Firefox", "Linux", Desktop)},
	{name: "firefox/freebsd", ua: "Mozilla/5.0 (X11; FreeBSD amd64; rv:133.0) Gecko/20100101 Firefox/133.0", want: human("Firefox", "FreeBSD", "")},
	{name: "firefox/android", ua: "Mozilla/5.0 (Android 15; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0", want: human("Firefox", "Android", Mobile)},
	{name: "firefox/android tablet", ua: "Mozilla/5.0 (Android 14; Tablet; rv:133.0) Gecko/133.0 Firefox/133.0", want: human("Firefox", "Android", Tablet)},
	{name: "firefox/iphone", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/133.0 Mobile/15E148 Safari/605.1.15", want: human("Firefox", "iOS", Mobile)},
	{name: "firefox/pale moon", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Goanna/6.7 Firefox/128.0 PaleMoon/33.5.0", want: human("Firefox", "Windows", Desktop)},

	// Safari.
	{name: "safari/macos", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", want: human("Safari", "macOS", Desktop)},
	{name: "safari/iphone", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", want: human("Safari", "iOS", Mobile)},
	{name: "safari/ipad", ua: "Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", want: human("Safari", "iOS", Tablet)},

	// Edge.
	{name: "edge/windows", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", want: human("Edge", "Windows", Desktop)},
	{name: "edge/macos", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", want: human("Edge", "macOS", Desktop)},
	{name: "edge/android", ua: "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 EdgA/131.0.0.0", want: human("Edge", "Android", Mobile)},
	{name: "edge/iphone", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 EdgiOS/131.2903.68 Mobile/15E148 Safari/605.1.15", want: human("Edge", "iOS", Mobile)},
	{name: "edge/legacy", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.102 Safari/537.36 Edge/18.19045", want: human("Edge", "Windows", Desktop)},
	{name: "edge/windows phone", ua: "Mozilla/5.0 (Windows Phone 10.0; Android 6.0.1; Microsoft; Lumia 950) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/52.0.2743.116 Mobile Safari/537.36 Edge/15.14977", want: human("Edge", "Windows Phone", Mobile)},

	// Opera.
	{name: "opera/windows", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 OPR/115.0.0.0", want: human("Opera", "Windows", Desktop)},
	{name: "opera/macos", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 OPR/115.0.0.0", want: human("Opera", "macOS", Desktop)},
	{name: "opera/android", ua: "Mozilla/5.0 (Linux; Android 10; VOG-L29) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 OPR/86.0.0.0", want: human("Opera", "Android", Mobile)},
	{name: "opera/mini", ua: "Opera/9.80 (Android; Opera Mini/36.2.2254/119.132; U; id) Presto/2.12.423 Version/12.16", want: human("Opera Mini", "Android", Mobile)},

	// Samsung Internet.
	{name: "samsung/phone", ua: "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/27.0 Chrome/125.0.0.0 Mobile Safari/537.36", want: human("Samsung Internet", "Android", Mobile)},
	{name: "samsung/tablet", ua: "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-X710) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/27.0 Chrome/125.0.0.0 Safari/537.36", want: human("Samsung Internet", "Android", Tablet)},
	{name: "samsung/dex", ua: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/27.0 Chrome/125.0.0.0 Safari/537.36", want: human("Samsung Internet", "Android", Mobile)},

	// Other browsers.
	{name: "vivaldi", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Vivaldi/7.0.3495.18", want: human("Vivaldi", "Windows", Desktop)},
	{name: "yandex browser", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 YaBrowser/24.12.0.0 Safari/537.36", want: human("Yandex Browser", "Windows", Desktop)},
	{name: "ie11", ua: "Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko", want: human("Internet Explorer", "Windows", Desktop)},
	{name: "ie10", ua: "Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.1; Trident/6.0)", want: human("Internet Explorer", "Windows", Desktop)},
	{name: "whale", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Whale/4.29.282.14 Safari/537.36", want: human("Whale", "Windows", Desktop)},
	{name: "chromium", ua: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Ubuntu Chromium/127.0.0.0 Chrome/127.0.0.0 Safari/537.36", want: human("Chromium", "Linux", Desktop)},
	{name: "duckduckgo", ua: "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile DuckDuckGo/5 Safari/537.36", want: human("DuckDuckGo", "Android", Mobile)},
	{name: "huawei", ua: "Mozilla/5.0 (Linux; Android 12; HarmonyOS; ALN-AL00) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/114.0.0.0 Mobile Safari/537.36 HuaweiBrowser/14.0", want: human("Huawei Browser", "Android", Mobile)},
	{name: "android stock browser", ua: "Mozilla/5.0 (Linux; U; Android 4.0.3; ko-kr; LG-L160L Build/IML74K) AppleWebkit/534.30 (KHTML, like Gecko) Version/4.0 Mobile Safari/534.30", want: human("Android Browser", "Android", Mobile)},
	{name: "facebook app", ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/490.0.0.0]", want: human("Facebook", "iOS", Mobile)},
	{name: "instagram app", ua: "Mozilla/5.0 (Linux; Android 14; SM-S918B Build/UP1A.231005.007; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.6778.81 Mobile Safari/537.36 Instagram 358.0.0.0.64 Android", want: human("Instagram", "Android", Mobile)},
	{name: "unknown chromium token", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Avast/131.0.0.0", want: human("Chrome", "Windows", Desktop)},
	{name: "electron slack", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Slack/4.41.105 Chrome/130.0.6723.152 Electron/33.2.1 Safari/537.36 Sonic Slack_SSB/4.41.105", want: human("Chrome", "Windows", Desktop)},
	{name: "electron vscode", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Code/1.96.0 Chrome/128.0.6613.186 Electron/32.2.6 Safari/537.36", want: human("Chrome", "Windows", Desktop)},

	// False-positive guards: "bot" inside a device or word that is not a crawler.
	{name: "guard/cubot", ua: "Mozilla/5.0 (Linux; Android 12; Cubot KingKong 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36", want: human("Chrome", "Android", Mobile)},
	{name: "guard/cubot underscore", ua: "Mozilla/5.0 (Linux; Android 11; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36", want: human("Chrome", "Android", Mobile)},
	{name: "guard/cubot note", ua: "Mozilla/5.0 (Linux; Android 13; CUBOT NOTE 40 Build/TP1A.220624.014) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.81 Mobile Safari/537.36", want: human("Chrome", "Android", Mobile)},
	{name: "guard/yandex search app", ua: "Mozilla/5.0 (Linux; arm_64; Android 14; SM-A546B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 YaBrowser/24.12.1.85.00 SA/3 Mobile Safari/537.36", want: human("Chrome", "Android", Mobile)},
	{name: "guard/bottom word", ua: "Mozilla/5.0 (Linux; Android 13; Bottle X1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", want: human("Chrome", "Android", Mobile)},
	{name: "guard/line in-app", ua: "Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240905.003; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.6778.81 Mobile Safari/537.36 Line/14.19.1", want: human("Chrome", "Android", Mobile)},
	{name: "guard/smart tv", ua: "Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) 79.0.3945.79/6.0 TV Safari/537.36", want: human("", "Linux", Desktop)},

	// Search engines.
	{name: "bot/googlebot", ua: "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", want: bot("", "", "")},
	{name: "bot/googlebot smartphone", ua: "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.69 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", want: bot("Chrome", "Android", Mobile)},
	{name: "bot/googlebot image", ua: "Googlebot-Image/1.0", want: bot("", "", "")},
	{name: "bot/google inspection", ua: "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 (compatible; Google-InspectionTool/1.0;)", want: bot("Chrome", "Android", Mobile)},
	{name: "bot/bingbot", ua: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36", want: bot("Chrome", "", "")},
	{name: "bot/yandex", ua: "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)", want: bot("", "", "")},
	{name: "bot/yandex images", ua: "Mozilla/5.0 (compatible; YandexImages/3.0; +http://yandex.com/bots)", want: bot("", "", "")},
	{name: "bot/baidu", ua: "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)", want: bot("", "", "")},
	{name: "bot/duckduckbot", ua: "DuckDuckBot/1.1; (+http://duckduckgo.com/duckduckbot.html)", want: bot("", "", "")},
	{name: "bot/applebot", ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)", want: bot("", "", Desktop)},
	{name: "bot/petalbot", ua: "Mozilla/5.0 (Linux; Android 7.0;) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)", want: bot("", "Android", Mobile)},
	{name: "bot/yahoo slurp", ua: "Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)", want: bot("", "", "")},
	{name: "bot/sogou", ua: "Sogou web spider/4.0(+http://www.sogou.com/docs/help/webmasters.htm#07)", want: bot("", "", "")},

	// SEO crawlers.
	{name: "bot/ahrefs", ua: "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", want: bot("", "", "")},
	{name: "bot/semrush", ua: "Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)", want: bot("", "", "")},
	{name: "bot/mj12", ua: "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)", want: bot("", "", "")},
	{name: "bot/dotbot", ua: "Mozilla/5.0 (compatible; DotBot/1.2; +https://opensiteexplorer.org/dotbot; help@moz.com)", want: bot("", "", "")},
	{name: "bot/screaming frog", ua: "Screaming Frog SEO Spider/20.0", want: bot("", "", "")},

	// AI crawlers.
	{name: "bot/gptbot", ua: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", want: bot("", "", "")},
	{name: "bot/chatgpt-user", ua: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot", want: bot("", "", "")},
	{name: "bot/oai-searchbot", ua: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot", want: bot("", "", "")},
	{name: "bot/claudebot", ua: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", want: bot("", "", "")},
	{name: "bot/anthropic-ai", ua: "anthropic-ai", want: bot("", "", "")},
	{name: "bot/perplexity", ua: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)", want: bot("", "", "")},
	{name: "bot/ccbot", ua: "CCBot/2.0 (https://commoncrawl.org/faq/)", want: bot("", "", "")},
	{name: "bot/bytespider", ua: "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)", want: bot("", "Android", Mobile)},
	{name: "bot/amazonbot", ua: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amazonbot/0.1; +https://developer.amazon.com/support/amazonbot) Chrome/119.0.6045.214 Safari/537.36", want: bot("Chrome", "", "")},
	{name: "bot/meta-externalagent", ua: "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)", want: bot("", "", "")},

	// Link previews.
	{name: "bot/facebookexternalhit", ua: "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", want: bot("", "", "")},
	{name: "bot/twitterbot", ua: "Twitterbot/1.0", want: bot("", "", "")},
	{name: "bot/slackbot", ua: "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", want: bot("", "", "")},
	{name: "bot/discordbot", ua: "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", want: bot("", "", "")},
	{name: "bot/whatsapp", ua: "WhatsApp/2.23.20.0", want: bot("", "", "")},
	{name: "bot/telegram", ua: "TelegramBot (like TwitterBot)", want: bot("", "", "")},
	{name: "bot/linkedin", ua: "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)", want: bot("", "", "")},

	// Monitors.
	{name: "bot/uptimerobot", ua: "Mozilla/5.0 (compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", want: bot("", "", "")},
	{name: "bot/pingdom", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/61.0.3163.100 Safari/537.36 PingdomPageSpeed/1.0 (pingbot/2.0; +http://www.pingdom.com/)", want: bot("Chrome", "Windows", Desktop)},
	{name: "bot/statuscake", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/102.0.0.0 Safari/537.36 StatusCake", want: bot("Chrome", "Windows", Desktop)},
	{name: "bot/site24x7", ua: "Site24x7", want: bot("", "", "")},

	// HTTP libraries and tools.
	{name: "bot/curl", ua: "curl/8.5.0", want: bot("", "", "")},
	{name: "bot/wget", ua: "Wget/1.21.4", want: bot("", "", "")},
	{name: "bot/python-requests", ua: "python-requests/2.32.3", want: bot("", "", "")},
	{name: "bot/python-urllib", ua: "Python-urllib/3.12", want: bot("", "", "")},
	{name: "bot/aiohttp", ua: "Python/3.12 aiohttp/3.10.5", want: bot("", "", "")},
	{name: "bot/httpx", ua: "python-httpx/0.27.2", want: bot("", "", "")},
	{name: "bot/go", ua: "Go-http-client/2.0", want: bot("", "", "")},
	{name: "bot/java", ua: "Java/17.0.2", want: bot("", "", "")},
	{name: "bot/okhttp", ua: "okhttp/4.12.0", want: bot("", "", "")},
	{name: "bot/axios", ua: "axios/1.7.7", want: bot("", "", "")},
	{name: "bot/node-fetch", ua: "node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", want: bot("", "", "")},
	{name: "bot/undici", ua: "undici", want: bot("", "", "")},
	{name: "bot/libwww-perl", ua: "libwww-perl/6.77", want: bot("", "", "")},
	{name: "bot/scrapy", ua: "Scrapy/2.11.2 (+https://scrapy.org)", want: bot("", "", "")},
	{name: "bot/postman", ua: "PostmanRuntime/7.42.0", want: bot("", "", "")},
	{name: "bot/mozilla-spoofing scraper", ua: "Mozilla/5.0 (compatible; MyScraper/1.0)", want: bot("", "", "")},

	// Headless and automation.
	{name: "bot/headless chrome", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36", want: bot("Headless Chrome", "Windows", Desktop)},
	{name: "bot/phantomjs", ua: "Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) PhantomJS/2.1.1 Safari/538.1", want: bot("Safari", "Linux", Desktop)},
	{name: "bot/lighthouse", ua: "Mozilla/5.0 (Linux; Android 11; moto g power (2022)) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 Chrome-Lighthouse", want: bot("Chrome", "Android", Mobile)},
	{name: "bot/pagespeed", ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Google Page Speed Insights", want: bot("Chrome", "Windows", Desktop)},

	// Empty and garbage.
	{name: "garbage/empty", ua: "", want: bot("", "", "")},
	{name: "garbage/one letter", ua: "x", want: bot("", "", "")},
	{name: "garbage/dash", ua: "-", want: bot("", "", "")},
	{name: "garbage/mozilla only", ua: "Mozilla/5.0", want: bot("", "", "")},
	{name: "garbage/app http stack", ua: "MyApp/1.0 CFNetwork/1410.0.3 Darwin/22.6.0", want: bot("", "", "")},
	{name: "garbage/dalvik", ua: "Dalvik/2.1.0 (Linux; U; Android 13; SM-A135F Build/TP1A.220624.014)", want: bot("", "Android", Mobile)},
}

func TestParse(t *testing.T) {
	p := New(0)
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // miss, then hit
				if diff := cmp.Diff(tt.want, withoutVersions(p.Parse(tt.ua))); diff != "" {
					t.Fatalf("Parse(%q) mismatch (-want +got):\n%s", tt.ua, diff)
				}
			}
		})
	}
	if len(parseTests) < 60 {
		t.Errorf("only %d rows; keep at least 60", len(parseTests))
	}
}

func TestHeadlessHint(t *testing.T) {
	tests := []struct {
		secCHUA string
		want    bool
	}{
		{secCHUA: `"HeadlessChrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"`, want: true},
		{secCHUA: `"Google Chrome";v="131", "Chromium";v="131", "Not_A Brand";v="24"`, want: false},
		{secCHUA: `"Microsoft Edge";v="131", "Chromium";v="131"`, want: false},
		{secCHUA: `"headless"`, want: true},
		{secCHUA: ``, want: false},
	}
	for _, tt := range tests {
		if got := HeadlessHint(tt.secCHUA); got != tt.want {
			t.Errorf("HeadlessHint(%q) = %v, want %v", tt.secCHUA, got, tt.want)
		}
	}
}

func TestBotTokens(t *testing.T) {
	seen := make(map[string]bool)
	for _, tok := range botTokens {
		if tok != strings.ToLower(tok) || tok == "" {
			t.Errorf("token %q: want non-empty lower case", tok)
		}
		if seen[tok] {
			t.Errorf("token %q listed twice", tok)
		}
		seen[tok] = true
		// Every token must be found on its own, in any case, inside text.
		for _, s := range []string{tok, strings.ToUpper(tok), "Mozilla/5.0 (x) " + tok + " y"} {
			if !botMatcher.match(s) {
				t.Errorf("matcher misses %q in %q", tok, s)
			}
		}
	}
}

// TestMatcher checks the automaton against a plain substring search.
func TestMatcher(t *testing.T) {
	patterns := []string{"he", "she", "his", "hers", "a/b", "abcd", "bc"}
	m := newMatcher(patterns)
	for _, s := range []string{"", "h", "ushers", "HIS", "xabcx", "ab", "abd", "A/B", "a/c", "bC", "sh", "xxhxex"} {
		want := false
		for _, p := range patterns {
			want = want || strings.Contains(strings.ToLower(s), p)
		}
		if got := m.match(s); got != want {
			t.Errorf("match(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.ua)
	}
	p := New(64)
	f.Fuzz(func(t *testing.T, s string) {
		a := p.Parse(s)
		if b := parse(s); a != b {
			t.Fatalf("cached %+v != uncached %+v", a, b)
		}
		if a.Device != "" && a.Device != Desktop && a.Device != Mobile && a.Device != Tablet {
			t.Fatalf("device %q", a.Device)
		}
		// Names come from fixed tables: never from the input.
		if a.Browser != "" && !knownBrowser(a.Browser) {
			t.Fatalf("browser %q not in the fixed set", a.Browser)
		}
		if a.OS != "" && !knownOS(a.OS) {
			t.Fatalf("os %q not in the fixed set", a.OS)
		}
		// Matcher and a plain search agree.
		want := false
		ls := strings.ToLower(s)
		for _, tok := range botTokens {
			want = want || strings.Contains(ls, tok)
		}
		if got := botMatcher.match(s); got != want {
			t.Fatalf("matcher %v, substring search %v", got, want)
		}
	})
}

func knownBrowser(name string) bool {
	if name == "Chrome" || name == "Firefox" {
		return true
	}
	for _, v := range browserNames {
		if v == name {
			return true
		}
	}
	return false
}

func knownOS(name string) bool {
	for _, v := range osNames {
		if v == name {
			return true
		}
	}
	return false
}

// withoutVersions drops the versions, which TestVersions checks on their own.
func withoutVersions(a Agent) Agent {
	a.BrowserVersion, a.OSVersion = "", ""
	return a
}

func TestVersions(t *testing.T) {
	p := New(0)
	for _, tt := range []struct{ ua, browser, os string }{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "131.0", "10.0"},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4.1 Safari/605.1.15", "17.4", "10.15"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1", "131.0", "17.7"},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "133.0", ""},
		{"curl/8.0", "", ""},
	} {
		a := p.Parse(tt.ua)
		if a.BrowserVersion != tt.browser || a.OSVersion != tt.os {
			t.Errorf("Parse(%q) versions = %q, %q; want %q, %q", tt.ua, a.BrowserVersion, a.OSVersion, tt.browser, tt.os)
		}
	}
	for in, want := range map[string]string{"88": "88.0", "10_15_7": "10.15", "x1": "", "": "", "1.x": "1.0", "1234567": ""} {
		if got := majorMinor(in); got != want {
			t.Errorf("majorMinor(%q) = %q, want %q", in, got, want)
		}
	}
}

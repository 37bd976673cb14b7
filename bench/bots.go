package bench

// Bots: crawlers, AI fetchers, link previewers, monitors, scripts and headless
// browsers, with their shares of bot hits (percent) and the address blocks
// they come from (the operators' published crawler ranges where there are
// some, cloud and hosting ranges otherwise). lang is the Accept-Language they
// send ("" for none); headless browsers also send a Sec-CH-UA header and a
// resolution.
var bots = []struct {
	ua      []string
	share   float64
	ips     string
	lang    string
	res     string
	secCHUA bool
}{
	{ua: []string{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/137.0.7151.119 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"},
		share: 18, ips: "66.249.64.0/24 66.249.66.0/24 66.249.68.0/24 66.249.72.0/24 66.249.79.0/24"},
	{ua: []string{"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36"},
		share: 9, ips: "157.55.39.0/24 207.46.13.0/24 40.77.167.0/24 52.167.144.0/24"},
	{ua: []string{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; +https://openai.com/searchbot",
		"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot"},
		share: 7, ips: "20.171.206.0/24 20.171.207.0/24 52.230.152.0/24 23.98.142.0/24"},
	{ua: []string{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)"},
		share: 4, ips: "160.79.104.0/24"},
	{ua: []string{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; +https://perplexity.ai/perplexitybot)"},
		share: 1, ips: "107.20.236.0/24"},
	{ua: []string{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)"},
		share: 3, ips: "17.241.208.0/24 17.241.219.0/24 17.22.237.0/24"},
	{ua: []string{"Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)"},
		share: 3, ips: "5.255.231.0/24 213.180.203.0/24 95.108.213.0/24"},
	{ua: []string{"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)"},
		share: 5, ips: "54.36.148.0/24 51.222.253.0/24"},
	{ua: []string{"Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)"},
		share: 4, ips: "85.208.96.0/24 185.191.171.0/24"},
	{ua: []string{"Mozilla/5.0 (compatible; DuckDuckBot-Https/1.1; https://duckduckgo.com/duckduckbot)"},
		share: 1, ips: "20.191.45.0/24 40.88.21.0/24"},
	{ua: []string{"Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)"},
		share: 1.5, ips: "116.179.32.0/24 220.181.108.0/24"},
	{ua: []string{"Mozilla/5.0 (Linux; Android 7.0;) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)"},
		share: 1.5, ips: "114.119.128.0/24 114.119.134.0/24"},
	{ua: []string{"Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)"},
		share: 3, ips: "47.128.16.0/24 47.128.40.0/24"},
	{ua: []string{"CCBot/2.0 (https://commoncrawl.org/faq/)"}, share: 1, ips: "18.97.9.0/24 18.97.14.0/24"},
	{ua: []string{"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
		"meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)"},
		share: 3, ips: "69.171.250.0/24 173.252.127.0/24 57.141.0.0/24"},
	{ua: []string{"Twitterbot/1.0"}, share: 1, ips: "199.16.157.0/24"},
	{ua: []string{"Mozilla/5.0 (compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)"},
		share: 2, ips: "216.144.250.0/24 69.162.124.0/24"},
	{ua: []string{"curl/7.81.0", "curl/8.5.0", "curl/8.7.1", "curl/8.11.1", "curl/8.14.1"},
		share: 6, ips: "167.99.0.0/16 138.68.0.0/16 116.203.0.0/16 3.80.0.0/16 34.82.0.0/16"},
	{ua: []string{"python-requests/2.28.2", "python-requests/2.31.0", "python-requests/2.32.3", "python-requests/2.32.4",
		"Python/3.12 aiohttp/3.9.5", "python-httpx/0.27.0"},
		share: 7, ips: "35.180.0.0/16 52.14.0.0/16 159.89.0.0/16 65.108.0.0/16 20.42.0.0/16"},
	{ua: []string{"Go-http-client/1.1", "Go-http-client/2.0"}, share: 3, ips: "5.161.0.0/16 34.145.0.0/16"},
	{ua: []string{"Wget/1.21.2", "Wget/1.21.4", "axios/1.7.9", "node", "Scrapy/2.11.2 (+https://scrapy.org)"},
		share: 3, ips: "104.131.0.0/16 128.199.0.0/16 45.77.0.0/16"},
	{ua: []string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/128.0.0.0 Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/136.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/138.0.0.0 Safari/537.36"},
		share: 12, ips: "34.66.0.0/16 18.204.0.0/16 142.93.0.0/16 49.12.0.0/16", lang: "en-US,en;q=0.9", res: "800x600", secCHUA: true},
}

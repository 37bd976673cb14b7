// Package ua turns user-agent strings into the browser, operating system and
// device dimensions of a hit, and decides whether a client is a bot.
//
// Parsing is done by github.com/mileusna/useragent; its names are normalised
// to a small stable set (see [Agent]) so that statistics do not split when
// the library renames something, and so that no part of the raw user-agent
// string (the library falls back to the whole string as a "name") ever
// reaches storage. Results go through a bounded, sharded LRU cache keyed by
// the user-agent string: real traffic repeats a few thousand agents, so most
// hits never parse.
//
// # Bots
//
// A user agent is a bot when any of these holds:
//
//   - the parser says so (known crawlers, or a "+http://…" contact URL);
//   - it contains one of the curated tokens in bots.go (search engines, SEO
//     and AI crawlers, link-preview fetchers, uptime monitors, HTTP libraries
//     and command-line tools, headless browsers and automation frameworks),
//     matched case-insensitively anywhere in the string;
//   - it contains the generic word "bot" at the end of a word ("Googlebot/",
//     "AhrefsBot;", "bot-", "robot") unless that word is a known false
//     positive such as the "Cubot" phone brand; or one of "crawl", "spider",
//     "scrape", "fetcher", "preview" anywhere;
//   - it is empty, or it is garbage: neither "Mozilla/" nor the old
//     "Opera/" prefix is present (every browser in use sends one of them;
//     what remains is tools, app HTTP stacks and scanners), or the parser
//     recognised neither a browser nor an operating system.
//
// Electron applications (Slack, VS Code, Discord, …) are not bots: they are
// people using a Chromium shell, and are counted under "Chrome". Lighthouse
// and PageSpeed Insights are bots even though they render like Chrome.
// Automation hidden behind a normal user agent is caught, for live requests
// only, by the engine's header heuristics (see [HeadlessHint]).
package ua

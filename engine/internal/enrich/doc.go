// Package enrich turns a raw hit (Hit: a tracking request or an imported
// event) into the dimensions of its log record (record.Hit): its page,
// referrer, campaign and landing parameters, device, location, custom
// event and properties, sanitized and bounded as SPEC §2.4 and §10.1 say,
// and decides from the hit alone whether it is a bot.
//
// It reads no engine state: the engine finds the website, applies its
// drops, fixes the time, the salt period and the visitor hash, and passes
// in what enrichment needs of the website (its page rules) and of the
// engine (the parsed user agent, the IP address's location).
package enrich

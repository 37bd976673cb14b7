// Package source decides a visit's source and channel (SPEC §10.1,
// plausible-api.md visit:source, visit:channel, visit:utm_medium) from its
// landing URL and referrer, once per new visit.
//
//	l := source.ParseLanding(rawQuery, refHost)
//	src, channel, medium := source.Classify(l)
//
// Everything is pure and safe for concurrent use. The only state is the
// referrer index, built once on first use from the referrer database and
// never written after; no map grows with the traffic.
//
// # Source
//
// Following Plausible (lib/plausible/ingestion/source.ex):
//
//  1. The landing URL's tag, the first non-empty of utm_source, source and
//     ref, when there is one. A known source's name in any case becomes that
//     name ("GOOGLE", "google" → "Google"; "hacker news" → "Hacker News");
//     a shorthand becomes the source it stands for ("fb" → "Facebook",
//     "ig" → "Instagram", "yt" → "Youtube"); an ad platform's tag becomes
//     the platform and marks the visit as paid ("fb-ads", "facebook_ad",
//     "Google-ads", "adwords" → "Facebook", "Facebook", "Google", "Google").
//     Any other tag is kept as sent ("newsletter", "producthunt").
//  2. Else the referrer host's source in the referrer database: the host, the
//     host with "www." added, then its parent domains ("old.reddit.com" →
//     "Reddit", "google.co.uk" → "Google", "news.ycombinator.com" →
//     "Hacker News").
//  3. Else the referrer host without a leading "www.".
//  4. Else none: direct ("Direct / None" in the API).
//
// # Referrer database
//
// The names and categories come from github.com/Shopify/goreferrer (MIT),
// a Go module that embeds the Snowplow referer-parser database: 2,317 hosts
// of 348 sources, each filed as search, social or email. It was chosen
// because it carries the Snowplow data as a plain Go dependency
// with a permissive licence, and it is the one such module the module proxy
// serves here (medama-io/go-referrer-parser, newer and also MIT, is not
// reachable). Its last update is July 2022 and its README says it is no
// longer maintained, so a short supplement (db.go) adds hosts that became
// major since (x.com, threads.net, bsky.app, t.me, discord.com,
// search.brave.com, startpage.com, qwant.com). Replacing the module by a
// newer database means changing buildIndex only.
//
// # Channel
//
// Plausible's rules (lib/plausible/ingestion/acquisition.ex), tried in this
// order on the lower-cased source name, utm_medium (as stored, so inferred
// media included), utm_campaign, the tag as sent and the click id:
//
//   - Cross-network: the campaign contains "cross-network".
//   - Paid Shopping: a shopping source or campaign, and a paid medium.
//   - Paid Search: a search source with a paid medium or an ad platform's
//     tag; or source Google with gclid; or source Bing with msclkid.
//   - Paid Social, Paid Video: a social (video) source with a paid medium or
//     an ad platform's tag.
//   - Display: medium display, banner, expandable, interstitial or cpm.
//   - Paid Other: a paid medium (containing "cp", "ppc", "retargeting",
//     starting with "paid").
//   - Organic Shopping: a shopping source or campaign ("shopping" anywhere,
//     or "shop" at the start or after a character other than a-d, f-z).
//   - Organic Social: a social source, or medium social, social-network,
//     social-media, sm, "social network", "social media".
//   - Organic Video: a video source, or a medium containing "video".
//   - Organic Search: a search source.
//   - Email: an email source, or the tag or medium containing email, e-mail,
//     e_mail, "e mail" or newsletter.
//   - Affiliates: medium affiliate. Audio: medium audio. SMS: tag or medium
//     sms.
//   - Referral: medium referral, app or link, or any source.
//   - Direct: everything else.
//
// The medium stored is the raw utm_medium, or "(gclid)" when there is none,
// the source is Google and the click id is gclid, or "(msclkid)" likewise for
// Bing and msclkid. The click id is the first present of gclid, gbraid,
// wbraid, msclkid, fbclid, twclid (ClickIDs.Param).
//
// # Differences from Plausible
//
//   - Categories. Plausible files sources under Google's GA4 source
//     categories plus its own list; this package uses the referrer
//     database's own (search, social, email) and copies neither list. The
//     database has no video or shopping category, so Organic/Paid Video
//     come only from the medium ("video") and Organic/Paid Shopping only
//     from the campaign: YouTube, Vimeo and TikTok are Organic Social
//     (Plausible: Organic Video for the first two), Amazon is Organic Search
//     (the database files it as a search engine; Plausible: Organic
//     Shopping). Sources the database does not know (Wikipedia, Linktree,
//     producthunt, Slack) are Referral, which Plausible also does for the
//     first two; it makes producthunt and Slack Organic Social.
//   - Channels. The API's 17 channels are kept: Plausible's newer "AI
//     Assistants" (ChatGPT, Perplexity, …) are Referral here, and its
//     "Mobile Push Notifications" (a medium ending in "push" or containing
//     "mobile" or "notification") falls through to Referral or Direct.
//   - Ad tags. Plausible marks as paid the tags of its custom source list
//     that end in "ads" or "ad"; here any tag "<known source or
//     shorthand>[-_ ]ads" (or "ad") is, and only a handful of shorthands are
//     written down (db.go).
//   - Empty values. An empty utm_source (or source, ref) counts as absent, so
//     the next one or the referrer decides; Plausible would record an empty
//     source. A repeated parameter keeps its first value (Plausible: last).
//   - App referrers ("android-app://com.google.android.gm") arrive as a bare
//     host and are kept as that host; Plausible prefixes "android-app://".
//   - Tags that are hosts ("utm_source=facebook.com") stay as sent, as in
//     Plausible, but take the host's category for the channel.
package source

// Package norm holds the pure input-normalisation rules of the ingestion
// pipeline and of the website registry: website domains, page URLs, referrers,
// Accept-Language headers, screen resolutions, events and IP exclusion lists.
//
// Every function is pure (no I/O, no clock, no global mutable state) and safe
// for concurrent use. The functions on the tracking path (Host, ParsePage,
// ReferrerHost, Language, Resolution, IPSet.Contains) are written as hand
// scans that do not allocate in the common case; they are measured by the
// benchmarks in this package.
//
// # Ownership
//
// Returned strings may share memory with the input (a Page.Page of
// "https://example.com/a?b=1" is a substring of it). Callers that keep a
// result long after the input, as map keys of a day bucket do, and that want
// the input to be collected should copy it with strings.Clone.
//
// # Decisions
//
// The SPEC (§2.3, §2.4, §3.2, §3.4, §4) is the contract. Where it is silent,
// this package decides, and says so in the doc comment of the function
// concerned:
//
//   - Domain accepts single-label names ("localhost", intranet hosts) and an
//     IPv4 address, rejects IPv6, strips one trailing dot, and removes a
//     leading "www." only when what remains still contains a dot ("www.com"
//     stays "www.com"); Host and SiteHost apply the same "www." rule, so a
//     page host always normalises to the domain it was registered as.
//   - IDNs are converted with UTS #46 non-transitional processing (as
//     browsers do: "ß" is kept), the STD3 ASCII rules, hyphen and joiner
//     checks and the Bidi rule.
//   - ParsePage treats any input starting with "/" as a path (so "//a/b" is
//     the path "//a/b", not a scheme-relative URL), rejects invalid UTF-8, and
//     keeps spaces and non-ASCII characters as sent.
//   - Language skips entries it cannot parse (x/text's ParseAcceptLanguage
//     rejects the whole header for one bad entry) and entries with a weight
//     outside (0, 1].
//   - Host, ReferrerHost and Page.Host return an IPv6 literal in canonical
//     form without brackets ("::1"); ReferrerHost converts an IDN to punycode,
//     so that it compares with the registered domain, and otherwise keeps the
//     host as sent (lower-cased, "www." kept, port and trailing dot dropped).
//   - Resolution rejects leading zeros ("0800x600"), so one screen is one row.
//   - EventValue writes a JSON number in its shortest form (5.50 → "5.5") but
//     keeps a JSON string as sent ("5.50") once it is a valid decimal.
//   - Event names are cut at 255 characters like pages; names and units are
//     trimmed of surrounding white space.
package norm

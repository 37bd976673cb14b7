// Package httpd is the HTTP adapter of webstats: the JSON API of SPEC §3
// (websites, statistics, account, import), health and Prometheus metrics, on
// an httprouter router over an [engine.Engine]. The binary that serves it is
// httpd/cmd/webstatsd.
//
// # Routes
//
// Every API endpoint is served under both /public/api/v1 and /api/v1:
//
//	GET            /websites               list the caller's websites
//	POST           /websites               create one (HTTP 201)
//	GET            /websites/:id           show
//	PUT, PATCH     /websites/:id           update (only the fields sent)
//	DELETE         /websites/:id           delete with all statistics
//	POST           /websites/:id/events    import events (NDJSON or a JSON array)
//	GET            /stats/:id              one statistic, paginated
//	GET            /account                the caller's account
//
// GET routes also answer HEAD. Besides: GET /healthz answers
// {"status":"ok"} and GET /metrics serves Prometheus metrics; neither needs a
// key.
//
// # Requests and answers
//
// An API request needs "Authorization: Bearer <key>". Errors are decided in
// the order 401 (no or wrong key), 429 (rate limit), 404/405 (unknown path,
// id or method), then 400/413/422 (the body and parameters). Every answer is
// JSON and carries "status"; error bodies are {"message": ..., "status": N},
// where message is an object of field → messages for a 422. All errors are
// mapped to status codes by one function (errorStatus). No input answers
// 5xx: a panic is recovered into a logged 500 (with the request id), and the
// fuzz tests check that no input reaches it. A closed engine answers 503.
//
// Website bodies may be application/x-www-form-urlencoded, multipart/form-data
// or JSON; JSON numbers and booleans become the text the engine takes (5 →
// "5", true → "1", false → "0"), JSON null clears exclude_params and
// exclude_ips and means "not sent" for the other fields; an array or object
// is a 422 "must be a string". Values in the query string are taken too
// (the body wins), as Laravel's $request->input() did. Malformed JSON is a
// 400. Bodies are limited: 256 KiB for the website routes and any other
// route (room for exclude_params and exclude_ips at 65,535 characters each), 10 MiB for the import; beyond that the answer is a JSON 413.
//
// Absolute links in answers (pagination) are built from [Options.PublicURL]
// when it is set; else from the Host header only when it is a valid
// host[:port], else from the address the connection came to.
//
// List and statistics parameters outside their lists fall back to their
// defaults (sort_by=url → count, per_page=7 → 10, page=0 → 1), as the
// original product did. A statistics range longer than
// [engine.MaxRangeDays] is shortened to its last MaxRangeDays days (clients
// such as Pipedream's ask from 1970-01-01 to today) instead of answering 422.
//
// The import answers {"data":{"accepted":N,"dropped":{"bot":n,"excluded_ip":n}}}:
// bot and excluded_ip are always present; the engine's other reasons
// (unknown_site for a website deleted during the import, invalid for a page
// the engine could not parse although it passed the checks here, prefetch)
// are added only when not zero, so that accepted plus the dropped counts is
// always the number of events. In a 422, events.N counts events from 0 (blank
// NDJSON lines are skipped, not counted). Note that the engine counts an
// event without user_agent as a bot when the website excludes bots. The "at most one day in the future" check of
// event times uses [Options.Now].
//
// # Authentication and rate limits
//
// Keys are checked with [github.com/webstats/webstats/engine/identity.Service.Authenticate]. Failed authentications
// are limited per client IP (an IPv6 client counts per /64): 20 per minute;
// beyond that every request of that address with a wrong key answers 429
// until the budget refills. A right key is never refused by this limit (keys
// are 256-bit and checked by one SHA-256 lookup: the limit only quiets
// guessing, and one client behind a shared address must not lock the others
// out). A request without any key always answers 401. Each account then has a
// token bucket of [Options.RateLimit] requests per minute (a burst of as
// many); X-RateLimit-Limit and X-RateLimit-Remaining are set on every
// authenticated API answer, and a 429 adds Retry-After in seconds. RateLimit 0 means the
// default, 60; a negative RateLimit turns the limit off. The binary's
// -rate-limit 0 ("off") must therefore be passed as RateLimit: -1.
//
// CORS is allowed for any origin on every API answer; OPTIONS preflights
// under the API prefixes (and on any other registered route) answer 204
// without a key.
//
// # Request ids and logs
//
// Each request gets an id: the X-Request-Id header when it is a sane token (at
// most 128 characters of letters, digits, '-', '_', '.', ':'), else a random
// one; it is echoed in the X-Request-Id answer header and attached to every
// log line of the request (key "request_id").
//
// # Timeouts and broken bodies
//
// Every route of this package reads its body under a deadline that starts
// when its handler does: [Options.BodyTimeout] (10 s), or
// [Options.ImportBodyTimeout] (60 s) for the import. A body not complete by
// then answers 408; a body cut short (the client closed the connection
// before Content-Length bytes, or within a chunk) or with malformed chunks
// answers 400; a body over the route's limit 413, at once when its
// Content-Length says so. None of them is a 5xx.
//
// The http.Server that serves a Server should set its own timeouts; the
// values webstatsd uses:
//
//	ReadHeaderTimeout: 5 * time.Second
//	ReadTimeout:       60 * time.Second  // a 10 MiB import on a slow link
//	WriteTimeout:      60 * time.Second
//	IdleTimeout:       30 * time.Second
//	MaxHeaderBytes:    64 << 10
//
// # Adding routes
//
// The tracking endpoint (/api/event, /js/script.js) and the statistics pages
// (/stats/...) live in this package too and register their routes with the
// unexported method Server.handle, which wraps a handler with the route's
// body limit and its metrics label (the pattern). Server.api registers an
// authenticated, rate-limited API route under both prefixes. Both must be
// called before the Server serves its first request. Helpers for them:
// Server.clientIP (honours TrustProxy and TrustedProxies; every use of the client address goes through it), writeJSON and writeError.
package httpd

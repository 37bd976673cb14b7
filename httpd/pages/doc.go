// Package pages serves the statistics pages of webstats (SPEC §7):
// server-rendered HTML over an [engine.Engine], usable without JavaScript,
// with charts drawn as SVG on the server.
//
// # Routes
//
// [Pages.Register] mounts:
//
//	GET  /                      the signed-in account's websites (else → /login)
//	GET  /login, POST /login    sign in with an email and password, or an API key
//	GET, POST /login/code       the second factor of a sign-in (TOTP or recovery code)
//	GET, POST /register         create an account (Options.Registration)
//	GET, POST /reset            ask for a password reset link by email
//	GET, POST /reset/:token     choose a new password
//	GET  /account               name, email, password, email reports, sessions
//	POST /account/{profile,email,password,reports}, /account/sessions/{end,end-all}
//	GET, POST /account/2fa      two-factor setup (POST /account/2fa/disable turns it off)
//	GET, POST /account/keys     API keys (POST /account/keys/:key/revoke)
//	GET  /admin                 every account, invitations (admins only; others 404)
//	POST /admin/accounts, /admin/invites, /admin/accounts/:id/{disable,enable,admin,unadmin},
//	     /admin/invites/:id/delete
//	POST /logout                sign out
//	GET  /stats/:domain         overview of a website (POST: the password form)
//	GET  /stats/:domain/:name   realtime, <name>.csv or one statistic in full
//	GET  /assets/*filepath      the embedded CSS and JavaScript
//
// and the website pages of the signed-in account (sites.go; signed out,
// each redirects to /login?next=…; another account's website is a 404):
//
//	GET  /websites/new, POST              add a website
//	GET  /websites/:id                    → its settings
//	GET  /websites/:id/settings, POST     its settings (the domain is fixed)
//	GET  /websites/:id/snippet            the tracking snippet
//	GET  /websites/:id/verify             the snippet, and whether a pageview arrived in the last 10 minutes
//	GET  /websites/:id/delete, POST       delete it: the form must name its domain
//	GET  /websites/:id/goals, POST        its goals; add one
//	POST /websites/:id/goals/:goal/delete delete a goal
//
// httprouter cannot register /stats/:domain/realtime beside
// /stats/:domain/:name, nor a ".csv" suffix, so one handler serves the three:
// "realtime" is the realtime page (with ?format=json the numbers its script
// refreshes every 10 s), "<name>.csv" a statistic as CSV (every row), and any
// other name the statistic's page (100 rows a page). A visitor who is not the
// website's owner reads at most the first 1,000 rows of a statistic (ten
// pages; a CSV of 1,000 rows says X-Webstats-Row-Cap: 1000): anyone may
// ask for a public website's statistics, so their cost is bounded.
//
// # Ranges
//
// Pages take either range=today|7d|30d|month|lastmonth|12m (default 30d) or
// from and to (YYYY-MM-DD, inclusive local days of the website). A range
// longer than [engine.MaxRangeDays], a date that does not parse, or an
// over-long parameter is a 400 page with a message; no input answers 5xx.
// The overview compares each total with the period of equal length just
// before the range ("+12%", "−3%", or "new" when that period had none). Its
// chart has one bar per hour when from = to, one per month when the range is
// longer than 92 days (the visitors of a month are the month's unique
// visitors), else one per day.
//
// # Privacy
//
// A website's privacy field decides who sees its pages: 0 anyone; 1 only its
// owner, signed in (anyone else gets the same 404 page as an unknown domain);
// 2 anyone who typed its password (and the owner, signed in). The right
// password sets a cookie for that website only; a wrong one answers after
// Options.WrongPasswordDelay (500 ms by default).
//
// # Limits
//
// Each password check costs an argon2id hash (19 MiB), so the password form
// is limited (SPEC §13): 10 wrong passwords a minute per client address
// (an IPv6 /64; the address comes from Options.ClientIP) and 30 a minute
// per website from all clients together, as token buckets. An attempt
// takes its token before the hash and a right password gives it back; past
// a limit the form answers 429 with Retry-After without hashing. The engine
// runs at most [engine.MaxPasswordHashes] hashes at once; a check that
// cannot start within [engine.PasswordHashWait] is a 503 page with
// Retry-After. The sign-in form allows 10 wrong API keys a minute per
// client, then 429; a right key always signs in (keys are 256-bit and
// checked by one SHA-256 lookup). Account passwords are limited per client
// (10 a minute), per client and account (5), and per account (20), the last
// only refusing clients that failed on the account: others wait for its
// refill (at most 3 s) and are answered, so guessing at an address never
// locks its owner out (signInTakes).
//
// # Cookies
//
// Every cookie is HttpOnly, SameSite=Lax, and Secure when Options.Secure is
// set. Signed values are base64url(payload) "." base64url(mac), where mac is
// HMAC-SHA256 with the server secret "pages-cookie" ([github.com/webstats/webstats/engine/identity.Service.Secret])
// over the cookie's purpose and the payload, so a value signed for one purpose
// is worthless for another:
//
//	ws_session  path /                "<session token>"
//	ws_pw       path /stats/<domain>  "<website id>|<expiry unix>|<password fingerprint>"
//	ws_csrf     path /                a random token (not signed; see below)
//	ws_2fa      path /                "<account id>|<account generation>|<expiry unix>": a
//	                                  password checked, the code not yet (5 minutes)
//	ws_flash    path /                "<expiry unix>|<base64url notice>", for a minute
//
// Sessions are server-side ([github.com/webstats/webstats/engine/identity.Service.CreateSession]): the cookie holds
// a random token whose SHA-256 the engine keeps, for [github.com/webstats/webstats/engine/identity.SessionLife]
// (14 days) from sign-in. Signing out ends the session in the engine, and
// rotating the API key ends all of the account's sessions, so a copied
// cookie opens nothing afterwards. The password fingerprint is the first 8
// bytes of SHA-256 of the website's password hash, so changing the password
// forgets every password cookie; password cookies last 30 days, and their
// expiry is inside the signed value, so an edited Max-Age extends nothing.
// ws_flash carries the notice a website form leaves for the page it
// redirects to ("The settings were saved."); that page shows and removes
// it.
//
// # CSRF
//
// Every POST form (login, logout, password, the website forms) carries a hidden field csrf,
// "<expiry unix>.<mac>" with mac = HMAC-SHA256(secret, "csrf" ‖ the ws_csrf
// cookie ‖ the form's action ‖ the expiry): a signed double-submit token,
// valid for 2 hours and for that form only (the sign-in form's token does
// not post a password, nor one website's password form another's). A
// cross-site page can neither read the cookie nor compute the field, and a
// cookie planted by a sibling subdomain comes without a matching field. On
// top of it, [http.CrossOriginProtection] turns away requests that browsers
// mark as cross-origin (Sec-Fetch-Site, Origin). A failed check is a 403
// page.
//
// # Filters
//
// The overview is a segment explorer (SPEC §10.4). Its address carries
// the view: f=<op>,<dimension>,<value> once per filter (op is or is_not;
// at most maxFilters, ANDed), a card's tab under the card's key
// (referrer=channels), prop=<key> for the properties card, interval=
// hour|day|week|month and compare=previous|year. A click on a row adds
// the row's filter; each chip links to the view without it and to the view
// with it negated. The dimensions are the engine's (dims in explore.go),
// plus referrer_host, which matches visit:referrer by the referring host
// (no row links to it any more; addresses bookmarked with it still work).
//
// # One truth
//
// Every number is the Stats API's (engine.Owner.Query) answer to the same
// question, filtered or not (SPEC §10.2): the totals, the chart, each
// card's tab, the full tables (tables.go: a statistic's page and CSV ask
// the query of its card's first tab, search as a case-insensitive
// contains on the shown value, ties by value) and the zip. Query answers
// from the day buckets what they answer identically (the unfiltered
// counts), from the segments the rest. Continents, languages and screen
// resolutions have no dimension in the Stats API: those cards are the day
// buckets' statistics, unfiltered only (their rows do not link; a filtered
// view says they are not kept per visit). Without a City database
// (engine.Engine.Cities) the Cities card and the Regions tab say how to
// add one. A blank
// value the API has no label for shows as "(none)". A card whose query
// would read a day larger than the memory budget allows says so instead
// of failing the page.
//
// /stats/{domain}/export.zip is the view as CSV files in a zip:
// totals.csv (with the filters and the range), chart.csv, and one file per
// card's current tab, each with at most engine.MaxQueryLimit rows for the
// owner and publicRows for anyone else (X-Webstats-Row-Cap then says so).
//
// # Assets
//
// The CSS and the realtime script are embedded and served under /assets/ with
// a content hash in their query string and Cache-Control immutable for a
// year. Pages send a Content-Security-Policy that allows only these (no
// inline script or style), so an escaped value could not run even if it
// slipped through html/template.
package pages

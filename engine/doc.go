/*
Package engine is the webstats engine, usable as a library with no server:
open an Engine, register websites, Track hits, and query statistics.

# The API at a glance

  - Lifecycle, on *Engine: Open, Close, Snapshot, Backup, Metrics,
    StoreUsage; ClusterMetrics in cluster mode (Options.Cluster: the
    engine/jetstream log and registry).
  - Tracking, on *Engine: Track counts hits of any website (a hit names its
    website by URL host, Domain or Website id).
  - Websites and statistics, on an Owner: Engine.Owner(account) sees only
    that account's websites; Engine.Unscoped sees them all and is for the
    server's own use (command line, report scheduler, public pages that check
    a website's privacy themselves). Websites, Website, WebsiteByDomain,
    CreateWebsite, UpdateWebsite, DeleteWebsite, goals, Stat, Totals, Query
    (the Plausible Stats API's query: ParseQuery; the model is package
    engine/query, whose types the engine aliases), Realtime and Today all go
    through one; another account's website is ErrNotFound, exactly like a
    missing one. The engine knows an account by its id only.
  - A website's statistics password, on *Engine: CheckPassword.
  - The registry seam, Engine.Registry: named records changed in
    transactions (create-only and compare-and-set are a check and a write
    in one Do), replicated in cluster mode, that one other package stores
    its records through (Registry.Attach). Accounts, API keys, sessions,
    two-factor authentication, invitations, reset and proof links, report
    bookkeeping and cookie secrets are package engine/identity's, on it.

Days are Dates (an alias of buckets.Date: ParseDate, DateOf, DateFromTime).
Errors are the sentinels below (use errors.Is) or a *ValidationError whose
fields say what was wrong (use errors.As).

# Opening

	e, err := engine.Open(&engine.Options{Dir: "./webstats-data"})
	...
	defer e.Close()

A nil *Options, or an empty Dir, gives an in-memory engine. With a Dir the
engine is durable: Track returns only once its hits are in the write-ahead
log (many concurrent calls share one fsync), snapshots of what changed are
written every Options.SnapshotEvery, and Open loads the last snapshot and
replays the log after it. A hit is counted exactly once whatever moment the
process dies.

# The pipeline

Each Hit goes through, in order:

 1. drops: unknown website, excluded IP, bot (when the website excludes
    them), prefetch — each counted by reason (Metrics);
 2. enrichment: page (exclude_params applied, at most 255 characters),
    referrer host, utm_campaign, browser/OS/device, country/continent/city,
    language, screen resolution;
 3. the visitor id: a salted SipHash of website ‖ IP ‖ user agent (or the
    explicit visitor string), numbered densely inside the salt period;
 4. visit detection: 30 minutes without a pageview, or a referrer from another
    host than the website and the visit's own, starts a visit;
 5. the day bucket of the hit's local day in the website's time zone.

Steps 1 and 2 need no lock. The enriched hits of a website are then logged
as one batch, and steps 3–5 run, under the lock of the website's shard, only
once that batch is durable: the statistics never hold a hit the log does
not, so an error means nothing of that website was counted, and replaying
the log reproduces visitor numbers and visits exactly.

# Queries

Owner.Stat answers one of the 17 statistics (StatNames) over a range of local days
with search, sort and paging; Totals gives unique visitors (exact within a
salt period), pageviews, visits and events; Realtime the last 30 minutes.
Closed days are frozen (immutable, compacted): queries read them without
holding the shard lock, so a long query never holds up tracking.

# Memory

Days before today are compacted. Each day keeps at most Options.MaxValues
distinct values per dimension (more count as "(other)") and its own
strings, freed with it. With Options.MemoryBudget, the least recently used
closed days and past visitor state are evicted and read back from the store
on demand. The visitor state of a past salt period leaves memory once idle
and is read back when an import writes into the period, so numbers never
depend on when snapshots or evictions happened.

# Ownership

Every value returned (Website, Page, Totals, ...) is the caller's. Hits
passed to Track may be reused once it returns.
*/
package engine

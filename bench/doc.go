// Package bench is webstats's workload generator and the home of its
// capacity-planning runs.
//
// # Workloads
//
// A [Config] describes a stream of tracking hits for one or more [Site]s over
// a number of days; a [Generator] produces it, deterministically from
// Config.Seed. The traffic is shaped like a real website's (SPEC §9): pages
// drawn from a Zipf distribution over a vocabulary about four times the
// number of pages seen a day, a daily population of visitors each with a
// stable public IP address of one of 50 countries, a stable real user agent
// (a table of about 800 browser strings with their market shares), a screen
// resolution that fits the device and an Accept-Language that fits the
// country; sessions of 1–8 pageviews a few minutes apart, returning visitors,
// search, social and direct referrers, campaign links, a diurnal curve in UTC
// (peak around 15:00, trough around 04:00), crawler and script traffic and
// custom events.
//
// [Small], [Medium] and [Large] are the site sizes of SPEC §9.
//
// # Runs
//
// Capacity-planning runs are whole workloads defined once, here, as a
// [RunConfig] plus [Run], shared by this package's Benchmark functions and
// the CLI (STYLE practice 11, after pebble's bench/):
//
//	go run ./bench/cmd/webstats-bench -quick            # smoke test, under a minute
//	go run ./bench/cmd/webstats-bench -out DIR          # the full run, about ten minutes
//	go run ./bench/cmd/webstats-bench -runs http -target http://host:8080 -key KEY
//	go run ./bench/cmd/webstats-bench -runs peer -peer http://host:8000 -peer-key KEY -peer-name NAME [-peer-api v1]
//	go test ./bench -run '^$' -bench 'Query/site=medium/days=30'
//
// The seven runs, each reporting medians over RunConfig.Repeats repetitions:
//
//  1. pipeline: engine.Track throughput of one goroutine on a realistic
//     stream with NoSync (one hit per call, and in batches); the apply rate
//     of the log replay in engine.Open; durable Track from 64 goroutines.
//  2. http: POST /api/event from keep-alive clients against an in-process
//     server (durable, the log fsynced every 100 ms, and NoSync) or an
//     external one; hits/s and latency.
//  3. query: engine.Stat latency of the statistics over 1, 30 and 365 days
//     of the small, medium and large sites; GET /api/v1/stats and the
//     statistics page over HTTP.
//  4. memory: heap and disk bytes per hit as the history grows, without and
//     with a memory budget.
//  5. snapshot: snapshot duration, the longest Track call overlapping a
//     snapshot, and restart time.
//  6. server: the webstatsd binary (RunConfig.Webstatsd; the CLI builds
//     it): an import through the API, the restart after kill -9 and after
//     a clean stop until /healthz, the first queries after each, idle RSS.
//  7. peer: the binary beside another server speaking Plausible's Events
//     API and Stats API (RunConfig.Peer), the same loads in turns, and
//     the ratio per figure; not made without a peer.
//
// The measurements behind the targets are profiled in their last
// repetition (in-process with runtime/pprof; the binary with its
// -cpuprofile, at a clean stop; the heap of the memory run): section 8 of
// the report summarises each [Profile] (where the CPU or the heap goes, by
// part of the program and by function) beside the targets it bears on,
// and the raw profiles are written beside the report for go tool pprof.
//
// [Report.WriteMarkdown] writes report.md with hand-drawn SVG charts; the
// report names the machine, lists every target beside its measurement and
// derives a capacity table from the measured costs with [Capacity].
package bench

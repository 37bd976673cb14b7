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
// Capacity-planning runs come next: whole workloads defined once, here, as a
// Config plus a Run shared by this package's Benchmark functions and the CLI
// (STYLE practice 11):
//
//	go run ./bench/cmd/webstats-bench
//
// (coming later).
package bench

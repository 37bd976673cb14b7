// Package rollup is a website's rollups of closed months and weeks (SPEC
// §9): how a range of days splits into whole months and weeks and the
// days around them, and the set of the rollups built, each dropped when
// one of its days changes.
//
// A range query over a year then sums a dozen month rollups and the weeks
// and days at its ends, not 365 days; one over the last 30 days sums three
// or four weeks and the days around them. The engine builds a rollup on
// first use from its frozen days, counts it in its resident bytes and
// evicts it like a frozen day; a Set is plain data, guarded by the
// website's lock.
package rollup

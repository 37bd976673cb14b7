// Package stat is the model of the 17 statistics of SPEC §2.3: their
// names, and the search and order of their rows. The engine computes the
// rows of a statistic from the day buckets; what a caller sees of them
// (which queries are valid, a page of rows, searched and sorted) is
// decided here.
package stat

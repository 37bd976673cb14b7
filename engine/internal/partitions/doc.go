// Package partitions keeps a cluster node's partitions: which it holds,
// which of those it answers for and which it is gaining (Held), the fetches
// of those it gains (Fetches), and the stream in which a partition's state
// goes from a node that holds it to one that gains it (Writer, Reader).
//
// Partitions are bits of a uint64 (bit p: partition p). The engine decides
// when to move (its follower, so that nothing is applied meanwhile) and
// does what needs its locks and store: docs/design.md, "Partitions", and
// the engine's partition.go say how a node moves towards its target.
package partitions

import (
	"iter"
	"math/bits"
)

// Max is how many subjects the shared log spreads websites over; a cluster
// groups them into 1 to Max partitions.
const Max = 64

// Of returns the partition of website among n (1 to Max).
func Of(website uint32, n int) int { return int(website%Max) % n }

// All returns the mask of n partitions.
func All(n int) uint64 { return uint64(1)<<n - 1 }

// Each yields the partitions of mask, lowest first.
func Each(mask uint64) iter.Seq[int] {
	return func(yield func(int) bool) {
		for ; mask != 0; mask &= mask - 1 {
			if !yield(bits.TrailingZeros64(mask)) {
				return
			}
		}
	}
}

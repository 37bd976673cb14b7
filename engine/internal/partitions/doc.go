// Package partitions moves a cluster node's partitions towards its target:
// it keeps which partitions the node holds and answers for (Held), fetches
// those it gains from a node that holds them and replaces their websites'
// statistics through the engine (Mover, Node), and writes and reads the
// stream a partition's state travels in between nodes (Writer).
//
// Partitions are bits of a uint64 (bit p: partition p). The engine runs
// the Mover in its follower, so that nothing is applied meanwhile, and
// does, as its Node, what needs its locks and store. docs/design.md,
// "Partitions", says why a node moves as it does.
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

// each yields the partitions of mask, lowest first.
func each(mask uint64) iter.Seq[int] {
	return func(yield func(int) bool) {
		for ; mask != 0; mask &= mask - 1 {
			if !yield(bits.TrailingZeros64(mask)) {
				return
			}
		}
	}
}

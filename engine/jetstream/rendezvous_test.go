package jetstream

import (
	"fmt"
	"testing"
)

// The rendezvous assignment: each partition has its owners among the
// live nodes, the shares come out even with many partitions, and a node
// joining takes partitions only from the others, never moving one
// between two nodes that stay. Prints the shares the README quotes:
//
//	go test ./engine/jetstream -run TestRendezvousShares -v
func TestRendezvousShares(t *testing.T) {
	shares := func(names []string, count, owners int) (map[string]int, [][]string) {
		got := map[string]int{}
		var all [][]string
		for p := range count {
			o := rank(names, p, owners)
			if len(o) != min(owners, len(names)) {
				t.Fatalf("partition %d: owners %v", p, o)
			}
			for _, n := range o {
				got[n]++
			}
			all = append(all, o)
		}
		return got, all
	}
	three := []string{"n0", "n1", "n2"}
	for _, count := range []int{8, 64} {
		s, _ := shares(three, count, 2)
		t.Logf("%d partitions, two owners, three nodes: %v", count, s)
		if count == 64 {
			for n, k := range s {
				if k < 38 || k > 48 { // 128 holdings over three nodes
					t.Errorf("node %s holds %d of 64 partitions", n, k)
				}
			}
		}
	}
	// A fourth node joins: a partition's owners change only by the new
	// node taking a place.
	_, before := shares(three, 64, 2)
	_, after := shares(append(three, "n3"), 64, 2)
	moved := 0
	for p := range 64 {
		for _, n := range after[p] {
			if n != "n3" && !contains(before[p], n) {
				t.Errorf("partition %d moved to %s, which was there before (%v → %v)", p, n, before[p], after[p])
			}
		}
		if fmt.Sprint(before[p]) != fmt.Sprint(after[p]) {
			moved++
		}
	}
	t.Logf("a fourth node changes the owners of %d of 64 partitions", moved)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

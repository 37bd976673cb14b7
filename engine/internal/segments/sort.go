package segments

import "slices"

// SortFirst puts the first n rows by cmpRow (a total order) in their final
// place: with PartialSort when n is well below len(rows), else by sorting
// them all.
func SortFirst[T any](rows []T, n int, cmpRow func(a, b T) int) {
	switch {
	case n <= 0:
	case n < len(rows)/2:
		PartialSort(rows, n, cmpRow)
	default:
		slices.SortFunc(rows, cmpRow)
	}
}

// PartialSort puts the n smallest rows, sorted, at the front of rows, in
// O(len(rows)·log n): a bounded max-heap of the n best rows seen so far,
// whose root is the worst of them. 0 < n <= len(rows); cmpRow is a total
// order (no two rows compare equal), or the rows that tie with the n-th
// are chosen among in no particular order.
func PartialSort[T any](rows []T, n int, cmpRow func(a, b T) int) {
	h := rows[:n]
	worse := func(i, j int) bool { return cmpRow(h[i], h[j]) > 0 }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= n {
				return
			}
			c := l
			if r := l + 1; r < n && worse(r, l) {
				c = r
			}
			if !worse(c, i) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := n/2 - 1; i >= 0; i-- {
		down(i)
	}
	for i := n; i < len(rows); i++ {
		if cmpRow(rows[i], h[0]) < 0 {
			rows[i], h[0] = h[0], rows[i]
			down(0)
		}
	}
	slices.SortFunc(h, cmpRow)
}

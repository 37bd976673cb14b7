package buckets

import (
	"cmp"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
)

// SumCounts adds the counts of dim over days into acc, indexed by value id,
// growing acc as needed (new elements start at 0), and returns it. Pass
// acc[:0] of a previous result to reuse its memory. Nil days are skipped.
//
// This is the hot path of range queries: on compacted days it is one tight
// loop over each day's sorted id and count slices.
func SumCounts(acc []uint64, dim Dim, days ...*Day) []uint64 {
	if dim >= NumDims {
		return acc
	}
	for _, d := range days {
		if d == nil {
			continue
		}
		c := &d.cols[dim]
		if c.m != nil {
			for id, low := range c.m {
				if int(id) >= len(acc) {
					acc = growTo(acc, int(id)+1)
				}
				acc[id] += d.full(dim, id, low)
			}
			continue
		}
		ids, counts := c.split()
		if len(ids) == 0 {
			continue
		}
		if need := int(ids[len(ids)-1]) + 1; need > len(acc) {
			acc = growTo(acc, need)
		}
		sumColumn(acc, ids, counts)
		if d.high != nil {
			for key, h := range d.high {
				if Dim(key>>32) == dim {
					acc[uint32(key)] += uint64(h) << 32
				}
			}
		}
	}
	return acc
}

// sumColumn adds counts[i] to acc[ids[i]]; len(counts) == len(ids) and every
// id is below len(acc).
func sumColumn(acc []uint64, ids, counts []uint32) {
	counts = counts[:len(ids)] // no bounds check on counts[i]
	// A plain loop: unrolling it measured no faster, the loop being bound by
	// memory bandwidth over long ranges.
	for i, id := range ids {
		acc[id] += uint64(counts[i])
	}
}

// growTo returns acc extended with zeros to length n (n > len(acc)).
func growTo(acc []uint64, n int) []uint64 {
	old := len(acc)
	acc = slices.Grow(acc, n-old)[:n]
	clear(acc[old:])
	return acc
}

// UniqueVisitors returns the number of distinct visitors over days: per
// salt period, the size of the union of the day bitmaps of that period,
// summed over the periods. Days may come in any order; nil days are
// skipped. The days are not changed.
func UniqueVisitors(days ...*Day) uint64 {
	type periodBitmap struct {
		period Date
		bm     *roaring.Bitmap
	}
	list := make([]periodBitmap, 0, len(days))
	for _, d := range days {
		if d != nil && d.visitors != nil && !d.visitors.IsEmpty() {
			list = append(list, periodBitmap{d.Period, d.visitors})
		}
	}
	byPeriod := func(a, b periodBitmap) int { return cmp.Compare(a.period, b.period) }
	if !slices.IsSortedFunc(list, byPeriod) {
		slices.SortStableFunc(list, byPeriod)
	}
	var total uint64
	var group []*roaring.Bitmap
	for i := 0; i < len(list); {
		j := i + 1
		for j < len(list) && list[j].period == list[i].period {
			j++
		}
		switch j - i {
		case 1:
			total += list[i].bm.GetCardinality()
		case 2:
			total += list[i].bm.OrCardinality(list[i+1].bm)
		default:
			group = group[:0]
			for _, pb := range list[i:j] {
				group = append(group, pb.bm)
			}
			total += roaring.FastOr(group...).GetCardinality()
		}
		i = j
	}
	return total
}

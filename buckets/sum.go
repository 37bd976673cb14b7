package buckets

import (
	"cmp"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// Row is one value of a dimension and its count.
type Row struct {
	Value string
	Count uint64
}

// Sum adds up the counts of a dimension over days, value by value: the
// accumulator of range queries.
//
// Its cost is proportional to the rows of the days added, times at most
// the logarithm of the number of days: the rows of a compacted day are
// already sorted by value (an open day's are sorted when added), and Sum
// merges sorted runs, a run of similar size with the previous one, as a
// merge sort does. Merging reads memory in order; a hash table of all the
// values of a range measured several times slower, its lookups missing the
// cache.
//
// The zero value is an empty sum ready to use. Rows keep the days' strings
// (immutable, never copied): a Sum, or rows kept from it, keep those days'
// strings in memory; the days themselves are not retained.
type Sum struct {
	// runs are sorted by value, without duplicates, each at least twice
	// as long as the next (after collapse).
	runs   [][]Row
	free   [][]Row // runs freed by merges and Reset, for reuse; at most maxFree
	handed bool    // Rows gave the caller runs[0], who may have reordered it
}

// maxFree bounds the free runs a Sum keeps: enough for the merges of a
// year of days to allocate nothing once warm.
const maxFree = 8

// Add adds the counts of dim of days into s. Nil days and an invalid dim
// are ignored. Counts saturate at the largest uint64. Adding several
// dimensions to one Sum adds up their counts by value.
func (s *Sum) Add(dim Dim, days ...*Day) {
	if dim >= NumDims {
		return
	}
	for _, d := range days {
		if d == nil {
			continue
		}
		if s.handed {
			slices.SortFunc(s.runs[0], compareRows)
			s.handed = false
		}
		c := &d.cols[dim]
		n := c.len()
		if n == 0 {
			continue
		}
		run := s.take(n)
		values := d.dict.values
		if c.m != nil {
			for id, low := range c.m {
				run = append(run, Row{Value: values[id], Count: d.full(dim, id, low)})
			}
		} else {
			ids, counts := c.split()
			counts = counts[:len(ids)] // no bounds check on counts[i]
			if d.high == nil {
				for i, id := range ids {
					run = append(run, Row{Value: values[id], Count: uint64(counts[i])})
				}
			} else {
				for i, id := range ids {
					run = append(run, Row{Value: values[id], Count: d.full(dim, id, counts[i])})
				}
			}
		}
		// Ascending ids are ascending values only in a sealed dictionary.
		if c.m != nil || d.dict.index != nil {
			if len(s.runs) == 0 {
				// The first run is sorted only when it has to be merged
				// or read in order: a query of today alone (50,000
				// values under a flood) ranks rows by count and never
				// needs them by value (Unordered).
				s.runs = append(s.runs, run)
				s.handed = true
				continue
			}
			slices.SortFunc(run, compareRows)
		}
		s.runs = append(s.runs, run)
		s.collapse(false)
	}
}

func compareRows(a, b Row) int { return strings.Compare(a.Value, b.Value) }

// take returns an empty slice with room for n rows: the smallest free run
// large enough, or a new one.
func (s *Sum) take(n int) []Row {
	best := -1
	for i, r := range s.free {
		if cap(r) >= n && (best < 0 || cap(r) < cap(s.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return make([]Row, 0, n)
	}
	r := s.free[best]
	s.free[best] = s.free[len(s.free)-1]
	s.free[len(s.free)-1] = nil
	s.free = s.free[:len(s.free)-1]
	return r
}

// release keeps r for reuse, cleared of its strings, dropping the smallest
// free run if there are too many.
func (s *Sum) release(r []Row) {
	clear(r)
	s.free = append(s.free, r[:0])
	if len(s.free) > maxFree {
		small := 0
		for i, f := range s.free {
			if cap(f) < cap(s.free[small]) {
				small = i
			}
		}
		s.free[small] = s.free[len(s.free)-1]
		s.free[len(s.free)-1] = nil
		s.free = s.free[:len(s.free)-1]
	}
}

// collapse merges the last two runs while the previous one is less than
// twice as long as the last, or down to one run if all.
func (s *Sum) collapse(all bool) {
	for n := len(s.runs); n >= 2; n = len(s.runs) {
		a, b := s.runs[n-2], s.runs[n-1]
		if !all && len(a) >= 2*len(b) {
			return
		}
		m := mergeRuns(s.take(len(a)+len(b)), a, b)
		s.runs[n-1] = nil
		s.runs = s.runs[:n-1]
		s.runs[n-2] = m
		s.release(a)
		s.release(b)
	}
}

// mergeRuns appends to dst the merge of the sorted runs a and b, adding the
// counts of a value in both.
func mergeRuns(dst, a, b []Row) []Row {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch c := strings.Compare(a[i].Value, b[j].Value); {
		case c < 0:
			dst = append(dst, a[i])
			i++
		case c > 0:
			dst = append(dst, b[j])
			j++
		default:
			dst = append(dst, Row{Value: a[i].Value, Count: addSat(a[i].Count, b[j].Count)})
			i++
			j++
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

// Rows returns the rows of s, one per value, counts > 0, in ascending order
// of value. The slice is owned by s and valid until the next Add or Reset;
// the caller may reorder it (sort it, say) once it is done adding, but not
// change it otherwise (a later Add sorts it back).
func (s *Sum) Rows() []Row {
	if s.handed {
		slices.SortFunc(s.runs[0], compareRows)
	}
	s.collapse(true)
	if len(s.runs) == 0 {
		return nil
	}
	s.handed = true
	return s.runs[0]
}

// Unordered returns the rows of s as Rows does, but in no particular
// order, which saves sorting a sum of one day's open column. The same
// ownership rules apply.
func (s *Sum) Unordered() []Row {
	if len(s.runs) == 1 {
		s.handed = true
		return s.runs[0]
	}
	return s.Rows()
}

// Len returns the number of rows.
func (s *Sum) Len() int {
	s.collapse(true)
	if len(s.runs) == 0 {
		return 0
	}
	return len(s.runs[0])
}

// Count returns the sum of value, 0 if none.
func (s *Sum) Count(value string) uint64 {
	if s.handed {
		slices.SortFunc(s.runs[0], compareRows)
		s.handed = false
	}
	s.collapse(true)
	if len(s.runs) == 0 {
		return 0
	}
	rows := s.runs[0]
	i, ok := slices.BinarySearchFunc(rows, value, func(r Row, v string) int { return strings.Compare(r.Value, v) })
	if !ok {
		return 0
	}
	return rows[i].Count
}

// Reset empties s, keeping some of its memory for the next sum.
func (s *Sum) Reset() {
	for _, r := range s.runs {
		s.release(r)
	}
	clear(s.runs)
	s.runs = s.runs[:0]
	s.handed = false
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

// Rollup returns a compacted Day holding the sums of the counts, hourly
// pageviews, visits and events of days, without visitor bitmaps: a closed
// month kept as one bucket, so a long range merges a dozen rollups instead
// of hundreds of days. Its Period is 0 and its visitor methods report
// nothing; unique visitors still come from the days themselves. It has its
// own dictionary and shares no memory with days. Nil days are skipped.
func Rollup(days ...*Day) *Day {
	r := NewDay(0)
	var s Sum
	for dim := range NumDims {
		s.Reset()
		s.Add(dim, days...)
		for _, row := range s.Rows() {
			_, _ = r.add(dim, row.Value, row.Count, 0, false) // Compact copies the strings
		}
	}
	for _, d := range days {
		if d == nil {
			continue
		}
		r.Visits = addSat(r.Visits, d.Visits)
		r.Events = addSat(r.Events, d.Events)
		for h, n := range d.Hours {
			r.Hours[h] = addSat(r.Hours[h], n)
		}
	}
	r.Compact()
	return r
}

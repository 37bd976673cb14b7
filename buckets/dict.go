package buckets

import (
	"slices"
	"strings"
)

// dict is the dictionary of one day: every string counted in any of its
// dimensions, stored once, numbered by dense local ids (a string counted in
// several dimensions has one id). The columns of the day count by these ids.
//
// It is in one of two states:
//
//   - sealed: index == nil; values are strictly ascending and, from sealed
//     on, one allocation holds them all. Lookups binary search. A compacted
//     or decoded day's dictionary is sealed; so is the zero dict.
//   - open: index maps every value to its id; ids follow the order in which
//     the values were first added.
//
// Every value is counted in at least one column of its day: values are added
// only with a count, and counts never decrease. So a dictionary is as large
// as the day's columns allow, and it lives and dies with its day.
type dict struct {
	values []string
	index  map[string]uint32 // nil when sealed
	bytes  int               // sum of len(values[i])
	// packed is the number of leading values that were sorted and packed
	// into one allocation by the last seal (or decoding).
	packed int
}

// lookup returns the id of v, and false if v is not in the dictionary.
func (t *dict) lookup(v string) (uint32, bool) {
	if t.index != nil {
		id, ok := t.index[v]
		return id, ok
	}
	i, ok := slices.BinarySearch(t.values, v)
	return uint32(i), ok
}

// add appends v, which must not be in the dictionary yet, under the next
// id, opening the dictionary if it was sealed. The dictionary keeps v as it
// is: callers clone a string they do not own, or rely on the next seal to
// copy it.
func (t *dict) add(v string) uint32 {
	if t.index == nil {
		t.open(1)
	}
	id := uint32(len(t.values))
	t.index[v] = id
	t.values = append(t.values, v)
	t.bytes += len(v)
	return id
}

// open builds the index of a sealed dictionary, with room for extra more
// values.
func (t *dict) open(extra int) {
	t.index = make(map[string]uint32, len(t.values)+extra)
	for id, v := range t.values {
		t.index[v] = uint32(id)
	}
}

// seal drops the index, sorts the values, copies them into one allocation
// and renumbers them. It returns, if ids changed, the new id of each old id
// (nil otherwise). Sealing a dictionary that gained no value since it was
// last sealed only drops the index.
func (t *dict) seal() (perm []uint32) {
	t.index = nil
	if t.packed == len(t.values) {
		return nil
	}
	n := len(t.values)
	order := make([]uint32, n) // order[new] = old
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return strings.Compare(t.values[a], t.values[b]) })
	var sb strings.Builder
	sb.Grow(t.bytes)
	for _, old := range order {
		sb.WriteString(t.values[old])
	}
	arena := sb.String()
	values := make([]string, n)
	perm = make([]uint32, n)
	off := 0
	for i, old := range order {
		l := len(t.values[old])
		values[i] = arena[off : off+l]
		off += l
		perm[old] = uint32(i)
	}
	t.values, t.packed = values, n
	for i, p := range perm {
		if p != uint32(i) {
			return perm
		}
	}
	return nil
}

// clone returns a copy of t that shares its (immutable) strings.
func (t *dict) clone() dict {
	c := *t
	c.values = slices.Clone(t.values)
	if t.index != nil {
		c.index = make(map[string]uint32, len(t.index))
		for v, id := range t.index {
			c.index[v] = id
		}
	}
	return c
}

// sizeBytes estimates the heap size of the dictionary beyond the dict
// struct itself.
func (t *dict) sizeBytes() int {
	n := t.bytes + 16*cap(t.values)
	// Values added since the last seal are separate allocations, rounded
	// up to a size class: about 8 bytes more each on average.
	n += 8 * (len(t.values) - t.packed)
	if t.index != nil {
		n += mapBytes(len(t.index), 24) // string header + uint32, padded
	}
	return n
}

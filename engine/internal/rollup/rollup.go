package rollup

import (
	"iter"

	"github.com/webstats/webstats/buckets"
)

// Month returns the first and last day of date's month.
func Month(date buckets.Date) (first, last buckets.Date) {
	y, m, _ := date.Civil()
	first = buckets.DateOf(y, m, 1)
	return first, buckets.DateOf(y, m+1, 1) - 1
}

// Week returns the Monday and the Sunday of date's week.
func Week(date buckets.Date) (first, last buckets.Date) {
	// Day 0, 1970-01-01, was a Thursday: three days after a Monday.
	first = date - ((date+3)%7+7)%7
	return first, first + 6
}

// Part is a part of a query range: a whole closed month or week (Rolled),
// or days.
type Part struct {
	From, To buckets.Date
	Rolled   bool
}

// Split splits [from, to] into whole months that ended before today (in
// the website's time zone), whole weeks (Monday to Sunday) that ended
// before today among the days around them, and the days left.
func Split(from, to, today buckets.Date) []Part {
	var out []Part
	days := func(from, to buckets.Date) {
		split(from, to, today, Week, func(p Part) { out = append(out, p) })
	}
	split(from, to, today, Month, func(p Part) {
		if p.Rolled {
			out = append(out, p)
		} else {
			days(p.From, p.To)
		}
	})
	return out
}

// split calls emit, in order, with the whole periods of [from, to] (as
// period gives them) that ended before today, and the days between them.
func split(from, to, today buckets.Date, period func(buckets.Date) (first, last buckets.Date), emit func(Part)) {
	start := from
	for d := from; d <= to; {
		first, last := period(d)
		if first >= from && last <= to && last < today {
			if start < first {
				emit(Part{From: start, To: first - 1})
			}
			emit(Part{From: first, To: last, Rolled: true})
			start = last + 1
		}
		d = last + 1
	}
	if start <= to {
		emit(Part{From: start, To: to})
	}
}

// Key names a rollup: its first and last day, a month or a week (a month
// can start on a Monday).
type Key struct{ First, Last buckets.Date }

// Set is the rollups built of a website's closed months and weeks. The
// zero Set is empty and ready to use.
type Set struct {
	m map[Key]*entry
}

type entry struct {
	day  *buckets.Day
	size int   // day.SizeBytes()
	used int64 // LRU clock
}

// Get returns the rollup k, marking it used at tick (the caller's LRU
// clock).
func (s *Set) Get(k Key, tick int64) (*buckets.Day, bool) {
	e, ok := s.m[k]
	if !ok {
		return nil, false
	}
	e.used = tick
	return e.day, true
}

// Put adds rollup day as k, used at tick, unless the set has k already.
// It returns the bytes added.
func (s *Set) Put(k Key, day *buckets.Day, tick int64) int64 {
	if _, ok := s.m[k]; ok {
		return 0
	}
	if s.m == nil {
		s.m = make(map[Key]*entry)
	}
	e := &entry{day: day, size: day.SizeBytes(), used: tick}
	s.m[k] = e
	return int64(e.size)
}

// Invalidate drops the rollups of date's month and week, and returns the
// bytes they held.
func (s *Set) Invalidate(date buckets.Date) int64 {
	mFirst, mLast := Month(date)
	wFirst, wLast := Week(date)
	return s.Evict(Key{mFirst, mLast}) + s.Evict(Key{wFirst, wLast})
}

// Evict drops rollup k, and returns the bytes it held.
func (s *Set) Evict(k Key) int64 {
	e, ok := s.m[k]
	if !ok {
		return 0
	}
	delete(s.m, k)
	return int64(e.size)
}

// Reset drops every rollup, and returns the bytes they held.
func (s *Set) Reset() int64 {
	n := s.Bytes()
	s.m = nil
	return n
}

// Len is how many rollups s holds.
func (s *Set) Len() int { return len(s.m) }

// Bytes is what s's rollups hold.
func (s *Set) Bytes() int64 {
	var n int64
	for _, e := range s.m {
		n += int64(e.size)
	}
	return n
}

// Used yields each rollup's key with the tick it was last used at.
func (s *Set) Used() iter.Seq2[Key, int64] {
	return func(yield func(Key, int64) bool) {
		for k, e := range s.m {
			if !yield(k, e.used) {
				return
			}
		}
	}
}

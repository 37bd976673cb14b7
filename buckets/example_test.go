package buckets_test

import (
	"fmt"
	"time"

	"github.com/webstats/webstats/buckets"
)

// A day is filled hit by hit while it is open, then compacted.
func ExampleDay() {
	var strs buckets.Strings
	day := buckets.NewDay(buckets.DateOf(2026, time.November, 21))

	hits := []struct {
		visitor uint32
		hour    int
		page    string
		browser string
	}{
		{visitor: 0, hour: 9, page: "/", browser: "Firefox"},
		{visitor: 0, hour: 9, page: "/pricing", browser: "Firefox"},
		{visitor: 1, hour: 10, page: "/", browser: "Chrome"},
		{visitor: 0, hour: 11, page: "/", browser: "Firefox"},
	}
	for _, h := range hits {
		day.AddPageview(h.hour)
		day.Add(buckets.Page, strs.Intern(h.page), 1)
		if newToDay, _ := day.AddVisitor(h.hour, h.visitor); newToDay {
			day.Add(buckets.Browser, strs.Intern(h.browser), 1)
		}
	}
	day.Compact()

	fmt.Println("pageviews:", day.Pageviews(), "visitors:", day.Visitors(), "at 9:", day.HourVisitors(9))
	for id, n := range day.Counts(buckets.Page) {
		page, _ := strs.Value(id)
		fmt.Printf("%s %d\n", page, n)
	}
	// Output:
	// pageviews: 4 visitors: 2 at 9: 1
	// / 3
	// /pricing 1
}

// SumCounts adds a dimension over the days of a range into a dense
// accumulator indexed by value id.
func ExampleSumCounts() {
	var strs buckets.Strings
	home, blog := strs.Intern("/"), strs.Intern("/blog")
	var days []*buckets.Day
	for i := range 3 {
		d := buckets.NewDay(buckets.DateOf(2026, 1, 1) + buckets.Date(i))
		d.Add(buckets.Page, home, 10)
		d.Add(buckets.Page, blog, uint64(i))
		d.Compact()
		days = append(days, d)
	}
	acc := buckets.SumCounts(nil, buckets.Page, days...)
	for id, n := range acc {
		v, _ := strs.Value(uint32(id))
		fmt.Println(v, n)
	}
	// Output:
	// / 30
	// /blog 3
}

// Unique visitors of a range are exact within a salt period and summed over
// periods: visitor 7 of one period and visitor 7 of another are different
// people.
func ExampleUniqueVisitors() {
	week := buckets.DateOf(2026, 3, 2) // a Monday: weekly salt periods
	mon, tue := buckets.NewDay(week), buckets.NewDay(week)
	mon.AddVisitor(8, 7)
	tue.AddVisitor(8, 7) // the same visitor as on Monday
	tue.AddVisitor(9, 8)
	nextMon := buckets.NewDay(week + 7)
	nextMon.AddVisitor(8, 7) // a new period: not Monday's visitor 7

	fmt.Println(buckets.UniqueVisitors(mon, tue, nextMon))
	// Output: 3
}

// A string table is saved in chunks: only the values added since the last
// save.
func ExampleStrings_AppendBinary() {
	var s buckets.Strings
	s.Intern("/")
	s.Intern("/about")
	first := s.AppendBinary(nil, 0)
	saved := uint32(s.Len())
	s.Intern("/contact")
	second := s.AppendBinary(nil, saved)

	var restored buckets.Strings
	for _, chunk := range [][]byte{first, second} {
		if err := restored.AppendChunk(chunk); err != nil {
			fmt.Println(err)
			return
		}
	}
	var vs []string
	for _, v := range restored.All() {
		vs = append(vs, v)
	}
	fmt.Println(vs)
	fmt.Println(restored.AppendChunk(second))
	// Output:
	// [/ /about /contact]
	// buckets: decode strings: chunk starts at id 2, want 3
}

func ExampleParseDate() {
	d, err := buckets.ParseDate("2024-02-29")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d, d.Weekday(), d+1)
	_, err = buckets.ParseDate("2023-02-29")
	fmt.Println(err)
	// Output:
	// 2024-02-29 Thursday 2024-03-01
	// buckets: invalid date "2023-02-29" (want YYYY-MM-DD)
}

func ExampleDay_MarshalBinary() {
	d := buckets.NewDay(buckets.DateOf(2026, 5, 1))
	d.Add(buckets.Country, 3, 2)
	d.AddVisitor(12, 0)
	b, err := d.MarshalBinary()
	if err != nil {
		fmt.Println(err)
		return
	}
	var back buckets.Day
	if err := back.UnmarshalBinary(b); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("version", b[0], "equal", back.Equal(d), "period", back.Period)
	// Output: version 1 equal true period 2026-05-01
}

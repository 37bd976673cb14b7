package buckets_test

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/webstats/webstats/buckets"
)

// A day is filled hit by hit while it is open, then compacted.
func ExampleDay() {
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
	const limit = 50_000 // distinct values per dimension
	for _, h := range hits {
		day.AddPageview(h.hour)
		day.Add(buckets.Page, h.page, 1, limit)
		if newToDay, _ := day.AddVisitor(h.hour, h.visitor); newToDay {
			day.Add(buckets.Browser, h.browser, 1, limit)
		}
	}
	day.Compact()

	fmt.Println("pageviews:", day.Pageviews(), "visitors:", day.Visitors(), "at 9:", day.HourVisitors(9))
	for page, n := range day.Counts(buckets.Page) { // ascending once compacted
		fmt.Println(page, n)
	}
	fmt.Println("Chrome:", day.Count(buckets.Browser, "Chrome"))
	// Output:
	// pageviews: 4 visitors: 2 at 9: 1
	// / 3
	// /pricing 1
	// Chrome: 1
}

// Once a dimension holds its limit of distinct values, new values are
// counted as Other; values already counted keep counting.
func ExampleDay_Add() {
	day := buckets.NewDay(buckets.DateOf(2026, 1, 1))
	for _, ref := range []string{"a.example", "b.example", "spam-1.example", "a.example", "spam-2.example"} {
		if other := day.Add(buckets.Referrer, ref, 1, 2); other {
			fmt.Println("over the limit:", ref)
		}
	}
	day.Compact()
	for ref, n := range day.Counts(buckets.Referrer) {
		fmt.Println(ref, n)
	}
	// Output:
	// over the limit: spam-1.example
	// over the limit: spam-2.example
	// (other) 2
	// a.example 2
	// b.example 1
}

// A Sum adds a dimension over the days of a range, value by value.
func ExampleSum() {
	var days []*buckets.Day
	for i := range 3 {
		d := buckets.NewDay(buckets.DateOf(2026, 1, 1) + buckets.Date(i))
		d.Add(buckets.Page, "/", 10, 0)
		d.Add(buckets.Page, "/blog", uint64(i), 0)
		d.Compact()
		days = append(days, d)
	}
	var s buckets.Sum
	s.Add(buckets.Page, days...)
	rows := s.Rows()
	slices.SortFunc(rows, func(a, b buckets.Row) int { return cmp.Compare(b.Count, a.Count) })
	for _, r := range rows {
		fmt.Println(r.Value, r.Count)
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

// Stores written before days had their own dictionary are migrated with
// their website's string table.
func ExampleDay_UnmarshalBinaryV1() {
	// The website's table and a day, as a version 1 store holds them.
	table := []byte{1, 0, 2, 1, '/', 6, '/', 'a', 'b', 'o', 'u', 't'}
	day := []byte{
		1,                // version
		0xda, 0xbc, 0x02, // period 2025-06-30
		1, 0, // visits, events
		0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // hours
		1,             // one dimension: page
		2, 0, 0, 4, 1, // ids 0 and 1 of the table, counted 4 and 1
		0, 0, // no visitor bitmap, no hour bitmap
	}
	var strs buckets.Strings
	if err := strs.UnmarshalBinary(table); err != nil {
		fmt.Println(err)
		return
	}
	var d buckets.Day
	fmt.Println(d.UnmarshalBinary(day))
	if err := d.UnmarshalBinaryV1(day, strs.Value); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Period, d.Pageviews(), d.Count(buckets.Page, "/"), d.Count(buckets.Page, "/about"))
	b, _ := d.MarshalBinary()
	fmt.Println("now version", b[0])
	// Output:
	// buckets: decode day: format version 1 needs its website's strings
	// 2025-06-30 5 4 1
	// now version 2
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
	d.Add(buckets.Country, "DE", 2, 0)
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
	// Output: version 2 equal true period 2026-05-01
}

package stat

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/invalid"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/engine/query"
)

// The statistics names of SPEC §2.3, besides the dimensions of buckets.
const (
	Pageviews      = "pageviews"
	PageviewsHours = "pageviews_hours"
	Visitors       = "visitors"
	VisitorsHours  = "visitors_hours"
)

// Names lists the 17 statistics, in the order the API documents them.
func Names() []string {
	names := []string{Pageviews, PageviewsHours, Visitors, VisitorsHours}
	for d := range buckets.NumDims {
		names = append(names, d.String())
	}
	return names
}

// Canonical maps a statistic name or alias to its name; ok=false for an
// unknown one.
func Canonical(name string) (string, bool) {
	switch name {
	case "pageviews_hour":
		return PageviewsHours, true
	case "visitors_hour":
		return VisitorsHours, true
	case Pageviews, PageviewsHours, Visitors, VisitorsHours:
		return name, true
	}
	if _, ok := buckets.ParseDim(name); ok {
		return name, true
	}
	return "", false
}

// Row is one value of a statistic and its count.
type Row struct {
	Value string `json:"value"`
	Count uint64 `json:"count"`
}

// Page is one page of a statistic's rows. Rows is the caller's.
type Page struct {
	Rows     []Row
	Total    int // rows over all pages
	Page     int
	PerPage  int
	LastPage int // at least 1
}

// Search keeps, in rows' array, the rows whose value holds search,
// ignoring case; "" keeps them all.
func Search(rows []Row, search string) []Row {
	if search == "" {
		return rows
	}
	needle := strings.ToLower(search)
	return slices.DeleteFunc(rows, func(r Row) bool { return !containsFold(r.Value, needle) })
}

// containsFold reports whether s holds the lower-case needle, ignoring case.
func containsFold(s, needle string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			return strings.Contains(strings.ToLower(s), needle)
		}
	}
	return strings.Contains(s, needle)
}

// Sort orders rows by count, equal counts by value ascending bytewise,
// or by value when byValue; descending when desc. Only the first n need
// to be in their final place.
func Sort(rows []Row, byValue, desc bool, n int) {
	cmpRow := func(a, b Row) int {
		if byValue {
			c := strings.Compare(a.Value, b.Value)
			if desc {
				c = -c
			}
			return c
		}
		c := cmp.Compare(a.Count, b.Count)
		if desc {
			c = -c
		}
		return cmp.Or(c, strings.Compare(a.Value, b.Value))
	}
	segments.SortFirst(rows, n, cmpRow)
}

// Hour is the value of hour h (0 to 23) in the hours statistics: "07".
func Hour(h int) string { return hourNames[h] }

var hourNames = func() (h [24]string) {
	for i := range h {
		h[i] = fmt.Sprintf("%02d", i)
	}
	return h
}()

// Check returns what is wrong with a query of statistic name over the
// local days [from, to] sorted by sortBy, as an *invalid.Error, or nil: a
// known name (or alias), a range CheckRange accepts, and a sort by
// "count" (also "") or "value".
func Check(name, sortBy string, from, to buckets.Date) error {
	var verr invalid.Error
	if _, ok := Canonical(name); !ok {
		verr.Add("name", "The selected name is invalid.")
	}
	checkRange(&verr, from, to)
	if sortBy != "" && sortBy != "count" && sortBy != "value" {
		verr.Add("sort_by", "The selected sort by is invalid.")
	}
	return verr.Err()
}

// CheckRange returns what is wrong with the local days [from, to], as an
// *invalid.Error, or nil: from after to, or more than query.MaxRangeDays
// days (counted in int64: the difference of two dates overflows int32).
func CheckRange(from, to buckets.Date) error {
	var verr invalid.Error
	checkRange(&verr, from, to)
	return verr.Err()
}

func checkRange(verr *invalid.Error, from, to buckets.Date) {
	if from > to {
		verr.Add("to", "The to must be a date after or equal to from.")
	} else if int64(to)-int64(from) >= query.MaxRangeDays {
		verr.Add("to", fmt.Sprintf("The range must not be longer than %d days.", query.MaxRangeDays))
	}
}

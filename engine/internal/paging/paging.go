// Package paging cuts a list of the API (websites, a statistic's rows)
// into pages: perPage defaults to 10 and page counts from 1.
package paging

// Bounds computes the paging of total rows: per rows a page (perPage, or
// 10 when not positive), page pg (page, or 1 when less), last the last
// page (at least 1), and rows [lo, hi) on page pg (empty past the last).
func Bounds(total, perPage, page int) (per, pg, last, lo, hi int) {
	per = perPage
	if per <= 0 {
		per = 10
	}
	pg = max(page, 1)
	last = max(1, (total+per-1)/per)
	lo = min(total, (pg-1)*per)
	if pg-1 > total/per+1 { // avoid overflow for huge pages
		lo = total
	}
	hi = min(total, lo+per)
	return per, pg, last, lo, hi
}

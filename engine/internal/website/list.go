package website

import (
	"cmp"
	"slices"
	"strings"

	"github.com/webstats/webstats/engine/internal/paging"
)

// Query selects and orders the websites of an owner.
type Query struct {
	Search  string // case-insensitive substring of the domain
	SortBy  string // "id" (default) or "domain"
	Desc    bool
	Page    int // from 1; < 1 means 1
	PerPage int // default 10
}

// Page is one page of websites.
type Page struct {
	Websites []Record
	Total    int
	Page     int
	PerPage  int
	LastPage int
}

// List sorts all, the websites q's search selects (the caller selects
// them: it holds the registry), as q asks and returns q's page
// of them. The page shares all's array.
func List(all []Record, q Query) Page {
	slices.SortFunc(all, func(a, b Record) int {
		c := cmp.Compare(a.ID, b.ID)
		if q.SortBy == "domain" {
			c = cmp.Or(strings.Compare(a.Domain, b.Domain), c)
		}
		if q.Desc {
			c = -c
		}
		return c
	})
	per, page, last, lo, hi := paging.Bounds(len(all), q.PerPage, q.Page)
	return Page{Websites: all[lo:hi], Total: len(all), Page: page, PerPage: per, LastPage: last}
}

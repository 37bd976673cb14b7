package export

import (
	"net/url"
	"slices"
	"strings"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/visitors"
)

// Hints is what a day's bucket tells an export that the segments do not
// keep (SPEC §10.1 keeps paths and a referrer without "www."): the pages
// with their queries of each path, with how many pageviews and visits (as
// a landing page) each counted that day, and which referring hosts were
// sent with "www.". Page takes the counts it gives.
type Hints struct {
	pages map[string][]pageCount // path → its pages of the day, in order
	www   map[string]bool        // host without "www." → sent with it, and never without
}

// pageCount is a page of the day and what is left of its counts while an
// export gives them to hits.
type pageCount struct {
	page          string
	utm           string // its utm_* parameters, encoded (utmOf)
	views, visits uint64
}

// NewHints reads the hints of day (nil: none).
func NewHints(day *buckets.Day) Hints {
	h := Hints{pages: make(map[string][]pageCount), www: make(map[string]bool)}
	if day == nil {
		return h
	}
	for page, n := range day.Counts(buckets.Page) {
		path := pagePath(page)
		h.pages[path] = append(h.pages[path], pageCount{page: page, utm: utmOf(page), views: n, visits: day.Count(buckets.LandingPage, page)})
	}
	for _, pcs := range h.pages {
		slices.SortFunc(pcs, func(a, b pageCount) int { return strings.Compare(a.page, b.page) })
	}
	for host := range day.Counts(buckets.Referrer) {
		if bare, ok := strings.CutPrefix(host, "www."); ok && day.Count(buckets.Referrer, bare) == 0 {
			h.www[bare] = true
		}
	}
	return h
}

// pagePath is a page statistic's value without its query (a fragment kept,
// as norm.Page.Path keeps it).
func pagePath(page string) string {
	frag := ""
	if i := strings.IndexByte(page, '#'); i >= 0 {
		page, frag = page[:i], page[i:]
	}
	path, _, _ := strings.Cut(page, "?")
	return path + frag
}

// utmOf returns the utm_* parameters of a page or a query, encoded in
// key order: what decides a landing page's campaign.
func utmOf(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[i+1:]
	}
	vals, _ := url.ParseQuery(s)
	out := url.Values{}
	for k, v := range vals {
		if strings.HasPrefix(k, "utm_") && len(v) > 0 && v[0] != "" {
			out[k] = v[:1]
		}
	}
	return out.Encode()
}

// Pageviews keeps the time of each visitor's last pageview over the day
// an export is at and the day before (a visit may pass midnight). Call
// Next before each day's first Page.
type Pageviews struct{ prev, cur map[string]int64 }

// Next moves on to the next day.
func (l *Pageviews) Next() { l.prev, l.cur = l.cur, make(map[string]int64, len(l.cur)) }

// Page returns the page of a pageview of visitor at ms (Unix) whose path
// and query the segments keep, referred telling whether it carries its
// visit's referrer; pageviews of a day must come in time order. The page
// is one the day's bucket counted: a pageview that started a visit by
// SPEC §2.2's rule (no pageview of its visitor in the 30 minutes before,
// or the referrer of a visit's first hit) takes a page of its path that
// still has visits to give, with the utm parameters of its visit, and
// every pageview one that still has views to give. So the page and
// landing page statistics come back as counted, and each visit's
// campaign. Where the counts do not tell (a path the bucket counted under
// "(other)"), the page is the path, with the query (the visit's campaign
// parameters on its first hit).
func (h Hints) Page(last *Pageviews, visitor string, ms int64, referred bool, path, query string) string {
	prev, seen := last.cur[visitor]
	if !seen {
		prev, seen = last.prev[visitor]
	}
	landing := !seen || ms-prev > visitors.Gap || referred
	last.cur[visitor] = ms
	utm := utmOf(query)
	if pc := h.take(path, landing, utm); pc != nil {
		if utm != "" && pc.utm != utm {
			// The visit's campaign is not in the page: removed by
			// exclude_params, which removes it again on import.
			return withQuery(pc.page, query)
		}
		return pc.page
	}
	if query != "" {
		return withQuery(path, query)
	}
	return path
}

// take returns the page of path a pageview gets, its counts taken, or nil.
func (h Hints) take(path string, landing bool, utm string) *pageCount {
	pcs := h.pages[path]
	pick := func(ok func(*pageCount) bool) *pageCount {
		for i := range pcs {
			if ok(&pcs[i]) {
				return &pcs[i]
			}
		}
		return nil
	}
	var pc *pageCount
	if landing {
		pc = pick(func(p *pageCount) bool { return p.visits > 0 && p.views > 0 && p.utm == utm })
		if pc == nil {
			pc = pick(func(p *pageCount) bool { return p.visits > 0 && p.views > 0 })
		}
		if pc != nil {
			pc.visits--
		}
	} else {
		pc = pick(func(p *pageCount) bool { return p.views > p.visits })
	}
	if pc == nil {
		pc = pick(func(p *pageCount) bool { return p.views > 0 })
	}
	if pc != nil {
		pc.views--
	}
	return pc
}

// withQuery adds query to a page's query, before its fragment.
func withQuery(page, query string) string {
	base, frag, hasFrag := strings.Cut(page, "#")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	base += sep + query
	if hasFrag {
		return base + "#" + frag
	}
	return base
}

// Referrer returns a visit's referrer URL (without scheme) as it was
// sent: with "www." when the day saw only that form of its host.
func (h Hints) Referrer(ref string) string {
	host, _, _ := strings.Cut(ref, "/")
	if h.www[host] {
		return "www." + ref
	}
	return ref
}

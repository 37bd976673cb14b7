package engine

import (
	"strings"

	"github.com/webstats/webstats/buckets"
)

// exportHints is what a day's bucket tells an export that the segments
// do not keep (SPEC §10.1 keeps paths and a referrer without "www."):
// the page with its query where a path had one such page that day, and
// which referring hosts were sent with "www.".
type exportHints struct {
	pages map[string]string // path → the day's one page of that path; "" when several
	www   map[string]bool   // host without "www." → sent with it, and never without
}

// newExportHints reads the hints of day (nil: none).
func newExportHints(day *buckets.Day) exportHints {
	h := exportHints{pages: make(map[string]string), www: make(map[string]bool)}
	if day == nil {
		return h
	}
	for page := range day.Counts(buckets.Page) {
		path := pagePath(page)
		if _, seen := h.pages[path]; seen {
			h.pages[path] = "" // several: which hit had which is not kept
		} else {
			h.pages[path] = page
		}
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

// page returns the page of a hit of path whose visit's landing campaign
// parameters are query (on a visit's first hit; else ""): the day's one
// page of that path when there was one, else path with query.
func (h exportHints) page(path, query string) string {
	if p := h.pages[path]; p != "" {
		if query == "" || strings.Contains(p, "?") {
			return p
		}
	}
	if query == "" {
		return path
	}
	base, frag, _ := strings.Cut(path, "#")
	if frag != "" || strings.Contains(path, "#") {
		return base + "?" + query + "#" + frag
	}
	return path + "?" + query
}

// referrer returns a visit's referrer URL (without scheme) as it was sent:
// with "www." when the day saw only that form of its host.
func (h exportHints) referrer(ref string) string {
	host, _, _ := strings.Cut(ref, "/")
	if h.www[host] {
		return "www." + ref
	}
	return ref
}

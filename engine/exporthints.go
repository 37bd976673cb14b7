package engine

import "github.com/webstats/webstats/engine/internal/export"

// assignPages gives the pageviews of hits, one day's in time order, their
// pages as the day's bucket counted them (export.Hints.Page); last keeps
// the visitors' last pageviews from one day to the next.
func assignPages(h export.Hints, hits []ExportedHit, last *export.Pageviews) {
	for i := range hits {
		if x := &hits[i]; !x.Event {
			x.Path, x.Query = h.Page(last, x.Visitor, x.Time.UnixMilli(), x.Referrer != "", x.Path, x.Query), ""
		}
	}
}

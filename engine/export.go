package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/export"
	"github.com/webstats/webstats/engine/internal/segments"
)

// ExportedHit is one stored pageview or custom event of a website, as
// Owner.Export gives it (package export).
type ExportedHit = export.Hit

// ErrExportElsewhere reports an export asked of a cluster node that does
// not answer for the website's partition: ask the node that does. It is
// an ErrClusterUnavailable too. Use errors.Is.
var ErrExportElsewhere = fmt.Errorf("engine: export: the website is served by another node: %w", ErrClusterUnavailable)

// Export calls fn with every stored pageview and custom event of website
// counted under the local days [from, to], in time order within each day
// and day after day (a visit's hits are given with the day it started:
// under weekly or monthly salts a visit past midnight comes before the
// next day's hits). It holds one day's hits at a time, so its memory is
// bounded by the largest day, whatever the range. Engagement reports are
// not given (see the README's "Moving in and out"). An error of fn stops
// the export and is returned.
func (o Owner) Export(ctx context.Context, website uint32, from, to Date, fn func(*ExportedHit) error) error {
	s, err := o.site(website)
	if err != nil {
		return err
	}
	far, done, err := o.elsewhere(website)
	if err != nil {
		return err
	}
	if far {
		return ErrExportElsewhere
	}
	defer done()
	e := o.e
	sh := e.shardOf(website)
	sh.mu.Lock()
	var dates []buckets.Date
	for d := range s.state.dates {
		if d >= from && d <= to {
			dates = append(dates, d)
		}
	}
	sh.mu.Unlock()
	slices.Sort(dates)
	var hits []ExportedHit
	var pv export.Pageviews
	for _, date := range dates {
		if err := ctx.Err(); err != nil {
			return err
		}
		hits = hits[:0]
		var hints export.Hints
		err := e.scanDays(ctx, s, date, date, false, nil, func(_ buckets.Date, d storedDay) { hints = export.NewHints(d.day) })
		if err == nil {
			err = e.scanSegs(ctx, s, date, date, func(_ buckets.Date, sd *segments.Day, _ bool) {
				hits = export.AppendHits(hits, website, sd, hints)
			})
		}
		if err != nil {
			return err
		}
		hints.Assign(hits, &pv)
		for i := range hits {
			if err := fn(&hits[i]); err != nil {
				return err
			}
		}
		clear(hits) // what the next day does not overwrite is not kept alive
	}
	return nil
}

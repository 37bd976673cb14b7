package pages

import (
	"context"
	"fmt"

	"github.com/webstats/webstats/engine"
)

// importsNote is the overview's note when the website's imported layer
// (SPEC §14: Plausible's history) has days in dr: the overview shows live
// data only, and says so, as Plausible's dashboard says when a view
// leaves its imported data out. "" when nothing imported is in dr.
func (p *Pages) importsNote(ctx context.Context, website uint32, dr dateRange) string {
	list, err := p.e.Unscoped().Imports(ctx, website)
	if err != nil {
		return ""
	}
	var from, to engine.Date
	n := 0
	for _, imp := range list {
		if imp.From > dr.To || imp.To < dr.From {
			continue
		}
		lo, hi := max(imp.From, dr.From), min(imp.To, dr.To)
		if n == 0 || lo < from {
			from = lo
		}
		if n == 0 || hi > to {
			to = hi
		}
		n++
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("Imported data (%s to %s) is not included in this view: it shows live data only. "+
		"The Stats API includes it with include.imports.", from, to)
}

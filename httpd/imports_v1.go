package httpd

import "github.com/webstats/webstats/engine"

// v1WithWarning adds Plausible's top-level "warning" to a v1 answer when
// with_imported=true could not include the imports: for aggregate and
// breakdown only when the query is unsupported (maybe_add_warning in
// lib/plausible_web/controllers/api/external_stats_controller.ex), for a
// timeseries whatever warning the query had (its meta[:imports_warning]).
func v1WithWarning(o jsonObject, res *engine.QueryResult, timeseries bool) jsonObject {
	w := res.Meta.ImportsWarning
	if w == "" || !timeseries && res.Meta.ImportsSkipReason != "unsupported_query" {
		return o
	}
	return append(o, jsonField{"warning", w})
}

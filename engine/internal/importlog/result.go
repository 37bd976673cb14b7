package importlog

import "github.com/webstats/webstats/engine/internal/imported"

// Result is what applying an import's message decided, for the node that
// published it.
type Result struct {
	Import imported.Import
	Err    error
}
